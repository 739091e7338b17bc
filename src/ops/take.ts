// Indexing by an int32 tensor that vmap maps: take and its transpose takeAdd. gather, nn.Embedding
// and crossEntropy read their indices into JS (range checks, and compile() rebinds them), which a
// mapped index tensor cannot allow: its values exist only as the physical tensor of all examples.
// So they send such indices here, where the indices are an input of the primitive: apply() sees
// the mapped input, and the batching rule reads the physical indices when it launches the kernel.
//
// take(x, idx, { axis, lead }): x and idx share their first `lead` axes (one list of indices per
// position there, as the examples of a mapped x with mapped indices); along `axis` of x, the
// entries idx picks. Shape: [...x[:axis], ...idx[lead:], ...x[axis+1:]].
import { ArgumentError, ShapeError } from '../errors.js';
import { Tensor } from './tensor.js';
import type { Rule } from './rule.js';
import { apply } from './apply.js';
import { filled, k, sizeOf } from './launch.js';
import { derive } from '../wasm/hooks.js';
import { front, frontAll, type Dim, type Self } from './batch.js';
import { withIndices } from './shape.js';

export interface TakeParams {
  /** The axis of x that the indices pick along (counting the lead axes). */
  readonly axis: number;
  /** Leading axes that x and the indices share: each position there has its own list. */
  readonly lead: number;
  /** The public op, named by a range error. */
  readonly op: 'gather' | 'Embedding' | 'crossEntropy';
  /** An index that picks entry 0 instead of being range-checked (crossEntropy's ignoreIndex: the row is weighted out). */
  readonly ignore?: number;
}
export interface TakeAddParams extends TakeParams {
  /** The shape of x (the output). */
  readonly shape: readonly number[];
}

/** The extents around the picked axis: lead positions L, axes before it (pre), its length n, after it (post). */
function extents(xShape: readonly number[], p: TakeParams): [number, number, number, number] {
  const { axis, lead } = p;
  return [sizeOf(xShape.slice(0, lead)), sizeOf(xShape.slice(lead, axis)), xShape[axis], sizeOf(xShape.slice(axis + 1))];
}

function outOfRange(p: TakeParams, v: number, i: number, n: number, shape: readonly number[]): Error {
  return p.op === 'crossEntropy'
    ? new ArgumentError(
        `crossEntropy: label ${v} at position ${i} of the mapped labels (every example's, examples first: [${shape}]) is outside [0, ${n})`,
      )
    : new ShapeError(
        `${p.op}: index ${v} at position ${i} of the mapped indices (every example's, examples first: [${shape}]) is out of range [0, ${n})`,
      );
}

/**
 * The kernel's index list: checked idx itself when there is one list (the kernel repeats it for
 * each of the `pre` outer positions); with several lists, every (list, outer) row's own entries
 * as offsets into x seen as one long axis.
 */
function indexList(idx: Int32Array, xShape: readonly number[], p: TakeParams, idxShape: readonly number[]): Int32Array {
  const [L, pre, n] = extents(xShape, p);
  // A copy in any case: compile() binds the write to this derivation (with its check), not to the read.
  idx = idx.map((v) => (v === p.ignore ? 0 : v));
  for (let i = 0; i < idx.length; i++) if (idx[i] < 0 || idx[i] >= n) throw outOfRange(p, idx[i], i, n, idxShape);
  if (L === 1) return idx;
  const m = idx.length / L,
    out = new Int32Array(L * pre * m);
  for (let l = 0, at = 0; l < L; l++)
    for (let o = 0; o < pre; o++) for (let j = 0; j < m; j++) out[at++] = (l * pre + o) * n + idx[l * m + j];
  return out;
}

/** The checked list for idx and a gather-family kernel's [outer, m, len, inner] over x's layout (xShape). */
function launchArgs(idx: Tensor, xShape: readonly number[], p: TakeParams): [Int32Array, number, number, number, number] {
  const src = idx.toArray() as Int32Array; // compile() rebinds an argument's values read here, and derive() the list
  const make = (s: Int32Array): Int32Array => indexList(s, xShape, p, idx.shape);
  const list = make(src);
  derive(list, src, make);
  const [L, pre, n, post] = extents(xShape, p);
  return L === 1 ? [list, pre, list.length, n, post] : [list, 1, list.length, L * pre * n, post];
}

