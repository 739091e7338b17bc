// The one place every primitive runs through: compute the output with the rule's kernels,
// carry the tangent along (forward mode), and record a node with exactly what the rule says
// it saves (reverse mode).
import { OutOfMemoryError } from '../errors.js';
import { type Tensor, isTensor } from './tensor.js';
import { Storage } from '../tensor/tensor.js';
import { exempt, runScoped } from '../tensor/scope.js';
import { originOf } from '../tensor/lifetime.js';
import { rules, type Prim, type ParamsOf } from './table.js';
import type { Rule, Saved } from './rule.js';
import { broadcastTo } from './api.js';
import { Node } from './node.js';
import { modes, withMode } from './modes.js';
import { checkFinite } from './anomaly.js';
import { batching, levelOf, unwrap, wrap, type Dim } from './batch.js';
import { intArithmetic } from '../tensor/dtype.js';

/**
 * The saved inputs and outputs given a tangent during the current jvp, which drops those tangents
 * when it returns: they belong to that jvp's perturbation, and a VJP run after it (an outer
 * sweep: jacrev of jacfwd, grad of hessian) must not carry them. Under vmap such a tangent is a
 * batched tensor of a level that has closed (its number is reused by the next vmap, whose
 * examples it then mixes with), and a saved output's tangent has a tape leading back to the node
 * that saved it: a cycle of references that counting never frees (jacfwd and hessian of a
 * requiresGrad input leaked 5 tensors a call).
 */
export const tangentSaves: { list: Tensor[] | null } = { list: null };

/** While set, sees every primitive's inputs (checkpoint uses it to find the tensors a function reads). */
let inputObserver: ((xs: readonly Tensor[], prim: Prim) => void) | null = null;

/** Runs fn with `observe` called on the inputs (and name) of every primitive fn runs (outer observers see them too). */
export function observingInputs<T>(observe: (xs: readonly Tensor[], prim: Prim) => void, fn: () => T): T {
  const prev = inputObserver;
  inputObserver = prev === null ? observe : (xs, prim) => (observe(xs, prim), prev(xs, prim));
  try {
    return fn();
  } finally {
    inputObserver = prev;
  }
}

export function apply<K extends Prim>(name: K, xs: readonly Tensor[], p: ParamsOf<K>): Tensor {
  for (let i = 0; i < xs.length; i++) xs[i].check(name);
  if (inputObserver !== null) inputObserver(xs, name);
  const rule = rules[name] as unknown as Rule<ParamsOf<K>>;
  if (rule.int32 !== true) for (let i = 0; i < xs.length; i++) if (xs[i].dtype === 'int32') throw intArithmetic(name, xs[i].shape);
  let y: Tensor;
  const level = batching.level > 0 ? levelOf(xs) : 0;
  if (level > 0) y = batched(name, rule, xs, p, level);
  else {
    Storage.reading++; // a forward only reads its inputs: lazy copies of them can stay lazy (Tensor.ptr)
    try {
      y = rule.forward(xs, p);
    } catch (e) {
      throw e instanceof OutOfMemoryError ? e.in(name) : e;
    } finally {
      Storage.reading--;
    }
    if (modes.anomaly) checkFinite(name, y, xs);
  }
  y.storage.charge(originOf(name));
  // An int32 result (argmax, a cast to int32, moved indices) is finite, carries no tangent and records nothing: gradients stop there.
  if (y.dtype === 'int32' || rule.constant === true) return y;
  // The node first, so a JVP rule that reads y records against it (reverse over forward).
  if (recordsNode(xs)) {
    y.requiresGrad = true;
    y.node = new Node(name, rule as Rule<never>, p, xs, saveFor(rule, xs, y));
  }
  if (modes.forward && anyTangent(xs)) {
    try {
      y.tangent = tangentOf(rule, xs, y, p);
    } catch (e) {
      y.dispose(); // the node (if any) goes with its only handle: the failed op leaves no trace
      throw e;
    }
    const saved = y.node?.saved.y;
    if (saved !== undefined) {
      // The VJP sees y's tangent (forward over reverse), linked to the tangent's node so that an
      // outer sweep differentiates through it (grad of hvp). That link closes a cycle (this node
      // → its saved y → the tangent's node → y), which jvp breaks when it returns (tangentSaves).
      const t = y.tangent.share();
      exempt(t);
      if (y.tangent.requiresGrad) {
        t.requiresGrad = true;
        t.node = y.tangent.node;
      }
      saved.tangent = t;
      tangentSaves.list?.push(saved);
    }
  }
  return y;
}

