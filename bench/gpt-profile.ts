// Per-kernel profile of the compiled GPT training step (bench/gpt.ts's model), one thread: every
// kernel export is wrapped to add its process-CPU time (process.cpuUsage, so a loaded machine's
// waiting is not counted) per launch, GEMMs keyed by shape with their GFLOP/s. The sum of the
// kernels against the step's CPU time gives the JS share (dispatch, recording, replay).
//
//   node scripts/run-ts.mjs bench/gpt-profile.ts
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { runtime } from '../src/wasm/module.js';
await A.init();
const text = await A.data.shakespeare('data/tinyshakespeare.txt.gz');
const rt = runtime() as any;
const flops = new Map<string, number>();
const acc = new Map<string, { ms: number; n: number }>();
let on = false;
const orig = rt.exports;
const wrapped: Record<string, unknown> = {};
for (let [n, f] of Object.entries(orig)) {
  if (typeof f !== 'function') {
    wrapped[n] = f;
    continue;
  }
  const n0 = n;
  wrapped[n] = (...a: number[]) => {
    let n = n0;
    if (!on) return (f as any)(...a);
    const t = process.cpuUsage();
    const r = (f as any)(...a);
    const u = process.cpuUsage(t);
    const d = (u.user + u.system) / 1000;
    let key = n;
    if (n === 'gemm_f32') key = `gemm M${a[3]} N${a[4]} K${a[5]} tA${a[9]} tB${a[10]} acc${a[11]}`;
    if (n === 'gemm_bias_act_f32') key = `gba M${a[4]} N${a[5]} K${a[6]} tA${a[10]} tB${a[11]} act${a[12]}`;
    if (n.startsWith('gemm') && n !== 'gemm_set_scratch') {
      flops.set(key, 2 * a[n === 'gemm_f32' ? 3 : 4] * a[n === 'gemm_f32' ? 4 : 5] * a[n === 'gemm_f32' ? 5 : 6]);
    }
    const e = acc.get(key) ?? { ms: 0, n: 0 };
    n = key;
    e.ms += d;
    e.n++;
    acc.set(n, e);
    return r;
  };
}
rt.exports = wrapped;
const run = new GptRun(text, { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0 });
for (let i = 0; i < 5; i++) run.trainStep();
const N = 10;
on = true;
let tot = 0;
const cpu0 = process.cpuUsage();
for (let i = 0; i < N; i++) {
  const t = performance.now();
  run.trainStep();
  tot += performance.now() - t;
}
on = false;
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
