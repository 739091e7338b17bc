// One traced call of a compiled function (src/compile/compile.ts): the fn runs eagerly while this
// recorder sees, through src/wasm/hooks.ts, every kernel launch (export name and numeric
// arguments, pointer arguments resolved to the buffer they point into), every block the arena
// hands out or takes back (so each intermediate's lifetime is known), and every JS write into
// wasm memory. Anything a fixed schedule could not replay — JS reading tensor values, a tensor
// that outlives the call without being returned, an unknown kernel — taints the trace with a
// reason, and compile() runs that signature eagerly instead.
//
// JS writes: writeArgs and fromValues report theirs (with the source array). Any other site
// (label and index blocks, arange) is found without a hook of its own: blocks are poisoned when
// allocated during the trace, and when JS has touched memory (views()) before the next launch,
// the blocks no kernel has used yet are scanned — changed bytes are a write (recorded, and bound
// to an array argument when they equal it), no change means JS read values (a taint).
import { isTensor, type Tensor } from '../ops/tensor.js';
import type { Storage } from '../tensor/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { onTape } from '../tensor/replay.js';
import { runtime } from '../wasm/module.js';
import { POINTER_ARGS } from './kernel-args.generated.js';
import { hooks, type Recorder, type Kernel, type ElementKind, type Derivation } from '../wasm/hooks.js';
import { POISON, poisoned, isNumbers, equalPrefix, snapshot, site } from './trace-memory.js';

/** Where a pointer argument points, in terms that survive to the next call. */
export type Ref =
  | { readonly k: 'block'; readonly block: number; readonly off: number } // allocated during the call
  | { readonly k: 'input'; readonly input: number; readonly off: number } // the call's tensor arguments, by position
  | { readonly k: 'ext'; readonly storage: Storage; readonly off: number } // a tensor that existed before the call
  | { readonly k: 'abs'; readonly ptr: number }; // static memory: null, the argument block, thread scratch

export interface Launch {
  readonly kind: 'launch';
  readonly name: string;
  /** Cut into pieces for the thread pool (replayed through runJobs with the same cuts). */
  readonly pooled: boolean;
  /** Argument lists: one for a plain call, one per piece for a pooled launch. */
  readonly jobs: number[][];
  /** refs[j][i]: where argument i of list j points; null where it is not a pointer. */
  readonly refs: (Ref | null)[][];
  /** Number of trailing arguments recomputed by `compute` on every call (see perCall). */
  readonly dyn: number;
  readonly compute: (() => readonly number[]) | null;
  /** Event clock of the launch (on the same clock as Block.alloc/free). */
  readonly at: number;
}

export type Typed = Float32Array | Float64Array | Int32Array | Uint8Array;
/** Element type of a recorded write ('u8': raw bytes found by a scan). */
export type WriteKind = ElementKind | 'u8';
export interface Write {
  readonly kind: 'write';
  readonly dest: Ref;
  readonly elem: WriteKind;
  readonly data: Typed;
  /** The data argument the values come from (make: how they were computed from it; null: as is). */
  readonly bind: { readonly arg: number; readonly make: Derivation | null } | null;
}

export interface Block {
  readonly id: number;
  readonly ptr: number;
  readonly bytes: number;
  /** Event clock at allocation and at release (-1: still alive when the call returned). */
  readonly alloc: number;
  free: number;
}

export type OutputSpec =
  | {
      readonly k: 'fresh';
      readonly block: number;
      readonly shape: readonly number[];
      readonly dtype: DType;
      readonly requiresGrad: boolean;
    }
  | { readonly k: 'input'; readonly input: number }
  | { readonly k: 'same'; readonly tensor: Tensor };

/** The shape of fn's result, with its tensors replaced by output indices. */
export type Template =
  | { readonly out: number }
  | { readonly arr: readonly Template[] }
  | { readonly obj: readonly (readonly [string, Template])[] }
  | { readonly val: unknown };

const SHIFT: Record<WriteKind, number> = { f32: 2, f64: 3, i32: 2, u8: 0 };

