// Neural-network primitives with kernels of their own: softmax over the last axis (one pass per
// row, max-subtracted), softmax cross-entropy over logits and its VJP, layer normalisation and
// its VJP, and the VJPs of tanh, sigmoid and relu from the saved output — each one kernel for
// what a composition of ops did in several passes over memory. Each is a primitive whose own VJP
// and JVP are compositions of ops, so hvp and higher derivatives keep working; the derivation of
// each sits beside its rule. Internal: the public ops (softmax, tanh, crossEntropy, layerNorm, …)
// use them.
import { Tensor } from './tensor.js';
import { BYTES, SUFFIX } from '../tensor/dtype.js';
import type { CostClass, Element, Rule, Rule0 } from './rule.js';
import { splitMap, splitRows } from '../wasm/split.js';
import { apply } from './apply.js';
import { filled } from './launch.js';
import { withIndices } from './shape.js';
import { add, sub, mul, div, neg, sum, sqrt, square, reshape, mean, zerosLike, exp, geluErfGrad, sigmoid } from './api.js';
import { front, frontAll, rowsBatch, sameShapeBatch, type Dim, type Self } from './batch.js';

/** y ⊙ (v − Σ_last v ⊙ y): the softmax Jacobian (symmetric) applied to v. */
const softmaxJ = (y: Tensor, v: Tensor): Tensor => mul(y, sub(v, sum(mul(v, y), [y.shape.length - 1], true)));

const softmax = {
  saves: { inputs: [], output: true },
  forward: ([x]) => {
    const y = Tensor.empty(x.shape, x.dtype);
    const cols = x.shape[x.shape.length - 1];
    const bytes = x.dtype === 'float32' ? 4 : 8;
    // Rows are independent: split across threads when large.
    if (x.size > 0)
      splitRows(`softmax_${SUFFIX[x.dtype]}`, x.size / cols, cols, 8, (lo, hi) => [
        x.ptr + lo * cols * bytes,
        y.ptr + lo * cols * bytes,
        hi - lo,
        cols,
      ]);
    return y;
  },
  vjp: (g, s) => [softmaxJ(s.y!, g)],
  jvp: ([t], _x, y) => softmaxJ(y, t!),
  batch: rowsBatch,
} satisfies Rule<Record<string, never>>;

const same = (a: Tensor, b: Tensor): boolean =>
  a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
/** Sum of the terms that exist (a missing tangent is zero). */
const plus = (u: Tensor | null, v: Tensor | null, zero: () => Tensor): Tensor => (u === null ? (v ?? zero()) : v === null ? u : add(u, v));

// g·f'(y) for y = tanh x, sigmoid x, relu x: linear in g (so their VJP and JVP in g are the
// map itself), with ∂/∂y written out in the table below.
export const tanhGrad = (y: Tensor, g: Tensor): Tensor => (same(y, g) ? apply('tanhGrad', [y, g], {}) : mul(g, sub(1, square(y))));
export const sigmoidGrad = (y: Tensor, g: Tensor): Tensor => (same(y, g) ? apply('sigmoidGrad', [y, g], {}) : mul(g, mul(y, sub(1, y))));
export const reluGrad = (y: Tensor, g: Tensor): Tensor =>
  same(y, g) ? apply('reluGrad', [y, g], {}) : gate01(g, apply('step', [y], { a: 1, b: 0 }));
/**
 * t·m where the derivative mask m ≠ 0, and exactly 0 where m = 0: the gradient of relu, clamp,
 * maximum and minimum stops where the op is flat even when t is infinite or NaN (t·0 would be
 * NaN), as PyTorch's threshold, clamp and maximum backward select. grad(sqrt(clamp(d, 0))) at
 * d < 0 is then 0, not NaN. Elsewhere the bits are those of the product.
 */
