// Launching kernels on tensors: output allocation, broadcast collapsing, reduction views and
// strided copies. Everything that turns shapes into kernel arguments lives here, once.
import { ShapeError } from '../errors.js';
import { Tensor } from './tensor.js';
import { SUFFIX, BYTES, type DType } from '../tensor/dtype.js';
import { COST, type Element } from './rule.js';
import { kernel, writeArgs } from '../wasm/module.js';
import { runsLocally, splitBinary, splitMap, splitReduce } from '../wasm/split.js';

export const sizeOf = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

/** Row-major (C-contiguous) strides in elements. */
export function stridesOf(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/** NumPy broadcast of two shapes, or a ShapeError naming the op. */
export function broadcastShapes(op: string, a: readonly number[], b: readonly number[]): number[] {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const da = a[a.length - n + i] ?? 1,
      db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new ShapeError(`${op}: shapes [${a}] and [${b}] cannot be broadcast together (axis ${i - n}: ${da} vs ${db})`);
    }
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** Strides of `shape` read as if broadcast to `out` (0 along broadcast axes). */
export function broadcastStrides(shape: readonly number[], out: readonly number[]): number[] {
  const own = stridesOf(shape);
  const off = out.length - shape.length;
  return out.map((_, i) => (i < off || shape[i - off] === 1 ? 0 : own[i - off]));
}

/** Export names `${name}_f32` / `${name}_f64`, built once per name: building them per launch showed in per-op profiles. */
const exportNames = { float32: new Map<string, string>(), float64: new Map<string, string>(), int32: new Map<string, string>() };
function kernelName(name: string, dtype: DType): string {
  const m = exportNames[dtype];
  let s = m.get(name);
  if (s === undefined) m.set(name, (s = `${name}_${SUFFIX[dtype]}`));
  return s;
}

export function k(name: string, dtype: DType) {
  return kernel(kernelName(name, dtype));
}

const bytesOf = (dtype: DType): number => BYTES[dtype];

/** y = f(x) elementwise with the map kernel of `e` (split across threads when large, sized by its cost class). */
export function launchUnary(e: Element, x: Tensor, p0 = 0, p1 = 0): Tensor {
  const y = Tensor.empty(x.shape, x.dtype);
  const kname = kernelName(e.kernel, x.dtype),
    n = x.size,
    cost = COST[e.cost];
  // A call that stays on this thread is the one splitMap would make, minus its argument arrays.
  if (runsLocally(n * cost)) kernel(kname)(x.ptr, y.ptr, n, p0, p1);
  else splitMap(kname, bytesOf(x.dtype), [x.ptr, y.ptr], n, [p0, p1], cost);
  return y;
}

/**
 * Merges adjacent axes along which every operand's strides stay contiguous-compatible, so
 * a [64, 256] + [256] bias add becomes one 2-D kernel call and same-shape ops one row.
 */
function collapse(shape: readonly number[], strides: number[][]): { shape: number[]; strides: number[][] } {
  const outShape: number[] = [];
  const out: number[][] = strides.map(() => []);
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 1) continue;
    const last = outShape.length - 1;
    if (last >= 0 && strides.every((s, j) => out[j][last] === s[i] * shape[i])) {
      outShape[last] *= shape[i];
      strides.forEach((s, j) => (out[j][last] = s[i]));
    } else {
      outShape.push(shape[i]);
      strides.forEach((s, j) => out[j].push(s[i]));
    }
  }
  return { shape: outShape, strides: out };
}

/** Element offsets into two operands of flat index `i` over `shape`, given each operand's strides there. */
export function pairOffsets(shape: readonly number[], sa: readonly number[], sb: readonly number[], i: number): [number, number] {
  let rem = i,
    oa = 0,
    ob = 0;
  for (let d = shape.length - 1; d >= 0; d--) {
    const ix = rem % shape[d];
    rem = Math.floor(rem / shape[d]);
    oa += ix * sa[d];
    ob += ix * sb[d];
  }
  return [oa, ob];
}

/** y = a ∘ b with broadcasting, using the zip kernel of `e` (op names the primitive in errors). */
export function launchBinary(op: string, e: Element, a: Tensor, b: Tensor): Tensor {
  const kname = kernelName(e.kernel, a.dtype),
    cost = COST[e.cost];
  return launchSimple(kname, cost, a, b) ?? launchBroadcast(op, kname, cost, a, b);
}