export class Trace implements Recorder {
  readonly ops: (Launch | Write)[] = [];
  readonly blocks: Block[] = [];
  outputs: OutputSpec[] = [];
  template: Template = { val: undefined };
  /** Why this call cannot be replayed, or null. */
  taint: string | null = null;
  /** Tensors fn made and left alive unreturned when that alone taints the call (an optimizer's first step), else null. */
  kept: readonly WeakRef<Storage>[] | null = null;
  /** Data arguments (by position) whose values were taken as they are: they must be part of the signature. */
  readonly unbound: number[] = [];
  /**
   * Values JS read out of int32 tensor arguments (toArray: gather indices, labels): data sources
   * numbered after the data arguments (source data.length + j is reads[j]), read again from the
   * argument on every replay.
   */
  readonly reads: { readonly input: number; readonly values: Int32Array }[] = [];
  private clock = 0;
  private readonly live = new Map<number, Block>();
  /** Live blocks no launch or write has used yet (where a JS write would land). */
  private readonly untouched = new Set<Block>();
  private readonly exts = new Set<Storage>();
  /** Blocks of this call whose pointers a launch took (where state fn leaves behind would be). */
  private readonly made = new Set<Storage>();
  private readonly inputStorages: Storage[];
  private pendingAccess: string | null = null;
  private pending: { values: number[]; compute: () => readonly number[] } | null = null;
  private readonly derivations: { derived: object; source: object; make: Derivation }[] = [];
  /** JS values the schedule depends on (guard()), with their values when traced. */
  readonly guards: { read: () => unknown; value: unknown }[] = [];
  private readonly bound = new Set<number>();

  /** `watermark`: the id the next tensor will get (tensors below it existed before the call). */
  constructor(
    readonly inputs: readonly Tensor[],
    readonly data: readonly unknown[],
    private readonly watermark: number,
  ) {
    this.inputStorages = inputs.map((t) => t.storage);
  }

  fail(reason: string): void {
    this.taint ??= reason;
  }

  // ---- wasm/hooks.ts Recorder ----

  kernel(name: string, f: Kernel): Kernel {
    return (...args: number[]) => {
      if (hooks.recorder !== this) return f(...args); // kept and called after the trace ended
      this.launch(name, [args], false);
      const r = f(...args);
      if (r !== undefined && POINTER_ARGS.get(name) !== 0) {
        this.fail(
          `fn reads tensor values into JS (${name} returns a value computed from tensor memory, as clipGradNorm's norm or anomaly detection do)`,
        );
      }
      return r;
    };
  }

  jobs(name: string, jobs: readonly (readonly number[])[]): Kernel {
    this.launch(name, jobs, true);
    return runtime().exports[name];
  }

  access(): void {
    if (this.pendingAccess !== null) this.flushAccess();
    this.pendingAccess = site(new Error().stack);
  }

  write(ptr: number, count: number, kind: ElementKind, source: unknown): void {
    this.pendingAccess = null; // explained: a write we replay
    if (this.taint !== null) return;
    const data = snapshot(kind, ptr, count),
      dest = this.ref(ptr);
    if (dest.k === 'block') this.untouched.delete(this.blocks[dest.block]);
    this.ops.push({ kind: 'write', dest, elem: kind, data, bind: this.bindSource(source) });
    this.clock++;
  }

  pointer(t: Tensor): void {
    const s = t.storage;
    if (this.live.has(s.ptr)) this.made.add(s);
    else if (!this.inputStorages.includes(s)) this.exts.add(s);
  }

  /** Whether every tensor from before the call that the trace reads or returns is still alive (a later call may use the same schedule). */
  valid(): boolean {
    return [...this.exts].every((s) => s.refs > 0) && this.outputs.every((o) => o.k !== 'same' || !o.tensor.disposed);
  }

  perCall(values: readonly number[], compute: () => readonly number[]): void {
    if (onTape())
      this.fail(
        'fn draws a random seed inside checkpoint() (a dropout mask in a checkpointed segment), which a replay could not repeat for the recomputation',
      );
    if (this.pending !== null) this.fail('internal: two perCall() values without a kernel launch between them');
    this.pending = { values: values.slice(), compute };
  }

  readInts(storage: object, values: Int32Array): void {
    const input = this.inputStorages.indexOf(storage as Storage);
    if (input < 0 || this.inputs[input].dtype !== 'int32' || this.inputs[input].size !== values.length) return; // a read: flushAccess taints
    this.pendingAccess = null; // explained: the argument's values, rebound on every call
    this.reads.push({ input, values });
  }

  guard(read: () => unknown): void {
    this.guards.push({ read, value: read() });
  }

  derive(derived: object, source: object, make: Derivation): void {
    this.derivations.push({ derived, source, make });
  }

  nested(fn: () => void): void {
    const p = this.pending; // a perCall() made before: its values belong to the launch after fn's
    this.pending = null;
    try {
      fn();
    } finally {
      this.pending = p;
    }
  }

  // ---- the arena, interposed by compile() for the call ----

  alloc(ptr: number, bytes: number): void {
    const b: Block = { id: this.blocks.length, ptr, bytes, alloc: this.clock++, free: -1 };
    this.blocks.push(b);
    this.live.set(ptr, b);
    this.untouched.add(b);
    new Uint8Array(runtime().memory.buffer, ptr, bytes).fill(POISON);
  }

