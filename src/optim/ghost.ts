// Per-example gradient norms without per-example gradients (Goodfellow 2015), and the clipped sum
// DP-SGD needs from them (ghost clipping, Li et al. 2021; book-keeping, Bu et al. 2022), for
// models whose parameters all live in nn.Linear layers. A Linear applied to example i's rows
// A_i [T, in] with output cotangent Δ_i [T, out] has the weight gradient G_i = Δ_iᵀ·A_i, so
//   ‖G_i‖² = ‖δ_i‖²·‖a_i‖² (one row, T = 1),  ‖G_i‖² = Σ (A_i A_iᵀ) ⊙ (Δ_i Δ_iᵀ) (T rows, Gram),
// and the bias gradient is Σ_t δ_it. One batched forward records every layer's input A and a
// zero leaf E added to its output (z + 0 is z exactly), one backward pass to the leaves gives
// Δ = ∂(Σ_i L_i)/∂z, and the clipped sum Σ_i s_i·G_i is one GEMM per layer, (s⊙Δ)ᵀ·A. Nothing of
// size B × parameters is ever written.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import { zeros } from '../ops/create.js';
import { add, mul, sum, square, neg, reshape, matmulT, relu, tanh, sigmoid, logSoftmax } from '../ops/api.js';
import type { Activation } from '../ops/dense.js';
import { grad as autogradGrad } from '../autodiff/autograd.js';
import type { Module } from '../nn/module.js';
import { withMode } from '../ops/modes.js';
import { Linear, linearLayers } from '../nn/linear.js';
import { Sequential } from '../nn/sequential.js';

const ACT: Record<Activation, (z: Tensor) => Tensor> = { none: (z) => z, relu, tanh, sigmoid };

/** One Linear's record from the tapped forward: its input rows A [B, T, in] and the zero leaf E [B, T, out]. */
interface Tap {
  readonly name: string;
  readonly layer: Linear;
  a: Tensor | null;
  e: Tensor | null;
}

/** The first Sequential in model's tree that runs under a checkpoint plan (its backward re-runs the forward unpatched), or null. */
function checkpointed(model: Module<unknown>, name: string): string | null {
  if (model instanceof Sequential && model.options.checkpoint !== undefined) return name === '' ? 'the model' : name;
  for (const [n, c] of model.namedChildren()) {
    const hit = checkpointed(c, name === '' ? n : `${name}.${n}`);
    if (hit !== null) return hit;
  }
  return null;
}

/** The Linear layers of `model`, or an ArgumentError naming the first parameter no Linear holds. */
export function ghostLayers(op: string, model: Module): [string, Linear][] {
  const ckpt = checkpointed(model, '');
  if (ckpt !== null)
    throw new ArgumentError(
      `${op}: ${ckpt} runs under a checkpoint plan, which the per-example norm without per-example gradients cannot tap (use the vmap method)`,
    );
  const layers = linearLayers(model).filter(([, l]) => l.constructor === Linear);
  const held = new Set<Tensor>(layers.flatMap(([, l]) => (l.bias === null ? [l.weight] : [l.weight, l.bias])));
  for (const [name, p] of model.namedParameters())
    if (!held.has(p))
      throw new ArgumentError(
        `${op}: the per-example norm without per-example gradients needs every parameter in an nn.Linear; ${name} is not (use the vmap method)`,
      );
  return layers;
}

/** Each example's cross-entropy [B] from logits [B, ..., classes] (summed over any middle axes) and one-hot rows [B, classes]. */
function perExampleLoss(op: string, logits: Tensor, onehot: Tensor): Tensor {
  checkClasses(op, logits, onehot.shape[1]);
  const B = logits.shape[0],
    mid = logits.shape.length - 2;
  const y = reshape(onehot, [B, ...new Array<number>(mid).fill(1), onehot.shape[1]]);
  const perRow = neg(sum(mul(logSoftmax(logits), y), -1));
  return mid === 0
    ? perRow
    : sum(
        perRow,
        perRow.shape.slice(1).map((_, i) => i + 1),
      );
}

/** The model's last axis must hold `classes` logits (a mismatch was a bare broadcast error of mul). */
export function checkClasses(op: string, logits: Tensor, classes: number): void {
  const c = logits.shape[logits.shape.length - 1];
  if (c !== classes)
    throw new ArgumentError(`${op}: the model's output [${logits.shape}] has ${c} classes on its last axis, but classes is ${classes}`);
}

