// Pytrees: an argument of a transform may be a tensor, or nested arrays and plain objects of
// tensors (a model's parameter record, say). flatten lists the tensors in a fixed order (arrays
// by index, objects by key insertion) and rebuild puts tensors back in that structure, so a
// gradient mirrors its argument.
import { ArgumentError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';

/** A tensor, or nested arrays and plain objects of tensors: what transforms accept as arguments (gradients mirror the structure). */
export type Pytree = Tensor | readonly Pytree[] | { readonly [key: string]: Pytree };

/** How deep a pytree may nest: deeper, it is refused (an argument that contains itself would overflow the stack). */
export const MAX_TREE_DEPTH = 32;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;

/** The tensors of `tree` in order; anything but a tensor, an array or a plain object is an ArgumentError naming where it sits. */
export function flatten(fname: string, what: string, tree: unknown): Tensor[] {
  const out: Tensor[] = [];
  const walk = (v: unknown, path: string, depth: number): void => {
    if (v instanceof Tensor) {
      out.push(v.check(fname));
      return;
    }
    if (depth > MAX_TREE_DEPTH) throw new ArgumentError(`${fname}: ${what} is nested deeper than ${MAX_TREE_DEPTH} levels at ${path}`);
    if (Array.isArray(v)) v.forEach((u, i) => walk(u, `${path}[${i}]`, depth + 1));
    else if (isRecord(v)) for (const [k, u] of Object.entries(v)) walk(u, `${path}.${k}`, depth + 1);
    else {
      const got = v === null ? 'null' : typeof v === 'string' ? `the string ${JSON.stringify(v)}` : typeof v;
      throw new ArgumentError(`${fname}: ${what} must be a Tensor or nested arrays / plain objects of Tensors; ${path} is ${got}`);
    }
  };
  walk(tree, what, 0);
  return out;
}

/** `tree` with its tensors replaced, in flatten's order, by `leaves`. */
export function rebuild<T>(tree: unknown, leaves: readonly T[]): unknown {
  let i = 0;
  const walk = (v: unknown): unknown => {
    if (v instanceof Tensor) return leaves[i++];
    if (Array.isArray(v)) return v.map(walk);
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, u]) => [k, walk(u)]));
  };
  return walk(tree);
}
