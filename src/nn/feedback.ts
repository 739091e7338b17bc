// How a Linear layer sends the adjoint back to its input. Backpropagation ('bp') uses the
// transpose of the forward weights: dx = g·W. That needs the backward pass to read W exactly
// ("weight transport"), which brains cannot do. Feedback alignment ('alignment', Lillicrap,
// Cownden, Tweed and Akerman 2016, "Random synaptic feedback weights support error
// backpropagation for deep learning") uses a fixed random matrix B of W's shape instead:
// dx = g·B. Sign-symmetric feedback ('sign', Liao, Leibo and Poggio 2016, "How important is
// weight symmetry in backpropagation?") uses B = sign(W), recomputed every forward pass.
// In every mode W's own gradient (gᵀ·x) and the bias's (Σ g) are the true ones, given g;
// only what reaches the layers below differs. The product is one primitive, `linearFA`
// (src/ops/linalg.ts), so it runs through apply() like every op.
import { ArgumentError } from '../errors.js';
import type { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { seedOf } from '../ops/create.js';
import { keep } from '../tensor/memory.js';
import { matmulT, linearFA, mul, sign, detach, composite } from '../ops/api.js';
import { Module } from './module.js';
import { Stream, fanInBound } from './init.js';
import { describe, tooMany } from '../args.js';

/** How a Linear layer sends the gradient back to its input: `'bp'` (backpropagation, through Wᵀ), `'alignment'` (a fixed random matrix B, Lillicrap et al. 2016) or `'sign'` (sign(W), scaled). */
export type Feedback = 'bp' | 'alignment' | 'sign';
export const FEEDBACK_MODES: readonly Feedback[] = ['bp', 'alignment', 'sign'];

export function checkFeedback(op: string, v: unknown): Feedback {
  if (v === undefined) return 'bp';
  if (!(FEEDBACK_MODES as readonly unknown[]).includes(v)) {
    throw new ArgumentError(`${op}: feedback must be one of ${FEEDBACK_MODES.map((m) => `'${m}'`).join(', ')}, got ${describe(v)}`);
  }
  return v as Feedback;
}

/** A Module argument, or an ArgumentError naming the function. */
export function moduleArg(op: string, m: unknown): Module {
  if (!(m instanceof Module)) throw new ArgumentError(`${op}: model must be an nn.Module, got ${m === null ? 'null' : typeof m}`);
  return m;
}

let backpropDepth = 0;

/**
 * Runs fn with every layer using true backpropagation (Wᵀ), whatever its feedback mode: the
 * reference pass the diagnostics compare feedback alignment against. B is kept.
 */
export function withBackprop<T>(fn: () => T): T {
  if (arguments.length > 1) throw tooMany('withBackprop', 1, arguments.length);
  if (typeof fn !== 'function') throw new ArgumentError(`withBackprop: fn must be a function, got ${describe(fn)}`);
  backpropDepth++;
  try {
    return fn();
  } finally {
    backpropDepth--;
  }
}

/** x·Wᵀ whose backward pass follows `mode`; `b` is the fixed matrix of 'alignment'. */
export function feedbackProduct(x: Tensor, w: Tensor, mode: Feedback, b: Tensor | null): Tensor {
  if (mode === 'bp' || backpropDepth > 0) return matmulT(x, w, false, true);
  if (mode === 'alignment') return linearFA(x, w, b!);
  return composite(() => linearFA(x, w, signFeedback(w)));
}

/**
 * sign(W) scaled by 1/√(3·in), the RMS of W's initial distribution U(−1/√in, 1/√in), so the
 * signal sent back starts at backprop's scale. Computed from a detached W: B gets no gradient.
 */
function signFeedback(w: Tensor): Tensor {
  return mul(sign(detach(w)), fanInBound(3 * w.shape[1]));
}

/** A fixed B for a weight [out, in]: the next slice of `rng`, drawn as W is, U(−1/√in, 1/√in). Kept out of tidy(). */
export function drawFeedback(rng: Stream, outFeatures: number, inFeatures: number, dtype: DType): Tensor {
  return keep(rng.uniform([outFeatures, inFeatures], fanInBound(inFeatures), dtype));
}

/** Marks the seeds' high word, so a feedback stream never repeats the weights drawn from the same seed. */
const SALT = 0xfeed;

/** The stream feedback matrices are drawn from for `seed` (an automatic seed when omitted). */
export function feedbackStream(seed: number | undefined, op: string): Stream {
  const [lo, hi] = seedOf(seed, op);
  return new Stream((hi ^ SALT) * 2 ** 32 + lo, op);
}
