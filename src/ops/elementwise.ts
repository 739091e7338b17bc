// Elementwise primitives, one row each. A unary row names its kernel with its cost class
// (map(...): fusable by compile(), thread splits sized by the cost), what it saves and its
// derivative f' as a function of (x, y) built from ops; VJP (g·f') and JVP (t·f') follow from
// that one line. Binary rows give their partial derivatives the same way.
import type { Tensor } from './tensor.js';
import type { CostClass, Element, Rule, Saves } from './rule.js';
import { launchUnary, launchBinary } from './launch.js';
import {
  add,
  sub,
  mul,
  div,
  neg,
  square,
  geluErfGrad,
  geluTanhGrad,
  sign,
  cos,
  sin,
  sigmoid,
  step,
  inside,
  pow,
  log,
  exp,
  ge,
  gt,
  eq,
  recip,
  zerosLike,
} from './api.js';
import { apply } from './apply.js';
import { filled } from './launch.js';
import { tanhGrad, sigmoidGrad, reluGrad, gate, gate01, geluErfVjp, geluErf2, geluTanh2 } from './nn.js';
import { elementwiseBatch } from './batch.js';

type Deriv<P> = (x: Tensor, y: Tensor, p: P) => Tensor;
// Forwards index xs rather than destructure it: they run on every op, and destructuring an
// array goes through the iterator protocol.
const launchWith = (e: Element, x: Tensor, p: [number, number]): Tensor => launchUnary(e, x, p[0], p[1]);
/** A map kernel (x, y, n, p0, p1); 'transcendental' for a polynomial per element (exp, log, tanh…). */
const map = (kernel: string, cost: CostClass = 'cheap'): Element => ({ kernel, layout: 'map', cost, fusable: true });
/** A zip kernel (a, b, y, rows, cols, strides) with broadcasting. */
const zip = (kernel: string, cost: CostClass = 'cheap'): Element => ({ kernel, layout: 'zip', cost, fusable: true });
/** v where mask is 0, 1 where it is 1 (mask a 0/1 tensor of v's dtype). */
const oneWhere = (mask: Tensor, v: Tensor): Tensor => apply('where', [mask, filled([], v.dtype, 1), v], {});
// pow's partial derivatives, with PyTorch's values where the plain formulas give 0·∞: ∂/∂a = 0
// where b = 0, ∂/∂b = 0 where a = 0 and b ≥ 0. The problem entries get a safe operand (exponent 1,
// log 1) rather than a select of the result, so derivatives of these, to any order, stay finite.
/** ∂aᵇ/∂a = b·a^(b−1). */
const powDa = (a: Tensor, b: Tensor): Tensor => mul(b, pow(a, oneWhere(eq(b, 0), sub(b, 1))));
/** ∂aᵇ/∂b = aᵇ·ln a, y = aᵇ. */
const powDb = (a: Tensor, b: Tensor, y: Tensor): Tensor => mul(y, log(oneWhere(mul(eq(a, 0), ge(b, 0)), a)));
const SAVE_X: Saves = { inputs: [0], output: false };
const SAVE_Y: Saves = { inputs: [], output: true };
const SAVE_NONE: Saves = { inputs: [], output: false };

/** A unary primitive y = f(x) whose derivative f' is computed from x (save 'x') or y (save 'y'). */
function unary<P = Record<string, never>>(
  element: Element,
  save: 'x' | 'y',
  d: Deriv<P>,
  args: (p: P) => [number, number] = () => [0, 0],
): Rule<P> {
  return {
    element,
    saves: save === 'x' ? SAVE_X : SAVE_Y,
    forward: (xs, p) => launchWith(element, xs[0], args(p)),
    vjp: (g, s, p) => [mul(g, d(s.x[0]!, s.y!, p))],
    jvp: ([t], [x], y, p) => mul(t!, d(x, y, p)),
    batch: elementwiseBatch,
  };
}

/** A unary primitive whose g·f'(y) is one fused kernel, grad(y, g) (nn.ts); the JVP is grad(y, t). */
function fusedUnary(element: Element, grad: (y: Tensor, g: Tensor) => Tensor): Rule<Record<string, never>> {
  return {
    element,
    saves: SAVE_Y,
    forward: (xs) => launchUnary(element, xs[0]),
    vjp: (g, s) => [grad(s.y!, g)],
    jvp: ([t], _x, y) => grad(y, t!),
    batch: elementwiseBatch,
  };
}

/** A unary primitive with derivative zero everywhere it is defined (masks, sign). */
function constant<P>(element: Element, args: (p: P) => [number, number]): Rule<P> {
  return {
    element,
    saves: SAVE_NONE,
    forward: (xs, p) => launchWith(element, xs[0], args(p)),
    vjp: () => [null],
    jvp: (_ts, _xs, y) => zerosLike(y),
    batch: elementwiseBatch,
  };
}

