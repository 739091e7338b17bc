// Anomaly mode: when on, every primitive's output is checked for NaN/Inf, in the forward pass
// and in the backward pass (VJP rules run their ops through the same apply). The first
// output with a NaN or an infinity of a kind no input held throws an AnomalyError naming the op,
// where it ran and its input shapes.
import { AnomalyError, ArgumentError } from '../errors.js';
import type { Tensor } from './tensor.js';
import { k } from './launch.js';
import type { Node } from './node.js';
import { modes, withMode } from './modes.js';
import { describe, tooMany } from '../args.js';

/** Primitives run since anomaly detection was last switched on (the forward position reported). */
let opCount = 0;
/** Outputs and elements checked since start (read by bench/anomaly.ts to cost the mode). */
export const checked = { outputs: 0, elements: 0 };
/** The node whose VJP is running, with its step in the backward sweep (null in the forward pass). */
let site: { node: Node; step: number; steps: number } | null = null;

/** Turns the NaN/Inf check of every kernel output on or off (off by default: it costs a pass over each output). */
export function detectAnomaly(on: boolean): void {
  if (arguments.length > 1) throw tooMany('detectAnomaly', 1, arguments.length);
  if (typeof on !== 'boolean') throw new ArgumentError(`detectAnomaly: on must be true or false, got ${describe(on)}`);
  if (on && !modes.anomaly) opCount = 0;
  modes.anomaly = on;
}

/** Runs fn with anomaly detection on, restoring the previous setting afterwards (even if fn throws). */
export function withAnomalyDetection<T>(fn: () => T): T {
  if (arguments.length > 1) throw tooMany('withAnomalyDetection', 1, arguments.length);
  if (typeof fn !== 'function') throw new ArgumentError(`withAnomalyDetection: fn must be a function, got ${describe(fn)}`);
  if (!modes.anomaly) opCount = 0;
  return withMode('anomaly', true, fn);
}

/** Runs fn (the VJP of `node`, step `step` of `steps` in the backward sweep) so anomalies are reported there. */
export function anomalySite<T>(node: Node, step: number, steps: number, fn: () => T): T {
  const prev = site;
  site = { node, step, steps };
  try {
    return fn();
  } finally {
    site = prev;
  }
}

const shapes = (xs: readonly { shape: readonly number[] }[]): string => xs.map((x) => `[${x.shape}]`).join(', ') || 'none';

/** Which kinds of non-finite value t holds, as bits: 1 NaN, 2 +Inf, 4 −Inf (0 for int32, which has none). */
function nonFiniteKinds(t: Tensor): number {
  if (t.dtype === 'int32' || t.size === 0 || k('count_nonfinite', t.dtype)(t.ptr, t.size) === 0) return 0;
  let m = 0;
  for (const v of t.toArray()) m |= Number.isNaN(v) ? 1 : v === Infinity ? 2 : v === -Infinity ? 4 : 0;
  return m;
}

/**
 * Throws AnomalyError (after freeing y) if y holds a NaN or an infinity that no input held. A kind
 * of value an input already had is carried, not produced: an additive −∞ attention mask (PyTorch's
 * generate_square_subsequent_mask) stays −∞ through triu, reshape, add and where, and its op is not
 * the anomaly (the op that first made the value was checked when it ran). The per-kind scan runs
 * only on outputs that failed the kernel count, so finite steps cost what they did.
 */
export function checkFinite(name: string, y: Tensor, xs: readonly Tensor[]): void {
  opCount++;
  checked.outputs++;
  checked.elements += y.size;
  // int32 (argmax, a cast, moved indices) holds no NaN or infinity, and has no count kernel.
  const bad = y.size === 0 || y.dtype === 'int32' ? 0 : k('count_nonfinite', y.dtype)(y.ptr, y.size);
  if (bad === 0) return;
  let carried = 0;
  for (const x of xs) carried |= nonFiniteKinds(x);
  if (carried !== 0 && (nonFiniteKinds(y) & ~carried) === 0) return;
  const what = `${name} produced ${bad} NaN/Inf value(s) in its ${y.dtype} output [${y.shape}] from inputs ${shapes(xs)}`;
  y.dispose();
  if (site === null) throw new AnomalyError(`detectAnomaly: forward pass, op #${opCount} since detection was turned on: ${what}`);
  const { node, step, steps } = site;
  throw new AnomalyError(
    `detectAnomaly: backward pass, step ${step + 1} of ${steps}, in the VJP of node #${node.id} (${node.prim} ` +
      `of inputs ${shapes(node.inputs)}): ${what}`,
  );
}
