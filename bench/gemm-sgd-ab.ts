// A compiled training step built with and without the gemm_sgd peephole (src/compile/epilogues.ts:
// weight-gradient GEMM and plain SGD step as one launch, piece by piece where the GEMM is cut across
// threads), in alternating paired rounds; prints the median per-round ratio. One thread: CPU time
// of the deep 32×256 step (bench/step-bounds.ts's deepCompiledStep). --threads 2: wall time of the
// MLP 784-256-256-10 (or --model deep) SGD step on the pool (bench/dense-step.ts).
//
//   taskset -c 1 node scripts/run-ts.mjs bench/gemm-sgd-ab.ts [rounds]
//   node scripts/run-ts.mjs bench/gemm-sgd-ab.ts [rounds] --threads 2 [--model mlp|deep]
import os from 'node:os';
import * as A from '../src/index.js';
import { epilogues } from '../src/compile/epilogues.js';
import { deepCompiledStep } from './step-bounds.js';
import { compiledDenseRunner, type DenseModel } from './dense-step.js';
import { median } from './timing.js';
import { balance } from '../src/testing.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: string): string => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
const rounds = Number(argv[0] !== undefined && !argv[0].startsWith('--') ? argv[0] : 9);
const threads = Number(opt('--threads', '1')),
  model = opt('--model', 'mlp') as DenseModel;
await A.init({ threads });
balance.enabled = false; // equal cuts: a change of cuts would trace both steps again mid-round
/** ms per call of f over n calls: CPU time on one thread, wall time on the pool. */
const timed = (f: () => void, n: number): number => {
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  for (let i = 0; i < n; i++) f();
  const c = process.cpuUsage(c0);
  return (threads > 1 ? performance.now() - t0 : (c.user + c.system) / 1000) / n;
};
const build = () => (threads > 1 ? compiledDenseRunner(model) : deepCompiledStep().run);
const reps = threads > 1 && model === 'mlp' ? 200 : 10;
epilogues.sgd = false;
const off = build();
epilogues.sgd = true;
const on = build();
// Warm both (the pool's first steps are slow: docs/threads.md).
for (const t0 = performance.now(); performance.now() - t0 < 1500; ) off(), on();
const r: number[] = [];
console.log(`${threads > 1 ? `${model}, ${threads} threads, wall` : 'deep, 1 thread, CPU'} time; load ${os.loadavg()[0].toFixed(2)}`);
for (let i = 0; i < rounds; i++) {
  const a = i % 2 ? timed(on, reps) : timed(off, reps),
    b = i % 2 ? timed(off, reps) : timed(on, reps);
  const [tOff, tOn] = i % 2 ? [b, a] : [a, b];
  r.push(tOn / tOff);
  console.log(`round ${i}: unfused ${tOff.toFixed(3)} ms, gemm_sgd ${tOn.toFixed(3)} ms, ratio ${(tOn / tOff).toFixed(3)}`);
}
console.log(`median fused/unfused ${median(r).toFixed(3)}; load ${os.loadavg()[0].toFixed(2)}`);
process.exit(0);
