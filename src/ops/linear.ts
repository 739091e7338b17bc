// Linear primitives (JAX's deflinear): for a map that is linear in its inputs, the JVP is the
// primitive itself applied to the tangents, so one helper serves every data-movement op,
// sum, cast and concat. Their VJPs (the transposes) stay next to each forward in the tables.
import type { Tensor } from './tensor.js';
import { apply } from './apply.js';
import type { Prim } from './table.js';
import { zerosLike } from './composite.js';

/** The JVP rule of the linear primitive `prim`: prim(t₁, …, tₙ; p), a missing tangent being zero. */
export function linearJvp<P>(prim: string) {
  return (ts: readonly (Tensor | null)[], xs: readonly Tensor[], _y: Tensor, p: P): Tensor =>
    apply(
      prim as Prim,
      ts.map((t, i) => t ?? zerosLike(xs[i])),
      p as never,
    );
}
