// DP-SGD gradients (Abadi et al. 2016): every example's gradient is clipped to L2 norm at most C;
// the clipped gradients are summed, Gaussian noise N(0, σ²C²) from our seeded generator is added,
// and the sum is divided by the batch size. The result is written to each parameter's .grad, so
// any optimizer steps on it. Two methods give the same result to rounding: 'ghost' (./ghost.ts:
// the norms from each Linear's input and output cotangent, then one GEMM per layer for the
// clipped sum; every parameter must sit in an nn.Linear) and 'vmap' (every example's gradient
// from one vmap(valueAndGrad(loss)) pass over functionalCall; any model). 'auto' picks ghost
// when the model allows it.
import { ArgumentError } from '../errors.js';
import { type Tensor, isTensor } from '../ops/tensor.js';
import { keep } from '../tensor/memory.js';
import { randn, tensor, zeros } from '../ops/create.js';
import { add, mul, div, sum, sqrt, square, neg, minimum, reshape, matmul, logSoftmax } from '../ops/api.js';
import { valueAndGrad } from '../autodiff/transforms.js';
import { vmap } from '../autodiff/vmap.js';
import { functionalCall } from '../nn/functional.js';
import { Module } from '../nn/module.js';
import { checkClasses, ghostLayers, ghostNorms, ghostWeightedSum } from './ghost.js';
import { describe, tooMany } from '../args.js';

/** DP-SGD settings: per-example clipping norm C, Gaussian noise multiplier σ and the noise seed. */
export interface DpOptions {
  /** C: each example's gradient is scaled to L2 norm at most C. */
  clip: number;
  /** σ: the noise's standard deviation is σ·C. */
  noise: number;
  /** Seed of this step's noise (give every step its own). */
  seed: number;
  /** How the per-example norms are found (default 'auto': 'ghost' when every parameter is in an nn.Linear, else 'vmap'). */
  method?: DpMethod;
}

/** 'ghost': norms without per-example gradients (Linear-only models); 'vmap': materialised per-example gradients; 'auto': ghost when possible. */
export type DpMethod = 'auto' | 'ghost' | 'vmap';
const METHODS: readonly DpMethod[] = ['auto', 'ghost', 'vmap'];

function checkBatch(op: string, model: Module, x: Tensor, labels: Int32Array, classes: number): void {
  if (!(model instanceof Module))
    throw new ArgumentError(`${op}: model must be an nn.Module, got ${model === null ? 'null' : typeof model}`);
  if (!isTensor(x) || x.shape.length === 0) throw new ArgumentError(`${op}: x must be a Tensor [N, ...]`);
  if (x.shape[0] === 0) throw new ArgumentError(`${op}: x [${x.shape}] holds no examples`);
  if (!(labels instanceof Int32Array) || labels.length !== x.shape[0])
    throw new ArgumentError(`${op}: labels must be an Int32Array of ${x.shape[0]} class indices`);
  if (!Number.isInteger(classes) || classes < 1)
    throw new ArgumentError(`${op}: classes must be a positive integer, got ${describe(classes)}`);
  for (let i = 0; i < labels.length; i++)
    if (!(labels[i] >= 0 && labels[i] < classes)) throw new ArgumentError(`${op}: labels[${i}] = ${labels[i]} is not in [0, ${classes})`);
}

/** The float dtype of the model's parameters (the targets' dtype when x holds int32 indices). */
function paramDtype(model: Module): Tensor['dtype'] {
  const p = model.parameters()[0];
  return p === undefined ? 'float32' : p.dtype;
}

/** Each example's scale min(1, C/‖g‖) from the squared norms [N]. */
const clipScale = (sq: Tensor, clip: number): Tensor => minimum(div(clip, add(sqrt(sq), 1e-12)), 1);

/** Whether every parameter of model sits in an nn.Linear (the ghost method applies). */
function ghostApplies(model: Module): boolean {
  try {
    ghostLayers('dpGradients', model);
    return true;
  } catch {
    return false;
  }
}

/** [per-example losses, Σ_n scale_n·g_n by parameter name] by the ghost method. */
function ghostClipped(model: Module, x: Tensor, onehot: Tensor, clip: number): [Tensor, Map<string, Tensor>] {
  const { losses, sq, taps } = ghostNorms('dpGradients', model, x, reshape(onehot, [x.shape[0], onehot.shape[2]]));
  const byTensor = ghostWeightedSum(taps, clipScale(sq, clip));
  const out = new Map<string, Tensor>();
  for (const [name, p] of model.namedParameters()) {
    const g = byTensor.get(p);
    if (g !== undefined) out.set(name, g);
  }
  return [losses, out];
}

