// Function transforms in the JAX style (grad, valueAndGrad, vjp), built on the reverse sweep
// (sweep.ts) asked for the gradients of the transform's own variables: they never read or
// write any .grad. Each differentiated tensor is replaced by a variable: a fresh leaf, or, when
// an outer tape differentiates that tensor (grad of grad), an identity node on it, so the
// inner gradient stays a function of it. Tensors f captures are constants here; when an outer
// tape owns them the sweep records, and the gradients handed back are differentiable by it.
import { GradError, ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor, isTensor } from '../ops/tensor.js';
import { runScoped, exempt } from '../tensor/scope.js';
import { modes, withMode } from '../ops/modes.js';
import { nextNodeId } from '../ops/node.js';
import { apply } from '../ops/apply.js';
import { constantGradients, seedFor } from '../ops/backward.js';
import { sweep, linked, reachable, variable, tracing } from '../ops/sweep.js';
import { flatten, rebuild } from './pytree.js';
import { filled } from '../ops/launch.js';
import { zerosLike } from '../ops/api.js';
import { describe, tooMany, optionsArg } from '../args.js';

type Fn = (...args: any[]) => any;

/** Options for {@link grad} and {@link valueAndGrad}. */
export interface GradOptions {
  /** Which top-level arguments to differentiate (an array gives an array of gradients). */
  argnums?: number | readonly number[];
  /** f returns [value, aux]: grad gives [grads, aux], valueAndGrad [[value, aux], grads]. */
  hasAux?: boolean;
}

export function fnArg(fname: string, name: string, f: unknown): void {
  if (typeof f !== 'function') throw new ArgumentError(`${fname}: ${name} must be a function, got ${f === null ? 'null' : typeof f}`);
}

function checkGradOptions(fname: string, opts: unknown): GradOptions {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts))
    throw new ArgumentError(`${fname}: options must be an object, got ${opts === null ? 'null' : typeof opts}`);
  optionsArg(fname, opts, ['argnums', 'hasAux']);
  const o = opts as GradOptions;
  if (o.hasAux !== undefined && typeof o.hasAux !== 'boolean')
    throw new ArgumentError(`${fname}: hasAux must be true or false, got ${typeof o.hasAux}`);
  const a = o.argnums;
  if (a !== undefined && typeof a !== 'number' && !Array.isArray(a))
    throw new ArgumentError(`${fname}: argnums must be an integer or an array of integers, got ${typeof a}`);
  return o;
}

function argnumList(fname: string, args: unknown[], argnums: number | readonly number[] = 0): number[] {
  const list = typeof argnums === 'number' ? [argnums] : [...argnums];
  for (const i of list) {
    if (!Number.isInteger(i) || i < 0 || i >= args.length)
      throw new ArgumentError(
        `${fname}: argnums ${typeof i === 'number' ? i : describe(i)} is out of range for ${args.length} argument(s)`,
      );
  }
  if (new Set(list).size !== list.length) throw new ArgumentError(`${fname}: argnums [${list}] repeats an argument`);
  return list;
}

/** The differentiated arguments replaced by variables; `vars` lists them in flatten order. */
function variables(fname: string, args: unknown[], nums: readonly number[]): { args: unknown[]; vars: Tensor[]; trees: unknown[] } {
  const out = [...args],
    vars: Tensor[] = [],
    trees: unknown[] = [];
  for (const i of nums) {
    const ts = flatten(fname, `argument ${i}`, args[i]);
    const k = ts.findIndex((t) => t.dtype === 'int32');
    if (k >= 0) {
      const where = ts.length === 1 && args[i] === ts[0] ? '' : ` (leaf ${k} of its tree)`;
      throw new GradError(
        `${fname}: argument ${i} holds an int32 tensor [${ts[k].shape}]${where}, which cannot be differentiated: ` +
          'pass indices and labels as an argument outside argnums, or cast with astype to differentiate',
      );
    }
    const vs = ts.map(variable);
    out[i] = rebuild(args[i], vs);
    vars.push(...vs);
    trees.push(args[i]);
  }
  return { args: out, vars, trees };
}

/** Gradients for vars: zeros where f did not reach one; marked when they are constants (for backward's hint). */
function filledGrads(vars: readonly Tensor[], gs: readonly (Tensor | null)[]): Tensor[] {
  return vars.map((v, i) => {
    const g = gs[i] ?? zerosLike(v);
    if (!g.requiresGrad) constantGradients.add(g);
    return g;
  });
}

/** The gradients cut back into one tree per argument, each mirroring its argument's structure. */
function perTree(trees: readonly unknown[], grads: readonly Tensor[]): unknown[] {
  let at = 0;
  return trees.map((tree) => {
    const n = flatten('grad', 'argument', tree).length;
    const part = grads.slice(at, (at += n));
    return rebuild(tree, part);
  });
}