  free(ptr: number): void {
    const b = this.live.get(ptr);
    if (b === undefined) {
      this.fail(
        "fn frees a tensor that existed before the call (for example the previous step's gradients, when " +
          'opt.zeroGrad() comes first in the step: call it at the end, after opt.step())',
      );
      return;
    }
    b.free = this.clock++;
    this.live.delete(ptr);
    this.untouched.delete(b);
  }

  // ---- recording ----

  private launch(name: string, jobs: readonly (readonly number[])[], pooled: boolean): void {
    this.flushAccess();
    const mask = POINTER_ARGS.get(name);
    if (mask === undefined)
      this.fail(`the kernel ${name} has no entry in src/compile/kernel-args.generated.ts (which of its arguments are pointers is unknown)`);
    const p = this.pending;
    this.pending = null;
    if (this.taint !== null || mask === undefined) return;
    let dyn = 0;
    if (p !== null) {
      dyn = p.values.length;
      const tailOk = jobs.every((j) => j.length >= dyn && p.values.every((v, i) => Object.is(j[j.length - dyn + i], v)));
      if (!tailOk) this.fail(`internal: the perCall() values are not the trailing arguments of ${name}`);
    }
    const copies = jobs.map((j) => j.slice());
    const refs = copies.map((a) => a.map((v, i) => ((mask >> i) & 1 ? this.ref(v) : null)));
    for (const rs of refs) for (const r of rs) if (r?.k === 'block') this.untouched.delete(this.blocks[r.block]);
    this.ops.push({ kind: 'launch', name, pooled, jobs: copies, refs, dyn, compute: p?.compute ?? null, at: this.clock });
    this.clock++;
  }

  /** JS touched memory since the last event: record what it wrote, or taint if it only read. */
  private flushAccess(): void {
    if (this.pendingAccess === null) return;
    const where = this.pendingAccess;
    this.pendingAccess = null;
    const buf = runtime().memory.buffer;
    let wrote = false;
    for (const b of this.untouched) {
      if (poisoned(buf, b.ptr, b.bytes)) continue;
      wrote = true;
      this.untouched.delete(b);
      if (this.taint === null) this.ops.push(this.scanned(b, new Uint8Array(buf, b.ptr, b.bytes)));
      this.clock++;
    }
    if (!wrote) {
      this.fail(
        `fn reads tensor values into JS (${where}), e.g. with .item() or .toArray(): a value read in JS can steer ` +
          'what fn does next, which a fixed kernel schedule cannot follow',
      );
    }
  }

  /** A block JS filled: bound to an array argument (or a registered derivation of one) whose values it holds, else constant bytes. */
  private scanned(b: Block, bytes: Uint8Array): Write {
    const dest: Ref = { k: 'block', block: b.id, off: 0 };
    if (b.bytes % 4 === 0) {
      const ints = new Int32Array(runtime().memory.buffer, b.ptr, b.bytes >> 2);
      const holds = (a: unknown): a is ArrayLike<number> => isNumbers(a) && a.length > 0 && equalPrefix(ints, a);
      for (const d of this.derivations) {
        const k = this.sourceIndex(d.source);
        if (k >= 0 && holds(d.derived)) return this.bound_(dest, ints, d.derived.length, k, d.make);
      }
      const k = this.sources().findIndex(holds);
      if (k >= 0) return this.bound_(dest, ints, (this.sources()[k] as ArrayLike<number>).length, k, null);
    }
    return { kind: 'write', dest, elem: 'u8', data: bytes.slice(), bind: null };
  }

  private bound_(dest: Ref, ints: Int32Array, n: number, arg: number, make: Derivation | null): Write {
    this.bound.add(arg);
    return { kind: 'write', dest, elem: 'i32', data: ints.slice(0, n), bind: { arg, make } };
  }

  /** Where pointer v points: a block of this call, an input, a persistent tensor, or static memory. */
  private ref(v: number): Ref {
    // Starts first (an empty buffer has no interior), then interiors; an end is not inside:
    // the next buffer, or thread scratch, may begin right there.
    const exact = this.live.get(v);
    if (exact !== undefined) return { k: 'block', block: exact.id, off: 0 };
    const inputAt = this.inputStorages.findIndex((s) => s.ptr === v);
    if (inputAt >= 0) return { k: 'input', input: inputAt, off: 0 };
    for (const s of this.exts) if (s.ptr === v) return { k: 'ext', storage: s, off: 0 };
    const inside = (ptr: number, bytes: number) => v > ptr && v < ptr + bytes;
    for (const b of this.live.values()) if (inside(b.ptr, b.bytes)) return { k: 'block', block: b.id, off: v - b.ptr };
    const i = this.inputStorages.findIndex((s) => inside(s.ptr, s.bytes));
    if (i >= 0) return { k: 'input', input: i, off: v - this.inputStorages[i].ptr };
    for (const s of this.exts) if (inside(s.ptr, s.bytes)) return { k: 'ext', storage: s, off: v - s.ptr };
    return { k: 'abs', ptr: v };
  }

