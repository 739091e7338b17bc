// The deep 32×256 compiled step (bench/step-bounds.ts's deepCompiledStep) built with and without
// the gemm_sgd peephole (src/compile/epilogues.ts: weight-gradient GEMM and plain SGD step as one
// launch), one thread, CPU time, in alternating paired rounds; prints the median per-round ratio.
//
//   taskset -c 1 node scripts/run-ts.mjs bench/gemm-sgd-ab.ts [rounds]
import os from 'node:os';
import * as A from '../src/index.js';
import { epilogues } from '../src/compile/epilogues.js';
import { deepCompiledStep } from './step-bounds.js';
const rounds = Number(process.argv[2] ?? 9);
await A.init({ threads: 1 });
const cpu = (f: () => void, n: number): number => {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / n;
};
epilogues.sgd = false;
const off = deepCompiledStep().run;
for (let i = 0; i < 3; i++) off();
epilogues.sgd = true;
const on = deepCompiledStep().run;
for (let i = 0; i < 3; i++) on();
const r: number[] = [];
console.log(`load ${os.loadavg()[0].toFixed(2)}`);
for (let i = 0; i < rounds; i++) {
  const a = i % 2 ? cpu(on, 10) : cpu(off, 10),
    b = i % 2 ? cpu(off, 10) : cpu(on, 10);
  const [tOff, tOn] = i % 2 ? [b, a] : [a, b];
  r.push(tOn / tOff);
  console.log(`round ${i}: unfused ${tOff.toFixed(2)} ms, gemm_sgd ${tOn.toFixed(2)} ms, ratio ${(tOn / tOff).toFixed(3)}`);
}
console.log(`median fused/unfused ${[...r].sort((p, q) => p - q)[r.length >> 1].toFixed(3)}; load ${os.loadavg()[0].toFixed(2)}`);