function splitAux(fname: string, out: unknown, hasAux: boolean): [unknown, unknown] {
  if (!hasAux) return [out, undefined];
  if (!Array.isArray(out) || out.length !== 2)
    throw new GradError(
      `${fname}: with hasAux, the function must return [value, aux], got ${Array.isArray(out) ? `an array of ${out.length}` : typeof out}`,
    );
  return [out[0], out[1]];
}

function scalarOut(fname: string, y: unknown): Tensor {
  if (!(y instanceof Tensor)) throw new GradError(`${fname}: the function must return a Tensor, got ${y === null ? 'null' : typeof y}`);
  if (y.size !== 1) throw new GradError(`${fname}: the function must return a scalar, got shape [${y.shape}]`);
  // An integer value (argmax, a count) is piecewise constant: its "gradient" of zeros would hide
  // the mistake, so it is refused, as JAX's grad and PyTorch's backward refuse it.
  if (y.dtype === 'int32')
    throw new GradError(`${fname}: the function returns an int32 scalar, which has no gradient (return a float value)`);
  return y;
}

/** Under noGrad no outer tape can differentiate a transform's result, so its sweep never records. */
const outerMayRecord = (): 'auto' | false => (modes.record ? 'auto' : false);

/**
 * Sweeps from y to vars; a graph nobody else holds is released at once. Returns the gradients
 * and whether they were recorded (an outer tape can differentiate them).
 */
function gradsOf(y: Tensor, vars: readonly Tensor[]): { grads: Tensor[]; recorded: boolean } {
  if (!y.requiresGrad)
    return {
      grads: filledGrads(
        vars,
        vars.map(() => null),
      ),
      recorded: false,
    };
  const r = sweep({ roots: [y], seeds: [filled(y.shape, y.dtype, 1)], targets: vars, record: outerMayRecord(), retain: false });
  return { grads: filledGrads(vars, r.grads), recorded: r.recorded };
}

/**
 * f run with recording on: a transform asks for a tape explicitly, so it records even inside
 * noGrad or jvp (as torch.func.grad does), which hessian = jacfwd(grad(f)) needs.
 */
const recorded = <T>(f: () => T): T => {
  tracing.depth++;
  try {
    return withMode('record', true, f);
  } finally {
    tracing.depth--;
  }
};

/**
 * Like {@link grad}, but the function returns `[value, grads]`: `f`'s value and its gradient(s)
 * with respect to the `argnums` arguments, from one forward and one backward pass.
 */
export function valueAndGrad(f: Fn, opts?: GradOptions) {
  if (arguments.length > 2) throw tooMany('valueAndGrad', 2, arguments.length);
  return valueAndGradAs('valueAndGrad', f, opts);
}

function valueAndGradAs(fname: string, f: Fn, options: GradOptions | undefined) {
  fnArg(fname, 'f', f);
  const opts = checkGradOptions(fname, options);
  const hasAux = opts.hasAux ?? false;
  return (...args: unknown[]): [any, any] => {
    const nums = argnumList(fname, args, opts.argnums);
    return runScoped(() => {
      const w = variables(fname, args, nums);
      const [out, aux] = splitAux(
        fname,
        recorded(() => f(...w.args)),
        hasAux,
      );
      const y = scalarOut(fname, out);
      const { grads, recorded: live } = gradsOf(y, w.vars);
      const trees = perTree(w.trees, grads);
      const value = live ? linked(y) : y.alias(); // unrecorded: a constant, but with its tangent (jvp of valueAndGrad)
      const g = typeof opts.argnums === 'object' ? trees : trees[0];
      return [hasAux ? [value, aux] : value, g];
    }, isTensor);
  };
}

/**
 * A function returning the gradient of scalar `f` with respect to argument `argnums` (default 0;
 * an array of argnums gives an array). Pytree arguments get gradients of the same structure;
 * tensors `f` captures are constants, and no `.grad` is read or written. Composes with every
 * transform (`grad(grad(f))`, `jacrev(grad(f))`, `jvp` of `grad`).
 *
 * @param opts - `argnums` (default 0) and `hasAux` (`f` returns `[value, aux]`; the result is then `[grads, aux]`).
 * @throws {@link GradError} when `f` does not return a scalar.
 * @example
 * ```ts
 * const f = (x: Tensor) => x.mul(x).mul(x).sum();    // Σ x³
 * grad(f)(tensor([1, 2])).toArray();                 // [3, 12]
 * grad(grad(f))(tensor(2)).item();                   // 12
 * ```
 */
export function grad(f: Fn, opts?: GradOptions) {
  if (arguments.length > 2) throw tooMany('grad', 2, arguments.length);
  const vg = valueAndGradAs('grad', f, opts);
  const hasAux = opts?.hasAux ?? false;
  return (...args: unknown[]): any => {
    const [value, grads] = vg(...args);
    if (!hasAux) {
      (value as Tensor).dispose();
      return grads;
    }
    (value[0] as Tensor).dispose();
    return [grads, value[1]];
  };
}

