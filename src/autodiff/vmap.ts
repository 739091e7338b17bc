// vmap(f, { inAxes, outAxes }), JAX's semantics: f is written for one example; the mapped
// arguments carry every example along their in-axis; f runs once, on batched tensors (per-example
// shapes, src/ops/batch.ts), and each primitive's batching rule runs its batched kernel. Outputs
// come back with the examples along their out-axis. A result that does not depend on the mapped
// arguments is broadcast along axis 0 under the default outAxes (as in JAX); an outAxes the caller
// gives for such a result is an error that suggests null for it.
// Arguments and results may be pytrees: tensors in arrays and plain objects, nested.
import { ArgumentError } from '../errors.js';
import { type Tensor, isTensor } from '../ops/tensor.js';
import { runScoped } from '../tensor/scope.js';
import { batching, unwrap, wrap } from '../ops/batch.js';
import { reshape, transpose, broadcastTo } from '../ops/api.js';
import { tooMany, optionsArg } from '../args.js';
import { MAX_TREE_DEPTH } from './pytree.js';

/** An axis per leaf: a number (negative counts from the end) or null (not mapped), or a tree matching the arguments' structure. */
export type AxisSpec = number | null | readonly AxisSpec[] | { readonly [key: string]: AxisSpec };

/** Which axis of each argument (`inAxes`) and of each output (`outAxes`) is mapped; `null` = not mapped. */
export interface VmapOptions {
  /** Per argument (an array, one entry per argument) or one spec for all; default 0. */
  inAxes?: AxisSpec;
  /**
   * For the result (a tree matching it, or one spec for every leaf); default 0. Left out, a result
   * that does not depend on the mapped arguments is broadcast along axis 0; given, such a result
   * must have `null` (an axis for it is an ArgumentError).
   */
  outAxes?: AxisSpec;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;

/** Maps every tensor leaf of `tree` (arrays and plain objects) with its axis from the spec prefix. */
function mapTree(
  tree: unknown,
  spec: AxisSpec,
  path: string,
  f: (t: Tensor, axis: number | null, path: string) => unknown,
  what: string,
  depth = 0,
): unknown {
  if (isTensor(tree)) {
    if (spec !== null && typeof spec !== 'number')
      throw new ArgumentError(
        `vmap: ${what} for ${path} must be a number or null at a tensor, got ${Array.isArray(spec) ? 'an array' : typeof spec}`,
      );
    return f(tree, spec, path);
  }
  const sub = (key: string | number): AxisSpec => {
    if (spec === null || typeof spec === 'number') return spec;
    const v = Object.hasOwn(spec, key) ? (spec as Record<string, AxisSpec>)[key] : undefined;
    if (v === undefined)
      throw new ArgumentError(`vmap: ${what} has no entry for ${path}${typeof key === 'number' ? `[${key}]` : `.${key}`}`);
    return v;
  };
  // pytree.ts's limit: an argument that contains itself threw a RangeError (stack overflow).
  if (depth > MAX_TREE_DEPTH && (Array.isArray(tree) || isPlainObject(tree)))
    throw new ArgumentError(
      `vmap: ${what === 'inAxes' ? 'the arguments are' : 'the output is'} nested deeper than ${MAX_TREE_DEPTH} levels at ${path}`,
    );
  if (Array.isArray(tree)) {
    if (Array.isArray(spec) && spec.length !== tree.length)
      throw new ArgumentError(`vmap: ${what} for ${path} has ${spec.length} entries for an array of ${tree.length}`);
    return tree.map((v, i) => mapTree(v, sub(i), `${path}[${i}]`, f, what, depth + 1));
  }
  if (isPlainObject(tree)) {
    // fromEntries defines its keys, so a key "__proto__" stays an own entry (assigning it would set the prototype).
    return Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, mapTree(v, sub(k), `${path}.${k}`, f, what, depth + 1)]));
  }
  if (typeof spec === 'number' && what === 'inAxes')
    throw new ArgumentError(`vmap: ${path} is mapped (axis ${spec}) but is not a tensor (${typeof tree})`);
  return tree;
}

/** The axis in [0, rank), or an ArgumentError naming the leaf. */
function checkAxis(axis: number, rank: number, path: string, what: string): number {
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) {
    throw new ArgumentError(`vmap: ${what} ${axis} is out of range for ${path} of rank ${rank - (what === 'outAxes' ? 1 : 0)}`);
  }
  return axis < 0 ? axis + rank : axis;
}