  /** A reported write's source: an array argument itself, or a registered derivation of one. */
  private bindSource(source: unknown): Write['bind'] {
    if (source === null || typeof source !== 'object') return null;
    let k = this.sourceIndex(source);
    let make: Derivation | null = null;
    // A derivation of a derivation (nn.Embedding's checked ids, then gather's copy of them): follow
    // the chain to an argument, composing the makes.
    for (let at: unknown = source, depth = 0; k < 0 && depth < 4; depth++) {
      const d = this.derivations.find((x) => x.derived === at);
      if (d === undefined) return null;
      make = make === null ? d.make : composeMakes(make, d.make);
      at = d.source;
      k = this.sourceIndex(at);
    }
    if (k < 0) return null;
    this.bound.add(k);
    return { arg: k, make };
  }

  /** The data arguments, then the values read out of int32 tensor arguments. */
  private sources(): unknown[] {
    return [...this.data, ...this.reads.map((r) => r.values)];
  }

  private sourceIndex(x: unknown): number {
    const k = this.data.indexOf(x);
    if (k >= 0) return k;
    const j = this.reads.findIndex((r) => r.values === x);
    return j < 0 ? -1 : this.data.length + j;
  }

  // ---- the end of the call ----

  /** Checks what fn returned and what it left behind. */
  finish(result: unknown): void {
    this.flushAccess();
    if (this.pending !== null) this.fail('internal: a perCall() value was not used by a kernel launch');
    const outs: Tensor[] = [];
    this.template = templateOf(result, outs, 0);
    const fresh = new Set<number>();
    this.outputs = outs.map((o): OutputSpec => {
      if (o.id < this.watermark) {
        const i = this.inputs.indexOf(o);
        return i >= 0 ? { k: 'input', input: i } : { k: 'same', tensor: o };
      }
      const b = this.live.get(o.storage.ptr);
      if (o.node !== null && !o.node.released) {
        this.fail('fn returns a tensor that still carries an autodiff graph (run backward() inside fn, or compute it under noGrad())');
      } else if (o.tangent !== null) this.fail('fn returns a tensor with a forward-mode tangent');
      else if (b === undefined || o.disposed)
        this.fail('fn returns a new view of a tensor that existed before the call (or a disposed one)');
      else fresh.add(b.id);
      return { k: 'fresh', block: b?.id ?? -1, shape: o.shape, dtype: o.dtype, requiresGrad: o.requiresGrad };
    });
    const stray = new Set([...this.live.values()].filter((b) => !fresh.has(b.id)).map((b) => b.ptr));
    const made = [...this.made];
    this.made.clear(); // the call's storages are not held past it
    if (stray.size > 0) {
      if (this.taint === null) this.kept = made.filter((s) => s.refs > 0 && stray.has(s.ptr)).map((s) => new WeakRef(s));
      this.fail(
        `fn leaves ${stray.size} tensor(s) alive that it does not return: kept with keep() or stored, gradients left in .grad ` +
          '(call opt.zeroGrad() at the end of the step), or optimizer state created again on the next call',
      );
    }
    this.data.forEach((_d, k) => {
      if (!this.bound.has(k)) this.unbound.push(k);
    });
    if (this.reads.some((_, j) => !this.bound.has(this.data.length + j)))
      this.fail(
        'fn reads the values of an int32 tensor argument into JS (.toArray()) other than as indices or labels that reach the kernels: the values could steer what fn does next',
      );
  }
}

/** The result's structure (tensors at any depth of arrays and plain objects, as tidy() finds them). */
function templateOf(v: unknown, outs: Tensor[], depth: number): Template {
  if (isTensor(v)) {
    const i = outs.indexOf(v);
    return { out: i >= 0 ? i : outs.push(v) - 1 };
  }
  if (depth < 8 && Array.isArray(v)) return { arr: v.map((x) => templateOf(x, outs, depth + 1)) };
  if (depth < 8 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return { obj: Object.entries(v).map(([k, x]) => [k, templateOf(x, outs, depth + 1)] as const) };
  }
  return { val: v };
}

/** Bytes per element shift of a write's element kind. */
export const shiftOf = (k: WriteKind): number => SHIFT[k];

/** outer ∘ inner: the derivation of a derivation, recomputed from the argument's new values. */
function composeMakes(outer: Derivation, inner: Derivation): Derivation {
  return ((src: never) => outer(inner(src) as never)) as Derivation;
}
