// Elementwise primitives. A unary row names its kernel, what it saves and its derivative f'
// as a function of (x, y) built from ops; VJP (g·f') and JVP (t·f') follow from that one line.
// Binary rows give their partial derivatives the same way.
import type { Tensor } from './tensor.js';
import type { Rule, Saves } from './rule.js';
import { launchUnary, launchBinary } from './launch.js';
import { add, sub, mul, div, neg, square, sign, cos, sin, sigmoid, step, inside, pow, log, ge, recip, zerosLike } from './api.js';
import { tanhGrad, sigmoidGrad, reluGrad } from './nn.js';

type Deriv<P> = (x: Tensor, y: Tensor, p: P) => Tensor;
// Forwards index xs rather than destructure it: they run on every op, and destructuring an
// array goes through the iterator protocol.
const launchWith = (kernel: string, x: Tensor, p: [number, number]): Tensor => launchUnary(kernel, x, p[0], p[1]);
const SAVE_X: Saves = { inputs: [0], output: false };
const SAVE_Y: Saves = { inputs: [], output: true };
const SAVE_NONE: Saves = { inputs: [], output: false };

/** A unary primitive y = f(x) whose derivative f' is computed from x (save 'x') or y (save 'y'). */
function unary<P = Record<string, never>>(kernel: string, save: 'x' | 'y', d: Deriv<P>, args: (p: P) => [number, number] = () => [0, 0]): Rule<P> {
  return {
    saves: save === 'x' ? SAVE_X : SAVE_Y,
    forward: (xs, p) => launchWith(kernel, xs[0], args(p)),
    vjp: (g, s, p) => [mul(g, d(s.x[0]!, s.y!, p))],
    jvp: ([t], [x], y, p) => mul(t!, d(x, y, p)),
  };
}

/** A unary primitive whose g·f'(y) is one fused kernel, grad(y, g) (nn.ts); the JVP is grad(y, t). */
function fusedUnary(kernel: string, grad: (y: Tensor, g: Tensor) => Tensor): Rule<Record<string, never>> {
  return { saves: SAVE_Y, forward: (xs) => launchUnary(kernel, xs[0]), vjp: (g, s) => [grad(s.y!, g)], jvp: ([t], _x, y) => grad(y, t!) };
}

/** A unary primitive with derivative zero everywhere it is defined (masks, sign). */
function constant<P>(kernel: string, args: (p: P) => [number, number]): Rule<P> {
  return {
    saves: SAVE_NONE,
    forward: (xs, p) => launchWith(kernel, xs[0], args(p)),
    vjp: () => [null],
    jvp: (_ts, _xs, y) => zerosLike(y),
  };
}

/** A linear unary primitive: its JVP is the op itself and its VJP the adjoint op. */
function linear1(kernel: string, op: (t: Tensor) => Tensor, adjoint: (g: Tensor) => Tensor): Rule<Record<string, never>> {
  return { saves: SAVE_NONE, forward: (xs) => launchUnary(kernel, xs[0]), vjp: (g) => [adjoint(g)], jvp: ([t]) => op(t!) };
}

type Partials = (g: Tensor, a: Tensor, b: Tensor, y: Tensor, needs: readonly boolean[]) => (Tensor | null)[];

/** A binary primitive with broadcasting; `partials` maps g to the two cotangents, JVP is ∂a·ta + ∂b·tb. */
function binary(op: string, save: Saves, partials: Partials, tangent: (ta: Tensor | null, tb: Tensor | null, a: Tensor, b: Tensor, y: Tensor) => Tensor): Rule<Record<string, never>> {
  return {
    saves: save,
    forward: (xs) => launchBinary(op, op, xs[0], xs[1]),
    vjp: (g, s, _p, needs) => partials(g, s.x[0]!, s.x[1]!, s.y!, needs),
    jvp: ([ta, tb], [a, b], y) => tangent(ta, tb, a, b, y),
  };
}

const BOTH: Saves = { inputs: [0, 1], output: false };
/** Sum of the terms that exist (tangents of inputs without one are zero). */
const plus = (u: Tensor | null, v: Tensor | null): Tensor => (u === null ? v! : v === null ? u : add(u, v));
const when = (need: boolean, f: () => Tensor): Tensor | null => (need ? f() : null);