function fnArg(f: unknown): void {
  if (typeof f !== 'function') throw new ArgumentError(`vmap: f must be a function, got ${typeof f}`);
}

/** f mapped over an axis of its arguments (see the file comment). */
export function vmap<F extends (...args: any[]) => any>(f: F, opts: VmapOptions = {}): (...args: Parameters<F>) => ReturnType<F> {
  if (arguments.length > 2) throw tooMany('vmap', 2, arguments.length);
  // An explicit outAxes on a result that does not depend on the mapped arguments is an error; the default broadcasts it (as JAX does).
  return mapped(f, opts, opts?.outAxes === undefined);
}

/**
 * vmap that broadcasts an unmapped result along its out-axis even when outAxes is given (jacfwd:
 * the Jacobian of a function constant in x is zeros, one column per direction).
 * @internal
 */
export function vmapBroadcasting<F extends (...args: any[]) => any>(f: F, opts: VmapOptions): (...args: Parameters<F>) => ReturnType<F> {
  return mapped(f, opts, true);
}

function mapped<F extends (...args: any[]) => any>(f: F, opts: VmapOptions, broadcast: boolean): (...args: Parameters<F>) => ReturnType<F> {
  fnArg(f);
  const { inAxes = 0, outAxes = 0 } = optionsArg('vmap', opts, ['inAxes', 'outAxes']);
  return (...args: unknown[]) => {
    if (Array.isArray(inAxes) && inAxes.length !== args.length) {
      throw new ArgumentError(`vmap: inAxes has ${inAxes.length} entries for ${args.length} argument(s)`);
    }
    const spec: AxisSpec = Array.isArray(inAxes) ? inAxes : args.map(() => inAxes as AxisSpec);
    // First pass: check axes and sizes before anything runs.
    const mapped: { path: string; size: number; axis: number }[] = [];
    mapTree(
      args,
      spec,
      'args',
      (t, axis, path) => {
        t.check('vmap');
        if (axis !== null) {
          const a = checkAxis(axis, t.shape.length, path, 'inAxes');
          mapped.push({ path, size: t.shape[a], axis: a });
        }
        return t;
      },
      'inAxes',
    );
    if (mapped.length === 0) throw new ArgumentError('vmap: no argument is mapped (every inAxes entry is null); map at least one tensor');
    if (mapped.some((m) => m.size !== mapped[0].size)) {
      throw new ArgumentError(
        `vmap: mapped axes have different sizes: ${mapped.map((m) => `${m.path} has ${m.size} along axis ${m.axis}`).join(', ')}`,
      );
    }
    const B = mapped[0].size;
    const level = ++batching.level;
    try {
      return runScoped(() => {
        // An identity op (reshape to the same shape) gives each mapped argument a handle the batched one owns, carrying its tape and tangent.
        const inner = mapTree(
          args,
          spec,
          'args',
          (t, axis) => (axis === null ? t : wrap(reshape(t, t.shape), axis < 0 ? axis + t.shape.length : axis, level)),
          'inAxes',
        ) as unknown[];
        const out: unknown = f(...inner);
        return mapTree(out, outAxes, 'output', (t, axis, path) => unbatch(t, axis, path, level, B, broadcast), 'outAxes');
      }, isTensor) as ReturnType<F>;
    } finally {
      batching.level--;
    }
  };
}

/** The result leaf with its examples along `axis` (an unmapped value broadcast there when `broadcast`, else an error). */
function unbatch(t: Tensor, axis: number | null, path: string, level: number, B: number, broadcast: boolean): Tensor {
  const [phys, d] = unwrap(t, level);
  if (axis === null) {
    if (d !== null) throw new ArgumentError(`vmap: outAxes is null for ${path}, but it depends on the mapped arguments (give it an axis)`);
    return reshape(phys, phys.shape);
  }
  if (d === null && !broadcast)
    throw new ArgumentError(
      `vmap: outAxes gives ${path} axis ${axis}, but ${path} does not depend on the mapped arguments, so it has no mapped axis; give it outAxes: null (returned once, unbatched), or leave outAxes out to broadcast it along axis 0`,
    );
  const a = checkAxis(axis, phys.shape.length + (d === null ? 1 : 0), path, 'outAxes');
  let src = phys,
    from = d;
  if (d === null) {
    src = broadcastTo(reshape(phys, [1, ...phys.shape]), [B, ...phys.shape]);
    from = 0;
  }
  if (from === a) return reshape(src, src.shape);
  const rest = src.shape.map((_, i) => i).filter((i) => i !== from);
  rest.splice(a, 0, from!);
  return transpose(src, rest);
}