/** dst += src in place (same shape and dtype): the add kernel writing over a, which reads each element before writing it. */
export function addInto(dst: Tensor, src: Tensor): void {
  if (dst.size === 0) return;
  const s = dst.size === 1 ? 0 : 1; // as launchSimple: a one-element operand has stride 0
  const a = dst.ptr,
    b = src.ptr;
  splitBinary(kernelName('add', dst.dtype), bytesOf(dst.dtype), a, b, a, 1, dst.size, 0, s, 0, s, COST.cheap);
}

const sameShape = (s: readonly number[], t: readonly number[]): boolean => {
  if (s.length !== t.length) return false;
  for (let i = 0; i < s.length; i++) if (s[i] !== t[i]) return false;
  return true;
};

/** m is [rows, cols] and v is [cols], both axes longer than 1 (so collapse() would keep both). */
const isBias = (m: readonly number[], v: readonly number[]): boolean =>
  m.length === 2 && v.length === 1 && m[1] === v[0] && m[0] > 1 && m[1] > 1;

/**
 * The layouts most ops see — same shapes, a one-element operand, a [rows, cols] + [cols] bias —
 * launched with the kernel arguments collapse() would derive for them, without building stride
 * arrays (this is most of the per-op cost on small tensors). null: use the general path.
 */
function launchSimple(kname: string, cost: number, a: Tensor, b: Tensor): Tensor | null {
  const as = a.shape,
    bs = b.shape;
  let out = as,
    rows = 1,
    sar = 0,
    sac = 1,
    sbr = 0,
    sbc = 1;
  if (sameShape(as, bs)) out = as;
  else if (b.size === 1 && bs.length <= as.length) sbc = 0;
  else if (a.size === 1 && as.length <= bs.length) {
    out = bs;
    sac = 0;
  } else if (isBias(as, bs)) {
    rows = as[0];
    sar = as[1];
  } else if (isBias(bs, as)) {
    out = bs;
    rows = bs[0];
    sbr = bs[1];
  } else return null;
  const y = Tensor.empty(out, a.dtype);
  if (y.size === 0) return y;
  const cols = y.size / rows,
    bytes = bytesOf(a.dtype);
  if (cols === 1 && rows === 1) sac = sbc = 0; // collapse() drops every axis of a one-element output
  splitBinary(kname, bytes, a.ptr, b.ptr, y.ptr, rows, cols, sar, sac, sbr, sbc, cost);
  return y;
}

/** The general case: broadcast strides, collapsed axes, one 2-D kernel call per block of leading axes. */
function launchBroadcast(op: string, kname: string, cost: number, a: Tensor, b: Tensor): Tensor {
  const shape = broadcastShapes(op, a.shape, b.shape);
  const y = Tensor.empty(shape, a.dtype);
  if (y.size === 0) return y;
  const c = collapse(shape, [broadcastStrides(a.shape, shape), broadcastStrides(b.shape, shape)]);
  const [sa, sb] = c.strides;
  const dims = c.shape.length;
  const cols = dims > 0 ? c.shape[dims - 1] : 1;
  const rows = dims > 1 ? c.shape[dims - 2] : 1;
  const col = (s: number[]) => (dims > 0 ? s[dims - 1] : 0);
  const row = (s: number[]) => (dims > 1 ? s[dims - 2] : 0);
  // Axes beyond the last two (rare after collapsing) are looped here, one 2-D call each.
  const outer = c.shape.slice(0, Math.max(0, dims - 2));
  const blocks = sizeOf(outer);
  const bytes = bytesOf(a.dtype);
  for (let blk = 0; blk < blocks; blk++) {
    const [oa, ob] = pairOffsets(outer, sa, sb, blk);
    splitBinary(
      kname,
      bytes,
      a.ptr + oa * bytes,
      b.ptr + ob * bytes,
      y.ptr + blk * rows * cols * bytes,
      rows,
      cols,
      row(sa),
      col(sa),
      row(sb),
      col(sb),
      cost,
    );
  }
  return y;
}

