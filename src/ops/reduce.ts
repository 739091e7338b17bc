// Reductions. sum is linear (its JVP is itself, its VJP a broadcast back); max routes the
// cotangent to the maxima, split evenly between ties (so the VJP is the transpose of the JVP).
import type { Tensor } from './tensor.js';
import type { Rule } from './rule.js';
import { launchReduce } from './launch.js';
import { linearJvp } from './linear.js';
import { front, type Dim, type Self } from './batch.js';
import { add, sum, mul, div, eq, ne, reshape, broadcastTo } from './api.js';

/** Axes sorted, distinct and non-negative (the API layer normalises them). */
export interface ReduceParams {
  readonly axes: readonly number[];
  readonly keepdims: boolean;
}

/** The input shape with reduced axes set to 1 (the keepdims shape). */
function keptShape(shape: readonly number[], axes: readonly number[]): number[] {
  return shape.map((d, i) => (axes.includes(i) ? 1 : d));
}

function reducedShape(shape: readonly number[], p: ReduceParams): number[] {
  return p.keepdims ? keptShape(shape, p.axes) : shape.filter((_, i) => !p.axes.includes(i));
}

/** g (reduced shape) broadcast back over the reduced axes of `shape`. */
function spread(g: Tensor, shape: readonly number[], axes: readonly number[]): Tensor {
  return broadcastTo(reshape(g, keptShape(shape, axes)), shape);
}

/** Ties share the cotangent evenly: mask / count. A NaN maximum is shared by the NaNs (as PyTorch), not 0/0 everywhere. */
function argmaxWeights(x: Tensor, y: Tensor, p: ReduceParams): Tensor {
  const yk = reshape(y, keptShape(x.shape, p.axes));
  const mask = add(eq(x, yk), mul(ne(x, x), ne(yk, yk))); // eq(NaN, NaN) is 0, so the terms never overlap
  return div(mask, sum(mask, p.axes, true));
}

/** Reductions shift their axes past the batch axis, moved to the front. */
function reduceBatch([x]: readonly Tensor[], [d]: readonly Dim[], p: ReduceParams, self: Self<ReduceParams>): [Tensor, number] {
  return [self([front(x, d)], { axes: p.axes.map((a) => a + 1), keepdims: p.keepdims }), 0];
}

export const reduceRules = {
  sum: {
    saves: { inputs: [], output: false },
    forward: ([x], p) => launchReduce('sum', x, p.axes, reducedShape(x.shape, p)),
    vjp: (g, s, p) => [spread(g, s.shapes[0], p.axes)],
    jvp: linearJvp('sum'),
    batch: reduceBatch,
  } satisfies Rule<ReduceParams>,
  max: {
    saves: { inputs: [0], output: true },
    forward: ([x], p) => launchReduce('max', x, p.axes, reducedShape(x.shape, p)),
    vjp: (g, s, p) => [mul(argmaxWeights(s.x[0]!, s.y!, p), spread(g, s.shapes[0], p.axes))],
    jvp: ([t], [x], y, p) => sum(mul(argmaxWeights(x, y, p), t!), p.axes, p.keepdims),
    batch: reduceBatch,
  } satisfies Rule<ReduceParams>,
};
