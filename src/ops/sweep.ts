// The reverse sweep shared by backward(), autograd.grad and the transforms. Seeds flow from
// the roots through the recorded nodes in reverse topological order; each node's VJP rule maps
// its output adjoint to its inputs' adjoints, summed over consumers. Two things make it compose:
//  - targets: a sweep asked for the gradients of some tensors only visits nodes that lead to
//    them and hands the gradients back (no .grad is read or written), so an inner gradient never
//    leaks into an outer transform's leaves (no perturbation confusion);
//  - record: the VJP rules are written with ops, so with recording on (createGraph, or a sweep
//    whose graph reaches tensors an outer tape owns) they record nodes too, and the gradients
//    are differentiable again. The rule's saved tensors are handed to it linked to the nodes
//    they came from, so the recorded VJP depends on them. Off (the first-order case) nothing is
//    linked or recorded and the sweep costs what it always did.
import { DisposedError, GradError } from '../errors.js';
import { type Tensor, isTensor } from './tensor.js';
import { exempt, runScoped } from '../tensor/scope.js';
import type { Node } from './node.js';
import { modes, withMode } from './modes.js';
import { apply } from './apply.js';
import { anomalySite } from './anomaly.js';
import type { Rule, Saved } from './rule.js';
import { add, sumTo } from './api.js';
import { addInto } from './launch.js';

export interface Sweep {
  readonly roots: readonly Tensor[];
  /** One per root, owned by the sweep (disposed as it goes). */
  readonly seeds: readonly Tensor[];
  /** The tensors whose gradients are returned; null: accumulate into every reachable leaf's .grad. */
  readonly targets: readonly Tensor[] | null;
  /**
   * Record the VJPs (differentiable gradients); 'auto': when an outer tape owns part of the
   * graph; 'nested': when a transform's function is running and the graph reaches one of its
   * variables (backward() or autograd.grad without createGraph inside grad/vjp/jacrev: the outer
   * transform differentiates through them, and a constant would make its derivative silently 0).
   */
  readonly record: boolean | 'auto' | 'nested';
  /** Keep the graph's saved tensors after the sweep (implied when recording). */
  readonly retain: boolean;
  /** With targets null: write only these leaves' .grad (backward's `inputs`). */
  readonly only?: ReadonlySet<Tensor>;
}

/**
 * A second handle on t that is the same value for every tape: same memory, tangent and node. A
 * leaf that requires grad gets an identity node on it (a plain copy would be a new leaf, which
 * no sweep toward the original would reach); unrecorded, the copy is a constant.
 */
export function linked(t: Tensor): Tensor {
  if (t.requiresGrad && t.node === null) return modes.record ? apply('reshape', [t], { shape: t.shape }) : t.alias();
  const h = t.alias();
  if (t.requiresGrad) {
    h.requiresGrad = true;
    h.node = t.node;
  }
  return h;
}

/** Leaves created by transforms for the tensors they differentiate (grad of grad nests on them). */
const transformVariables = new WeakSet<Tensor>();

/** How many transforms are running their function now (0 at top level: 'nested' costs nothing there). */
export const tracing = { depth: 0 };

/** Whether the graph reaches a transform's variable while a transform is running (see Sweep.record). */
function insideTransform(order: readonly Node[], roots: readonly Tensor[]): boolean {
  if (tracing.depth === 0 || !modes.record) return false;
  if (roots.some((r) => transformVariables.has(r))) return true;
  for (const n of order) for (const t of n.inputs) if (t.node === null && transformVariables.has(t)) return true;
  return false;
}

/**
 * The handle a transform's f sees for a differentiated tensor x: an identity node on x when an
 * outer tape differentiates x (x is an outer transform's variable, or computed from tensors that
 * require grad), so the inner gradient stays a function of x; else a fresh leaf. A parameter
 * passed as the argument is the transform's own variable: its gradient is a constant (nest the
 * transforms, or use autograd.grad with createGraph, to differentiate it again). Either handle
 * carries x's tangent (forward over reverse).
 */
export function variable(x: Tensor): Tensor {
  if (modes.record && x.requiresGrad && (x.node !== null || transformVariables.has(x))) return apply('reshape', [x], { shape: x.shape });
  const v = x.alias();
  v.requiresGrad = true;
  transformVariables.add(v);
  return v;
}

/** Every node reachable from the roots, in reverse topological order (decreasing id). */
export function reachable(roots: readonly Tensor[]): Node[] {
  const seen = new Set<Node>();
  const stack: Node[] = [];
  for (const r of roots) if (r.node !== null && !seen.has(r.node)) seen.add(r.node), stack.push(r.node);
  while (stack.length > 0) {
    const n = stack.pop()!;
    for (const t of n.inputs) {
      const m = t.node;
      if (m !== null && !seen.has(m)) seen.add(m), stack.push(m);
    }
  }
  return [...seen].sort((a, b) => b.id - a.id);
}

