// A plain float64 reference for the op tests: a shape plus a Float64Array, and the ops written
// the obvious way with JS Math (loops over multi-indices, no cleverness), so a disagreement
// with the wasm kernels points at the kernels.

export interface Nd {
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

export const sizeOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);
export const nd = (shape: readonly number[], data: ArrayLike<number>): Nd => ({ shape: [...shape], data: Float64Array.from(data) });
export const scalar = (v: number): Nd => nd([], [v]);

function strides(shape: readonly number[]): number[] {
  const s = shape.map(() => 1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}
const unravel = (i: number, shape: readonly number[]): number[] => {
  const idx = shape.map(() => 0);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return idx;
};
const at = (x: Nd, idx: readonly number[]): number => {
  const s = strides(x.shape);
  return x.data[idx.reduce((acc, v, d) => acc + v * s[d], 0)];
};

/** A tensor of `shape` whose element at multi-index idx is fn(idx). */
export function gen(shape: readonly number[], fn: (idx: number[]) => number): Nd {
  const out = new Float64Array(sizeOf(shape));
  for (let i = 0; i < out.length; i++) out[i] = fn(unravel(i, shape));
  return { shape: [...shape], data: out };
}

export const map = (x: Nd, f: (v: number) => number): Nd => ({ shape: x.shape, data: x.data.map(f) });

export function broadcastShape(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.max(a.length, b.length);
  return Array.from({ length: n }, (_, i) => {
    const da = a[a.length - n + i] ?? 1,
      db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) throw new Error(`ref: cannot broadcast [${a}] and [${b}]`);
    return da === 1 ? db : da;
  });
}

/** x read at an index of the broadcast shape `shape`. */
const bcastAt = (x: Nd, idx: readonly number[]): number =>
  at(
    x,
    x.shape.map((d, i) => (d === 1 ? 0 : idx[idx.length - x.shape.length + i])),
  );

export const broadcastTo = (x: Nd, shape: readonly number[]): Nd => gen(shape, (idx) => bcastAt(x, idx));

export function zip(a: Nd, b: Nd, f: (u: number, v: number) => number): Nd {
  return gen(broadcastShape(a.shape, b.shape), (idx) => f(bcastAt(a, idx), bcastAt(b, idx)));
}

const normAxes = (rank: number, axis?: number | readonly number[]): number[] =>
  axis === undefined
    ? Array.from({ length: rank }, (_, i) => i)
    : (typeof axis === 'number' ? [axis] : [...axis]).map((a) => (a < 0 ? a + rank : a));

/** Folds the elements over `axes` with f (from init). */
function reduce(
  x: Nd,
  axis: number | readonly number[] | undefined,
  keepdims: boolean,
  f: (acc: number, v: number) => number,
  init: number,
): Nd {
  const axes = normAxes(x.shape.length, axis);
  const kept = x.shape.map((d, i) => (axes.includes(i) ? 1 : d));
  const out = gen(kept, () => init);
  const ks = strides(kept);
  for (let i = 0; i < x.data.length; i++) {
    const j = unravel(i, x.shape).reduce((acc, v, d) => acc + (axes.includes(d) ? 0 : v * ks[d]), 0);
    out.data[j] = f(out.data[j], x.data[i]);
  }
  return keepdims
    ? out
    : nd(
        x.shape.filter((_, i) => !axes.includes(i)),
        out.data,
      );
}

type AxisArg = number | readonly number[] | undefined;
export const sum = (x: Nd, axis?: AxisArg, keepdims = false): Nd => reduce(x, axis, keepdims, (a, v) => a + v, 0);
export const max = (x: Nd, axis?: AxisArg, keepdims = false): Nd => reduce(x, axis, keepdims, Math.max, -Infinity);
export function mean(x: Nd, axis?: AxisArg, keepdims = false): Nd {
  const n = sizeOf(normAxes(x.shape.length, axis).map((a) => x.shape[a]));
  return map(sum(x, axis, keepdims), (v) => v / n);
}
export function logsumexp(x: Nd, axis?: AxisArg, keepdims = false): Nd {
  const m = max(x, axis, true);
  const s = sum(
    zip(x, m, (v, mm) => Math.exp(v - mm)),
    axis,
    true,
  );
  const r = zip(s, m, (v, mm) => Math.log(v) + mm);
  return keepdims ? r : reshape(r, sum(x, axis, false).shape);
}

export const reshape = (x: Nd, shape: readonly number[]): Nd => nd(shape, x.data);

export function transpose(x: Nd, perm?: readonly number[]): Nd {
  const p = perm ?? x.shape.map((_, i) => x.shape.length - 1 - i);
  return gen(
    p.map((i) => x.shape[i]),
    (idx) =>
      at(
        x,
        p.map((_, d) => idx[p.indexOf(d)]),
      ),
  );
}

export function concat(xs: readonly Nd[], axis = 0): Nd {
  const a = axis < 0 ? axis + xs[0].shape.length : axis;
  const shape = [...xs[0].shape];
  shape[a] = xs.reduce((acc, x) => acc + x.shape[a], 0);
  return gen(shape, (idx) => {
    let i = idx[a],
      k = 0;
    while (i >= xs[k].shape[a]) i -= xs[k++].shape[a];
    return at(
      xs[k],
      idx.map((v, d) => (d === a ? i : v)),
    );
  });
}