/** [per-example losses, Σ_n scale_n·g_n by parameter name] from materialised per-example gradients. */
function vmapClipped(model: Module, x: Tensor, onehot: Tensor, clip: number): [Tensor, Map<string, Tensor>] {
  const params = Object.fromEntries(model.namedParameters().filter(([, p]) => p.requiresGrad)); // frozen ones stay the module's own
  const N = x.shape[0];
  const xs = reshape(x, [N, 1, ...x.shape.slice(1)]);
  const loss = (p: Record<string, Tensor>, xi: Tensor, yi: Tensor): Tensor => {
    const logits = functionalCall(model, p, xi) as Tensor;
    checkClasses('dpGradients', logits, yi.shape[yi.shape.length - 1]);
    return neg(sum(mul(logSoftmax(logits), yi)));
  };
  const [losses, grads] = vmap(valueAndGrad(loss), { inAxes: [null, 0, 0] })(params, xs, onehot) as unknown as [
    Tensor,
    Record<string, Tensor>,
  ];
  // Per-example norms over all parameters, then Σ_n scale_n·g_n as one GEMM per parameter.
  const flat = Object.entries(grads).map(([name, g]) => [name, reshape(g, [N, g.size / N])] as const);
  const scale = reshape(
    clipScale(
      flat.map(([, g]) => sum(square(g), 1)).reduce((a, b) => add(a, b)),
      clip,
    ),
    [1, N],
  );
  return [losses, new Map(flat.map(([name, g]) => [name, reshape(matmul(scale, g), params[name].shape)]))];
}

/**
 * Every example's L2 gradient norm over all parameters of `model` for the cross-entropy on the
 * batch (x [N, ...], integer labels), as a Tensor [N], computed without forming the per-example
 * gradients (every parameter must be in an nn.Linear; see docs/vmap.md, "Norms without
 * per-example gradients"). Equal to the norms of `vmap(grad(loss))` to rounding.
 */
export function perExampleGradNorms(model: Module, x: Tensor, labels: Int32Array, classes: number): Tensor {
  if (arguments.length > 4) throw tooMany('optim.perExampleGradNorms', 4, arguments.length);
  checkBatch('perExampleGradNorms', model, x, labels, classes);
  const onehot = oneHot(labels, classes, x.dtype);
  return sqrt(ghostNorms('perExampleGradNorms', model, x, reshape(onehot, [x.shape[0], classes])).sq);
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
  checkBatch('dpGradients', model, x, labels, classes);
  if (opts === null || typeof opts !== 'object') throw new ArgumentError('dpGradients: options { clip, noise, seed } are required');
  const { clip, noise, seed } = opts;
  if (!(clip > 0) || !(noise >= 0))
    throw new ArgumentError(`dpGradients: clip must be positive and noise non-negative, got clip ${clip}, noise ${noise}`);
  if (noise > 0 && !Number.isSafeInteger(seed))
    throw new ArgumentError(`dpGradients: seed must be a safe integer (the noise is drawn from it), got ${describe(seed)}`);
  const method = opts.method ?? 'auto';
  if (!METHODS.includes(method))
    throw new ArgumentError(`dpGradients: method must be one of ${METHODS.map((m) => `'${m}'`).join(', ')}, got ${describe(method)}`);
  const N = x.shape[0];
  const onehot = oneHot(labels, classes, x.dtype === 'int32' ? paramDtype(model) : x.dtype); // int32 x: token ids
  const useGhost = method === 'ghost' || (method === 'auto' && ghostApplies(model));
  const [losses, sums] = useGhost ? ghostClipped(model, x, onehot, clip) : vmapClipped(model, x, onehot, clip);
  let i = 0;
  for (const [name, p] of model.namedParameters()) {
    if (!p.requiresGrad) continue; // frozen: no gradient, as backward() gives it none
    const clipped = sums.get(name) ?? zeros(p.shape, { dtype: p.dtype }); // a parameter the forward never used
    const noisy = noise > 0 ? add(clipped, mul(randn(p.shape, { dtype: p.dtype, seed: seed * 1000 + i++ }), noise * clip)) : clipped;
    p.grad?.dispose();
    p.grad = keep(div(noisy, N));
  }
  return sum(losses).item() / N;
}
