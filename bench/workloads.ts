// The workloads every library runs, and the data they share: the same inputs, labels and initial
// weights (plain Float32Arrays) are handed to adjoint and to each peer, so the numbers compare
// the same computation. Weights use the [in, out] layout (y = x·W + b) for every library.
import { randomLabels, randomValues } from './timing.js';

export type Dtype = 'float32' | 'float64';
export type GemmLevel = 'api' | 'kernel';
export type Mode = 'step' | 'forward';
export type OpKind = 'add' | 'tanh' | 'matmul4' | 'addChain' | 'addRecord' | 'addJit';

export type Workload =
  | { kind: 'gemm'; n: number; dtype: Dtype; ta: boolean; tb: boolean; level: GemmLevel }
  | { kind: 'op'; op: OpKind }
  | { kind: 'mlp'; mode: Mode }
  | { kind: 'deep'; mode: Mode }
  | { kind: 'cnn'; mode: Mode };

/** What a library hands back for one workload: run() does one call, results really computed. */
export interface Runner {
  run: () => void | Promise<void>;
  /** Operations per run() call (per-op rows divide by it). */
  perCall?: number;
  dispose?: () => void;
  /** Forward rows: the loss value at the initial parameters (a cross-library sanity check). */
  loss?: () => number | Promise<number>;
}
/** null: the library cannot do this workload; a string: skipped, with the reason. */
export type Made = Runner | string | null;

export interface Suite {
  id: string;
  label: string;
  version: string;
  /** Called before each of this suite's measurements (tfjs: select its backend). */
  activate?: () => Promise<void>;
  make: (w: Workload) => Made | Promise<Made>;
}

export const GEMM_SIZES = [64, 128, 256, 512, 1024];
export const OP_CHAIN = 1000;

// MLP 784-256-256-10, batch 128, ReLU, softmax cross-entropy, SGD.
export const MLP = { batch: 128, layers: [784, 256, 256, 10], lr: 0.01 };
// Deep MLP: 32 hidden layers 256→256 with tanh, batch 64, MSE to a fixed target, SGD.
export const DEEP = { batch: 64, width: 256, depth: 32, lr: 0.001 };
// Small CNN (NCHW for adjoint/jax-js, NHWC for TF.js): [32,1,28,28] → conv 3×3/2 pad 1 → 8ch
// → relu → conv 3×3/2 pad 1 → 16ch → relu → flatten 784 → linear 10 → cross-entropy, SGD.
export const CNN = { batch: 32, hw: 28, c1: 8, c2: 16, k: 3, stride: 2, pad: 1, classes: 10, lr: 0.01 };

export interface Layer {
  w: Float32Array;
  b: Float32Array;
  fanIn: number;
  fanOut: number;
}

function layers(sizes: number[], seed: number): Layer[] {
  const out: Layer[] = [];
  for (let i = 0; i + 1 < sizes.length; i++) {
    const [fanIn, fanOut] = [sizes[i], sizes[i + 1]];
    const scale = 1 / Math.sqrt(fanIn);
    out.push({ w: randomValues(fanIn * fanOut, seed + 2 * i, scale), b: randomValues(fanOut, seed + 2 * i + 1, scale), fanIn, fanOut });
  }
  return out;
}

let mlpCache: { x: Float32Array; labels: Int32Array; layers: Layer[] } | null = null;
export function mlpData() {
  mlpCache ??= {
    x: randomValues(MLP.batch * MLP.layers[0], 101),
    labels: randomLabels(MLP.batch, MLP.layers[MLP.layers.length - 1], 102),
    layers: layers(MLP.layers, 200),
  };
  return mlpCache;
}

let deepCache: { x: Float32Array; target: Float32Array; layers: Layer[] } | null = null;
export function deepData() {
  deepCache ??= {
    x: randomValues(DEEP.batch * DEEP.width, 301),
    target: randomValues(DEEP.batch * DEEP.width, 302, 0.5),
    layers: layers(Array(DEEP.depth + 1).fill(DEEP.width), 400),
  };
  return deepCache;
}

export const cnnOut1 = Math.floor((CNN.hw + 2 * CNN.pad - CNN.k) / CNN.stride) + 1; // 14
export const cnnOut2 = Math.floor((cnnOut1 + 2 * CNN.pad - CNN.k) / CNN.stride) + 1; // 7
let cnnCache: {
  x: Float32Array;
  labels: Int32Array;
  w1: Float32Array;
  w2: Float32Array;
  b1: Float32Array;
  b2: Float32Array;
  fc: Layer;
} | null = null;
/** CNN data; conv filters are stored OIHW ([out, in, kh, kw]). */
export function cnnData() {
  const { batch, hw, c1, c2, k, classes } = CNN;
  cnnCache ??= {
    x: randomValues(batch * hw * hw, 501),
    labels: randomLabels(batch, classes, 502),
    w1: randomValues(c1 * 1 * k * k, 503, 1 / Math.sqrt(k * k)),
    b1: randomValues(c1, 504, 0.1),
    w2: randomValues(c2 * c1 * k * k, 505, 1 / Math.sqrt(c1 * k * k)),
    b2: randomValues(c2, 506, 0.1),
    fc: layers([c2 * cnnOut2 * cnnOut2, classes], 507)[0],
  };
  return cnnCache;
}

/** Converts an NCHW array to NHWC, and OIHW filters to HWIO (TF.js layouts). */
export function nchwToNhwc(x: Float32Array, n: number, c: number, h: number, w: number): Float32Array {
  const out = new Float32Array(x.length);
  for (let a = 0; a < n; a++)
    for (let ch = 0; ch < c; ch++)
      for (let i = 0; i < h; i++)
        for (let j = 0; j < w; j++) {
          out[((a * h + i) * w + j) * c + ch] = x[((a * c + ch) * h + i) * w + j];
        }
  return out;
}
export function oihwToHwio(f: Float32Array, o: number, i: number, kh: number, kw: number): Float32Array {
  const out = new Float32Array(f.length);
  for (let a = 0; a < o; a++)
    for (let b = 0; b < i; b++)
      for (let y = 0; y < kh; y++)
        for (let x = 0; x < kw; x++) {
          out[((y * kw + x) * i + b) * o + a] = f[((a * i + b) * kh + y) * kw + x];
        }
  return out;
}
/** The fc layer of the CNN sees NCHW-flattened features; for NHWC flattening permute its rows. */
export function fcRowsNchwToNhwc(w: Float32Array, c: number, h: number, wd: number, out: number): Float32Array {
  const res = new Float32Array(w.length);
  for (let ch = 0; ch < c; ch++)
    for (let i = 0; i < h; i++)
      for (let j = 0; j < wd; j++) {
        const src = (ch * h + i) * wd + j,
          dst = (i * wd + j) * c + ch;
        res.set(w.subarray(src * out, src * out + out), dst * out);
      }
  return res;
}
