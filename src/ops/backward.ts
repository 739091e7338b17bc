// Reverse mode. The seed's adjoint flows from the root through the recorded nodes in
// reverse topological order; each node's VJP rule maps its output adjoint to its inputs'
// adjoints, which are summed over all consumers. Saved tensors are released right after
// their node's VJP has run, and the whole graph is released at the end.
import { GradError, ShapeError, DtypeError, ArgumentError } from '../errors.js';
import { Tensor, isTensor } from './tensor.js';
import { exempt, runScoped } from '../tensor/scope.js';
import { reverseTopological, type Node } from './node.js';
import { withMode } from './modes.js';
import { anomalySite } from './anomaly.js';
import type { Rule } from './rule.js';
import { add, sumTo } from './api.js';
import { filled } from './launch.js';

export interface BackwardOptions {
  /** Keep the graph (and its saved tensors) for another backward pass. */
  retainGraph?: boolean;
  /**
   * The seed tensor is handed over and freed as soon as the root's VJP has used it, instead of
   * staying alive until the pass ends (a nested pass: checkpoint's recompute).
   */
  consumeSeed?: boolean;
}

function seedFor(root: Tensor, seed: Tensor | number | undefined, consume = false): Tensor {
  if (seed === undefined) {
    if (root.size !== 1) {
      throw new GradError(`backward: output has shape [${root.shape}]; a non-scalar output needs an explicit seed of that shape`);
    }
    return filled(root.shape, root.dtype, 1);
  }
  if (typeof seed === 'number') return filled(root.shape, root.dtype, seed);
  if (!(seed instanceof Tensor)) throw new ArgumentError(`backward: seed must be a Tensor or a number, got ${typeof seed}`);
  seed.check('backward');
  if (seed.dtype !== root.dtype) throw new DtypeError(`backward: seed is ${seed.dtype} but the output is ${root.dtype}`);
  if (seed.shape.length !== root.shape.length || seed.shape.some((d, i) => d !== root.shape[i])) {
    throw new ShapeError(`backward: seed has shape [${seed.shape}], expected the output's shape [${root.shape}]`);
  }
  return consume ? seed : seed.alias(); // with its tangent: a backward pass inside a forward-mode one (hvp through a checkpoint) needs it
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
  runScoped(() => withMode('record', false, () => sweep(node, seedFor(root, seed, opts.consumeSeed), opts)), isTensor);
}

function sweep(rootNode: Node, seed: Tensor, opts: BackwardOptions): void {
  const adjoint = new Map<Node, Tensor>([[rootNode, seed]]);
  // Leaf gradients are summed here and written to .grad only after the whole sweep, so a sweep
  // that throws (anomaly mode, a custom VJP) leaves every .grad as it was.
  const leaves = new Map<Tensor, Tensor>();
  const order = reverseTopological(rootNode);
  try {
    order.forEach((node, step) => {
      const g = adjoint.get(node);
      adjoint.delete(node);
      if (g !== undefined) anomalySite(node, step, order.length, () => visit(node, g, adjoint, leaves, opts));
    });
  } catch (e) {
    if (!opts.retainGraph) for (const n of order) n.release();
    throw e;
  }
  for (const [leaf, c] of leaves) accumulateLeaf(leaf, c);
  if (!opts.retainGraph) for (const n of order) n.release();
}

/** Runs one node's VJP on its output adjoint g and routes the cotangents to its inputs. */
function visit(node: Node, g: Tensor, adjoint: Map<Node, Tensor>, leaves: Map<Tensor, Tensor>, opts: BackwardOptions): void {
  const needs = node.inputs.map((t) => t.requiresGrad);
  const rule = node.rule as Rule<unknown>;
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
    else {
      accumulate(leaves, input, asGradient(ci));
      asGradient(leaves.get(input)!);
    }
  });
  g.dispose();
}

/** Counts t's memory as gradient memory from now on (memory() reports it apart from activations). */
function asGradient(t: Tensor): Tensor {
  t.storage.markGradient();
  return t;
}

/** Sums a broadcast-shaped cotangent back to the input's shape (the one place broadcasting is undone). */
function fitTo(c: Tensor, shape: readonly number[]): Tensor {
  if (sameShape(c.shape, shape)) return c;
  const r = sumTo(c, shape);
  c.dispose();
  return r;
}

function sameShape(s: readonly number[], t: readonly number[]): boolean {
  if (s.length !== t.length) return false;
  for (let i = 0; i < s.length; i++) if (s[i] !== t[i]) return false;
  return true;
}

function accumulate<K>(adjoint: Map<K, Tensor>, key: K, c: Tensor): void {
  const prev = adjoint.get(key);
  if (prev === undefined) {
    adjoint.set(key, c);
    return;
  }
  adjoint.set(key, add(prev, c));
  prev.dispose();
  c.dispose();
}

/** leaf.grad += c; gradients live outside every tidy scope until the leaf is disposed or zeroed. */
function accumulateLeaf(leaf: Tensor, c: Tensor): void {
  if (leaf.disposed) {
    c.dispose();
    return;
  }
  const sum = asGradient(leaf.grad === null ? c : add(leaf.grad, c));
  if (leaf.grad !== null) {
    leaf.grad.dispose();
    c.dispose();
  }
  exempt(sum);
  leaf.grad = sum;
}
