// The op spec table (STYLE §7, after JAX's grad_test_spec): one row per public op variant with
// its input shapes, an input domain away from kinks and singularities, and a float64 JS
// reference. ops.test.ts and forward.test.ts run every check over every row.
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';
import * as R from './ref.js';
import type { Nd } from './ref.js';
import { dense } from '../src/ops/dense.js';
import { lstmCell, gruCell } from '../src/ops/rnn.js';
import { lstmSequence, gruSequence } from '../src/ops/rnnseq.js';
import { SEQ_SPECS } from './seq-specs.js';
import { rng } from './rng.js';
export { rng };

/** n input values drawn from a domain. */
export type Domain = (n: number, r: () => number) => number[];

/** Uniform on [lo, hi], resampled within `gap` of any point in `avoid` (kinks, poles, zero gradients). */
export const uniform =
  (lo: number, hi: number, avoid: readonly number[] = [], gap = 0.1): Domain =>
  (n, r) =>
    Array.from({ length: n }, () => {
      for (;;) {
        const v = lo + (hi - lo) * r();
        if (avoid.every((a) => Math.abs(v - a) > gap)) return v;
      }
    });

/** Values at least 0.2 apart in shuffled order (max without ties). */
const distinct =
  (lo: number, hi: number): Domain =>
  (n, r) => {
    const step = (hi - lo) / Math.max(1, n);
    const vs = Array.from({ length: n }, (_, i) => lo + step * (i + 0.25 + 0.5 * r()));
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [vs[i], vs[j]] = [vs[j], vs[i]];
    }
    return vs;
  };

/** k + offset + [0, 0.4) for integer k in [-2, 1]: band(0) and band(0.5) never come within 0.1 (maximum without ties). */
const band =
  (offset: number): Domain =>
  (n, r) =>
    Array.from({ length: n }, () => Math.floor(r() * 4) - 2 + offset + 0.4 * r());

const STD = uniform(-2, 2, [0], 0.2);
/** Logits of similar size, so no softmax weight (a gradient component) is tiny next to the value. */
const SOFT = uniform(-1, 1);

export interface OpSpec {
  name: string;
  f: (...xs: Tensor[]) => Tensor;
  ref: (...xs: Nd[]) => Nd;
  shapes: number[][];
  /** One domain per input (the last repeats); STD by default. */
  domain?: Domain[];
  /** Elementwise rows also run at kernel-tail sizes; binary ones under broadcasting too. */
  kind?: 'unary' | 'binary';
}

const un = (name: string, f: (x: Tensor) => Tensor, r: (v: number) => number, domain: Domain = STD): OpSpec => ({
  name,
  f,
  ref: (x) => R.map(x, r),
  shapes: [[3, 4]],
  domain: [domain],
  kind: 'unary',
});
const bin = (name: string, f: (a: Tensor, b: Tensor) => Tensor, r: (u: number, v: number) => number, domain?: Domain[]): OpSpec => ({
  name,
  f,
  ref: (a, b) => R.zip(a, b, r),
  shapes: [
    [3, 4],
    [3, 4],
  ],
  domain,
  kind: 'binary',
});
const op = (name: string, shapes: number[][], f: (...xs: Tensor[]) => Tensor, ref: (...xs: Nd[]) => Nd, domain?: Domain[]): OpSpec => ({
  name,
  f,
  ref,
  shapes,
  domain,
});

const X3 = [[2, 3, 4]];
const DENSE_ACT = { none: (v: number) => v, relu: (v: number) => Math.max(v, 0), tanh: Math.tanh, sigmoid: R.sigmoid };
const labels = [1, 0, 4, 2];

const ATT = [
  [2, 3, 4],
  [2, 5, 4],
  [2, 5, 3],
];
/** softmax(q·kᵀ·scale + mask)·v over [B, T, ·] operands. */
function refAttention(q: Nd, k: Nd, v: Nd, mask?: Nd, scale = 1 / Math.sqrt(q.shape[2])): Nd {
  let s = R.map(R.matmul(q, R.transpose(k, [0, 2, 1])), (x) => x * scale);
  if (mask) s = R.zip(s, mask, (a, b) => a + b);
  return R.matmul(R.softmax(s), v);
}