class Targets {
  readonly leaf = new Map<Tensor, number[]>();
  readonly node = new Map<Node, number[]>();
  constructor(ts: readonly Tensor[]) {
    ts.forEach((t, i) => {
      const m: Map<Tensor | Node, number[]> = (t.node === null ? this.leaf : this.node) as Map<Tensor | Node, number[]>;
      const key = t.node ?? t;
      const at = m.get(key);
      if (at === undefined) m.set(key, [i]);
      else at.push(i);
    });
  }
}

/**
 * Whether a sweep over `order` toward `targets` must record: the graph reaches a tensor that
 * requires grad for someone else (a captured parameter, an outer transform's variable), or a
 * target that is itself computed from one.
 */
function ownedOutside(order: readonly Node[], targets: Targets | null, seeds: readonly Tensor[]): boolean {
  if (seeds.some((s) => s.requiresGrad)) return true;
  if (targets === null) return false;
  if (targets.node.size > 0) return true;
  for (const n of order) {
    for (const t of n.inputs) if (t.node === null && t.requiresGrad && !targets.leaf.has(t)) return true;
  }
  return false;
}

/** Nodes from which a target can be reached (the only ones worth a VJP). */
function leadingTo(order: readonly Node[], targets: Targets): Set<Node> {
  const needed = new Set<Node>();
  for (let i = order.length - 1; i >= 0; i--) {
    const n = order[i];
    for (const t of n.inputs) {
      if (targets.leaf.has(t) || (t.node !== null && (targets.node.has(t.node) || needed.has(t.node)))) {
        needed.add(n);
        break;
      }
    }
  }
  return needed;
}

/**
 * Runs the sweep; with targets, `grads` holds one gradient per target (null where unreached).
 * `recorded`: whether the VJPs were recorded (the gradients, and the graph, live on).
 */
export function sweep(s: Sweep): { grads: (Tensor | null)[]; recorded: boolean } {
  const targets = s.targets === null ? null : new Targets(s.targets);
  const order = reachable(s.roots);
  const record =
    s.record === 'auto' ? ownedOutside(order, targets, s.seeds) : s.record === 'nested' ? insideTransform(order, s.roots) : s.record;
  const retain = s.retain || record;
  const results: (Tensor | null)[] = s.targets === null ? [] : s.targets.map(() => null);
  const leaves = new Map<Tensor, Tensor>();
  const adjoint = new Map<Node, Tensor>();
  const grads = withMode('record', record, () =>
    runScoped(() => {
      // A root that is a leaf target (or a leaf, for backward) gets its seed as its gradient.
      s.roots.forEach((r, i) => {
        const seed = s.seeds[i];
        if (r.node !== null) return accumulate(adjoint, r.node, seed);
        if (targets === null) return s.only === undefined || s.only.has(r) ? accumulate(leaves, r, seed) : seed.dispose();
        for (const j of targets.leaf.get(r) ?? []) results[j] = sum2(results[j], linked(seed));
        seed.dispose();
      });
      const needed = targets === null ? null : leadingTo(order, targets);
      const ctx: Ctx = { adjoint, leaves, results, targets, needed, record, retain, only: s.only };
      try {
        order.forEach((node, step) => {
          const g = adjoint.get(node);
          adjoint.delete(node);
          if (g === undefined) return;
          for (const j of targets?.node.get(node) ?? []) results[j] = sum2(results[j], linked(g));
          if (needed !== null && !needed.has(node)) return g.dispose();
          anomalySite(node, step, order.length, () => visit(node, g, ctx));
        });
      } catch (e) {
        if (!retain) for (const n of order) n.release();
        for (const t of [...adjoint.values(), ...leaves.values(), ...results]) t?.dispose();
        throw e;
      }
      if (!retain) for (const n of order) n.release();
      for (const [leaf, c] of leaves) accumulateLeaf(leaf, c);
      return results; // handed to the caller's scope
    }, isTensor),
  );
  return { grads, recorded: record };
}

interface Ctx {
  adjoint: Map<Node, Tensor>;
  leaves: Map<Tensor, Tensor>;
  results: (Tensor | null)[];
  targets: Targets | null;
  needed: Set<Node> | null;
  record: boolean;
  retain: boolean;
  only: ReadonlySet<Tensor> | undefined;
}

const sum2 = (a: Tensor | null, b: Tensor): Tensor => {
  if (a === null) return b;
  const r = add(a, b);
  a.dispose();
  b.dispose();
  return r;
};

/** Whether input t of a node needs its cotangent in this sweep. */
function wants(t: Tensor, c: Ctx): boolean {
  if (c.targets === null) return t.requiresGrad && (t.node !== null || c.only === undefined || c.only.has(t));
  return c.targets.leaf.has(t) || (t.node !== null && (c.targets.node.has(t.node) || c.needed!.has(t.node)));
}

