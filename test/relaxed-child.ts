// Child process for test/relaxed.test.ts: init() is once per process, so each kernel build and
// thread count runs in a process of its own (relaxed SIMD is switched on or off by the V8 flag
// the parent passes). Prints one JSON line: backend(), the pool's dispatch count and a SHA-256
// of the final weights (and the weights) of a few SGD steps of a small conv + MLP net in f32 and f64.
// Usage: node [--experimental-wasm-relaxed-simd] <bundle> [--threads N] [--relaxed]
import { createHash } from 'node:crypto';
import * as A from '../src/index.js';
import { threadStats } from '../src/wasm/congestion.js';
import { thresholds } from '../src/wasm/split.js';

const argv = process.argv.slice(2);
const at = argv.indexOf('--threads');
const threads = at < 0 ? 1 : Number(argv[at + 1]);

const weights: Record<string, number[]> = {};

/** Weight bytes' digest after 3 SGD steps of conv3×3/2 → relu → dense → crossEntropy (the weights go to `weights`). */
function train(dtype: 'float32' | 'float64'): string {
  const x = A.randn([6, 3, 13, 11], { seed: 1, dtype });
  const labels = [0, 3, 1, 4, 2, 1];
  let ps = [
    A.randn([5, 3, 3, 3], { seed: 2, dtype }).mul(0.3),
    A.zeros([5], { dtype }),
    A.randn([5 * 6 * 5, 5], { seed: 3, dtype }).mul(0.1),
  ];
  for (let s = 0; s < 3; s++) {
    ps = A.tidy(() => {
      for (const p of ps) p.requiresGrad = true;
      const h = A.relu(A.conv2d(x, ps[0], ps[1], { stride: 2 })).reshape([6, -1]);
      A.crossEntropy(A.matmul(h, ps[2]), labels).backward();
      const next = ps.map((p) => A.keep(A.sub(p, A.mul(p.grad!, 0.1)).detach()));
      for (const p of ps) p.dispose();
      return next;
    });
  }
  const hash = createHash('sha256');
  for (const p of ps) hash.update(p.toArray());
  weights[dtype] = ps.flatMap((p) => Array.from(p.toArray()));
  for (const p of ps) p.dispose();
  return hash.digest('hex');
}

await A.init({ threads, relaxedSimd: argv.includes('--relaxed') });
thresholds.gemm = 0; // split every GEMM the pool can split, however small
console.log(JSON.stringify({ ...A.backend(), f32: train('float32'), f64: train('float64'), dispatches: threadStats.dispatches, weights }));
