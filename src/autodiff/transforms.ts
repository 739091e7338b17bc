// Function transforms in the JAX style, built on the tape (grad, valueAndGrad, vjp) and on
// tangents carried with primals (jvp). Arguments are wrapped in fresh leaf handles, so user
// tensors' own .grad fields are never touched by a transform.
import { GradError, ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor, isTensor } from '../ops/tensor.js';
import { runScoped, exempt } from '../tensor/scope.js';
import { withMode } from '../ops/modes.js';
import { reverseTopological } from '../ops/node.js';
import { apply } from '../ops/apply.js';
import { backward } from '../ops/backward.js';
import { zerosLike } from '../ops/api.js';
import { describe } from '../args.js';

type Fn = (...args: any[]) => Tensor;

export interface GradOptions {
  argnums?: number | readonly number[];
}

function fnArg(fname: string, name: string, f: unknown): void {
  if (typeof f !== 'function') throw new ArgumentError(`${fname}: ${name} must be a function, got ${typeof f}`);
}

function argnumList(fname: string, args: unknown[], argnums: number | readonly number[] = 0): number[] {
  const list = typeof argnums === 'number' ? [argnums] : [...argnums];
  for (const i of list) {
    if (!Number.isInteger(i) || i < 0 || i >= args.length) throw new ArgumentError(`${fname}: argnums ${i} is out of range for ${args.length} argument(s)`);
    if (!(args[i] instanceof Tensor)) throw new ArgumentError(`${fname}: argument ${i} must be a Tensor to be differentiated`);
    (args[i] as Tensor).check(fname);
  }
  return list;
}

/** Fresh leaf handles (same memory and tangent) for the differentiated arguments. */
function leaves(args: unknown[], nums: readonly number[]): { args: unknown[]; leaves: Tensor[] } {
  // The other Tensor arguments are constants (as in JAX): fresh handles with no tape, so the
  // sweep neither writes their .grad nor releases a graph they came from.
  const out = args.map((a, i) => (a instanceof Tensor && !nums.includes(i) ? a.alias() : a));
  const ls = nums.map((i) => {
    const t = (args[i] as Tensor).alias();
    t.requiresGrad = true;
    out[i] = t;
    return t;
  });
  return { args: out, leaves: ls };
}

/** The leaf's gradient as a tensor of the caller's scope (zeros where f did not depend on it). */
function takeGrad(l: Tensor): Tensor {
  if (l.grad === null) return zerosLike(l);
  const g = l.grad.alias();
  l.grad.dispose();
  l.grad = null;
  return g;
}

function scalarOut(fname: string, y: unknown): Tensor {
  if (!(y instanceof Tensor)) throw new GradError(`${fname}: the function must return a Tensor, got ${typeof y}`);
  if (y.size !== 1) {
    if (y.node !== null) for (const n of reverseTopological(y.node)) n.release(); // the tape will never be swept
    throw new GradError(`${fname}: the function must return a scalar, got shape [${y.shape}]`);
  }
  return y;
}

/**
 * f run on the leaves with recording on: a transform asks for a tape explicitly, so it records
 * even inside noGrad or jvp (as torch.func.grad does), which hessian = jacfwd(grad(f)) needs.
 */
const recorded = <T>(f: () => T): T => withMode('record', true, f);

/** f's value and its gradient(s) with respect to the argnums arguments. */
export function valueAndGrad(f: Fn, opts: GradOptions = {}) {
  return valueAndGradAs('valueAndGrad', f, opts);
}

function valueAndGradAs(fname: string, f: Fn, opts: GradOptions) {
  fnArg(fname, 'f', f);
  return (...args: unknown[]): [Tensor, Tensor | Tensor[]] => {
    const nums = argnumList(fname, args, opts.argnums);
    return runScoped(() => {
      const w = leaves(args, nums);
      const y = scalarOut(fname, recorded(() => f(...w.args)));
      if (y.requiresGrad) backward(y);
      const grads = w.leaves.map(takeGrad);
      const value = y.share();
      return [value, typeof opts.argnums === 'object' ? grads : grads[0]] as [Tensor, Tensor | Tensor[]];
    }, isTensor);
  };
}