const sig = (v: number) => 1 / (1 + Math.exp(-v));
/** [h' | c'] of an LSTM step from gate pre-activations xg, hg [B, 4H] and c [B, H]. */
function refLstmCell(xg: Nd, hg: Nd, c: Nd): Nd {
  const [B, H] = c.shape,
    g = (b: number, k: number, u: number) => xg.data[b * 4 * H + k * H + u] + hg.data[b * 4 * H + k * H + u];
  const c2 = (b: number, u: number) => sig(g(b, 1, u)) * c.data[b * H + u] + sig(g(b, 0, u)) * Math.tanh(g(b, 2, u));
  return R.nd(
    [B, 2 * H],
    Array.from({ length: B * 2 * H }, (_, i) => {
      const b = Math.floor(i / (2 * H)),
        j = i % (2 * H);
      return j < H ? sig(g(b, 3, j)) * Math.tanh(c2(b, j)) : c2(b, j - H);
    }),
  );
}
/** h' of a GRU step from xg, hg [B, 3H] and h [B, H]. */
function refGruCell(xg: Nd, hg: Nd, h: Nd): Nd {
  const [B, H] = h.shape,
    x = (b: number, k: number, u: number) => xg.data[b * 3 * H + k * H + u],
    y = (b: number, k: number, u: number) => hg.data[b * 3 * H + k * H + u];
  return R.nd(
    [B, H],
    Array.from({ length: B * H }, (_, i) => {
      const b = Math.floor(i / H),
        u = i % H;
      const r = sig(x(b, 0, u) + y(b, 0, u)),
        z = sig(x(b, 1, u) + y(b, 1, u)),
        n = Math.tanh(x(b, 2, u) + r * y(b, 2, u));
      return (1 - z) * n + z * h.data[b * H + u];
    }),
  );
}

/** A recurrent layer over T steps from a cell reference: hg_t = h·W_hhᵀ + b_hh, y_t = [cell(xg_t, hg_t, state) | hg_t] ([h | c | hg] rows for the LSTM, [h | hg] for the GRU). */
function refSeq(kind: 'lstm' | 'gru', xg: Nd, w: Nd, b: Nd, h0: Nd, c0?: Nd): Nd {
  const [T, B, GH] = xg.shape,
    H = h0.shape[1];
  let h: number[] = [...h0.data],
    c: number[] = c0 ? [...c0.data] : [];
  const out: number[] = [];
  for (let t = 0; t < T; t++) {
    const hg = Array.from({ length: B * GH }, (_, i) => {
      const bb = Math.floor(i / GH),
        r = i % GH;
      return Array.from({ length: H }, (_, j) => h[bb * H + j] * w.data[r * H + j]).reduce((a, v) => a + v, 0) + b.data[r];
    });
    const xt = R.nd([B, GH], xg.data.slice(t * B * GH, (t + 1) * B * GH)),
      ht = R.nd([B, GH], hg);
    const y = kind === 'lstm' ? refLstmCell(xt, ht, R.nd([B, H], c)) : refGruCell(xt, ht, R.nd([B, H], h));
    const W = y.data.length / B;
    for (let bb = 0; bb < B; bb++) out.push(...y.data.slice(bb * W, (bb + 1) * W), ...hg.slice(bb * GH, (bb + 1) * GH));
    h = kind === 'lstm' ? Array.from({ length: B * H }, (_, i) => y.data[Math.floor(i / H) * 2 * H + (i % H)]) : [...y.data];
    if (kind === 'lstm') c = Array.from({ length: B * H }, (_, i) => y.data[Math.floor(i / H) * 2 * H + H + (i % H)]);
  }
  return R.nd([T, B, (kind === 'lstm' ? 2 : 1) * H + GH], out);
}