/** Maps an output cotangent to one cotangent per argument (a pytree argument gets a tree of the same shape). */
export type VjpFn = ((cotangent: Tensor) => Tensor[]) & {
  /** Frees the retained graph now, rather than at garbage collection. */
  release(): void;
};

const graphs = new FinalizationRegistry<() => void>((release) => release());

/** Options for {@link vjp}, given after the primals: `vjp(f, x, y, { hasAux: true })`. */
export interface VjpOptions {
  /** f returns [out, aux]: vjp gives [out, vjpFn, aux] (aux is not differentiated). */
  hasAux?: boolean;
}

/**
 * A trailing `{ hasAux }` after the primals is vjp's options: a pytree cannot hold a boolean,
 * so it is never mistaken for a record argument.
 */
function vjpOptions(primals: unknown[]): boolean {
  const last = primals[primals.length - 1];
  if (last === null || typeof last !== 'object' || Object.getPrototypeOf(last) !== Object.prototype) return false;
  if (!('hasAux' in last) || typeof (last as VjpOptions).hasAux !== 'boolean') return false;
  primals.pop();
  return optionsArg('vjp', last as VjpOptions, ['hasAux']).hasAux === true;
}

/**
 * f's output and a function mapping an output cotangent to the cotangents of every argument
 * (each mirroring its argument's structure). The graph is retained for repeated calls until
 * vjpFn.release() (or garbage collection). With a trailing `{ hasAux: true }`, f returns
 * `[out, aux]` and the result is `[out, vjpFn, aux]` (JAX's `has_aux`).
 */
export function vjp(f: Fn, ...primals: unknown[]): [Tensor, VjpFn] | [Tensor, VjpFn, unknown] {
  fnArg('vjp', 'f', f);
  const hasAux = vjpOptions(primals);
  const mark = nextNodeId();
  const w = runScoped(() => {
    const v = variables(
      'vjp',
      primals,
      primals.map((_, i) => i),
    );
    for (const t of v.vars) exempt(t);
    return v;
  }, isTensor);
  let aux: unknown;
  let y: unknown;
  try {
    [y, aux] = splitAux(
      'vjp',
      runScoped(() => recorded(() => f(...w.args)), isTensor),
      hasAux,
    );
  } catch (e) {
    for (const t of w.vars) t.dispose();
    throw e;
  }
  if (!(y instanceof Tensor)) {
    for (const t of w.vars) t.dispose();
    throw new GradError(`vjp: the function must return a Tensor, got ${y === null ? 'null' : typeof y}`);
  }
  const root = linked(y);
  exempt(root);
  let released = false,
    nested = false;
  const release = () => {
    if (released) return;
    released = true;
    // Only this vjp's own nodes, and only if no recorded gradient still depends on them.
    if (!nested) for (const n of reachable([root])) if (n.id >= mark) n.release();
    for (const t of w.vars) t.dispose();
    root.dispose();
  };
  const fn = ((ct: Tensor) => {
    if (released) throw new GradError('vjp: this vjp function was released');
    checkCotangent(ct, y);
    return runScoped(() => {
      const seed = seedFor('vjp', root, ct);
      const r = root.requiresGrad
        ? sweep({ roots: [root], seeds: [seed], targets: w.vars, record: outerMayRecord(), retain: true })
        : (seed.dispose(), { grads: w.vars.map(() => null), recorded: false });
      nested ||= r.recorded;
      return perTree(w.trees, filledGrads(w.vars, r.grads)) as Tensor[];
    }, isTensor);
  }) as VjpFn;
  fn.release = release;
  graphs.register(fn, release);
  return hasAux ? [y, fn, aux] : [y, fn];
}

/** The cotangent given to a vjp function: a live tensor of the output's shape and dtype. */
function checkCotangent(ct: unknown, y: Tensor): void {
  if (!(ct instanceof Tensor))
    throw new ArgumentError(`vjp: the cotangent must be a Tensor of the output's shape [${y.shape}], got ${describe(ct)}`);
  ct.check('vjp');
  if (ct.dtype !== y.dtype) throw new DtypeError(`vjp: the cotangent is ${ct.dtype} but the output is ${y.dtype}`);
  if (ct.shape.length !== y.shape.length || ct.shape.some((d, i) => d !== y.shape[i])) {
    throw new ShapeError(`vjp: the cotangent has shape [${ct.shape}], expected the output's shape [${y.shape}]`);
  }
}

/** Runs fn without recording anything for reverse mode. */
export function noGrad<T>(fn: () => T): T {
  if (arguments.length > 1) throw tooMany('noGrad', 1, arguments.length);
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
  if (arguments.length > 2) throw tooMany('customVjp', 2, arguments.length);
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