export const gate = (t: Tensor, m: Tensor): Tensor => apply('where', [m, mul(t, m), filled([], t.dtype, 0)], {});
/** gate for a 0/1 mask: t itself where m = 1 (t·1 is t), one launch fewer. */
export const gate01 = (t: Tensor, m: Tensor): Tensor => apply('where', [m, t, filled([], t.dtype, 0)], {});
/** g·gelu'(x) for exact GELU, from its input x (one pass: gelu_erf_vjp). */
export const geluErfVjp = (x: Tensor, g: Tensor): Tensor => (same(x, g) ? apply('geluErfVjp', [x, g], {}) : mul(g, geluErfGrad(x)));
/** gelu''(x) = φ(x)·(2 − x²) for exact GELU. */
export const geluErf2 = (x: Tensor): Tensor => mul(mul(exp(mul(square(x), -0.5)), 1 / Math.sqrt(2 * Math.PI)), sub(2, square(x)));
/**
 * gelu''(x) = s(1 − s)·(2w' + x(1 − 2s)w'² + x·w'') for GELU's tanh form x·σ(w), s = σ(w),
 * w = c(x + kx³), w' = c(1 + 3kx²), w'' = 6ckx, c = 2√(2/π), k = 0.044715.
 */
export const geluTanh2 = (x: Tensor): Tensor => {
  const c = 2 * Math.sqrt(2 / Math.PI),
    x2 = square(x),
    s = sigmoid(mul(mul(x, add(mul(x2, 0.044715), 1)), c)),
    dw = mul(add(mul(x2, 3 * 0.044715), 1), c);
  const inner = add(add(mul(dw, 2), mul(mul(x, sub(1, mul(s, 2))), square(dw))), mul(x2, 6 * c * 0.044715));
  return mul(mul(s, sub(1, s)), inner);
};

/** The primitive dx = self(y, g) with kernel `<kernel>_vjp`; dy(y, g) = ∂dx/∂y, null where it is zero. */
function elementGrad(
  kernel: string,
  self: (y: Tensor, g: Tensor) => Tensor,
  dy: ((y: Tensor, g: Tensor) => Tensor) | null,
  cost: CostClass = 'cheap',
): Rule0 {
  const element: Element = { kernel: `${kernel}_vjp`, layout: 'grad', cost, fusable: true };
  return {
    element,
    saves: { inputs: dy === null ? [0] : [0, 1], output: false },
    forward: ([y, g]) => {
      const dx = Tensor.empty(y.shape, y.dtype);
      splitMap(`${element.kernel}_${SUFFIX[y.dtype]}`, BYTES[y.dtype], [y.ptr, g.ptr, dx.ptr], y.size, []);
      return dx;
    },
    vjp: (G, s, _p, needs) => [needs[0] && dy !== null ? mul(G, dy(s.x[0]!, s.x[1]!)) : null, needs[1] ? self(s.x[0]!, G) : null],
    jvp: ([ty, tg], [y, g]) => plus(ty && dy && mul(ty, dy(y, g)), tg && self(y, tg), () => zerosLike(y)),
    batch: sameShapeBatch,
  };
}

type Labels = { labels: Int32Array };
/** g[:, None]·(softmax(x) − onehot(labels)): the VJP of softmaxCrossEntropy. */
const xentGrad = (x: Tensor, g: Tensor, labels: Int32Array): Tensor => apply('softmaxCrossEntropyGrad', [x, g], { labels });
/** softmax(x) − onehot(labels), the Jacobian row of each loss. */
const xentDir = (x: Tensor, labels: Int32Array): Tensor => xentGrad(x, filled([x.shape[0]], x.dtype, 1), labels);
const column = (g: Tensor): Tensor => reshape(g, [g.shape[0], 1]);
const softmaxOf = (x: Tensor): Tensor => apply('softmax', [x], {});