/** Per-layer taps of model on x [B, ...]: the summed per-example cross-entropy's cotangent at every Linear output. */
function tappedBackward(op: string, model: Module, layers: [string, Linear][], x: Tensor, onehot: Tensor): { taps: Tap[]; losses: Tensor } {
  const taps: Tap[] = layers.map(([name, layer]) => ({ name, layer, a: null, e: null }));
  const B = x.shape[0];
  for (const tap of taps) {
    // An own property shadows the prototype method for this run only; Sequential's fused Linear→activation steps call it too.
    (tap.layer as { forwardAct: Linear['forwardAct'] }).forwardAct = (xin: Tensor, act: Activation) => {
      if (tap.e !== null)
        throw new ArgumentError(`${op}: layer ${tap.name} runs twice in one forward (shared weights): use the vmap method`);
      if (xin.shape.length < 2 || xin.shape[0] !== B)
        throw new ArgumentError(`${op}: layer ${tap.name} got input [${xin.shape}], expected the batch of ${B} along axis 0`);
      const z = Linear.prototype.forwardAct.call(tap.layer, xin, 'none');
      tap.a = xin.share(); // our own handle: Sequential frees each intermediate once the next layer has run
      tap.e = zeros(z.shape, { dtype: z.dtype, requiresGrad: true });
      return ACT[act](add(z, tap.e));
    };
  }
  let losses: Tensor, total: Tensor;
  try {
    // Taped even under noGrad: the backward to the leaves needs it.
    [losses, total] = withMode('record', true, () => {
      const l = perExampleLoss(op, model.forward(x) as Tensor, onehot);
      return [l, sum(l)];
    });
  } finally {
    for (const tap of taps) delete (tap.layer as { forwardAct?: unknown }).forwardAct;
  }
  const used = taps.filter((t) => t.e !== null);
  const cut = (name: string) =>
    new ArgumentError(`${op}: no gradient reaches the output of layer ${name} through the recorded forward (use the vmap method)`);
  if (used.length === 0) return { taps: used, losses };
  if (!total.requiresGrad) throw cut(used[0].name);
  const deltas = autogradGrad(
    total,
    used.map((t) => t.e!),
    { allowUnused: true },
  );
  used.forEach((t, k) => {
    // No gradient reached the leaf: the layer's output was cut from the loss (checkpoint, detach, an unused branch); refuse rather than report 0.
    const d = deltas[k];
    if (d === null)
      throw new ArgumentError(
        `${op}: no gradient reaches the output of layer ${t.name} through the recorded forward (use the vmap method)`,
      );
    t.e = d;
  });
  return { taps: used, losses };
}

/** [B, T, n] view of a [B, ..., n] tensor. */
const rows3 = (t: Tensor): Tensor =>
  reshape(t, [t.shape[0], t.size / (t.shape[0] * t.shape[t.shape.length - 1]), t.shape[t.shape.length - 1]]);

/** ‖G_i‖² of one layer's weight (and bias) for every example: [B]. */
function layerSquaredNorms(tap: Tap): Tensor {
  const a = rows3(tap.a!),
    d = rows3(tap.e!),
    B = a.shape[0];
  // A frozen parameter (requiresGrad false) gets no gradient, so it adds no term to the norm.
  const terms: Tensor[] = [];
  if (tap.layer.weight.requiresGrad) {
    if (a.shape[1] === 1) terms.push(mul(sum(square(reshape(a, [B, a.shape[2]])), 1), sum(square(reshape(d, [B, d.shape[2]])), 1)));
    else terms.push(sum(mul(matmulT(a, a, false, true), matmulT(d, d, false, true)), [1, 2])); // Σ (AAᵀ) ⊙ (ΔΔᵀ)
  }
  if (tap.layer.bias?.requiresGrad === true) terms.push(sum(square(sum(d, 1)), 1));
  return terms.length === 0 ? zeros([B], { dtype: a.dtype }) : terms.reduce((u, v) => add(u, v));
}

/** The per-example losses [B] and squared gradient norms [B] over all parameters, and the taps for the clipped sum. */
export function ghostNorms(op: string, model: Module, x: Tensor, onehot: Tensor): { losses: Tensor; sq: Tensor; taps: Tap[] } {
  const { taps, losses } = tappedBackward(op, model, ghostLayers(op, model), x, onehot);
  const sq = taps.map(layerSquaredNorms).reduce((u, v) => add(u, v), zeros([x.shape[0]], { dtype: x.dtype }));
  return { losses, sq, taps };
}

/** Σ_i s_i·∂L_i/∂θ for every parameter of the tapped layers (s [B]), by name: one GEMM per weight. */
export function ghostWeightedSum(taps: readonly Tap[], s: Tensor): Map<Tensor, Tensor> {
  const out = new Map<Tensor, Tensor>();
  for (const tap of taps) {
    const a = rows3(tap.a!),
      d = rows3(tap.e!),
      [B, T, n] = d.shape;
    const sd = reshape(mul(d, reshape(s, [B, 1, 1])), [B * T, n]);
    if (tap.layer.weight.requiresGrad) out.set(tap.layer.weight, matmulT(sd, reshape(a, [B * T, a.shape[2]]), true, false)); // (s⊙Δ)ᵀ·A
    if (tap.layer.bias?.requiresGrad === true) out.set(tap.layer.bias, sum(sd, 0));
  }
  return out;
}
