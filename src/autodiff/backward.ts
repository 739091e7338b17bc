// Reverse mode. The seed's adjoint flows from the root through the recorded nodes in
// reverse topological order; each node's VJP rule maps its output adjoint to its inputs'
// adjoints, which are summed over all consumers. Saved tensors are released right after
// their node's VJP has run, and the whole graph is released at the end.
import { GradError, ShapeError, DtypeError } from '../errors.js';
import { Tensor, isTensor } from '../tensor/tensor.js';
import { exempt, runScoped } from '../tensor/scope.js';
import { reverseTopological, type Node } from '../graph/node.js';
import { withMode } from '../graph/modes.js';
import { rules, type Prim } from '../ops/rules.js';
import type { Rule } from '../ops/table.js';
import { add, sumTo } from '../ops/api.js';
import { filled } from '../ops/launch.js';

export interface BackwardOptions {
  /** Keep the graph (and its saved tensors) for another backward pass. */
  retainGraph?: boolean;
}

function seedFor(root: Tensor, seed: Tensor | number | undefined): Tensor {
  if (seed === undefined) {
    if (root.size !== 1) {
      throw new GradError(`backward: output has shape [${root.shape}]; a non-scalar output needs an explicit seed of that shape`);
    }
    return filled(root.shape, root.dtype, 1);
  }
  if (typeof seed === 'number') return filled(root.shape, root.dtype, seed);
  seed.check('backward');
  if (seed.dtype !== root.dtype) throw new DtypeError(`backward: seed is ${seed.dtype} but the output is ${root.dtype}`);
  if (seed.shape.length !== root.shape.length || seed.shape.some((d, i) => d !== root.shape[i])) {
    throw new ShapeError(`backward: seed has shape [${seed.shape}], expected the output's shape [${root.shape}]`);
  }
  return seed.view();
}

/** Accumulates into every leaf with requiresGrad reachable from root its d(root·seed)/d(leaf) in `.grad`. */
export function backward(root: Tensor, seed?: Tensor | number, opts: BackwardOptions = {}): void {
  root.check('backward');
  if (!root.requiresGrad) throw new GradError('backward: the output does not require grad (no input had requiresGrad, or it was computed under noGrad)');
  const node = root.node;
  if (node === null) {
    // The root is itself a leaf: its gradient is the seed.
    accumulateLeaf(root, seedFor(root, seed));
    return;
  }
  if (node.released) throw new GradError('backward: the graph behind this output was already released by an earlier backward(); pass { retainGraph: true } to the first call to run it twice');
  runScoped(() => withMode('record', false, () => sweep(node, seedFor(root, seed), opts)), isTensor);
}

function sweep(rootNode: Node, seed: Tensor, opts: BackwardOptions): void {
  const adjoint = new Map<Node, Tensor>([[rootNode, seed]]);
  for (const node of reverseTopological(rootNode)) {
    const g = adjoint.get(node);
    adjoint.delete(node);
    if (g === undefined) continue;
    const needs = node.inputs.map((t) => t.requiresGrad);
    const rule = rules[node.prim as Prim] as unknown as Rule<unknown>;
    const gs = runScoped(() => rule.vjp(g, node.saved, node.params, needs).map((c) => (c === g ? g.alias() : c)), isTensor);
    if (!opts.retainGraph) node.release();
    node.inputs.forEach((input, i) => {
      const c = gs[i];
      if (c === null || c === undefined || !needs[i]) {
        c?.dispose();
        return;
      }
      const ci = fitTo(c, input.shape);
      if (input.node !== null) accumulate(adjoint, input.node, ci);
      else accumulateLeaf(input, ci);
    });
    g.dispose();
  }
  if (!opts.retainGraph) for (const n of reverseTopological(rootNode)) n.release();
}

/** Sums a broadcast-shaped cotangent back to the input's shape (the one place broadcasting is undone). */
function fitTo(c: Tensor, shape: readonly number[]): Tensor {
  if (c.shape.length === shape.length && c.shape.every((d, i) => d === shape[i])) return c;
  const r = sumTo(c, shape);
  c.dispose();
  return r;
}

function accumulate(adjoint: Map<Node, Tensor>, node: Node, c: Tensor): void {
  const prev = adjoint.get(node);
  if (prev === undefined) {
    adjoint.set(node, c);
    return;
  }
  adjoint.set(node, add(prev, c));
  prev.dispose();
  c.dispose();
}

/** leaf.grad += c; gradients live outside every tidy scope until the leaf is disposed or zeroed. */
function accumulateLeaf(leaf: Tensor, c: Tensor): void {
  if (leaf.disposed) {
    c.dispose();
    return;
  }
  const sum = leaf.grad === null ? c : add(leaf.grad, c);
  if (leaf.grad !== null) {
    leaf.grad.dispose();
    c.dispose();
  }
  exempt(sum);
  leaf.grad = sum;
}