export const SPECS: OpSpec[] = [
  // Binary
  bin('add', A.add, (u, v) => u + v),
  bin('sub', A.sub, (u, v) => u - v),
  bin('mul', A.mul, (u, v) => u * v),
  bin('div', A.div, (u, v) => u / v, [STD, uniform(-2, 2, [0], 0.5)]),
  bin('pow', A.pow, (u, v) => u ** v, [uniform(0.5, 2), uniform(-1.5, 1.5, [0])]),
  bin('maximum', A.maximum, Math.max, [band(0), band(0.5)]),
  bin('minimum', A.minimum, Math.min, [band(0), band(0.5)]),
  // Unary
  un('neg', A.neg, (v) => -v),
  un('exp', A.exp, Math.exp),
  un('log', A.log, Math.log, uniform(0.5, 3)),
  un('sqrt', A.sqrt, Math.sqrt, uniform(0.5, 3)),
  un('abs', A.abs, Math.abs),
  un('square', A.square, (v) => v * v),
  un('sin', A.sin, Math.sin, uniform(-1.2, 1.2)),
  un('cos', A.cos, Math.cos, uniform(0.3, 2.8)),
  un('tanh', A.tanh, Math.tanh, uniform(-1.5, 1.5)),
  un('sigmoid', A.sigmoid, R.sigmoid, uniform(-3, 3)),
  un('relu', A.relu, (v) => Math.max(v, 0)),
  un('softplus', A.softplus, R.softplus, uniform(-3, 3)),
  un(
    'leakyRelu',
    (x) => A.leakyRelu(x),
    (v) => (v > 0 ? v : 0.01 * v),
  ),
  un(
    'leakyRelu(0.2)',
    (x) => A.leakyRelu(x, 0.2),
    (v) => (v > 0 ? v : 0.2 * v),
  ),
  un('gelu', A.gelu, R.gelu, uniform(-2, 2, [-0.75], 0.15)),
  un('gelu none', (x) => A.gelu(x, { approximate: 'none' }), R.geluExact, uniform(-2, 2, [-0.75], 0.15)),
  un('erf', A.erf, R.erf, uniform(-2.5, 2.5)),
  un(
    'clamp',
    (x) => A.clamp(x, -0.5, 0.7),
    (v) => Math.min(Math.max(v, -0.5), 0.7),
    uniform(-2, 2, [-0.5, 0.7]),
  ),
  // Reductions
  op(
    'sum',
    X3,
    (x) => A.sum(x),
    (x) => R.sum(x),
  ),
  op(
    'sum axis 1',
    X3,
    (x) => A.sum(x, 1),
    (x) => R.sum(x, 1),
  ),
  op(
    'sum axis -1 keepdims',
    X3,
    (x) => A.sum(x, -1, true),
    (x) => R.sum(x, -1, true),
  ),
  op(
    'sum axes [0,2]',
    X3,
    (x) => A.sum(x, [0, 2]),
    (x) => R.sum(x, [0, 2]),
  ),
  op(
    'mean',
    X3,
    (x) => A.mean(x),
    (x) => R.mean(x),
  ),
  op(
    'mean axis 0',
    X3,
    (x) => A.mean(x, 0),
    (x) => R.mean(x, 0),
  ),
  op(
    'mean axes [1,2] keepdims',
    X3,
    (x) => A.mean(x, [1, 2], true),
    (x) => R.mean(x, [1, 2], true),
  ),
  op(
    'max',
    X3,
    (x) => A.max(x),
    (x) => R.max(x),
    [distinct(-3, 3)],
  ),
  op(
    'max axis 1',
    X3,
    (x) => A.max(x, 1),
    (x) => R.max(x, 1),
    [distinct(-3, 3)],
  ),
  op(
    'max axis -1',
    X3,
    (x) => A.max(x, -1),
    (x) => R.max(x, -1),
    [distinct(-3, 3)],
  ),
  op(
    'max axes [0,2] keepdims',
    X3,
    (x) => A.max(x, [0, 2], true),
    (x) => R.max(x, [0, 2], true),
    [distinct(-3, 3)],
  ),
  op(
    'logsumexp',
    X3,
    (x) => A.logsumexp(x),
    (x) => R.logsumexp(x),
    [SOFT],
  ),
  op(
    'logsumexp axis -1',
    X3,
    (x) => A.logsumexp(x, -1),
    (x) => R.logsumexp(x, -1),
    [SOFT],
  ),
  op(
    'logsumexp axis 0 keepdims',
    X3,
    (x) => A.logsumexp(x, 0, true),
    (x) => R.logsumexp(x, 0, true),
    [SOFT],
  ),
  // Shape
  op(
    'reshape',
    X3,
    (x) => A.reshape(x, [4, -1]),
    (x) => R.reshape(x, [4, 6]),
  ),
  op(
    'transpose',
    X3,
    (x) => A.transpose(x),
    (x) => R.transpose(x),
  ),
  op(
    'transpose perm',
    X3,
    (x) => A.transpose(x, [2, 0, 1]),
    (x) => R.transpose(x, [2, 0, 1]),
  ),
  op(
    'broadcastTo',
    [[3, 1]],
    (x) => A.broadcastTo(x, [2, 3, 4]),
    (x) => R.broadcastTo(x, [2, 3, 4]),
  ),
  op(
    'concat axis 0',
    [
      [2, 3],
      [1, 3],
    ],
    (a, b) => A.concat([a, b]),
    (a, b) => R.concat([a, b]),
  ),
  op(
    'concat axis -1',
    [
      [2, 1],
      [2, 3],
      [2, 2],
    ],
    (...xs) => A.concat(xs, -1),
    (...xs) => R.concat(xs, 1),
  ),
  op(
    'slice',
    [[3, 4, 5]],
    (x) => A.slice(x, [1, 0, 2], [2, 3, -1]),
    (x) => R.slice(x, [1, 0, 2], [2, 3, 3]),
  ),
  op(
    'gather axis 0',
    [[4, 3]],
    (x) => A.gather(x, [3, 0, 3, 1]),
    (x) => R.gather(x, [3, 0, 3, 1]),
  ),
  op(
    'gather axis 1',
    [[2, 5]],
    (x) => A.gather(x, new Int32Array([4, 4, 0]), 1),
    (x) => R.gather(x, [4, 4, 0], 1),
  ),
  // Linear algebra
  op('matmul 1-D·1-D', [[5], [5]], A.matmul, R.matmul),
  op('matmul 1-D·2-D', [[4], [4, 3]], A.matmul, R.matmul),
  op('matmul 2-D·1-D', [[3, 4], [4]], A.matmul, R.matmul),
  op(
    'matmul 2-D',
    [
      [3, 4],
      [4, 5],
    ],
    A.matmul,
    R.matmul,
  ),
  op(
    'matmul batched',
    [
      [2, 1, 3, 4],
      [3, 4, 2],
    ],
    A.matmul,
    R.matmul,
  ),
  // Fused dense layer act(x·Wᵀ + b) (src/ops/dense.ts: nn.Linear's op), one row per activation
  ...(['none', 'relu', 'tanh', 'sigmoid'] as const).map((act) =>
    op(
      `dense ${act}`,
      [[3, 5], [4, 5], [4]],
      (x, w, b) => dense(x, w, b, act),
      (x, w, b) =>
        R.map(
          R.zip(R.matmul(x, R.transpose(w)), R.broadcastTo(b, [3, 4]), (u, v) => u + v),
          DENSE_ACT[act],
        ),
    ),
  ),
  // Neural
  op(
    'softmax',
    [[3, 5]],
    (x) => A.softmax(x),
    (x) => R.softmax(x),
  ),
  op(
    'softmax axis 0',
    [[3, 4]],
    (x) => A.softmax(x, 0),
    (x) => R.softmax(x, 0),
  ),
  op(
    'logSoftmax',
    [[3, 5]],
    (x) => A.logSoftmax(x),
    (x) => R.logSoftmax(x),
  ),
  op(
    'logSoftmax axis 1',
    X3,
    (x) => A.logSoftmax(x, 1),
    (x) => R.logSoftmax(x, 1),
  ),
  op(
    'crossEntropy',
    [[4, 5]],
    (x) => A.crossEntropy(x, labels),
    (x) => R.crossEntropy(x, labels),
  ),
  op(
    'crossEntropy sum',
    [[4, 5]],
    (x) => A.crossEntropy(x, labels, { reduction: 'sum' }),
    (x) => R.crossEntropy(x, labels, 'sum'),
  ),
  op(
    'mseLoss',
    [
      [3, 4],
      [3, 4],
    ],
    (p, t) => A.mseLoss(p, t),
    (p, t) => R.mseLoss(p, t),
  ),
  op(
    'mseLoss none',
    [
      [3, 4],
      [3, 4],
    ],
    (p, t) => A.mseLoss(p, t, { reduction: 'none' }),
    (p, t) => R.mseLoss(p, t, 'none'),
  ),
  op(
    'layerNorm',
    [[3, 5]],
    (x) => A.layerNorm(x),
    (x) => R.layerNorm(x),
  ),
  op(
    'layerNorm weight',
    [[3, 5], [5]],
    (x, w) => A.layerNorm(x, w),
    (x, w) => R.layerNorm(x, w),
  ),
  op(
    'layerNorm weight bias',
    [[3, 5], [5], [5]],
    (x, w, b) => A.layerNorm(x, w, b),
    (x, w, b) => R.layerNorm(x, w, b),
  ),
  // Fused attention (one primitive each way; Tq ≠ Tk). Causal masking is tested in attention.test.ts:
  // its first query sees one key, so that row's gradient is exactly 0 and gradcheck's relative error is noise.
  op(
    'scaledDotProductAttention',
    ATT,
    (q, k, v) => A.scaledDotProductAttention(q, k, v),
    (q, k, v) => refAttention(q, k, v),
    [SOFT],
  ),
  op(
    'scaledDotProductAttention mask',
    [...ATT, [3, 5]],
    (q, k, v, m) => A.scaledDotProductAttention(q, k, v, { mask: m, scale: 0.4 }),
    (q, k, v, m) => refAttention(q, k, v, m, 0.4),
    [SOFT],
  ),
  // Fused recurrent cells (src/ops/rnn.ts: nn.LSTM's and nn.GRU's step), H = 3
  op(
    'lstmCell',
    [
      [2, 12],
      [2, 12],
      [2, 3],
    ],
    (xg, hg, c) => A.concat(lstmCell(xg, hg, c), 1),
    refLstmCell,
    [SOFT],
  ),
  op(
    'gruCell',
    [
      [2, 9],
      [2, 9],
      [2, 3],
    ],
    gruCell,
    refGruCell,
    [SOFT],
  ),
  // Whole-sequence layers (src/ops/rnnseq.ts: nn.LSTM's and nn.GRU's recurrence), H = 2
  op('lstmSeq', [[2, 2, 8], [8, 2], [8], [2, 2], [2, 2]], lstmSequence, (xg, w, b, h0, c0) => refSeq('lstm', xg, w, b, h0, c0), [SOFT]),
  op('gruSeq', [[2, 3, 6], [6, 2], [6], [3, 2]], gruSequence, (xg, w, b, h0) => refSeq('gru', xg, w, b, h0), [SOFT]),
  // Sequence-model ops (test/seq-specs.ts)
  ...SEQ_SPECS,
];

