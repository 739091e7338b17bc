// Forward mode and the Jacobian/Hessian transforms built on it. jvp carries a tangent with
// each primal through f in one pass: apply() runs every primitive's JVP rule when an input
// holds a tangent, so no tape is recorded and no backward pass runs. Because VJP rules are
// written with differentiable ops, a tangent also flows through a backward pass: hvp is the
// JVP of grad (forward-over-reverse, Pearlmutter 1994), and hessian stacks hvp columns.
import { ArgumentError, DtypeError, GradError, ShapeError } from '../errors.js';
import { Tensor, isTensor } from '../ops/tensor.js';
import { runScoped, exempt } from '../tensor/scope.js';
import { withMode } from '../ops/modes.js';
import { filled } from '../ops/launch.js';
import { reshape, zerosLike, sum, mul, add, eq, cast } from '../ops/api.js';
import { arange } from '../ops/create.js';
import { grad, vjp, fnArg } from './transforms.js';
import { vmap, vmapBroadcasting } from './vmap.js';
import { sweep, linked, variable } from '../ops/sweep.js';
import { tangentSaves } from '../ops/apply.js';
import { describe, functionArg, tooMany } from '../args.js';
import { flatten, rebuild, type Pytree } from './pytree.js';

type Fn = (...args: Tensor[]) => Tensor;
type TreeFn = (x: any, ...rest: any[]) => Tensor;

/**
 * A Jacobian (or Hessian) function: a tensor gives a tensor; a pytree gives a pytree of blocks
 * mirroring it, as JAX's. Arguments after x reach f unchanged and are not differentiated (JAX's
 * default argnums = 0).
 */
export interface JacobianFn {
  (x: Tensor, ...rest: unknown[]): Tensor;
  (x: Pytree, ...rest: unknown[]): Pytree;
}

/** f with the arguments after the first fixed: dropping them silently would differentiate another function. */
function bindRest(f: TreeFn, rest: readonly unknown[]): TreeFn {
  return rest.length === 0 ? f : (z: unknown) => f(z, ...rest);
}

const sameShape = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === b[i]);

/** Checks a tangent against its primal; the names say which argument position is wrong. */
function checkTangent(fname: string, pname: string, tname: string, primal: unknown, t: unknown): void {
  if (!(primal instanceof Tensor)) throw new ArgumentError(`${fname}: ${pname} must be a Tensor, got ${describe(primal)}`);
  if (!(t instanceof Tensor)) throw new ArgumentError(`${fname}: ${tname} must be a Tensor, got ${describe(t)}`);
  primal.check(fname);
  t.check(fname);
  if (!sameShape(t.shape, primal.shape)) {
    throw new ShapeError(`${fname}: ${tname} has shape [${t.shape}], expected the shape of ${pname} [${primal.shape}]`);
  }
  if (t.dtype !== primal.dtype) throw new DtypeError(`${fname}: ${tname} is ${t.dtype}, expected the dtype of ${pname} (${primal.dtype})`);
}

function output(fname: string, y: unknown): Tensor {
  if (!(y instanceof Tensor)) throw new GradError(`${fname}: the function must return a Tensor, got ${describe(y)}`);
  return y;
}

/** jvp calls in progress: one inside another's f is nested forward mode. */
let forwardDepth = 0;

/**
 * f(...primals) and its directional derivative along `tangents`: [out, tangentOut]. f runs on
 * fresh handles of the primals that carry the tangents (the caller's tensors are untouched);
 * recording stays as it is, so an outer reverse sweep can differentiate the result (grad of a
 * function that calls jvp). A tensor holds one tangent, so a jvp inside another's f (jvp of
 * jvp, jacfwd of jacfwd) runs by reverse mode instead (jvpByReverse) and the outer tangents
 * flow through that.
 */
