// DP-SGD gradients (Abadi et al. 2016): every example's gradient, from one batched pass
// (vmap(valueAndGrad(loss)) over the parameters through functionalCall), is clipped to L2 norm
// at most C; the clipped gradients are summed, Gaussian noise N(0, σ²C²) from our seeded
// generator is added, and the sum is divided by the batch size. The result is written to each
// parameter's .grad, so any optimizer steps on it.
import { ArgumentError } from '../errors.js';
import { type Tensor, isTensor } from '../ops/tensor.js';
import { keep } from '../tensor/memory.js';
import { randn, tensor } from '../ops/create.js';
import { add, mul, div, sum, sqrt, square, neg, minimum, reshape, matmul, logSoftmax } from '../ops/api.js';
import { valueAndGrad } from '../autodiff/transforms.js';
import { vmap } from '../autodiff/vmap.js';
import { functionalCall } from '../nn/functional.js';
import { Module } from '../nn/module.js';
import { tooMany } from '../args.js';

/** DP-SGD settings: per-example clipping norm C, Gaussian noise multiplier σ and the noise seed. */
export interface DpOptions {
  /** C: each example's gradient is scaled to L2 norm at most C. */
  clip: number;
  /** σ: the noise's standard deviation is σ·C. */
  noise: number;
  /** Seed of this step's noise (give every step its own). */
  seed: number;
}

/** One-hot rows [N, 1, classes] (each example keeps a batch axis of 1, so any model's forward applies). */
function oneHot(labels: Int32Array, classes: number, dtype: Tensor['dtype']): Tensor {
  const v = new Array<number>(labels.length * classes).fill(0);
  labels.forEach((l, i) => (v[i * classes + l] = 1));
  return tensor(v, { shape: [labels.length, 1, classes], dtype });
}

/**
 * Sets .grad of every parameter of `model` to the DP-SGD gradient of the cross-entropy on the
 * batch (x [N, ...], integer labels); returns the batch's mean loss (before clipping).
 */
export function dpGradients(model: Module, x: Tensor, labels: Int32Array, classes: number, opts: DpOptions): number {
  if (arguments.length > 5) throw tooMany('optim.dpGradients', 5, arguments.length);
  if (!(model instanceof Module))
    throw new ArgumentError(`dpGradients: model must be an nn.Module, got ${model === null ? 'null' : typeof model}`);
  if (!isTensor(x) || x.shape.length === 0) throw new ArgumentError('dpGradients: x must be a Tensor [N, ...]');
  if (!(labels instanceof Int32Array) || labels.length !== x.shape[0])
    throw new ArgumentError(`dpGradients: labels must be an Int32Array of ${x.shape[0]} class indices`);
  if (!Number.isInteger(classes) || classes < 1)
    throw new ArgumentError(`dpGradients: classes must be a positive integer, got ${String(classes)}`);
  if (opts === null || typeof opts !== 'object') throw new ArgumentError('dpGradients: options { clip, noise, seed } are required');
  const { clip, noise, seed } = opts;
  if (!(clip > 0) || !(noise >= 0))
    throw new ArgumentError(`dpGradients: clip must be positive and noise non-negative, got clip ${clip}, noise ${noise}`);
  const named = new Map(model.namedParameters());
  const params = Object.fromEntries(named);
  const N = x.shape[0];
  const xs = reshape(x, [N, 1, ...x.shape.slice(1)]);
  const loss = (p: Record<string, Tensor>, xi: Tensor, yi: Tensor): Tensor =>
    neg(sum(mul(logSoftmax(functionalCall(model, p, xi) as Tensor), yi)));
  const [losses, grads] = vmap(valueAndGrad(loss), { inAxes: [null, 0, 0] })(params, xs, oneHot(labels, classes, x.dtype)) as unknown as [
    Tensor,
    Record<string, Tensor>,
  ];
  // Per-example norms over all parameters, then each example's scale min(1, C/‖g‖).
  const flat = Object.values(grads).map((g) => reshape(g, [N, g.size / N]));
  const norm = sqrt(flat.map((g) => sum(square(g), 1)).reduce((a, b) => add(a, b)));
  const scale = reshape(minimum(div(clip, add(norm, 1e-12)), 1), [1, N]);
  let i = 0;
  for (const [name, p] of named) {
    const g = flat[Object.keys(grads).indexOf(name)];
    const clipped = reshape(matmul(scale, g), p.shape); // Σ_n scale_n·g_n as one GEMM
    const noisy = noise > 0 ? add(clipped, mul(randn(p.shape, { dtype: p.dtype, seed: seed * 1000 + i++ }), noise * clip)) : clipped;
    p.grad?.dispose();
    p.grad = keep(div(noisy, N));
  }
  return sum(losses).item() / N;
}