/** A linear unary primitive: its JVP is the op itself and its VJP the adjoint op. */
function linear1(element: Element, op: (t: Tensor) => Tensor, adjoint: (g: Tensor) => Tensor): Rule<Record<string, never>> {
  return {
    element,
    saves: SAVE_NONE,
    forward: (xs) => launchUnary(element, xs[0]),
    vjp: (g) => [adjoint(g)],
    jvp: ([t]) => op(t!),
    batch: elementwiseBatch,
  };
}

type Partials = (g: Tensor, a: Tensor, b: Tensor, y: Tensor, needs: readonly boolean[]) => (Tensor | null)[];

/** A binary primitive with broadcasting; `partials` maps g to the two cotangents, JVP is ∂a·ta + ∂b·tb. */
function binary(
  element: Element,
  save: Saves,
  partials: Partials,
  tangent: (ta: Tensor | null, tb: Tensor | null, a: Tensor, b: Tensor, y: Tensor) => Tensor,
): Rule<Record<string, never>> {
  return {
    element,
    saves: save,
    forward: (xs) => launchBinary(element.kernel, element, xs[0], xs[1]),
    vjp: (g, s, _p, needs) => partials(g, s.x[0]!, s.x[1]!, s.y!, needs),
    jvp: ([ta, tb], [a, b], y) => tangent(ta, tb, a, b, y),
    batch: elementwiseBatch,
  };
}

const BOTH: Saves = { inputs: [0, 1], output: false };
/** Sum of the terms that exist (tangents of inputs without one are zero). */
const plus = (u: Tensor | null, v: Tensor | null): Tensor => (u === null ? v! : v === null ? u : add(u, v));
const when = (need: boolean, f: () => Tensor): Tensor | null => (need ? f() : null);

export const unaryRules = {
  // Arrows, not `neg` itself: api.ts is still initialising when this table is built (import cycle).
  neg: linear1(
    map('neg'),
    (t) => neg(t),
    (g) => neg(g),
  ),
  exp: unary(map('exp', 'transcendental'), 'y', (_x, y) => y),
  log: unary(map('log', 'transcendental'), 'x', (x) => recip(x)),
  sqrt: unary(map('sqrt'), 'y', (_x, y) => div(0.5, y)),
  abs: unary(map('abs'), 'x', (x) => sign(x)),
  square: unary(map('square'), 'x', (x) => mul(x, 2)),
  sin: unary(map('sin', 'transcendental'), 'x', (x) => cos(x)),
  cos: unary(map('cos', 'transcendental'), 'x', (x) => neg(sin(x))),
  // f' = 1 − y², y(1 − y) and (y > 0): g·f' fused into one pass each (nn.ts).
  tanh: fusedUnary(map('tanh', 'transcendental'), (y, g) => tanhGrad(y, g)),
  sigmoid: fusedUnary(map('sigmoid', 'transcendental'), (y, g) => sigmoidGrad(y, g)),
  relu: fusedUnary(map('relu'), (y, g) => reluGrad(y, g)),
  softplus: unary(map('softplus', 'transcendental'), 'x', (x) => sigmoid(x)),
  leakyRelu: unary<{ slope: number }>(
    map('leaky_relu'),
    'x',
    (x, _y, p) => step(x, 1, p.slope),
    (p) => [p.slope, 0],
  ),
  // Gated, not multiplied: an infinite or NaN cotangent stops where x was clipped (nn.ts's gate).
  clamp: {
    ...unary<{ lo: number; hi: number }>(
      map('clamp'),
      'x',
      (x, _y, p) => inside(x, p.lo, p.hi),
      (p) => [p.lo, p.hi],
    ),
    vjp: (g, s, p) => [gate01(g, inside(s.x[0]!, p.lo, p.hi))],
    jvp: ([t], [x], _y, p) => gate01(t!, inside(x, p.lo, p.hi)),
  } satisfies Rule<{ lo: number; hi: number }>,
  step: constant<{ a: number; b: number }>(map('step'), (p) => [p.a, p.b]),
  inside: constant<{ lo: number; hi: number }>(map('inside'), (p) => [p.lo, p.hi]),
  sign: constant<Record<string, never>>(map('sign'), () => [0, 0]),
  recip: unary(map('recip'), 'y', (_x, y) => neg(square(y))),
  erf: unary(map('erf', 'transcendental'), 'x', (x) => mul(exp(neg(square(x))), 2 / Math.sqrt(Math.PI))), // erf' = 2/√π·e^{−x²}
  // Exact GELU ½x(1 + erf(x/√2)) as one kernel each way (the VJP g·gelu'(x) fused, nn.ts):
  // gelu' = Φ(x) + x·φ(x), gelu'' = φ(x)·(2 − x²).
  geluErf: {
    ...unary(map('gelu_erf', 'transcendental'), 'x', (x) => geluErfGrad(x)),
    vjp: (g, s) => [geluErfVjp(s.x[0]!, g)],
  } satisfies Rule<Record<string, never>>,
  geluErfGrad: unary(map('gelu_erf_grad', 'transcendental'), 'x', (x) => geluErf2(x)),
  // GELU's tanh form x·σ(w) in float64, free of the composite's cancellation in 1 + tanh (the
  // float32 composite keeps its bits); gelu' = σ(w) + x·w'·σ(w)(1 − σ(w)), gelu'' in nn.ts.
  geluTanh: unary(map('gelu_tanh', 'transcendental'), 'x', (x) => geluTanhGrad(x)),
  geluTanhGrad: unary(map('gelu_tanh_grad', 'transcendental'), 'x', (x) => geluTanh2(x)),
};