// Layer normalisation ŷ = (x − μ)/s, s = √(var + eps), over the last axis. Its Jacobian per row
// J = (I − 11ᵀ/d − ŷŷᵀ/d)/s is symmetric, so the VJP and the JVP are both J·v = layerNormGrad(x, v).
type Eps = { eps: number };
const layerNormRows = (x: Tensor, eps: number): Tensor => apply('layerNorm', [x], { eps });
const layerNormGrad = (x: Tensor, g: Tensor, eps: number): Tensor => apply('layerNormGrad', [x, g], { eps });
/** The row scale s = √(var + eps) (keepdims), as an op so that it differentiates. */
function rowScale(x: Tensor, eps: number): Tensor {
  const last = x.shape.length - 1;
  return sqrt(add(mean(square(sub(x, mean(x, last, true))), last, true), eps));
}
/**
 * dx = J(x)·g = (g − ḡ − ŷ·a)/s with a = mean(g·ŷ). Along x in direction u, with ŷ' = J·u and
 * b = mean(ŷ·u) (= ds): d(dx) = −(ŷ'·a + ŷ·mean(g·ŷ') + dx·b)/s. Its adjoint, J being
 * symmetric: ∂x = −(a·J·G + mean(G·ŷ)·dx + mean(G·dx)·ŷ)/s, and ∂g = J·G.
 */
function layerNormGradTerms(x: Tensor, g: Tensor, dx: Tensor, eps: number): { vjp: (G: Tensor) => Tensor; jvp: (u: Tensor) => Tensor } {
  const last = x.shape.length - 1,
    m = (t: Tensor) => mean(t, last, true);
  const yh = layerNormRows(x, eps),
    s = rowScale(x, eps),
    a = m(mul(g, yh));
  return {
    vjp: (G: Tensor) => neg(div(add(add(mul(a, layerNormGrad(x, G, eps)), mul(m(mul(G, yh)), dx)), mul(m(mul(G, dx)), yh)), s)),
    jvp: (u: Tensor) => {
      const yu = layerNormGrad(x, u, eps);
      return neg(div(add(add(mul(yu, a), mul(yh, m(mul(g, yu)))), mul(dx, m(mul(yh, u)))), s));
    },
  };
}
/** The labels repeated once per example (the examples' rows are stacked). */
function tiled(labels: Int32Array, B: number): Int32Array {
  const out = new Int32Array(labels.length * B);
  for (let b = 0; b < B; b++) out.set(labels, b * labels.length);
  return out;
}
/** Mapped cross-entropy (and its VJP): the examples' rows stack into one [B·n, c] launch, labels tiled. */
function xentBatch(xs: readonly Tensor[], dims: readonly Dim[], p: Labels, self: Self<Labels>): [Tensor, number] {
  const fs = xs.length === 1 ? [front(xs[0], dims[0])] : frontAll(xs, dims);
  const [B, n, c] = fs[0].shape;
  const rows = fs.map((f, i) => reshape(f, i === 0 ? [B * n, c] : [B * n]));
  const y = self(rows, { labels: tiled(p.labels, B) });
  return [reshape(y, [B, n, ...y.shape.slice(1)]), 0];
}

const lastDim = (x: Tensor) => x.shape[x.shape.length - 1];
const asRows = (x: Tensor) => [x.size / Math.max(1, lastDim(x)), lastDim(x)];