function outShape(xShape: readonly number[], idxShape: readonly number[], p: TakeParams): number[] {
  return [...xShape.slice(0, p.axis), ...idxShape.slice(p.lead), ...xShape.slice(p.axis + 1)];
}

function takeForward(x: Tensor, idx: Tensor, p: TakeParams): Tensor {
  const y = Tensor.empty(outShape(x.shape, idx.shape, p), x.dtype);
  if (idx.size === 0) return y;
  const [list, outer, m, len, inner] = launchArgs(idx, x.shape, p); // range-checked even when y is empty
  if (y.size > 0) withIndices(list, y, (ptr) => k('gather', x.dtype)(x.ptr, ptr, y.ptr, outer, m, len, inner));
  return y;
}

function takeAddForward(g: Tensor, idx: Tensor, p: TakeAddParams): Tensor {
  const y = filled(p.shape, g.dtype, 0);
  if (idx.size === 0) return y;
  const [list, outer, m, len, inner] = launchArgs(idx, p.shape, p);
  if (g.size > 0) withIndices(list, y, (ptr) => k('scatter_add', g.dtype)(g.ptr, ptr, y.ptr, outer, m, len, inner));
  return y;
}

/** x's entries along `axis` at the int32 tensor idx (see the file's head); differentiable in x. */
export const take = (x: Tensor, idx: Tensor, p: TakeParams): Tensor => apply('take', [x, idx], p);
const takeAdd = (g: Tensor, idx: Tensor, p: TakeAddParams): Tensor => apply('takeAdd', [g, idx], p);
const strip = ({ axis, lead, op, ignore }: TakeParams): TakeParams => ({ axis, lead, op, ignore });

/**
 * Mapped take or takeAdd: the examples become one more lead axis of both operands (an unmapped
 * one is broadcast), except where only one side is mapped and there are no lead axes: then a
 * mapped x (or g) just gains a leading axis, and mapped indices for a shared x make one longer
 * list (whose output has the examples along the picked axis). `grow` gives takeAdd's params
 * their output shape with the examples in front.
 */
function takeBatch<P extends TakeParams>(
  [x, idx]: readonly Tensor[],
  [dx, di]: readonly Dim[],
  p: P,
  self: Self<P>,
  grow: (p: P, B: number) => P,
): [Tensor, number] {
  if (p.lead === 0 && di === null) {
    const f = front(x, dx);
    return [self([f, idx], grow({ ...p, axis: p.axis + 1 }, f.shape[0])), 0];
  }
  if (p.lead === 0 && dx === null && grow === same) return [self([x, front(idx, di)], p), p.axis];
  const [fx, fi] = frontAll([x, idx], [dx, di]);
  return [self([fx, fi], grow({ ...p, axis: p.axis + 1, lead: p.lead + 1 }, fi.shape[0])), 0];
}
const same = <P>(p: P): P => p;
const withBatch = (p: TakeAddParams, B: number): TakeAddParams => ({ ...p, shape: [B, ...p.shape] });

export const takeRules = {
  take: {
    saves: { inputs: [1], output: false },
    int32: true,
    forward: ([x, idx], p) => takeForward(x, idx, p),
    vjp: (g, s, p) => [takeAdd(g, s.x[1]!, { ...strip(p), shape: s.shapes[0] }), null],
    jvp: ([t], [, idx], _y, p) => take(t!, idx, strip(p)),
    batch: (xs, dims, p, self) => takeBatch(xs, dims, p, self, same),
  } satisfies Rule<TakeParams>,
  takeAdd: {
    saves: { inputs: [1], output: false },
    int32: true,
    forward: ([g, idx], p) => takeAddForward(g, idx, p),
    vjp: (G, s, p) => [take(G, s.x[1]!, strip(p)), null],
    jvp: ([t], [, idx], _y, p) => takeAdd(t!, idx, p),
    batch: (xs, dims, p, self) => takeBatch(xs, dims, p, self, withBatch),
  } satisfies Rule<TakeAddParams>,
};