export const unaryRules = {
  // Arrows, not `neg` itself: api.ts is still initialising when this table is built (import cycle).
  neg: linear1('neg', (t) => neg(t), (g) => neg(g)),
  exp: unary('exp', 'y', (_x, y) => y),
  log: unary('log', 'x', (x) => recip(x)),
  sqrt: unary('sqrt', 'y', (_x, y) => div(0.5, y)),
  abs: unary('abs', 'x', (x) => sign(x)),
  square: unary('square', 'x', (x) => mul(x, 2)),
  sin: unary('sin', 'x', (x) => cos(x)),
  cos: unary('cos', 'x', (x) => neg(sin(x))),
  // f' = 1 − y², y(1 − y) and (y > 0): g·f' fused into one pass each (nn.ts).
  tanh: fusedUnary('tanh', (y, g) => tanhGrad(y, g)),
  sigmoid: fusedUnary('sigmoid', (y, g) => sigmoidGrad(y, g)),
  relu: fusedUnary('relu', (y, g) => reluGrad(y, g)),
  softplus: unary('softplus', 'x', (x) => sigmoid(x)),
  leakyRelu: unary<{ slope: number }>('leaky_relu', 'x', (x, _y, p) => step(x, 1, p.slope), (p) => [p.slope, 0]),
  clamp: unary<{ lo: number; hi: number }>('clamp', 'x', (x, _y, p) => inside(x, p.lo, p.hi), (p) => [p.lo, p.hi]),
  step: constant<{ a: number; b: number }>('step', (p) => [p.a, p.b]),
  inside: constant<{ lo: number; hi: number }>('inside', (p) => [p.lo, p.hi]),
  sign: constant<Record<string, never>>('sign', () => [0, 0]),
  recip: unary('recip', 'y', (_x, y) => neg(square(y))),
};

export const binaryRules = {
  add: binary('add', SAVE_NONE, (g) => [g, g], (ta, tb) => plus(ta, tb)),
  sub: binary('sub', SAVE_NONE, (g, _a, _b, _y, n) => [g, when(n[1], () => neg(g))], (ta, tb) => plus(ta, tb === null ? null : neg(tb))),
  mul: binary('mul', BOTH, (g, a, b, _y, n) => [when(n[0], () => mul(g, b)), when(n[1], () => mul(g, a))],
    (ta, tb, a, b) => plus(ta && mul(ta, b), tb && mul(a, tb))),
  div: binary('div', BOTH, (g, a, b, _y, n) => [when(n[0], () => div(g, b)), when(n[1], () => neg(div(mul(g, a), square(b))))],
    (ta, tb, a, b) => plus(ta && div(ta, b), tb && neg(div(mul(tb, a), square(b))))),
  pow: binary('pow', BOTH, (g, a, b, _y, n) => [when(n[0], () => mul(g, mul(b, pow(a, sub(b, 1))))), when(n[1], () => mul(g, mul(pow(a, b), log(a))))],
    (ta, tb, a, b, y) => plus(ta && mul(ta, mul(b, pow(a, sub(b, 1)))), tb && mul(tb, mul(y, log(a))))),
  maximum: binary('maximum', BOTH, (g, a, b, _y, n) => maskSplit(g, ge(a, b), n),
    (ta, tb, a, b) => blend(ta, tb, ge(a, b))),
  minimum: binary('minimum', BOTH, (g, a, b, _y, n) => maskSplit(g, ge(b, a), n),
    (ta, tb, a, b) => blend(ta, tb, ge(b, a))),
  gt: cmp('gt'),
  ge: cmp('ge'),
  eq: cmp('eq'),
};

/** Comparison: a 0/1 mask, with zero derivative. */
function cmp(op: string): Rule<Record<string, never>> {
  return { saves: SAVE_NONE, forward: (xs) => launchBinary(op, op, xs[0], xs[1]), vjp: () => [null, null], jvp: (_t, _x, y) => zerosLike(y) };
}
/** Routes g to a where mask is 1 and to b elsewhere (ties go to the first operand). */
function maskSplit(g: Tensor, mask: Tensor, needs: readonly boolean[]): (Tensor | null)[] {
  return [when(needs[0], () => mul(g, mask)), when(needs[1], () => mul(g, sub(1, mask)))];
}
function blend(ta: Tensor | null, tb: Tensor | null, mask: Tensor): Tensor {
  return plus(ta && mul(ta, mask), tb && mul(tb, sub(1, mask)));
}