/** The gradient of scalar f with respect to argument argnums (an array of argnums gives an array). */
export function grad(f: Fn, opts: GradOptions = {}) {
  const vg = valueAndGradAs('grad', f, opts);
  return (...args: unknown[]): Tensor | Tensor[] => {
    const [value, grads] = vg(...args);
    value.dispose();
    return grads;
  };
}

export type VjpFn = ((cotangent: Tensor) => Tensor[]) & { release(): void };

const graphs = new FinalizationRegistry<() => void>((release) => release());

/**
 * f's output and a function mapping an output cotangent to the cotangents of every Tensor
 * argument. The graph is retained for repeated calls until vjpFn.release() (or garbage collection).
 */
export function vjp(f: Fn, ...primals: Tensor[]): [Tensor, VjpFn] {
  fnArg('vjp', 'f', f);
  const nums = argnumList('vjp', primals, primals.map((_, i) => i));
  const w = leaves(primals, nums);
  const y = runScoped(() => recorded(() => f(...w.args)), isTensor);
  if (!(y instanceof Tensor)) throw new GradError('vjp: the function must return a Tensor');
  const root = y.alias();
  root.requiresGrad = y.requiresGrad; // alias() is a fresh handle: carry the tape over
  root.node = y.node;
  exempt(root);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    if (root.node !== null) for (const n of reverseTopological(root.node)) n.release(); // the whole retained tape
    for (const l of w.leaves) l.dispose();
    root.dispose();
  };
  const fn = ((ct: Tensor) => {
    if (released) throw new GradError('vjp: this vjp function was released');
    checkCotangent(ct, y);
    for (const l of w.leaves) {
      l.grad?.dispose();
      l.grad = null;
    }
    if (root.requiresGrad) backward(root, ct, { retainGraph: true });
    return w.leaves.map(takeGrad);
  }) as VjpFn;
  fn.release = release;
  graphs.register(fn, release);
  return [y, fn];
}

/** The cotangent given to a vjp function: a live tensor of the output's shape and dtype. */
function checkCotangent(ct: unknown, y: Tensor): void {
  if (!(ct instanceof Tensor)) throw new ArgumentError(`vjp: the cotangent must be a Tensor of the output's shape [${y.shape}], got ${describe(ct)}`);
  ct.check('vjp');
  if (ct.dtype !== y.dtype) throw new DtypeError(`vjp: the cotangent is ${ct.dtype} but the output is ${y.dtype}`);
  if (ct.shape.length !== y.shape.length || ct.shape.some((d, i) => d !== y.shape[i])) {
    throw new ShapeError(`vjp: the cotangent has shape [${ct.shape}], expected the output's shape [${y.shape}]`);
  }
}

/** Runs fn without recording anything for reverse mode. */
export function noGrad<T>(fn: () => T): T {
  fnArg('noGrad', 'fn', fn);
  return withMode('record', false, fn);
}

/**
 * A function with a user-defined gradient: backward(g, inputs, output) returns one cotangent
 * (or null) per input.
 */
export function customVjp(
  forward: (...xs: Tensor[]) => Tensor,
  backwardFn: (g: Tensor, xs: readonly Tensor[], y: Tensor) => readonly (Tensor | null)[],
): (...xs: Tensor[]) => Tensor {
  fnArg('customVjp', 'forward', forward);
  fnArg('customVjp', 'backward', backwardFn);
  const name = forward.name || 'anonymous';
  return (...xs: Tensor[]) => {
    xs.forEach((x, i) => {
      if (!(x instanceof Tensor)) throw new ArgumentError(`customVjp(${name}): argument ${i} must be a Tensor, got ${describe(x)}`);
    });
    return apply('custom', xs, { name, forward, backward: backwardFn });
  };
}
