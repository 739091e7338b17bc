// The step-bounds rows in paired rounds, one thread, CPU time: each round times the f32 512³
// GEMM kernel (the bound's rate, as bench/adjoint-suite.ts's kernel row calls it), the deep
// 32×256 step compiled and eager, and the digits step compiled, back to back; the ratios to the
// bound are per round and the medians are reported, so load that drifts between rounds hits the
// rate and the steps alike.
//
//   node scripts/run-ts.mjs bench/step-rounds.ts [rounds]
import os from 'node:os';
import * as A from '../src/index.js';
import { Tensor } from '../src/ops/tensor.js';
import { kernel, runtime } from '../src/wasm/module.js';
import { adjointSuite } from './adjoint-suite.js';
import { DEEP_FLOPS, deepCompiledStep, digitsFlops, digitsStep } from './step-bounds.js';

const rounds = Number(process.argv[2] ?? 9);
await A.init({ threads: 1 });

const cpu = (f: () => void, n: number): number => {
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / n;
};

// GEMM 512³ f32 kernel with its own scratch (the bound's rate).
const gemm = kernel('gemm_f32'),
  r = runtime();
const ga = A.randn([512, 512], { seed: 11 }),
  gb = A.randn([512, 512], { seed: 12 }),
  gc = Tensor.empty([512, 512], 'float32');
const sb = r.exports.gemm_scratch_bytes(512, 512, 512, 4),
  sp = r.arena.alloc(sb);
const gemmRun = () => {
  r.exports.gemm_set_scratch(sp, sb);
  gemm(ga.ptr, gb.ptr, gc.ptr, 512, 512, 512, 512, 512, 512, 0, 0, 0);
};

// Deep step compiled (bench/step-bounds.ts's deepCompiledRow) and eager (the training table's).
const deepRun = deepCompiledStep().run;
const eager = (await (await adjointSuite('dev')).make({ kind: 'deep', mode: 'step' })) as { run: () => void };

// Digits compiled step (bench/step-bounds.ts's digitsRow).
const digitsRun = digitsStep().run;

for (let i = 0; i < 5; i++) gemmRun(), deepRun(), eager.run(), digitsRun();
const med = (v: number[]) => [...v].sort((p, q) => p - q)[v.length >> 1];
const rows: Record<string, number[]> = { gflops: [], deepC: [], deepE: [], digits: [], rDeepC: [], rDeepE: [], rDigits: [] };
console.log(`load ${os.loadavg()[0].toFixed(1)} at start`);
for (let i = 0; i < rounds; i++) {
  const g = cpu(gemmRun, 20),
    dc = cpu(deepRun, 10),
    de = cpu(eager.run, 10),
    dg = cpu(digitsRun, 300);
  const gflops = (2 * 512 ** 3) / (g * 1e6),
    deepBound = DEEP_FLOPS / (gflops * 1e6),
    digBound = digitsFlops(32) / (gflops * 1e6);
  rows.gflops.push(gflops), rows.deepC.push(dc), rows.deepE.push(de), rows.digits.push(dg);
  rows.rDeepC.push(dc / deepBound), rows.rDeepE.push(de / deepBound), rows.rDigits.push(dg / digBound);
  console.log(
    `round ${i}: GEMM ${gflops.toFixed(1)} GFLOP/s; deep compiled ${dc.toFixed(2)} ms (${(dc / deepBound).toFixed(3)}×), eager ${de.toFixed(2)} ms (${(de / deepBound).toFixed(3)}×); digits ${(dg * 1e3).toFixed(0)} µs (${(dg / digBound).toFixed(2)}×)`,
  );
}
console.log(
  `medians: GEMM ${med(rows.gflops).toFixed(1)} GFLOP/s; deep compiled ${med(rows.deepC).toFixed(2)} ms, ${med(rows.rDeepC).toFixed(3)}× bound (max ${Math.max(...rows.rDeepC).toFixed(3)}); deep eager ${med(rows.deepE).toFixed(2)} ms, ${med(rows.rDeepE).toFixed(3)}×; digits ${(med(rows.digits) * 1e3).toFixed(0)} µs, ${med(rows.rDigits).toFixed(2)}× (max ${Math.max(...rows.rDigits).toFixed(2)}); load ${os.loadavg()[0].toFixed(1)} at end`,
);
