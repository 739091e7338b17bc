// The threads benchmark's workloads, runnable in Node and in a browser page alike: GEMM n×n×n
// (f32) for n in SIZES and one training step of the MLP 784-256-256-10 (batch 128, ReLU,
// cross-entropy, SGD; data from bench/workloads.ts), for adjoint and for TF.js's wasm backend.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { MLP, mlpData } from './workloads.js';

export const SIZES = [256, 512, 1024];
export type Lib = 'adjoint' | 'tfjs-wasm';
/** Median seconds per call, and how it was sampled. */
export interface Time {
  median: number;
  min: number;
  samples: number;
  reps: number;
}
export interface Result {
  lib: Lib;
  threads: number;
  version: string;
  where: string;
  gemm: Record<number, Time>;
  mlp: Time;
}

/** Warm up, batch calls into samples of ≥ 20 ms, and keep the median of up to 15 samples within `budgetMs`. */
export function time(fn: () => void, budgetMs: number): Time {
  let t = performance.now();
  fn();
  fn();
  const one = (performance.now() - t) / 2;
  const reps = Math.max(1, Math.ceil(20 / Math.max(one, 1e-3)));
  const samples: number[] = [];
  const t0 = performance.now();
  while (samples.length < 3 || (samples.length < 15 && performance.now() - t0 < budgetMs)) {
    t = performance.now();
    for (let i = 0; i < reps; i++) fn();
    samples.push((performance.now() - t) / 1000 / reps);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[samples.length >> 1], min: samples[0], samples: samples.length, reps };
}

/** Square f32 operands with values in [-1, 1). */
function square(n: number, seed: number): Float32Array {
  const out = new Float32Array(n * n);
  let s = seed;
  for (let i = 0; i < out.length; i++) out[i] = (s = (s * 1103515245 + 12345) >>> 0) / 2 ** 31 - 1;
  return out;
}

/** adjoint, already initialised with the thread count to measure. */
export function benchAdjoint(A: typeof import('../src/index.js')): Pick<Result, 'gemm' | 'mlp'> {
  const gemm: Record<number, Time> = {};
  for (const n of SIZES) {
    const a = A.tensor(square(n, 1), { shape: [n, n] }),
      b = A.tensor(square(n, 2), { shape: [n, n] });
    gemm[n] = time(() => A.matmul(a, b).dispose(), 600);
    a.dispose();
    b.dispose();
  }
  const d = mlpData();
  const x = A.tensor(d.x, { shape: [MLP.batch, MLP.layers[0]] });
  const ps = d.layers.flatMap((l) => [
    A.tensor(l.w, { shape: [l.fanIn, l.fanOut], requiresGrad: true }),
    A.tensor(l.b, { shape: [l.fanOut], requiresGrad: true }),
  ]);
  const opt = new A.optim.SGD(ps, { lr: MLP.lr });
  const mlp = time(() => {
    opt.zeroGrad();
    A.tidy(() => {
      let h = x;
      for (let i = 0; i < ps.length; i += 2) {
        h = A.add(A.matmul(h, ps[i]), ps[i + 1]);
        if (i + 2 < ps.length) h = A.relu(h);
      }
      const l = A.crossEntropy(h, d.labels);
      l.backward();
      l.item();
    });
    opt.step();
  }, 1500);
  return { gemm, mlp };
}

/** TF.js with its wasm backend already selected. */
export function benchTf(tf: any): Pick<Result, 'gemm' | 'mlp'> {
  const gemm: Record<number, Time> = {};
  for (const n of SIZES) {
    const a = tf.tensor2d(square(n, 1), [n, n]),
      b = tf.tensor2d(square(n, 2), [n, n]);
    gemm[n] = time(() => {
      const c = tf.matMul(a, b);
      c.dataSync();
      c.dispose();
    }, 600);
    a.dispose();
    b.dispose();
  }
  const d = mlpData();
  const x = tf.tensor2d(d.x, [MLP.batch, MLP.layers[0]]);
  const y = tf.oneHot(tf.tensor1d(d.labels, 'int32'), MLP.layers[MLP.layers.length - 1]).toFloat();
  const ps = d.layers.flatMap((l) => [tf.variable(tf.tensor2d(l.w, [l.fanIn, l.fanOut])), tf.variable(tf.tensor1d(l.b))]);
  const opt = tf.train.sgd(MLP.lr);
  const loss = () => {
    let h = x;
    for (let i = 0; i < ps.length; i += 2) {
      h = tf.add(tf.matMul(h, ps[i]), ps[i + 1]);
      if (i + 2 < ps.length) h = tf.relu(h);
    }
    return tf.losses.softmaxCrossEntropy(y, h);
  };
  const mlp = time(() => {
    const c = opt.minimize(loss, true, ps);
    c.dataSync();
    c.dispose();
  }, 1500);
  return { gemm, mlp };
}
