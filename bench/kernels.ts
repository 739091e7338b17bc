// Kernel-level timings for the elementwise transcendentals and the fused VJP kernels, plus the
// training steps they feed (deep tanh MLP, MLP with cross-entropy). One thread. Usage:
//   node scripts/run-ts.mjs bench/kernels.ts [--quick]
// Kernels missing from the build (an older checkout) are reported as such, so the same file
// measures before and after.
import * as A from '../src/index.js';
import { Tensor } from '../src/ops/tensor.js';
import { runtime } from '../src/wasm/module.js';
import { timeSync, type Timing } from './timing.js';
import { adjointSuite } from './adjoint-suite.js';
import type { Runner } from './workloads.js';

const quick = process.argv.includes('--quick');
const budgetMs = quick ? 120 : 400;
// Many short samples: on a shared machine the fastest of them is the uncontended figure.
const opts = { budgetMs, sampleMs: 2, maxSamples: 400 };
const N = 64 * 256; // one hidden layer of the deep MLP: [batch 64, width 256]

await A.init({ threads: 1 });
const rt = runtime();
const rows: { name: string; value: string }[] = [];
const report = (name: string, value: string) => {
  rows.push({ name, value });
  console.log(`${name.padEnd(44)} ${value}`);
};

/** ns per element of the unary kernel `name` over N elements of inputs spread over [lo, hi]. */
function unaryKernel(name: string, dtype: A.DType, lo: number, hi: number): void {
  const k = rt.exports[name];
  if (typeof k !== 'function') return report(name, 'not in this build');
  const x = A.tensor(
    Array.from({ length: N }, (_, i) => lo + ((hi - lo) * ((i * 7919) % N)) / N),
    { dtype, shape: [N] },
  );
  const y = Tensor.empty([N], dtype);
  const t = timeSync(() => k(x.ptr, y.ptr, N, 0, 0), opts);
  report(
    `${name} [${N}]`,
    `${((t.min * 1e9) / N).toFixed(2)} ns/elem  (min ${(t.min * 1e3).toFixed(4)} ms, median ${(t.median * 1e3).toFixed(4)}, cpu ${(t.cpuMedian * 1e3).toFixed(4)})`,
  );
  x.dispose();
  y.dispose();
}

/** Minimum, median and CPU-median ms: the machine is shared, so the minimum is the steadiest figure. */
const ms = (t: Timing) =>
  `min ${(t.min * 1e3).toFixed(4)} ms, median ${(t.median * 1e3).toFixed(4)}, cpu ${(t.cpuMedian * 1e3).toFixed(4)}`;
function timed(name: string, fn: () => void): void {
  report(name, ms(timeSync(fn, opts)));
}

for (const dtype of ['float32', 'float64'] as const) {
  const s = dtype === 'float32' ? 'f32' : 'f64';
  unaryKernel(`exp_${s}`, dtype, -10, 10);
  unaryKernel(`log_${s}`, dtype, 0.01, 100);
  unaryKernel(`tanh_${s}`, dtype, -4, 4);
  unaryKernel(`sigmoid_${s}`, dtype, -8, 8);
  unaryKernel(`softplus_${s}`, dtype, -8, 8);
}

// Op level: forward + backward of the pieces the fused kernels replace.
const x = A.keep(A.randn([64, 256], { seed: 1 }));
const w = A.keep(A.randn([64, 256], { seed: 2 }));
const gamma = A.keep(A.randn([256], { seed: 3 })),
  beta = A.keep(A.randn([256], { seed: 4 }));
const logits = A.keep(A.randn([128, 10], { seed: 5 }));
const labels = Array.from({ length: 128 }, (_, i) => (i * 7) % 10);
// Kernels run synchronously: a result exists once the call returns, no read-back needed.
const gradOf = (f: (x: A.Tensor) => A.Tensor) => () =>
  A.tidy(() => {
    A.grad(f)(x);
  });
timed(
  'tanh forward+backward [64,256] (op level)',
  gradOf((v) => A.sum(A.mul(A.tanh(v), w))),
);
timed(
  'sigmoid forward+backward [64,256]',
  gradOf((v) => A.sum(A.mul(A.sigmoid(v), w))),
);
timed(
  'relu forward+backward [64,256]',
  gradOf((v) => A.sum(A.mul(A.relu(v), w))),
);
timed('layerNorm forward [64,256]', () =>
  A.tidy(() => {
    A.layerNorm(x, gamma, beta);
  }),
);
timed(
  'layerNorm forward+backward [64,256]',
  gradOf((v) => A.sum(A.mul(A.layerNorm(v, gamma, beta), w))),
);
timed('crossEntropy forward+backward [128,10]', () =>
  A.tidy(() => {
    A.grad((l: A.Tensor) => A.crossEntropy(l, labels))(logits);
  }),
);

// Whole steps, from the benchmark suite (same workloads as npm run bench).
const suite = await adjointSuite('local');
for (const [name, w] of [
  ['deep tanh MLP 32x256 b64 step', { kind: 'deep', mode: 'step' }],
  ['deep tanh MLP 32x256 b64 forward', { kind: 'deep', mode: 'forward' }],
  ['MLP 784-256-256-10 b128 step', { kind: 'mlp', mode: 'step' }],
] as const) {
  const r = (await suite.make(w)) as Runner;
  const t = timeSync(() => void r.run(), { ...opts, budgetMs: budgetMs * 4, maxSamples: 60 });
  report(name, ms(t));
  r.dispose?.();
}
