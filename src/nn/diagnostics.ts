// Instruments for training: per-parameter gradient and weight norms after a backward pass,
// warnings for vanishing and exploding gradients, and the alignment angle between the updates
// feedback alignment delivers and the true gradient (the quantity Lillicrap et al. 2016 plot
// in their Figure 2). Every norm, dot product and angle is computed by wasm ops; JS only
// reads the final scalars.
import { ArgumentError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { tidy, keep } from '../tensor/memory.js';
import { noGrad, customVjp } from '../autodiff/transforms.js';
import { abs, add, astype, clamp, div, mul, sqrt, square, step, sub, sum } from '../ops/api.js';
import type { Module } from './module.js';
import { Linear, linearLayers } from './linear.js';
import { Sequential } from './sequential.js';
import { withBackprop, moduleArg } from './feedback.js';
import { describe, optionsArg, tooMany } from '../args.js';

/** One parameter's line of {@link gradientStats}. */
export interface GradientStat {
  /** The parameter's dotted name ("0.weight"). */
  name: string;
  /** ‖∇‖₂ of its gradient; 0 when no gradient reached it. */
  gradNorm: number;
  /** ‖W‖₂ of the parameter itself. */
  weightNorm: number;
  /** gradNorm / weightNorm: roughly the relative change one SGD step of lr 1 would make. */
  ratio: number;
}

/** ‖t‖₂, summed in float64 so a float32 gradient near its range cannot overflow the squares. */
function norm(t: Tensor): number {
  return tidy(() => noGrad(() => sqrt(sum(square(astype(t, 'float64')))).item()));
}

/** Per parameter, after a backward pass: its gradient's norm, its own norm and their ratio. */
export function gradientStats(model: Module): GradientStat[] {
  if (arguments.length > 1) throw tooMany('gradientStats', 1, arguments.length);
  return moduleArg('gradientStats', model)
    .namedParameters()
    .map(([name, p]) => {
      const gradNorm = p.grad === null ? 0 : norm(p.grad);
      const weightNorm = norm(p);
      return { name, gradNorm, weightNorm, ratio: weightNorm === 0 ? (gradNorm === 0 ? 0 : Infinity) : gradNorm / weightNorm };
    });
}

/** Thresholds of {@link gradientWarnings}. */
export interface WarningOptions {
  /** A gradient norm below this fraction of the largest one is vanishing (default 1e-6). */
  vanishing?: number;
  /** A gradient norm above this, or not finite, is exploding (default 1e6). */
  exploding?: number;
}

const sci = (v: number): string => (Number.isFinite(v) ? v.toExponential(2) : String(v));

/** One line per parameter whose gradient vanishes (relative to the largest) or explodes. */
export function gradientWarnings(stats: readonly GradientStat[], options?: WarningOptions): string[] {
  if (arguments.length > 2) throw tooMany('gradientWarnings', 2, arguments.length);
  const opts = optionsArg('gradientWarnings', options, ['vanishing', 'exploding']);
  if (!Array.isArray(stats))
    throw new ArgumentError(`gradientWarnings: stats must be the array gradientStats returns, got ${describe(stats)}`);
  stats.forEach((s, i) => {
    if (s === null || typeof s !== 'object' || typeof s.gradNorm !== 'number') {
      throw new ArgumentError(
        `gradientWarnings: stats[${i}] must be a { name, gradNorm, ... } record from gradientStats, got ${describe(s)}`,
      );
    }
  });
  for (const [k, v] of Object.entries(opts)) {
    if (typeof v !== 'number' || !(v > 0)) throw new ArgumentError(`gradientWarnings: ${k} must be a positive number, got ${describe(v)}`);
  }
  const vanishing = opts.vanishing ?? 1e-6,
    exploding = opts.exploding ?? 1e6;
  // The reference is the largest gradient that is not itself exploding.
  const finite = stats.filter((s) => Number.isFinite(s.gradNorm) && s.gradNorm <= exploding);
  const top = finite.reduce<GradientStat | null>((a, s) => (a === null || s.gradNorm > a.gradNorm ? s : a), null);
  const out: string[] = [];
  for (const s of stats) {
    if (!Number.isFinite(s.gradNorm) || s.gradNorm > exploding) {
      out.push(
        `exploding gradient: ${s.name} ‖grad‖ = ${sci(s.gradNorm)}${Number.isFinite(s.gradNorm) ? ` > ${sci(exploding)}` : ' (not finite)'}`,
      );
    } else if (top !== null && s.gradNorm < vanishing * top.gradNorm) {
      out.push(
        `vanishing gradient: ${s.name} ‖grad‖ = ${sci(s.gradNorm)} < ${vanishing} × the largest (${top.name}, ${sci(top.gradNorm)})`,
      );
    }
  }
  return out;
}

/** The statistics as an aligned table, one parameter a line. */
export function formatGradientStats(stats: readonly GradientStat[], indent = '  '): string {
  const w = Math.max(9, ...stats.map((s) => s.name.length));
  const head = `${indent}${'parameter'.padEnd(w)}  ${'‖grad‖'.padStart(9)}  ${'‖weight‖'.padStart(9)}  ${'ratio'.padStart(9)}`;
  const rows = stats.map(
    (s) => `${indent}${s.name.padEnd(w)}  ${sci(s.gradNorm).padStart(9)}  ${sci(s.weightNorm).padStart(9)}  ${sci(s.ratio).padStart(9)}`,
  );
  return [head, ...rows].join('\n');
}

// ---- alignment angles -------------------------------------------------------------------

/** One Linear layer's line of {@link alignmentAngles}: how far its feedback-alignment gradients point from backprop's. */
export interface AlignmentAngle {
  /** The Linear layer's dotted name ("3"). */
  layer: string;
  /**
   * Angle in degrees between the adjoint this layer sends to its input and the true gradient
   * of the loss with respect to that input (Lillicrap et al.'s angle between ΔhFA and ΔhBP);
   * null when the input needs no gradient (the data) or could not be observed.
   */
  signal: number | null;
  /** Angle in degrees between this layer's weight gradient under the model's feedback and under backprop. */
  weight: number;
}

/** Abramowitz and Stegun 4.4.46: arccos x = √(1 − x)·Σ aₖxᵏ on [0, 1], |error| ≤ 2·10⁻⁸. */
const ACOS = [1.570796305, -0.2145988016, 0.0889789874, -0.0501743046, 0.030891881, -0.0170881256, 0.0066700901, -0.0012624911];

/** arccos of every element of c ∈ [−1, 1], in radians, from wasm ops. */
function acos(c: Tensor): Tensor {
  const t = abs(c);
  let p = add(mul(t, ACOS[7]), ACOS[6]);
  for (let k = 5; k >= 0; k--) p = add(mul(p, t), ACOS[k]);
  const r = mul(sqrt(sub(1, t)), p);
  // arccos(c) = π − arccos(−c) for c < 0 (step: 1 where c ≤ 0; at 0 both give π/2).
  return add(r, mul(step(c, 0, 1), sub(Math.PI, mul(r, 2))));
}

/** The angle in degrees between a and b seen as vectors (NaN when either is zero). */
export function angleDegrees(a: Tensor, b: Tensor): number {
  return tidy(() =>
    noGrad(() => {
      const x = astype(a, 'float64'),
        y = astype(b, 'float64');
      const cos = div(sum(mul(x, y)), sqrt(mul(sum(square(x)), sum(square(y)))));
      return mul(acos(clamp(cos, -1, 1)), 180 / Math.PI).item();
    }),
  );
}

type Tap = (layer: Linear, x: Tensor) => Tensor;

/** model.forward(x), with `tap` applied to the input of every Linear reached through Sequentials. */
function tappedForward(m: Module, x: Tensor, tap: Tap): Tensor {
  if (m instanceof Linear) return m.forward(tap(m, x));
  if (m instanceof Sequential) return m.layers.reduce((h, layer) => tappedForward(layer, h, tap), x);
  return m.forward(x);
}

interface Pass {
  signals: (Tensor | null)[];
  weights: (Tensor | null)[];
}

/** One forward and backward pass; takes the FA layers' weight gradients and input adjoints. */
function measure(model: Module, layers: readonly Linear[], x: Tensor, lossOf: (out: Tensor) => Tensor): Pass {
  const signals: (Tensor | null)[] = layers.map(() => null);
  const identity = (h: Tensor) => h;
  const tap: Tap = (layer, h) => {
    const i = layers.indexOf(layer);
    if (i < 0 || !h.requiresGrad) return h;
    return customVjp(identity, (g) => {
      signals[i] = keep(astype(g, 'float64'));
      return [g];
    })(h);
  };
  tidy(() => lossOf(tappedForward(model, x, tap)).backward());
  const weights = layers.map((l) => l.weight.grad);
  for (const l of layers) l.weight.grad = null;
  for (const p of model.parameters()) {
    p.grad?.dispose();
    p.grad = null;
  }
  return { signals, weights };
}

/**
 * For every Linear of `model` whose feedback is not 'bp': the angles between what its
 * feedback delivers and what backpropagation would, on the batch x (the loss is lossOf of the
 * output). Runs two forward and backward passes in eval mode (no dropout, so both see one
 * network), the second with withBackprop(); the parameters' .grad and the training mode are
 * restored afterwards, so this can run between a training step's backward and its update.
 */
export function alignmentAngles(model: Module, x: Tensor, lossOf: (out: Tensor) => Tensor): AlignmentAngle[] {
  if (arguments.length > 3) throw tooMany('alignmentAngles', 3, arguments.length);
  moduleArg('alignmentAngles', model);
  if (!(x instanceof Tensor)) throw new ArgumentError(`alignmentAngles: x must be a Tensor, got ${describe(x)}`);
  x.check('alignmentAngles');
  if (typeof lossOf !== 'function')
    throw new ArgumentError(`alignmentAngles: lossOf must be a function of the output, got ${describe(lossOf)}`);
  const named = linearLayers(model).filter(([, l]) => l.feedback !== 'bp');
  if (named.length === 0) return [];
  const layers = named.map(([, l]) => l);
  const params = model.parameters();
  const stash = params.map((p) => p.grad);
  const training = model.training;
  const passes: Pass[] = [];
  try {
    for (const p of params) p.grad = null;
    model.eval();
    passes.push(measure(model, layers, x, lossOf));
    passes.push(withBackprop(() => measure(model, layers, x, lossOf)));
    const [fa, bp] = passes;
    return named.map(([layer], i) => {
      const s = fa.signals[i],
        t = bp.signals[i],
        w = fa.weights[i],
        v = bp.weights[i];
      return { layer, signal: s && t ? angleDegrees(s, t) : null, weight: w && v ? angleDegrees(w, v) : NaN };
    });
  } finally {
    for (const pass of passes) for (const t of [...pass.signals, ...pass.weights]) t?.dispose();
    params.forEach((p, i) => {
      if (p.grad !== stash[i]) p.grad?.dispose();
      p.grad = stash[i];
    });
    model.train(training);
  }
}
