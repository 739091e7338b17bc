// GEMM throughput benchmark: GFLOP/s of gemm_f32 / gemm_f64 for square sizes and every transpose combo.
// Usage: node bench/gemm.mjs [--cpu | --probe] [path/to/adjoint.wasm] [sizes, e.g. 256,512]
// --cpu times with process CPU time instead of wall time: steadier on a loaded shared machine.
// --probe prints only f32 512³ A·B GFLOP/s from a short run: the speed of the core it runs on
// (bench/capacity.ts runs it under `taskset` on each core in turn).
// Builds nothing: run `npx asc assembly/index.ts --config asconfig.json --target release` first.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const useCpu = args[0] === '--cpu' && args.shift() !== undefined;
const probe = args[0] === '--probe' && args.shift() !== undefined;
const wasmPath = args[0] ?? new URL('../build/adjoint.wasm', import.meta.url);
const sizes = (args[1] ?? '64,128,256,512,1024').split(',').map(Number);
/** Milliseconds of wall time, or of CPU time (user + system) with --cpu. */
const now = useCpu
  ? () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    }
  : () => performance.now();
const combos = [
  [0, 0],
  [0, 1],
  [1, 0],
  [1, 1],
];

const memory = new WebAssembly.Memory({ initial: 2048 });
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), { env: { memory } });
const k = instance.exports;

const align64 = (p) => (p + 63) & ~63;
// Scratch first (sized for any shape), then A, B, C, each 64-byte aligned.
const scratchBytes = k.gemm_scratch_bytes(1 << 30, 1 << 30, 1 << 30, 8);
const scratch = align64(k.heap_base());
k.gemm_set_scratch(scratch, scratchBytes);
const maxN = Math.max(...sizes);
const matBytes = align64(maxN * maxN * 8);
const [pa, pb, pc] = [0, 1, 2].map((i) => align64(scratch + scratchBytes) + i * matBytes);
if (pc + matBytes > memory.buffer.byteLength) throw new Error('benchmark matrices do not fit in memory');

function fill(Arr, ptr, n) {
  const view = new Arr(memory.buffer, ptr, n);
  for (let i = 0; i < n; i++) view[i] = Math.random() * 2 - 1;
}

/** Median seconds per call over `n` samples, with enough calls per sample to last ≥ ~50 ms. */
function time(fn, n = 7) {
  for (let i = 0; i < 3; i++) fn(); // warm-up: tier up to TurboFan, warm caches
  let reps = 1;
  for (;;) {
    const t0 = now();
    for (let i = 0; i < reps; i++) fn();
    if (now() - t0 > 50) break;
    reps *= 2;
  }
  const samples = [];
  for (let s = 0; s < n; s++) {
    const t0 = now();
    for (let i = 0; i < reps; i++) fn();
    samples.push((now() - t0) / 1000 / reps);
  }
  samples.sort((x, y) => x - y);
  return samples[samples.length >> 1];
}

if (probe) {
  fill(Float32Array, pa, 512 * 512);
  fill(Float32Array, pb, 512 * 512);
  const sec = time(() => k.gemm_f32(pa, pb, pc, 512, 512, 512, 512, 512, 512, 0, 0, 0), 3);
  console.log(((2 * 512 ** 3) / sec / 1e9).toFixed(1));
  process.exit(0);
}
for (const [name, Arr, gemm] of [
  ['f32', Float32Array, k.gemm_f32],
  ['f64', Float64Array, k.gemm_f64],
]) {
  fill(Arr, pa, maxN * maxN);
  fill(Arr, pb, maxN * maxN);
  console.log(`\n${name} GFLOP/s (${useCpu ? 'CPU' : 'wall'} time, median of 7)  (rows: size n for n×n×n; columns: transA,transB)`);
  console.log('    n' + combos.map(([ta, tb]) => `     ${ta}${tb}`).join(''));
  for (const n of sizes) {
    const row = combos.map(([ta, tb]) => {
      const sec = time(() => gemm(pa, pb, pc, n, n, n, n, n, n, ta, tb, 0));
      return ((2 * n * n * n) / sec / 1e9).toFixed(1).padStart(7);
    });
    console.log(String(n).padStart(5) + row.join(''));
  }
}
