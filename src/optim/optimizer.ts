// What SGD and Adam share: the parameter list, per-parameter state buffers (allocated on the
// first step, zero-filled and kept outside every tidy scope), and the gradient bookkeeping.
// Each subclass's update is one fused wasm kernel per parameter (assembly/optim.ts).
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { keep } from '../tensor/memory.js';
import { filled } from '../ops/launch.js';
import { describe } from '../args.js';

/** An array (or any iterable, e.g. `model.parameters()`) of parameter tensors. */
export type Params = Iterable<Tensor>;

/** Checks a hyper-parameter: a finite number ≥ lo (and < hi when given). */
export function hyper(op: string, name: string, v: number, lo = 0, hi = Infinity): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v >= hi) {
    const range = hi === Infinity ? `≥ ${lo}` : `in [${lo}, ${hi})`;
    throw new ArgumentError(`${op}: ${name} must be a finite number ${range}, got ${describe(v)}`);
  }
  return v;
}

/** The distinct parameters, each a live Tensor (PyTorch refuses duplicates; so do we). */
function paramList(op: string, params: Params): Tensor[] {
  if (params === null || typeof (params as Iterable<Tensor>)?.[Symbol.iterator] !== 'function') {
    throw new ArgumentError(`${op}: params must be an array of Tensors (e.g. model.parameters())`);
  }
  const list = [...params];
  if (list.length === 0) throw new ArgumentError(`${op}: got an empty parameter list`);
  list.forEach((p, i) => {
    if (!(p instanceof Tensor)) throw new ArgumentError(`${op}: params[${i}] must be a Tensor, got ${typeof p}`);
    p.check(op);
  });
  if (new Set(list).size !== list.length) throw new ArgumentError(`${op}: a parameter appears more than once in params`);
  return list;
}

export abstract class Optimizer {
  /** The learning rate; assign to it between steps to schedule it. */
  abstract lr: number;
  readonly params: readonly Tensor[];
  private readonly state = new Map<Tensor, Tensor[]>();

  protected constructor(readonly name: string, params: Params) {
    if (typeof name !== 'string') throw new ArgumentError('optim.Optimizer is the abstract base class: construct optim.SGD, optim.Adam or optim.AdamW');
    this.params = paramList(name, params);
  }

  /** Applies one update to every parameter that has a gradient (the others are skipped, as in PyTorch). */
  step(): void {
    for (const p of this.params) {
      const g = p.grad;
      if (g === null) continue;
      p.check(`${this.name}.step`);
      if (g.dtype !== p.dtype) throw new DtypeError(`${this.name}.step: gradient is ${g.dtype} but the parameter is ${p.dtype}`);
      if (g.size !== p.size) throw new ShapeError(`${this.name}.step: gradient has shape [${g.shape}] but the parameter has [${p.shape}]`);
      this.update(p, g);
    }
  }

  /** Disposes every parameter's gradient (PyTorch's zero_grad(set_to_none=True)). */
  zeroGrad(): void {
    for (const p of this.params) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  /** Frees the optimizer's state buffers (the parameters are the caller's). */
  dispose(): void {
    for (const bufs of this.state.values()) for (const b of bufs) b.dispose();
    this.state.clear();
  }

  /** `using opt = new optim.Adam(…)` frees the state buffers at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** One fused update of p in place from its gradient g. */
  protected abstract update(p: Tensor, g: Tensor): void;

  /** p's `count` state buffers; `fresh` is true on the call that created them. */
  protected buffers(p: Tensor, count: number): { bufs: Tensor[]; fresh: boolean } {
    const have = this.state.get(p);
    if (have !== undefined) return { bufs: have, fresh: false };
    const bufs = Array.from({ length: count }, () => keep(filled(p.shape, p.dtype, 0)));
    this.state.set(p, bufs);
    return { bufs, fresh: true };
  }
}
