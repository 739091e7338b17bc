// Batching (vmap), JAX style. Inside vmap a mapped value is a "batched tensor": a Tensor handle
// with the per-example (logical) shape whose storage is virtual — it is never allocated — and a
// side table maps that storage to the physical tensor that holds every example, with the axis
// the examples run along (its batch dim) and the vmap level it belongs to. User code sees
// per-example shapes; apply() sends a primitive with a batched input of the innermost level to
// the rule's `batch`, which runs the batched kernel on the physical tensors (a mapped matmul is
// one GEMM over the folded rows, a mapped conv2d folds the batch into N, reductions and shape
// ops shift their axes) and says along which axis the output's examples run.
import { ArgumentError } from '../errors.js';
import { Tensor } from './tensor.js';
import { Storage, type Pending } from '../tensor/tensor.js';
import { exempt } from '../tensor/scope.js';
import { transpose, reshape, broadcastTo, slice, concat } from './api.js';

/** A batch dim: the physical axis the examples run along, or null for an unmapped value. */
export type Dim = number | null;
/** Runs the same primitive (with the same or other params) on physical tensors. */
export type Self<P> = (xs: readonly Tensor[], p?: P) => Tensor;

interface Batched {
  readonly phys: Tensor;
  readonly dim: number;
  readonly level: number;
}

const table = new WeakMap<Storage, Batched>();
/** Open vmap levels (0 outside vmap): apply() only looks up the side table when it is positive. */
export const batching = { level: 0 };
/** The source every virtual block names (a lazy block needs one); it is never read. */
const NOWHERE = new Storage(-1, 0);

/** The storage of a batched tensor: it owns the physical tensor and refuses to be read. */
class Virtual implements Pending {
  readonly op = 'vmap';
  readonly virtual = true;
  constructor(private readonly phys: Tensor) {}
  fill(): void {
    if (this.phys.dtype === 'int32') {
      // gather, nn.Embedding and crossEntropy take mapped int32 tensors (their launches read the
      // physical values); anything else that reads one in JS ends here.
      throw new ArgumentError(
        `vmap: the values of a mapped int32 tensor [${this.phys.shape}] cannot be read inside the mapped function; ` +
          'gather, nn.Embedding and crossEntropy take mapped indices and labels, other uses need them unmapped (inAxes null) or outside vmap',
      );
    }
    throw new ArgumentError(
      'vmap: the values of a batched tensor cannot be read inside the mapped function (item, toArray, pointers); return it instead',
    );
  }
  drop(): void {
    this.phys.dispose();
  }
}

/** A batched tensor of level `level` over `phys` (handed over: owned by the result) with examples along `dim`. */
export function wrap(phys: Tensor, dim: number, level: number): Tensor {
  const shape = phys.shape.filter((_, i) => i !== dim);
  exempt(phys); // lives exactly as long as the storage of the batched handles
  const t = Tensor.lazy(shape, phys.dtype, new Virtual(phys), NOWHERE);
  table.set(t.storage, { phys, dim, level });
  return t;
}

/** [physical tensor, batch dim] of t at vmap level `level` ([t, null] when t is not batched there). */
export function unwrap(t: Tensor, level: number): [Tensor, Dim] {
  const b = table.get(t.storage);
  return b !== undefined && b.level === level ? [b.phys, b.dim] : [t, null];
}

/**
 * A handle on t's values that neither records nor carries a tangent (detach, stopGradient). The
 * transforms outside a vmap record on a batched tensor's physical tensor, which a plain shared
 * handle still reaches through the side table, so each level's physical tensor is detached too.
 */
export function detached(t: Tensor): Tensor {
  const b = table.get(t.storage);
  return b === undefined ? t.share() : wrap(detached(b.phys), b.dim, b.level);
}

/** Whether t is a batched tensor (of any level): its values cannot be read by a kernel launched by hand. */
export function isBatched(t: Tensor): boolean {
  return table.has(t.storage);
}

/** The innermost vmap level among xs, or 0 when none is batched. */
export function levelOf(xs: readonly Tensor[]): number {
  let level = 0;
  for (let i = 0; i < xs.length; i++) {
    const b = table.get(xs[i].storage);
    if (b !== undefined && b.level > level) level = b.level;
  }
  return level;
}

// Helpers for the rules' `batch` functions.

/** x with its batch dim moved to the front (unbatched x unchanged). */
export function front(x: Tensor, d: Dim): Tensor {
  if (d === null || d === 0) return x;
  const perm = [d, ...x.shape.map((_, i) => i).filter((i) => i !== d)];
  return transpose(x, perm);
}

/** The batch size: the extent of the batch dim of the first batched input. */
function sizeOfBatch(xs: readonly Tensor[], dims: readonly Dim[]): number {
  const i = dims.findIndex((d) => d !== null);
  return xs[i].shape[dims[i]!];
}

