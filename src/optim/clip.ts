// Gradient clipping in place, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_. The norm
// is accumulated in f64 in wasm. Two parameters may share one gradient buffer (the VJP of
// a + b hands both the same adjoint), so in-place edits run once per buffer; and a buffer that
// tensors outside `params` also view (another parameter's .grad, the seed given to backward) is
// copied first, so that clipping some parameters never changes anything else, as in PyTorch,
// where every .grad owns its memory.
import { ArgumentError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { Storage } from '../tensor/tensor.js';
import { kernel } from '../wasm/module.js';
import { copyAs, k } from '../ops/launch.js';
import { keep } from '../tensor/memory.js';
import { describe, tooMany } from '../args.js';
import { hooks } from '../wasm/hooks.js';
import { zeros } from '../ops/create.js';

function gradients(op: string, params: Iterable<Tensor>): Tensor[] {
  if (params === null || typeof (params as Iterable<Tensor>)?.[Symbol.iterator] !== 'function') {
    throw new ArgumentError(`${op}: params must be an array of Tensors`);
  }
  const withGrad: Tensor[] = [];
  for (const p of new Set(params)) {
    if (!(p instanceof Tensor)) throw new ArgumentError(`${op}: params must hold only Tensors, got ${describe(p)}`);
    if (p.grad === null) continue;
    p.grad.check(op);
    withGrad.push(p);
  }
  // Handles per buffer among these gradients; storage.refs counts every handle on it. Most buffers
  // have one handle: nothing to count then (this runs on every step, for every parameter).
  if (withGrad.every((p) => p.grad!.storage.refs === 1)) return withGrad.map((p) => p.grad!);
  const handles = new Map<Storage, Set<Tensor>>();
  for (const p of withGrad) {
    const g = p.grad!;
    if (!handles.has(g.storage)) handles.set(g.storage, new Set());
    handles.get(g.storage)!.add(g);
  }
  return withGrad.map((p) => {
    const g = p.grad!;
    if (g.storage.refs === handles.get(g.storage)!.size) return g;
    const own = keep(copyAs(g, g.shape)); // the others keep the old buffer (the collector frees it)
    own.storage.markGradient();
    p.grad = own;
    return own;
  });
}

/** Each gradient whose buffer no earlier one shares. */
function distinctBuffers(grads: readonly Tensor[]): Tensor[] {
  const seen = new Set<Storage>();
  return grads.filter((g) => {
    if (seen.has(g.storage)) return false;
    seen.add(g.storage);
    return true;
  });
}

/**
 * Scales all gradients by min(1, maxNorm / (‖g‖ + 1e-6)), ‖g‖ the L2 norm of all of them
 * together, and returns that norm (before clipping). Inside a function being compiled
 * (`compile()`), the norm stays in wasm memory so the step can replay, and the return value is NaN.
 */
export function clipGradNorm(params: Iterable<Tensor>, maxNorm: number): number {
  if (arguments.length > 2) throw tooMany('clipGradNorm', 2, arguments.length);
  if (typeof maxNorm !== 'number' || !(maxNorm >= 0))
    throw new ArgumentError(`clipGradNorm: maxNorm must be a number ≥ 0, got ${describe(maxNorm)}`);
  const grads = gradients('clipGradNorm', params);
  if (hooks.recorder !== null) {
    clipInMemory(grads, maxNorm);
    return NaN;
  }
  let squares = 0;
  for (const g of grads) squares = k('sum_squares', g.dtype)(g.ptr, g.size, squares);
  const norm = kernel('sqrt_scalar')(squares);
  const coef = kernel('clip_coef')(norm, maxNorm);
  if (coef !== 1) for (const g of distinctBuffers(grads)) k('scale', g.dtype)(g.ptr, g.size, coef);
  return norm;
}

/** clipGradNorm's arithmetic with the running sum in a memory cell: no value read into JS (a traced step). */
function clipInMemory(grads: readonly Tensor[], maxNorm: number): void {
  if (grads.length === 0) return;
  const acc = zeros([1], { dtype: 'float64' });
  try {
    for (const g of grads) k('sum_squares_into', g.dtype)(g.ptr, g.size, acc.ptr);
    for (const g of distinctBuffers(grads)) k('clip_scale', g.dtype)(g.ptr, g.size, acc.ptr, maxNorm);
  } finally {
    acc.dispose();
  }
}

/** Clamps every gradient element to [−clipValue, clipValue]. */
export function clipGradValue(params: Iterable<Tensor>, clipValue: number): void {
  if (arguments.length > 2) throw tooMany('clipGradValue', 2, arguments.length);
  if (typeof clipValue !== 'number' || !(clipValue >= 0))
    throw new ArgumentError(`clipGradValue: clipValue must be a number ≥ 0, got ${describe(clipValue)}`);
  for (const g of distinctBuffers(gradients('clipGradValue', params))) k('clamp', g.dtype)(g.ptr, g.ptr, g.size, -clipValue, clipValue);
}
