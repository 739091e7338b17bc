// The one-thread GPT training step (bench/gpt.ts's model) against PyTorch's in paired, interleaved
// rounds of process-CPU time, for a loaded machine where separate runs are not comparable. Each
// round: `steps` adjoint steps, the same step's GEMM calls replayed alone (the GEMM rate of this
// run), then `steps` PyTorch steps (bench/torch/gpt_steps.py, a persistent process). Reports the
// medians over rounds of: adjoint/PyTorch CPU ratio, and the share of the wasm-SIMD bound (step
// FLOPs at the replayed GEMMs' rate, attention's matrix products counted at that rate too).
//
//   taskset -c 1 node scripts/run-ts.mjs bench/gpt-paired.ts [--rounds 9] [--steps 8]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import os from 'node:os';
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { runtime } from '../src/wasm/module.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: number) => (argv.includes(`--${name}`) ? Number(argv[argv.indexOf(`--${name}`) + 1]) : d);
const rounds = opt('rounds', 9),
  steps = opt('steps', 8);
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const cpuMs = (f: () => void): number => {
  const c = process.cpuUsage();
  f();
  const d = process.cpuUsage(c);
  return (d.user + d.system) / 1000;
};

await A.init();
// Record one step's GEMM calls (with the scratch setting before each) to replay them alone: the
// exports are wrapped before the step is compiled, which binds the kernels it calls.
const rt = runtime() as unknown as { exports: Record<string, unknown> };
const orig = rt.exports;
const calls: [(...a: number[]) => unknown, number[]][] = [];
let gemmFlop = 0,
  recording = false;
const wrapped: Record<string, unknown> = {};
for (const [n, f] of Object.entries(orig)) {
  if (typeof f !== 'function' || !n.startsWith('gemm')) {
    wrapped[n] = f;
    continue;
  }
  const fn = f as (...a: number[]) => unknown;
  wrapped[n] = (...a: number[]) => {
    if (!recording) return fn(...a);
    calls.push([fn, a]);
    if (n === 'gemm_f32') gemmFlop += 2 * a[3] * a[4] * a[5];
    else if (n !== 'gemm_set_scratch') gemmFlop += 2 * a[4] * a[5] * a[6];
    return fn(...a);
  };
}
const text = await A.data.shakespeare('data/tinyshakespeare.txt.gz');
rt.exports = wrapped;
const run = new GptRun(text, { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0 });
for (let i = 0; i < 3; i++) run.trainStep();

recording = true;
run.trainStep();
recording = false;
// Attention's products (QKᵀ and PV forward; four of that size backward), full T×T as the kernel computes.
const attnFlop = 4 * 12 * 4 * 2 * (2 * 64 * 64 * 32) * 3;
const stepFlop = gemmFlop + attnFlop;

const py = spawn('/usr/bin/python3', ['bench/torch/gpt_steps.py'], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: py.stdout })[Symbol.asyncIterator]();
const next = async () => JSON.parse((await lines.next()).value as string) as { ready?: string; skipped?: string; cpuMs?: number[] };
const hello = await next();
if (hello.skipped) throw new Error(`PyTorch: ${hello.skipped}`);
py.stdin.write('3\n'); // warm-up
await next();

const load0 = os.loadavg()[0];
const ratios: number[] = [],
  shares: number[] = [],
  ours: number[] = [],
  theirs: number[] = [],
  rates: number[] = [];
for (let r = 0; r < rounds; r++) {
  const a: number[] = [];
  for (let i = 0; i < steps; i++) a.push(cpuMs(() => run.trainStep()));
  const g: number[] = [];
  for (let i = 0; i < steps; i++) g.push(cpuMs(() => calls.forEach(([f, args]) => f(...args))));
  py.stdin.write(`${steps}\n`);
  const t = (await next()).cpuMs!;
  const [am, gm, tm] = [median(a), median(g), median(t)];
  const rate = gemmFlop / gm / 1e6; // GFLOP/s
  ours.push(am);
  theirs.push(tm);
  rates.push(rate);
  ratios.push(tm / am);
  shares.push(stepFlop / rate / 1e6 / am);
  console.log(
    `round ${r + 1}: adjoint ${am.toFixed(1)} ms CPU, PyTorch ${tm.toFixed(1)} ms CPU, ratio ${(tm / am).toFixed(3)}×, GEMM rate ${rate.toFixed(1)} GFLOP/s, bound share ${((100 * stepFlop) / rate / 1e6 / am).toFixed(1)} %`,
  );
}
py.stdin.end();
console.log(
  `\nGPT step, one thread, ${rounds} paired rounds of ${steps} steps (medians): adjoint ${median(ours).toFixed(1)} ms CPU, PyTorch ${median(theirs).toFixed(1)} ms CPU, ` +
    `adjoint/PyTorch speed ${median(ratios).toFixed(3)}×; GEMM rate ${median(rates).toFixed(1)} GFLOP/s, step ${(stepFlop / 1e9).toFixed(2)} GFLOP, ` +
    `wasm-SIMD bound share ${(100 * median(shares)).toFixed(1)} %; load ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`,
);
run.dispose();