/** Every input with its examples along axis 0; an unbatched one is broadcast to [B, ...its shape]. */
export function frontAll(xs: readonly Tensor[], dims: readonly Dim[]): Tensor[] {
  const B = sizeOfBatch(xs, dims);
  return xs.map((x, i) => (dims[i] === null ? broadcastTo(reshape(x, [1, ...x.shape]), [B, ...x.shape]) : front(x, dims[i])));
}

/**
 * Batched x at the front, with ones inserted after the batch axis up to `rank` per-example axes
 * (an unbatched x gets just the ones), so operands of different rank broadcast per example.
 */
export function frontRank(x: Tensor, d: Dim, rank: number): Tensor {
  if (d === null) return x.shape.length >= rank ? x : reshape(x, [...new Array<number>(rank - x.shape.length).fill(1), ...x.shape]);
  const f = front(x, d),
    r = f.shape.length - 1;
  return r >= rank ? f : reshape(f, [f.shape[0], ...new Array<number>(rank - r).fill(1), ...f.shape.slice(1)]);
}

/**
 * The per-example loop: the primitive run once per example and the results stacked. Only the
 * cases that have no batched kernel use it (each is listed in docs/vmap.md).
 */
export function loopBatch<P>(xs: readonly Tensor[], dims: readonly Dim[], self: Self<P>, p?: P): [Tensor, number] {
  const B = sizeOfBatch(xs, dims);
  const fs = xs.map((x, i) => front(x, dims[i]));
  const rows: Tensor[] = [];
  for (let b = 0; b < B; b++) {
    const args = fs.map((x, i) =>
      dims[i] === null ? x : reshape(slice(x, [b, ...x.shape.slice(1).map(() => 0)], [1, ...x.shape.slice(1)]), x.shape.slice(1)),
    );
    const y = self(args, p);
    rows.push(reshape(y, [1, ...y.shape]));
  }
  return [concat(rows, 0), 0];
}

/** The rule of an elementwise primitive: run it on the physical tensors (binary: aligned per example). */
export function elementwiseBatch<P>(xs: readonly Tensor[], dims: readonly Dim[], p: P, self: Self<P>): [Tensor, number] {
  if (xs.length === 1) return [self(xs, p), dims[0]!];
  const rank = Math.max(...xs.map((x, i) => x.shape.length - (dims[i] === null ? 0 : 1)));
  return [
    self(
      xs.map((x, i) => frontRank(x, dims[i], rank)),
      p,
    ),
    0,
  ];
}

/** The rule of a primitive whose inputs share one shape: all broadcast to [B, ...] and run once. */
export function sameShapeBatch<P>(xs: readonly Tensor[], dims: readonly Dim[], p: P, self: Self<P>): [Tensor, number] {
  return [self(frontAll(xs, dims), p), 0];
}

/** The rule of a primitive over independent rows of the last axis (softmax, layerNorm): run as is unless the batch is that axis. */
export function rowsBatch<P>(xs: readonly Tensor[], dims: readonly Dim[], p: P, self: Self<P>): [Tensor, number] {
  const d = dims[0]!;
  return d === xs[0].shape.length - 1 ? [self([front(xs[0], d)], p), 0] : [self(xs, p), d];
}

/**
 * The rule of a primitive over images [N, ...] (conv, pooling) with every input batched or
 * shared as `batched` says: the batch folds into N ([B·N, ...]), one launch, unfolded after.
 */
export function foldBatch<P>(
  xs: readonly Tensor[],
  dims: readonly Dim[],
  p: P,
  self: Self<P>,
  folded: readonly boolean[],
): [Tensor, number] {
  const B = sizeOfBatch(xs, dims);
  let lead = -1; // each example's leading extent in the first folded input
  const fs = xs.map((x, i) => {
    if (!folded[i]) return x;
    const f =
      dims[i] === null ? frontAll([x, xs[dims.findIndex((d) => d !== null)]], [null, dims.find((d) => d !== null)!])[0] : front(x, dims[i]);
    if (lead < 0) lead = f.shape[1];
    return reshape(f, [f.shape[0] * f.shape[1], ...f.shape.slice(2)]);
  });
  const y = self(fs, p);
  // y's leading axis is B times the examples' own (0/0 when B = 0: then the input's tells it).
  return [reshape(y, [B, B === 0 ? lead : y.shape[0] / B, ...y.shape.slice(1)]), 0];
}

/** [physical tensor, batch dim] of a batched tensor of any level (its innermost), or null. */
export function batchedOf(t: Tensor): [Tensor, number] | null {
  const b = table.get(t.storage);
  return b === undefined ? null : [b.phys, b.dim];
}