/**
 * A primitive inside vmap: its batching rule runs on the physical tensors of the innermost level
 * (as ordinary primitives, so outer transforms see them) and the result is that level's batched
 * tensor. Tangents and the tape of this level are then carried on the batched handles as usual.
 */
function batched<K extends Prim>(name: K, rule: Rule<ParamsOf<K>>, xs: readonly Tensor[], p: ParamsOf<K>, level: number): Tensor {
  const phys: Tensor[] = [],
    dims: Dim[] = [];
  for (let i = 0; i < xs.length; i++) {
    const [t, d] = unwrap(xs[i], level);
    phys.push(t);
    dims.push(d);
  }
  const self = (ys: readonly Tensor[], q: ParamsOf<K> = p): Tensor => apply(name, ys, q);
  const [out, d] = runScoped(() => {
    const [o, dd] = rule.batch(phys, dims, p, self);
    return [phys.includes(o) ? o.share() : o, dd] as [Tensor, number];
  }, isTensor);
  return wrap(out, d, level);
}

// Plain loops: every op asks these, and `xs.some(arrow)` allocates a closure per call.
function anyTangent(xs: readonly Tensor[]): boolean {
  for (let i = 0; i < xs.length; i++) if (xs[i].tangent !== null) return true;
  return false;
}
function anyRequiresGrad(xs: readonly Tensor[]): boolean {
  for (let i = 0; i < xs.length; i++) if (xs[i].requiresGrad) return true;
  return false;
}
/** Whether an op on xs records a graph node: recording is on and an input requires grad. */
export function recordsNode(xs: readonly Tensor[]): boolean {
  return modes.record && anyRequiresGrad(xs);
}

/**
 * The JVP, run with tangent propagation off (a tangent has no tangent of its own: nested jvp goes
 * through reverse mode instead, forward.ts). Recording stays as it is, so a tangent computed from
 * tensors an outer sweep differentiates is differentiable too (grad of a function that calls jvp).
 */
function tangentOf<P>(rule: Rule<P>, xs: readonly Tensor[], y: Tensor, p: P): Tensor {
  const t = withMode('forward', false, () => {
    let t = rule.jvp(
      xs.map((x) => x.tangent),
      xs,
      y,
      p,
    );
    if (xs.some((x) => x.tangent === t)) t = sameValue(t);
    if (t.shape.length !== y.shape.length || t.shape.some((d, i) => d !== y.shape[i])) {
      const b = broadcastTo(t, y.shape);
      t.dispose();
      t = b;
    }
    return t;
  });
  exempt(t); // owned by y: disposed with it, never by a tidy scope
  return t;
}

/** A new handle on t's memory with t's tape (a JVP that returned an input's tangent itself). */
function sameValue(t: Tensor): Tensor {
  const v = t.share();
  if (t.requiresGrad) {
    v.requiresGrad = true;
    v.node = t.node;
  }
  return v;
}

function saveFor<P>(rule: Rule<P>, xs: readonly Tensor[], y: Tensor): Saved {
  const x: (Tensor | undefined)[] = xs.map(() => undefined);
  const which = rule.saves.inputs === 'all' ? xs.map((_, i) => i) : rule.saves.inputs;
  for (const i of which) {
    const t = xs[i].save();
    if (t.tangent !== null) tangentSaves.list?.push(t);
    x[i] = t;
  }
  return { x, y: rule.saves.output ? y.save() : undefined, shapes: xs.map((t) => t.shape) };
}