export const binaryRules = {
  add: binary(
    zip('add'),
    SAVE_NONE,
    (g) => [g, g],
    (ta, tb) => plus(ta, tb),
  ),
  sub: binary(
    zip('sub'),
    SAVE_NONE,
    (g, _a, _b, _y, n) => [g, when(n[1], () => neg(g))],
    (ta, tb) => plus(ta, tb === null ? null : neg(tb)),
  ),
  mul: binary(
    zip('mul'),
    BOTH,
    (g, a, b, _y, n) => [when(n[0], () => mul(g, b)), when(n[1], () => mul(g, a))],
    (ta, tb, a, b) => plus(ta && mul(ta, b), tb && mul(a, tb)),
  ),
  div: binary(
    zip('div'),
    BOTH,
    // ∂/∂b = −(a/b)/b, as PyTorch: b² over- or underflows float32 beyond |b| ≈ 1.8e19 or below
    // 1e-19, which turned the gradient into 0, ∞ or NaN where the quotients are finite.
    (g, a, b, _y, n) => [when(n[0], () => div(g, b)), when(n[1], () => neg(mul(g, div(div(a, b), b))))],
    (ta, tb, a, b) => plus(ta && div(ta, b), tb && neg(mul(tb, div(div(a, b), b)))),
  ),
  pow: binary(
    zip('pow', 'transcendental'),
    BOTH,
    (g, a, b, _y, n) => [when(n[0], () => mul(g, powDa(a, b))), when(n[1], () => mul(g, powDb(a, b, pow(a, b))))],
    (ta, tb, a, b, y) => plus(ta && mul(ta, powDa(a, b)), tb && mul(tb, powDb(a, b, y))),
  ),
  // A tie sends half the gradient each way, as PyTorch and JAX (NaN: all of it to both, as PyTorch).
  maximum: binary(
    zip('maximum'),
    BOTH,
    (g, a, b, _y, n) => tieSplit(g, a, b, n),
    (ta, tb, a, b) => blend(ta, tb, winner(a, b)),
  ),
  minimum: binary(
    zip('minimum'),
    BOTH,
    (g, a, b, _y, n) => tieSplit(g, b, a, n),
    (ta, tb, a, b) => blend(ta, tb, winner(b, a)),
  ),
  gt: cmp(zip('gt')),
  ge: cmp(zip('ge')),
  eq: cmp(zip('eq')),
  ne: cmp(zip('ne')),
};

/** Comparison: a 0/1 mask, with zero derivative; int32 operands too (an _i32 kernel each). */
function cmp(element: Element): Rule<Record<string, never>> {
  return {
    element,
    saves: SAVE_NONE,
    int32: true,
    constant: true,
    forward: (xs) => launchBinary(element.kernel, element, xs[0], xs[1]),
    vjp: () => [null, null],
    jvp: (_t, _x, y) => zerosLike(y),
    batch: elementwiseBatch,
  };
}
/** a's share of maximum(a, b)'s gradient: 1 where a > b, ½ at a tie, 0 where a < b (and at a NaN). */
const winner = (a: Tensor, b: Tensor): Tensor => add(gt(a, b), mul(eq(a, b), 0.5));
/**
 * The cotangents of the larger of a and b (swap them for the smaller): 1 − [a < b] − ½[a = b] for
 * a and 1 − [b < a] − ½[a = b] for b, so a tie splits evenly and a NaN passes the whole gradient
 * to both, as PyTorch's maximum backward does.
 */
function tieSplit(g: Tensor, a: Tensor, b: Tensor, needs: readonly boolean[]): (Tensor | null)[] {
  const half = mul(eq(a, b), 0.5);
  const share = (lo: Tensor, hi: Tensor) => gate(g, sub(sub(1, gt(hi, lo)), half)); // lo < hi as hi > lo
  return [when(needs[0], () => share(a, b)), when(needs[1], () => share(b, a))];
}
/** The tangent of maximum/minimum: ta where mask is 1, tb where it is 0, their mean at a tie (gated, so a huge tangent of the loser stops). */
function blend(ta: Tensor | null, tb: Tensor | null, mask: Tensor): Tensor {
  return plus(ta && gate(ta, mask), tb && gate(tb, sub(1, mask)));
}