/** The node's saved tensors as the rule sees them; recording, each is linked to where it came from. */
function savedFor(node: Node, record: boolean): Saved {
  const s = node.saved;
  if (!record) return s;
  const x = s.x.map((t, i) => (t === undefined ? undefined : relink(t, node.inputs[i])));
  return { x, y: s.y === undefined ? undefined : withNode(s.y, node), shapes: s.shapes };
}

/** A saved input as the same value for the tape: the live leaf itself, or a handle on the input's node. */
function relink(t: Tensor, input: Tensor): Tensor {
  if (!input.requiresGrad) return t;
  if (input.node === null) return input.disposed ? t : input; // a disposed leaf's gradient is dropped anyway
  return withNode(t, input.node);
}

function withNode(t: Tensor, node: Node): Tensor {
  const h = t.alias();
  h.requiresGrad = true;
  h.node = node;
  return h;
}

/** Runs one node's VJP on its output adjoint g and routes the cotangents to its inputs. */
function visit(node: Node, g: Tensor, c: Ctx): void {
  // An earlier sweep without retainGraph freed what this node saved (the root's own graph is
  // checked before the sweep; this is a shared interior node): say so, not "tensor #n was disposed".
  if (node.released && (node.saved.y !== undefined || node.saved.x.some((t) => t !== undefined)))
    throw new GradError(
      `backward: the graph reaches node #${node.id} (${node.prim} of inputs ${node.inputs.map((t) => `[${t.shape}]`).join(', ')}), ` +
        'which an earlier backward() or autograd.grad through it already released; pass { retainGraph: true } to that call to run through it again',
    );
  const needs = node.inputs.map((t) => wants(t, c));
  const rule = node.rule as Rule<unknown>;
  const gs = runScoped(() => rule.vjp(g, savedFor(node, c.record), node.params, needs).map((v) => (v === g ? linked(g) : v)), isTensor);
  if (!c.retain) node.release();
  node.inputs.forEach((input, i) => {
    const v = gs[i];
    if (v === null || v === undefined || !needs[i]) {
      v?.dispose();
      return;
    }
    const ci = fitTo(v, input.shape);
    if (input.node !== null) accumulate(c.adjoint, input.node, ci);
    else if (c.targets === null) asGradient(accumulate(c.leaves, input, ci));
    else {
      for (const j of c.targets.leaf.get(input)!) c.results[j] = asGradient(sum2(c.results[j], linked(ci)));
      ci.dispose();
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
  if (c.shape.length === shape.length && c.shape.every((d, i) => d === shape[i])) return c;
  const r = sumTo(c, shape);
  c.dispose();
  return r;
}

function accumulate<K>(adjoint: Map<K, Tensor>, key: K, c: Tensor): Tensor {
  const prev = adjoint.get(key);
  const next = prev === undefined ? c : sum2(prev, c);
  adjoint.set(key, next);
  return next;
}

/**
 * Whether c can be added into grad's memory: neither carries a graph (with createGraph the sum is
 * a new differentiable tensor, as in PyTorch), grad's memory has no other handle, same layout.
 */
function addsInPlace(grad: Tensor, c: Tensor): boolean {
  return (
    !grad.requiresGrad &&
    !c.requiresGrad &&
    grad.storage.refs === 1 &&
    grad.dtype === c.dtype &&
    grad.shape.length === c.shape.length &&
    grad.shape.every((d, i) => d === c.shape[i])
  );
}

/** leaf.grad += c; gradients live outside every tidy scope until the leaf is disposed or zeroed. */
function accumulateLeaf(leaf: Tensor, c: Tensor): void {
  if (leaf.disposed) {
    c.dispose();
    return;
  }
  if (leaf.grad?.disposed === true) {
    c.dispose();
    throw new DisposedError(
      `backward: the .grad of a leaf [${leaf.shape}] (tensor #${leaf.id}) was disposed, so the new gradient cannot be added to it; ` +
        'set leaf.grad = null (or call zeroGrad()) instead of disposing it',
    );
  }
  if (leaf.grad !== null && addsInPlace(leaf.grad, c)) {
    addInto(leaf.grad, c); // the same tensor, as PyTorch's accumulation: a handle kept from the last backward stays valid
    c.dispose();
    return;
  }
  const sum = asGradient(leaf.grad === null ? c : add(leaf.grad, c));
  if (leaf.grad !== null) {
    // The old .grad is not freed here: whoever holds it (a handle kept from the last backward,
    // a tensor the user assigned, another parameter) keeps it, as in PyTorch; the collector frees
    // it when they let go (src/tensor/lifetime.ts).
    c.dispose();
  }
  exempt(sum);
  leaf.grad = sum;
}