export const slice = (x: Nd, begin: readonly number[], size: readonly number[]): Nd =>
  gen(size, (idx) =>
    at(
      x,
      idx.map((v, d) => v + begin[d]),
    ),
  );

export function gather(x: Nd, indices: readonly number[], axis = 0): Nd {
  const a = axis < 0 ? axis + x.shape.length : axis;
  const shape = x.shape.map((d, i) => (i === a ? indices.length : d));
  return gen(shape, (idx) =>
    at(
      x,
      idx.map((v, d) => (d === a ? indices[v] : v)),
    ),
  );
}

/** NumPy matmul: 1-D operands are promoted and the added axis removed; batch axes broadcast. */
export function matmul(a: Nd, b: Nd): Nd {
  const a2 = a.shape.length === 1 ? reshape(a, [1, a.shape[0]]) : a;
  const b2 = b.shape.length === 1 ? reshape(b, [b.shape[0], 1]) : b;
  const [m, kk] = a2.shape.slice(-2),
    n = b2.shape[b2.shape.length - 1];
  const batch = broadcastShape(a2.shape.slice(0, -2), b2.shape.slice(0, -2));
  const y = gen([...batch, m, n], (idx) => {
    const bi = idx.slice(0, -2),
      [i, j] = idx.slice(-2);
    let s = 0;
    for (let k = 0; k < kk; k++) s += bcastAt(a2, [...bi, i, k]) * bcastAt(b2, [...bi, k, j]);
    return s;
  });
  const shape = [...batch];
  if (a.shape.length > 1) shape.push(m);
  if (b.shape.length > 1) shape.push(n);
  return reshape(y, shape);
}

export function softmax(x: Nd, axis = -1): Nd {
  return zip(x, logsumexp(x, axis, true), (v, l) => Math.exp(v - l));
}
export const logSoftmax = (x: Nd, axis = -1): Nd => zip(x, logsumexp(x, axis, true), (v, l) => v - l);

export function crossEntropy(logits: Nd, labels: readonly number[], reduction: 'mean' | 'sum' | 'none' = 'mean'): Nd {
  const ls = logSoftmax(logits, -1),
    c = logits.shape[1];
  const picked = nd(
    [labels.length],
    labels.map((l, i) => -ls.data[i * c + l]),
  );
  return reduction === 'none' ? picked : reduction === 'sum' ? sum(picked) : mean(picked);
}

export function mseLoss(p: Nd, t: Nd, reduction: 'mean' | 'sum' | 'none' = 'mean'): Nd {
  const sq = zip(p, t, (u, v) => (u - v) ** 2);
  return reduction === 'none' ? sq : reduction === 'sum' ? sum(sq) : mean(sq);
}

export function layerNorm(x: Nd, w?: Nd, b?: Nd, eps = 1e-5): Nd {
  const mu = mean(x, -1, true);
  const xc = zip(x, mu, (u, v) => u - v);
  const sd = map(
    mean(
      map(xc, (v) => v * v),
      -1,
      true,
    ),
    (v) => Math.sqrt(v + eps),
  );
  let y = zip(xc, sd, (u, v) => u / v);
  if (w) y = zip(y, w, (u, v) => u * v);
  if (b) y = zip(y, b, (u, v) => u + v);
  return y;
}

export const sigmoid = (v: number): number => 1 / (1 + Math.exp(-v));
export const softplus = (v: number): number => Math.max(v, 0) + Math.log1p(Math.exp(-Math.abs(v)));
export const gelu = (v: number): number => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));

/**
 * erf in float64 (JS has no Math.erf). |x| < 1: the Taylor series. |x| ≥ 1: 1 − erfc, with
 * erfc = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))) (the continued fraction,
 * evaluated backwards) and x² split exactly into hi + lo (Dekker) so e^{−x²} = e^{−hi}(1 − lo).
 * Within a few ulp of the exact value (checked against 30-digit mpmath); ±1 beyond |x| = 6.
 */
export function erf(v: number): number {
  if (Number.isNaN(v)) return NaN;
  const x = Math.abs(v);
  if (x >= 6) return Math.sign(v);
  const c = 134217729 * x,
    xh = c - (c - x),
    xl = x - xh; // Dekker split: x = xh + xl, 26-bit halves
  const hi = x * x,
    lo = xh * xh - hi + 2 * xh * xl + xl * xl;
  const e = Math.exp(-hi) * (1 - lo);
  let y: number;
  if (x < 1) {
    let p = x,
      sum = x,
      comp = 0; // Taylor: Σ (−1)ⁿ x^{2n+1}/(n!(2n+1)), summed with Kahan's compensation
    for (let n = 1; n < 30; n++) {
      p *= -(hi + lo) / n;
      const t = p / (2 * n + 1) - comp,
        s = sum + t;
      comp = s - sum - t;
      sum = s;
    }
    y = 1.1283791670955126 * sum; // 2/√π
  } else {
    let f = x; // erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))
    for (let k = 200; k >= 1; k--) f = x + k / 2 / f;
    y = 1 - e / (Math.sqrt(Math.PI) * f);
  }
  return v < 0 ? -y : y;
}
export const geluExact = (v: number): number => 0.5 * v * (1 + erf(v * Math.SQRT1_2));