/** Reduces the sorted, distinct `axes` of x with the reduce kernel `name` ('sum' or 'max'). */
export function launchReduce(name: string, x: Tensor, axes: readonly number[], outShape: readonly number[]): Tensor {
  if (name === 'sum' && x.dtype === 'float64' && axes.some((a, k) => k > 0 && axes[k - 1] !== a - 1)) return gatheredSum(x, axes, outShape);
  let cur = x,
    shape = x.shape;
  // Reduce runs of adjacent axes from the last run to the first; each run is one kernel call.
  let i = axes.length - 1;
  while (i >= 0) {
    let j = i;
    while (j > 0 && axes[j - 1] === axes[j] - 1) j--;
    const lo = axes[j],
      hi = axes[i];
    const outer = span(shape, 0, lo),
      r = span(shape, lo, hi + 1),
      inner = span(shape, hi + 1, shape.length);
    const last = j === 0;
    if (!last) shape = [...shape.slice(0, lo), ...shape.slice(hi + 1)]; // the last run's output has outShape
    let y: Tensor;
    try {
      y = Tensor.empty(last ? outShape : shape, x.dtype);
    } catch (e) {
      if (cur !== x) cur.dispose(); // out of memory between two runs: drop the partial result
      throw e;
    }
    // Split over outer rows or inner columns, never along r: each y[o, i] is reduced whole, in the kernel's order.
    splitReduce(kernelName(name, x.dtype), bytesOf(x.dtype), cur.ptr, y.ptr, outer, r, inner);
    if (cur !== x) cur.dispose();
    cur = y;
    i = j - 1;
  }
  return cur === x ? copyAs(x, outShape) : cur;
}

/**
 * A float64 sum over axes that are not adjacent: the reduced axes are copied together at the end
 * and summed in one compensated pass. Run by run, each run's rounded result would feed the next
 * (Σ over [0, 2] of [[[1e16, 1], [0, 0]], [[-1e16, 1], [0, 0]]] gave 0, not 2).
 */
function gatheredSum(x: Tensor, axes: readonly number[], outShape: readonly number[]): Tensor {
  const kept = x.shape.map((_, a) => a).filter((a) => !axes.includes(a));
  const perm = [...kept, ...axes],
    shape = perm.map((a) => x.shape[a]),
    xs = stridesOf(x.shape);
  const t = Tensor.empty(shape, x.dtype);
  try {
    stridedCopy(
      x,
      0,
      t,
      0,
      shape,
      perm.map((a) => xs[a]),
      stridesOf(shape),
    );
    return launchReduce(
      'sum',
      t,
      axes.map((_, k) => kept.length + k),
      outShape,
    );
  } finally {
    t.dispose();
  }
}

/** Product of shape[lo..hi). */
function span(shape: readonly number[], lo: number, hi: number): number {
  let n = 1;
  for (let i = lo; i < hi; i++) n *= shape[i];
  return n;
}

/** A fresh contiguous copy of x with another (same-size) shape. */
export function copyAs(x: Tensor, shape: readonly number[]): Tensor {
  const y = Tensor.empty(shape, x.dtype);
  if (x.size > 0)
    stridedCopy(
      x,
      0,
      y,
      0,
      x.shape.length ? x.shape : [1],
      stridesOf(x.shape.length ? x.shape : [1]),
      stridesOf(x.shape.length ? x.shape : [1]),
    );
  return y;
}

/** y[yOff + Σ i·ys] = x[xOff + Σ i·xs] over `shape` (offsets and strides in elements). */
export function stridedCopy(
  x: Tensor,
  xOff: number,
  y: Tensor,
  yOff: number,
  shape: readonly number[],
  xs: readonly number[],
  ys: readonly number[],
): void {
  if (sizeOf(shape) === 0) return;
  // The kernel walks ndim ≥ 1 axes: a scalar is one element, a run of one (slice(x, [], []) of
  // a scalar copied nothing and returned uninitialised memory).
  if (shape.length === 0) return stridedCopy(x, xOff, y, yOff, [1], [1], [1]);
  const n = shape.length;
  const bytes = BYTES[x.dtype];
  const ps = writeArgs(0, shape),
    pxs = writeArgs(n, xs),
    pys = writeArgs(2 * n, ys);
  k('strided_copy', x.dtype)(x.ptr + xOff * bytes, y.ptr + yOff * bytes, n, ps, pxs, pys);
}

/** A tensor of `shape` filled with v. */
export function filled(shape: readonly number[], dtype: DType, v: number): Tensor {
  const y = Tensor.empty(shape, dtype);
  if (runsLocally(y.size)) kernel(kernelName('fill', dtype))(y.ptr, y.size, v);
  else splitMap(kernelName('fill', dtype), bytesOf(dtype), [y.ptr], y.size, [v]);
  return y;
}