export function jvp(f: TreeFn, primals: readonly Pytree[], tangents: readonly Pytree[]): [Tensor, Tensor] {
  if (arguments.length > 3) throw tooMany('jvp', 3, arguments.length);
  fnArg('jvp', 'f', f);
  if (!Array.isArray(primals) || !Array.isArray(tangents)) throw new ArgumentError('jvp: primals and tangents must be arrays of tensors');
  if (primals.length !== tangents.length) {
    throw new ArgumentError(`jvp: got ${tangents.length} tangent(s) for ${primals.length} primal(s); give one tangent per primal`);
  }
  if (primals.some((p) => !(p instanceof Tensor) && p !== null && typeof p === 'object')) return jvpOfTrees(f, primals, tangents);
  primals.forEach((p, i) => checkTangent('jvp', `primal ${i}`, `tangent ${i}`, p, tangents[i]));
  return jvpOfTensors(f as Fn, primals as readonly Tensor[], tangents as readonly Tensor[]);
}

/** jvp once every primal and tangent is a checked tensor. */
function jvpOfTensors(f: Fn, primals: readonly Tensor[], tangents: readonly Tensor[]): [Tensor, Tensor] {
  if (forwardDepth > 0) return jvpByReverse(f, primals, tangents);
  forwardDepth++;
  const outer = tangentSaves.list;
  tangentSaves.list = [];
  try {
    return runScoped(() => {
      const args = primals.map((p, i) => {
        const h = linked(p);
        h.tangent?.dispose();
        h.tangent = linked(tangents[i]); // owned by h, freed with it
        exempt(h.tangent);
        return h;
      });
      const y = output(
        'jvp',
        withMode('forward', true, () => f(...args)),
      );
      const t = y.tangent === null ? zerosLike(y) : linked(y.tangent);
      const out = linked(y);
      out.tangent?.dispose(); // this jvp's tangent stays inside it
      out.tangent = null;
      return [out, t] as [Tensor, Tensor];
    }, isTensor);
  } finally {
    forwardDepth--;
    for (const saved of tangentSaves.list) {
      saved.tangent?.dispose();
      saved.tangent = null;
    }
    tangentSaves.list = outer;
  }
}

/** jvp with pytree primals (nested arrays and plain objects of tensors), tangents of the same structure, as JAX's. */
function jvpOfTrees(f: Fn, primals: readonly unknown[], tangents: readonly unknown[]): [Tensor, Tensor] {
  const xs = flatten('jvp', 'primals', primals),
    ts = flatten('jvp', 'tangents', tangents);
  if (ts.length !== xs.length)
    throw new ArgumentError(
      `jvp: the tangents hold ${ts.length} tensors, the primals ${xs.length}; give the tangents the primals' structure`,
    );
  xs.forEach((x, i) => checkTangent('jvp', `primal leaf ${i}`, `tangent leaf ${i}`, x, ts[i]));
  const g = (...leaves: Tensor[]) => (f as (...a: unknown[]) => Tensor)(...(rebuild(primals, leaves) as unknown[]));
  return jvpOfTensors(g, xs, ts);
}

/**
 * The JVP by two reverse sweeps: u ↦ Jᵀu is linear, so J·t is the gradient with respect to u
 * of ⟨Jᵀu, t⟩ (at any u; zeros here). Used for nested forward mode; the outer tangents flow
 * through both sweeps, whose VJPs are ops.
 */
function jvpByReverse(f: Fn, primals: readonly Tensor[], tangents: readonly Tensor[]): [Tensor, Tensor] {
  return runScoped(
    () =>
      withMode('record', true, () => {
        const vars = primals.map(variable);
        const y = output('jvp', f(...vars));
        if (!y.requiresGrad) return [linked(y), zerosLike(y)] as [Tensor, Tensor];
        const u = variable(zerosLike(y));
        const cts = sweep({ roots: [y], seeds: [linked(u)], targets: vars, record: true, retain: true }).grads;
        const terms = cts.flatMap((c, i) => (c === null ? [] : [sum(mul(c, tangents[i]))]));
        const s = terms.length === 0 ? null : terms.reduce((a, b) => add(a, b));
        const jt =
          s === null || !s.requiresGrad
            ? null
            : sweep({ roots: [s], seeds: [filled([], s.dtype, 1)], targets: [u], record: 'auto', retain: false }).grads[0];
        return [linked(y), jt ?? zerosLike(y)] as [Tensor, Tensor];
      }),
    isTensor,
  );
}

