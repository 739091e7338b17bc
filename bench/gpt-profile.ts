// Per-kernel profile of the compiled GPT training step (bench/gpt.ts's model), one thread: every
// kernel export is wrapped to add its process-CPU time (process.cpuUsage, so a loaded machine's
// waiting is not counted) per launch, GEMMs keyed by shape with their GFLOP/s. The sum of the
// kernels against the step's CPU time gives the JS share (dispatch, recording, replay).
//
//   node scripts/run-ts.mjs bench/gpt-profile.ts
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { timeKernels } from './kernel-times.js';
await A.init();
const text = await A.data.shakespeare('data/tinyshakespeare.txt.gz');
const times = timeKernels();
const { acc, flops } = times;
const run = new GptRun(text, { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0 });
for (let i = 0; i < 5; i++) run.trainStep();
const N = 10;
times.on = true;
let tot = 0;
const cpu0 = process.cpuUsage();
for (let i = 0; i < N; i++) {
  const t = performance.now();
  run.trainStep();
  tot += performance.now() - t;
}
times.on = false;
const cpu = process.cpuUsage(cpu0);
const rows = [...acc].sort((a, b) => b[1].ms - a[1].ms);
const ksum = rows.reduce((s, [, e]) => s + e.ms, 0);
console.log(
  `step wall ${(tot / N).toFixed(1)} ms, cpu ${((cpu.user + cpu.system) / 1000 / N).toFixed(1)} ms, kernels ${(ksum / N).toFixed(1)} ms`,
  run.stepFn.stats.replayed,
);
for (const [n, e] of rows.slice(0, 40))
  console.log(
    `${n.padEnd(36)} ${(e.ms / N).toFixed(2).padStart(8)} ms ${(e.n / N).toFixed(0).padStart(5)} calls  ${((100 * e.ms) / ksum).toFixed(1)}%  ${flops.has(n) ? ((flops.get(n)! * e.n) / e.ms / 1e6).toFixed(1) + ' GFLOP/s' : ''}`,
  );