export const nnRules = {
  softmax,
  tanhGrad: elementGrad(
    'tanh',
    (y, g) => tanhGrad(y, g),
    (y, g) => mul(mul(y, g), -2),
  ), // ∂/∂y g(1 − y²) = −2gy
  sigmoidGrad: elementGrad(
    'sigmoid',
    (y, g) => sigmoidGrad(y, g),
    (y, g) => mul(g, sub(1, mul(y, 2))),
  ), // ∂/∂y g·y(1 − y) = g(1 − 2y)
  reluGrad: elementGrad('relu', (y, g) => reluGrad(y, g), null),
  geluErfVjp: elementGrad(
    'gelu_erf',
    (x, g) => geluErfVjp(x, g),
    (x, g) => mul(g, geluErf2(x)),
    'transcendental',
  ), // g·gelu'(x) from the input x: ∂/∂x = g·gelu''(x)
  softmaxCrossEntropy: {
    saves: { inputs: [0], output: false },
    forward: ([x], p) => {
      const [n, c] = x.shape,
        b = BYTES[x.dtype],
        loss = Tensor.empty([n], x.dtype);
      if (n > 0 && c > 0)
        withIndices(p.labels, loss, (lp) =>
          splitRows(`softmax_xent_${SUFFIX[x.dtype]}`, n, c, 8, (lo, hi) => [
            x.ptr + lo * c * b,
            lp + lo * 4,
            loss.ptr + lo * b,
            hi - lo,
            c,
          ]),
        );
      return loss;
    },
    vjp: (g, s, p) => [xentGrad(s.x[0]!, g, p.labels)],
    jvp: ([t], [x], _y, p) => sum(mul(t!, xentDir(x, p.labels)), 1),
    batch: xentBatch,
  } satisfies Rule<Labels>,
  // dx = diag(g)·(P − Y): ∂x applies each row's (symmetric) softmax Jacobian to g·G; ∂g = Σ_j G ⊙ (P − Y).
  softmaxCrossEntropyGrad: {
    saves: { inputs: [0, 1], output: false },
    forward: ([x, g], p) => {
      const [n, c] = x.shape,
        b = BYTES[x.dtype],
        dx = Tensor.empty(x.shape, x.dtype);
      if (n > 0 && c > 0)
        withIndices(p.labels, dx, (lp) =>
          splitRows(`softmax_xent_vjp_${SUFFIX[x.dtype]}`, n, c, 10, (lo, hi) => [
            x.ptr + lo * c * b,
            lp + lo * 4,
            g.ptr + lo * b,
            dx.ptr + lo * c * b,
            hi - lo,
            c,
          ]),
        );
      return dx;
    },
    vjp: (G, s, p, needs) => {
      const [x, g] = [s.x[0]!, s.x[1]!];
      return [needs[0] ? softmaxJ(softmaxOf(x), mul(G, column(g))) : null, needs[1] ? sum(mul(G, xentDir(x, p.labels)), 1) : null];
    },
    jvp: ([tx, tg], [x, g], y, p) =>
      plus(tx && mul(column(g), softmaxJ(softmaxOf(x), tx)), tg && xentGrad(x, tg, p.labels), () => zerosLike(y)),
    batch: xentBatch,
  } satisfies Rule<Labels>,
  layerNorm: {
    saves: { inputs: [0], output: false },
    forward: ([x], p) => {
      const y = Tensor.empty(x.shape, x.dtype),
        [n, c] = asRows(x),
        b = BYTES[x.dtype];
      if (y.size > 0)
        splitRows(`layer_norm_${SUFFIX[x.dtype]}`, n, c, 4, (lo, hi) => [x.ptr + lo * c * b, y.ptr + lo * c * b, hi - lo, c, p.eps]);
      return y;
    },
    vjp: (g, s, p) => [layerNormGrad(s.x[0]!, g, p.eps)],
    jvp: ([t], [x], _y, p) => layerNormGrad(x, t!, p.eps),
    batch: rowsBatch,
  } satisfies Rule<Eps>,
  layerNormGrad: {
    saves: { inputs: [0, 1], output: true },
    forward: ([x, g], p) => {
      const dx = Tensor.empty(x.shape, x.dtype),
        [n, c] = asRows(x),
        b = BYTES[x.dtype];
      if (dx.size > 0)
        splitRows(`layer_norm_vjp_${SUFFIX[x.dtype]}`, n, c, 6, (lo, hi) => [
          x.ptr + lo * c * b,
          g.ptr + lo * c * b,
          dx.ptr + lo * c * b,
          hi - lo,
          c,
          p.eps,
        ]);
      return dx;
    },
    vjp: (G, s, p, needs) => [
      needs[0] ? layerNormGradTerms(s.x[0]!, s.x[1]!, s.y!, p.eps).vjp(G) : null,
      needs[1] ? layerNormGrad(s.x[0]!, G, p.eps) : null,
    ],
    jvp: ([u, tg], [x, g], dx, p) =>
      plus(u && layerNormGradTerms(x, g, dx, p.eps).jvp(u), tg && layerNormGrad(x, tg, p.eps), () => zerosLike(dx)),
    batch: sameShapeBatch,
  } satisfies Rule<Eps>,
};