function singleArg(fname: string, x: unknown): Tensor {
  if (!(x instanceof Tensor)) throw new ArgumentError(`${fname}: x must be a Tensor, got ${describe(x)}`);
  return x.check(fname);
}

/**
 * The identity of n directions as n basis tensors of `shape`, stacked: [n, ...shape]. Made by
 * kernels (i = j over an arange), not by JS writes into a filled block, which compile() would
 * take for a read that steers JS.
 */
function basisStack(shape: readonly number[], dtype: Tensor['dtype']): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return runScoped(() => {
    const i = arange(n, { dtype: 'int32' });
    return reshape(cast(eq(reshape(i, [n, 1]), reshape(i, [1, n])), dtype), [n, ...shape]);
  }, isTensor);
}

/**
 * The Jacobian by forward mode: the JVP along every input basis direction at once (vmap of jvp,
 * one batched pass), each a column. Shape [...out.shape, ...x.shape]. Cheaper than jacrev when
 * x has fewer elements than f(x).
 */
export function jacfwd(f: TreeFn): JacobianFn {
  if (arguments.length > 1) throw tooMany('jacfwd', 1, arguments.length);
  functionArg('jacfwd', 'f', f);
  return ((x: Pytree, ...rest: unknown[]) => {
    const fx = bindRest(f, rest);
    if (!(x instanceof Tensor)) return jacfwdTree(fx, x);
    singleArg('jacfwd', x);
    return runScoped(() => {
      if (x.size === 0) {
        const outShape = output(
          'jacfwd',
          withMode('record', false, () => fx(x)),
        ).shape;
        return filled([...outShape, ...x.shape], x.dtype, 0);
      }
      const cols = vmapBroadcasting((t: Tensor) => jvp(fx, [x], [t])[1], { outAxes: -1 })(basisStack(x.shape, x.dtype));
      return reshape(cols, [...cols.shape.slice(0, -1), ...x.shape]);
    }, isTensor);
  }) as JacobianFn;
}

/** jacfwd at a pytree: per leaf j, the JVPs along its basis (the other leaves' tangents zero), [...out, ...leaf j]. */
function jacfwdTree(f: TreeFn, x: Pytree): Pytree {
  const leaves = flatten('jacfwd', 'x', x);
  const g = (...ls: Tensor[]) => output('jacfwd', f(rebuild(x, ls)));
  return runScoped(() => {
    const zeros = leaves.map((l) => zerosLike(l));
    const blocks = leaves.map((leaf, j) => {
      if (leaf.size === 0) {
        const outShape = withMode('record', false, () => g(...leaves)).shape;
        return filled([...outShape, ...leaf.shape], leaf.dtype, 0);
      }
      const along = (t: Tensor) =>
        jvp(
          g,
          leaves,
          zeros.map((z, k) => (k === j ? t : z)),
        )[1];
      const cols = vmapBroadcasting(along, { outAxes: -1 })(basisStack(leaf.shape, leaf.dtype));
      return reshape(cols, [...cols.shape.slice(0, -1), ...leaf.shape]);
    });
    return rebuild(x, blocks) as Pytree;
  }, isTensor);
}

/**
 * The Jacobian by reverse mode: the VJP of every output basis direction at once over one tape
 * (vmap of the vjp function, one batched backward pass), each a row. Shape [...out.shape,
 * ...x.shape]. Cheaper than jacfwd when f(x) is smaller than x.
 */
export function jacrev(f: TreeFn): JacobianFn {
  if (arguments.length > 1) throw tooMany('jacrev', 1, arguments.length);
  functionArg('jacrev', 'f', f);
  return ((x: Pytree, ...rest: unknown[]) => {
    const fx = bindRest(f, rest);
    if (!(x instanceof Tensor)) return jacrevTree(fx, x);
    singleArg('jacrev', x);
    return runScoped(() => {
      const [y, back] = vjp(fx, x);
      try {
        if (y.size === 0) return filled([...y.shape, ...x.shape], x.dtype, 0);
        const rows = vmap((ct: Tensor) => back(ct)[0])(basisStack(y.shape, y.dtype));
        return reshape(rows, [...y.shape, ...x.shape]);
      } finally {
        back.release();
      }
    }, isTensor);
  }) as JacobianFn;
}