/** Input values of a row (one flat array per input), reproducible from the row's name and a salt. */
export function values(spec: OpSpec, shapes: readonly (readonly number[])[] = spec.shapes, salt = 0): number[][] {
  const r = rng([...spec.name].reduce((h, c) => Math.imul(h, 31) + c.charCodeAt(0), 17 + salt));
  const doms = spec.domain ?? [STD];
  return shapes.map((s, i) => doms[Math.min(i, doms.length - 1)](R.sizeOf(s), r));
}

export const tensors = (vals: readonly number[][], shapes: readonly (readonly number[])[], dtype: DType): Tensor[] =>
  vals.map((v, i) => A.tensor(v, { shape: shapes[i], dtype }));
export const nds = (vals: readonly number[][], shapes: readonly (readonly number[])[]): Nd[] => vals.map((v, i) => R.nd(shapes[i], v));

/** Fixed random weights ±[0.5, 1.5) of a shape: L = Σ f(x)·W is a well-conditioned scalar projection. */
export function weights(shape: readonly number[], dtype: DType, seed = 7): Tensor {
  const r = rng(seed);
  return A.tensor(
    Array.from({ length: R.sizeOf(shape) }, () => (r() < 0.5 ? -1 : 1) * (0.5 + r())),
    { shape, dtype },
  );
}

/** Norm-wise relative error max|a − e| / max|e| (0 for two empty arrays). */
export function relErr(a: ArrayLike<number>, e: ArrayLike<number>): number {
  if (a.length !== e.length) return Infinity;
  let num = 0,
    den = 0;
  for (let i = 0; i < e.length; i++) {
    num = Math.max(num, Math.abs(a[i] - e[i]));
    den = Math.max(den, Math.abs(e[i]));
  }
  return Number.isNaN(num) ? Infinity : num === 0 ? 0 : num / Math.max(den, 1e-300);
}
