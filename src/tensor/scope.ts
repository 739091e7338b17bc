// Tensor lifetimes: tidy() scopes collect the tensors created inside them and dispose all but
// what the function returns; keep() exempts a tensor. Live counts feed memory().
/** A tensor handle as scopes see it (tensor.ts imports this file, so it names no class). */
interface Tensor {
  dispose(): void;
  /** What the FinalizationRegistry needs (src/tensor/lifetime.ts). */
  readonly disposed: boolean;
  readonly storage: { release(): void };
  registered: boolean;
}

/**
 * What becomes of a handle outside every scope: src/tensor/lifetime.ts installs its
 * FinalizationRegistry hand-off here (this file imports nothing, so there is no cycle).
 */
export const outside: { adopt: (t: Tensor) => void } = { adopt: () => {} };

const scopes: Set<Tensor>[] = [];
let live = 0;

/** Called by every new tensor: count it and hand it to the innermost scope. */
export function track(t: Tensor): void {
  live++;
  if (scopes.length > 0) scopes[scopes.length - 1].add(t);
  else outside.adopt(t); // outside every scope only the garbage collector can free it (src/tensor/lifetime.ts)
}

/** Whether t is in a tidy scope (which will dispose it or hand it on). */
export function inScope(t: object): boolean {
  for (let i = scopes.length - 1; i >= 0; i--) if (scopes[i].has(t as Tensor)) return true;
  return false;
}

/** Called by dispose(). */
export function untrack(t: Tensor): void {
  live--;
  if (scopes.length > 0) scopes[scopes.length - 1].delete(t);
}

/** A handle was garbage-collected (src/tensor/lifetime.ts): it is in no scope, only counted. */
export function dropped(): void {
  live--;
}

/** Removes t from every scope, so no tidy() will dispose it (gradients, saved tensors, keep()). */
export function exempt(t: Tensor): void {
  if (scopes.length === 0) return;
  for (const s of scopes) s.delete(t);
  outside.adopt(t);
}

export function liveTensors(): number {
  return live;
}

/** Tensors (at any depth) in a tidy() result: a tensor, or arrays/objects of them. */
function collect(value: unknown, out: Set<Tensor>, isTensor: (v: unknown) => v is Tensor, depth = 0): void {
  if (isTensor(value)) out.add(value);
  else if (depth < 8 && Array.isArray(value)) for (const v of value) collect(v, out, isTensor, depth + 1);
  else if (depth < 8 && value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value)) collect(v, out, isTensor, depth + 1);
  }
}

/** fn's result and the tensors it created, in a scope of its own; if fn throws, they are disposed. */
function scoped<T>(fn: () => T): [T, Set<Tensor>] {
  const scope = new Set<Tensor>();
  scopes.push(scope);
  let result: T;
  try {
    result = fn();
  } catch (e) {
    scopes.pop();
    for (const t of scope) t.dispose();
    throw e;
  }
  scopes.pop();
  return [result, scope];
}

/**
 * Runs fn in a scope, then disposes every tensor created inside that is neither returned nor
 * kept; returned tensors move to the enclosing scope. If fn throws, everything it created is
 * disposed. Async functions are not supported (the scope would close before they finish).
 */
export function runScoped<T>(fn: () => T, isTensor: (v: unknown) => v is Tensor): T {
  const [result, scope] = scoped(fn);
  if (isTensor(result)) {
    closeKeeping(scope, result); // the common case (every composite op), without a keeper set
    if (scopes.length === 0 && scope.has(result)) outside.adopt(result);
    return result;
  }
  const keepers = new Set<Tensor>();
  collect(result, keepers, isTensor);
  for (const t of scope) if (!keepers.has(t)) t.dispose();
  const parent = scopes[scopes.length - 1];
  if (parent !== undefined) for (const t of keepers) if (scope.has(t)) parent.add(t);
  if (parent === undefined) for (const t of keepers) if (scope.has(t)) outside.adopt(t);
  return result;
}

/**
 * Runs fn in a scope like {@link runScoped} with a tensor result, but the other tensors created
 * inside are not disposed: they are returned to the caller, outside every scope (the garbage
 * collector's unless the caller disposes them), with the result handed on as runScoped does.
 */
export function runScopedRest<T extends Tensor>(fn: () => T): [T, T[]] {
  const [result, scope] = scoped(fn);
  const rest: T[] = [];
  for (const t of scope) if (t !== result) rest.push(t as T); // every handle in a scope is of the one Tensor class
  const parent = scopes[scopes.length - 1];
  if (scope.has(result)) {
    if (parent !== undefined) parent.add(result);
    else outside.adopt(result);
  }
  for (const t of rest) outside.adopt(t);
  return [result, rest];
}

/** The end of a scope whose result is the one tensor `kept`: dispose the rest, hand `kept` to the parent. */
function closeKeeping(scope: Set<Tensor>, kept: Tensor): void {
  for (const t of scope) if (t !== kept) t.dispose();
  const parent = scopes[scopes.length - 1];
  if (parent !== undefined && scope.has(kept)) parent.add(kept);
}