/** jacrev at a pytree: one tape, the VJPs of every output basis direction; each leaf's rows [...out, ...leaf]. */
function jacrevTree(f: TreeFn, x: Pytree): Pytree {
  const leaves = flatten('jacrev', 'x', x);
  return runScoped(() => {
    const [y, back] = vjp(f, x);
    try {
      if (y.size === 0)
        return rebuild(
          x,
          leaves.map((l) => filled([...y.shape, ...l.shape], l.dtype, 0)),
        ) as Pytree;
      const rows = vmap((ct: Tensor) => flatten('jacrev', 'x', back(ct)[0]))(basisStack(y.shape, y.dtype)) as Tensor[];
      return rebuild(
        x,
        rows.map((r, i) => reshape(r, [...y.shape, ...leaves[i].shape])),
      ) as Pytree;
    } finally {
      back.release();
    }
  }, isTensor);
}

/** f wrapped so that a non-scalar result is a GradError naming the transform. */
export function scalarFn(fname: string, f: Fn): Fn {
  return (...xs) => {
    const y = output(fname, f(...xs));
    if (y.size !== 1) throw new GradError(`${fname}: f must return a scalar, got shape [${y.shape}]`);
    return y;
  };
}

/** H·v for scalar f at x: the JVP of grad(f) along v (forward-over-reverse). */
export function hvp(f: TreeFn, x: Tensor, v: Tensor): Tensor;
export function hvp(f: TreeFn, x: Pytree, v: Pytree): Pytree;
export function hvp(f: TreeFn, x: Pytree, v: Pytree): Pytree {
  if (arguments.length > 3) throw tooMany('hvp', 3, arguments.length);
  functionArg('hvp', 'f', f);
  if (!(x instanceof Tensor)) return hvpTree(f, x, v);
  checkTangent('hvp', 'x', 'v', x, v);
  const g = grad(scalarFn('hvp', f)) as (x: Tensor) => Tensor;
  return runScoped(() => jvp(g, [x], [v as Tensor])[1], isTensor);
}

/**
 * hvp at a pytree x along a tree v of the same structure: the gradient of ⟨∇f(x), v⟩
 * (reverse over reverse; the same H·v), mirroring x.
 */
function hvpTree(f: TreeFn, x: Pytree, v: Pytree): Pytree {
  const xs = flatten('hvp', 'x', x),
    vs = flatten('hvp', 'v', v);
  if (vs.length !== xs.length) throw new ArgumentError(`hvp: v has ${vs.length} tensors, x has ${xs.length}; give v the structure of x`);
  xs.forEach((xi, i) => checkTangent('hvp', `x leaf ${i}`, `v leaf ${i}`, xi, vs[i]));
  const gf = grad(scalarFn('hvp', f));
  const dot = (z: Pytree) => {
    const gs = flatten('hvp', 'gradient', gf(z));
    return gs.map((gi, i) => sum(mul(gi, vs[i]))).reduce((a, b) => add(a, b));
  };
  return runScoped(() => grad(dot)(x) as Pytree, isTensor);
}

/**
 * The Hessian of scalar f at x, shape [...x.shape, ...x.shape]: jacfwd of grad (columns are
 * hvp's). At a pytree x, a pytree of blocks: entry i then j is ∂²f/∂xᵢ∂xⱼ, [...xᵢ.shape, ...xⱼ.shape] (JAX's layout).
 */
export function hessian(f: TreeFn): JacobianFn {
  if (arguments.length > 1) throw tooMany('hessian', 1, arguments.length);
  functionArg('hessian', 'f', f);
  return ((x: Pytree, ...rest: unknown[]) => {
    const g = grad(scalarFn('hessian', bindRest(f, rest)));
    if (x instanceof Tensor) return jacfwd(g as (x: Tensor) => Tensor)(singleArg('hessian', x));
    const n = flatten('hessian', 'x', x).length;
    return runScoped(() => {
      const rows = Array.from({ length: n }, (_, i) => jacfwd((z: Pytree) => flatten('hessian', 'gradient', g(z))[i])(x));
      return rebuild(x, rows) as Pytree;
    }, isTensor);
  }) as JacobianFn;
}
