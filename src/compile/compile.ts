// compile(fn): the same function, replayed from a fixed kernel schedule with a static memory plan.
// Per signature of the arguments (tensor shapes and dtypes, array lengths, other values as they
// are) the first call runs eagerly (optimizers create their state on their first step), the next
// two are traced (src/compile/trace.ts) and must record the same schedule (src/compile/trace-diff.ts),
// and from then on calls replay it (src/compile/program.ts): the recorded kernel launches with
// pointers rebased, no tensor allocation but the outputs, no graph building, no JS per op.
// A signature whose calls cannot be replayed runs eagerly, after a one-time console warning.
import { ArgumentError, DisposedError, OutOfMemoryError } from '../errors.js';
import { isTensor, type Tensor } from '../ops/tensor.js';
import { observingInputs } from '../ops/apply.js';
import { batching } from '../ops/batch.js';
import { nextTensorId, type Storage } from '../tensor/tensor.js';
import { runScoped } from '../tensor/scope.js';
import { runtime } from '../wasm/module.js';
import { hooks } from '../wasm/hooks.js';
import { buildCost } from '../wasm/balance.js';
import { Trace } from './trace.js';
import { scheduleDiff } from './trace-diff.js';
import { Program } from './program.js';
import { fusion } from './fuse.js';
import { inspect, pathOf, quickArgs, quickSig, withoutCuts, type Args, type Quick } from './signature.js';
import { tooMany } from '../args.js';

/** Signatures kept per compiled function; beyond, the oldest is dropped (and traced again if seen again). */
const MAX_SIGNATURES = 8;
/** Traces in a row that may create state (a new optimizer's first step) before a signature falls back. */
const MAX_STARTS = 3;
/** A schedule replayed fewer times than this before the tensors it reads were replaced was short-lived. */
const SHORT_RUN = 4;
/** Short-lived schedules in a row after which a signature runs eagerly. */
const MAX_SHORT_RUNS = 3;

/** Counters of a compiled function (its `stats`): how its calls ran and what its plans hold. */
export interface CompileStats {
  /** Calls that ran fn eagerly (warm-up calls, fallbacks, calls nested in another trace). */
  eager: number;
  /** Calls that ran fn under the tracer. */
  traced: number;
  /** Calls served by replaying a schedule. */
  replayed: number;
  /** Signatures with a schedule (or a fallback) right now. */
  signatures: number;
  /** Bytes of the static memory plans held right now. */
  planBytes: number;
  /** Launches of the schedules held right now that replay tile-major, in fused elementwise runs. */
  fused: number;
  /** Why the last signature that could not be compiled runs eagerly, or null. */
  fallback: string | null;
}

/** Options for {@link compile}. */
export interface CompileOptions {
  /**
   * Replay runs of consecutive elementwise ops tile by tile, so their intermediates stay in cache
   * (and get tile-sized buffers when nothing else uses them); same bits either way. Default true.
   */
  fuse?: boolean;
}

/** What {@link compile} returns: `fn`'s signature and results, with counters and a reset. */
export type Compiled<A extends unknown[], R> = ((...args: A) => R) & {
  /** How calls ran so far (see {@link CompileStats}). */
  readonly stats: Readonly<CompileStats>;
  /** Drops every schedule and frees the memory plans; later calls trace again (after changing JS state fn reads). */
  reset(): void;
};

const WARM = 0,
  TRACED_ONCE = 1,
  READY = 2,
  EAGER = 3;
interface Entry {
  state: typeof WARM | typeof TRACED_ONCE | typeof READY | typeof EAGER;
  first: Trace | null;
  program: Program | null;
  /** When the signature was first seen (performance.now()): its eager call, traces and build cost what a new set of cuts costs. */
  since: number;
  /** requiresGrad of the older tensors the last trace read, which its backward pass depended on. */
  flags: GradFlags | null;
  /** Traces taken for calls that created state since the schedule was last built, and what the last one left alive. */
  starts: number;
  kept: readonly WeakRef<Storage>[];
  /** Replays of the current schedule, and how many schedules in a row were replaced after few. */
  replays: number;
  short: number;
}

/**
 * The requiresGrad of the tensors from before a trace that its primitives read (parameters,
 * mostly): which of them get a gradient is fixed in the schedule, so freezing or unfreezing one
 * between calls must trace again (it was ignored: a frozen layer kept training). Also the JS
 * values the trace's guard() calls read (an SGD group's momentum on or off).
 */
class GradFlags {
  private readonly refs: WeakRef<Tensor>[] = [];
  private readonly flags: boolean[] = [];
  private readonly seen = new Set<number>();
  guards: readonly { read: () => unknown; value: unknown }[] = [];
  constructor(private readonly mark: number) {}
  note(xs: readonly Tensor[]): void {
    for (const x of xs) {
      if (x.id >= this.mark || this.seen.has(x.id)) continue;
      this.seen.add(x.id);
      this.refs.push(new WeakRef(x));
      this.flags.push(x.requiresGrad);
    }
  }
  same(): boolean {
    for (let i = 0; i < this.refs.length; i++) {
      const t = this.refs[i].deref();
      if (t !== undefined && t.requiresGrad !== this.flags[i]) return false;
    }
    for (const g of this.guards) if (!Object.is(g.read(), g.value)) return false;
    return true;
  }
}

/**
 * Compiles fn into a function with the same signature and results, bit for bit. Contract: a call
 * behaves like `tidy(() => fn(...args))`. Tensors fn reads besides its arguments (parameters,
 * optimizer state) are found by identity when traced and must stay alive; JS values fn reads
 * (closure variables, module.training, other number arguments) are fixed per signature — call
 * `compiled.reset()` after changing them. `options.fuse` (default true): replay runs of elementwise
 * ops tile by tile (src/compile/fuse.ts). See docs/readme-compile.md.
 */
export function compile<A extends unknown[], R>(fn: (...args: A) => R, options: CompileOptions = {}): Compiled<A, R> {
  if (arguments.length > 2) throw tooMany('compile', 2, arguments.length);
  checkOptions(fn, options);
  const c = new Compiler(fn, options.fuse);
  const compiled = Object.assign((...args: A): R => c.call(args), { stats: c.stats as Readonly<CompileStats>, reset: () => c.reset() });
  plans.register(compiled, c.entries); // a compiled function dropped without reset() still frees its plans
  return compiled;
}

function checkOptions(fn: unknown, options: CompileOptions): void {
  if (typeof fn !== 'function') throw new ArgumentError(`compile: fn must be a function, got ${typeof fn}`);
  if (options === null || typeof options !== 'object')
    throw new ArgumentError(
      `compile: options must be an object such as { fuse: false }, got ${options === null ? 'null' : typeof options}`,
    );
  const unknown = Object.keys(options).filter((k) => k !== 'fuse');
  if (unknown.length) throw new ArgumentError(`compile: unknown option ${JSON.stringify(unknown[0])} (the options are: fuse)`);
  if (options.fuse !== undefined && typeof options.fuse !== 'boolean')
    throw new ArgumentError(`compile: options.fuse must be a boolean, got ${typeof options.fuse}`);
}

/** The state of one compiled function: a schedule (or its warm-up, or a fallback) per signature. */
class Compiler<A extends unknown[], R> {
  readonly entries = new Map<string, Entry>();
  /** Array arguments (by path) fn uses as values rather than as data: keyed by value. */
  private readonly statics = new Set<string>();
  readonly stats: CompileStats = { eager: 0, traced: 0, replayed: 0, signatures: 0, planBytes: 0, fused: 0, fallback: null };
  private warnedFallback = false;
  private warnedMany = false;
  /** The last replayed signature, for a quick check of the next call's arguments (no key string built). */
  private last: { sig: Quick; entry: Entry } | null = null;

  constructor(
    private readonly fn: (...args: A) => R,
    private readonly fuse: boolean | undefined,
  ) {}

  call(args: A): R {
    if (hooks.recorder !== null) return this.eager(args); // inside another compiled fn's trace: recorded there
    // Inside vmap the arguments are batched stand-ins whose values no kernel may read: fn runs
    // eagerly, through vmap's batching rules (compile(vmap(f)) is the form that compiles).
    if (batching.level > 0) return this.eager(args);
    const fast = this.replayLast(args);
    if (fast !== undefined) return fast.value;
    const a = inspect(args, this.statics);
    const e = this.entryFor(a.key);
    switch (e.state) {
      case WARM: {
        const r = this.eager(args);
        e.state = TRACED_ONCE;
        return r;
      }
      case EAGER:
        return this.eager(args);
      case READY: {
        const sig = quickSig(args, a);
        this.last = sig === null ? null : { sig, entry: e };
        return this.replay(e, args, a.tensors, a.data);
      }
      case TRACED_ONCE:
        return this.traceAndAdvance(args, a, e);
    }
  }

  reset(): void {
    for (const [k, e] of [...this.entries]) this.drop(k, e);
    this.statics.clear();
  }

  /** The replay of a call whose arguments fit the last replayed signature (boxed), or undefined. */
  private replayLast(args: A): { value: R } | undefined {
    const last = this.last;
    if (last === null || last.entry.state !== READY) return undefined;
    const q = quickArgs(args, last.sig);
    if (q === null || !last.entry.program!.valid() || !last.entry.flags!.same()) return undefined;
    return { value: this.replay(last.entry, args, q.tensors, q.data) };
  }

  /** Runs the schedule; a disposed tensor argument is named by its place among fn's arguments (no op of fn runs to name it). */
  private replay(e: Entry, args: A, tensors: readonly Tensor[], data: readonly unknown[]): R {
    for (const t of tensors)
      if (t.disposed)
        throw new DisposedError(
          `compile: argument ${pathOf(args, t)} (tensor #${t.id}, shape [${t.shape}]) was disposed and cannot be used`,
        );
    this.stats.replayed++;
    e.replays++;
    return e.program!.run(tensors, data) as R;
  }

  /** The entry of signature `key` (made, evicting the oldest beyond MAX_SIGNATURES); a stale schedule is dropped. */
  private entryFor(key: string): Entry {
    let e = this.entries.get(key);
    if (e === undefined) {
      // New shares of the cuts (the pool moves them when its threads run at unequal speeds,
      // src/wasm/balance.ts): the program of the same call under the old shares is dropped, its
      // plan freed before the new one is made. Shares seldom come back soon.
      const same = withoutCuts(key);
      for (const [k, old] of [...this.entries]) if (withoutCuts(k) === same) this.drop(k, old);
      if (this.entries.size >= MAX_SIGNATURES) {
        const [k0, e0] = this.entries.entries().next().value!;
        this.drop(k0, e0);
        if (!this.warnedMany) {
          this.warnedMany = true;
          console.warn(
            `adjoint: compile: more than ${MAX_SIGNATURES} signatures (argument shapes, dtypes, and number arguments by value); the oldest are dropped and traced again when seen again`,
          );
        }
      }
      this.entries.set(
        key,
        (e = { state: WARM, first: null, program: null, since: performance.now(), flags: null, starts: 0, kept: [], replays: 0, short: 0 }),
      );
      this.stats.signatures = this.entries.size;
    }
    if (e.state === READY && !(e.program!.valid() && e.flags!.same())) {
      // A tensor the schedule reads or returns was disposed (a new optimizer or model?), or one
      // it reads was frozen or unfrozen: start over. When that keeps happening within a few
      // replays (gradients accumulated over calls and zeroed every few, so .grad is new each
      // time), tracing costs more than it saves: run eagerly.
      this.freePlan(e);
      e.short = e.replays < SHORT_RUN ? e.short + 1 : 0;
      e.replays = 0;
      if (e.short >= MAX_SHORT_RUNS)
        this.giveUp(
          e,
          `the tensors fn reads outside its arguments are replaced every few calls (${MAX_SHORT_RUNS} schedules in a row replayed fewer than ${SHORT_RUN} times each; gradients accumulated over calls and zeroed every few?), so tracing them costs more than it saves`,
        );
      else {
        e.state = WARM;
        e.since = performance.now();
      }
    }
    return e;
  }

  /** Traces one call and moves the entry on: a fallback, a retrace, the first trace kept, or the schedule built. */
  private traceAndAdvance(args: A, a: Args, e: Entry): R {
    // A tensor the first trace read was disposed since (a new optimizer) or a parameter it read
    // was frozen or unfrozen: that trace no longer stands for this call's schedule.
    if (e.first !== null && !(e.first.valid() && e.flags!.same())) e.first = null;
    const [result, t, flags] = this.trace(args, a);
    e.flags = flags;
    if (t.kept !== null && this.startsState(e, t.kept)) e.first = null;
    else if (t.taint !== null) this.giveUp(e, t.taint);
    else if (t.unbound.length > 0) {
      // Arrays fn turned into memory contents in JS (not as labels or tensor data): their values
      // are part of the signature from now on, like numbers.
      for (const k of t.unbound) this.statics.add(a.dataPaths[k]);
      this.drop(a.key, e);
      this.last = null;
    } else if (e.first === null) e.first = t;
    else this.build(e, t);
    return result;
  }

  /**
   * Whether a trace whose only fault is the tensors it left alive is taken for a call that created
   * state, as a new optimizer's first step does (the signature then traces again, as after its
   * first, eager, call): the first such trace, or one after the state the last one made was freed
   * (the optimizer replaced again), MAX_STARTS in a row at most. A fn that keeps tensors on every
   * call leaves the last call's alive, and falls back on its second trace.
   */
  private startsState(e: Entry, kept: readonly WeakRef<Storage>[]): boolean {
    const replaced = e.kept.some((w) => (w.deref()?.refs ?? 0) === 0);
    if (e.starts > 0 && !(replaced && e.starts < MAX_STARTS)) return false;
    e.starts++;
    e.kept = kept;
    return true;
  }

  /** The second trace agrees with the first: build the program (or fall back when it differs or has no memory). */
  private build(e: Entry, t: Trace): void {
    const diff = scheduleDiff(e.first!, t);
    if (diff !== null) {
      this.giveUp(
        e,
        `fn's kernel schedule changed between two calls with the same signature (${diff}) — JS state that changes every call, such as a counter or an unseeded random draw, reaches the kernels`,
      );
      return;
    }
    try {
      e.program = Program.build(t, this.fuse ?? fusion.enabled);
    } catch (err) {
      if (!(err instanceof OutOfMemoryError)) throw err;
      this.giveUp(e, `no memory for the static plan (${err.message})`);
      return;
    }
    this.stats.planBytes += e.program.bytes;
    this.stats.fused += e.program.fused;
    e.first = null;
    e.starts = 0;
    e.kept = [];
    e.state = READY;
    buildCost(performance.now() - e.since);
  }

  private eager(args: A): R {
    this.stats.eager++;
    return scoped(() => this.fn(...args));
  }

  private freePlan(e: Entry): void {
    if (e.program !== null) (this.stats.planBytes -= e.program.bytes), (this.stats.fused -= e.program.fused);
    e.program?.dispose();
    e.program = null;
  }

  private drop(key: string, e: Entry): void {
    this.freePlan(e);
    e.state = WARM;
    if (this.last?.entry === e) this.last = null;
    this.entries.delete(key);
    this.stats.signatures = this.entries.size;
  }

  private giveUp(e: Entry, reason: string): void {
    e.state = EAGER;
    e.first = null;
    this.stats.fallback = reason;
    if (!this.warnedFallback) {
      this.warnedFallback = true;
      console.warn(`adjoint: compile: ${reason}; this signature runs eagerly (same results, without the compiled schedule)`);
    }
  }

  private trace(args: A, a: Args): [R, Trace, GradFlags] {
    this.stats.traced++;
    for (const t of a.tensors) void t.storage.ptr; // fills a lazy argument (src/ops/shape.ts): an input, not a block of the call
    const mark = nextTensorId();
    const rec = new Trace(a.tensors, a.data, mark);
    const flags = new GradFlags(mark);
    const restore = interposeArena(rec);
    hooks.recorder = rec;
    let result: R;
    try {
      result = observingInputs(
        (xs) => flags.note(xs),
        () => scoped(() => this.fn(...args)),
      );
      for (const t of inspect([result], new Set()).tensors) void t.storage.ptr; // a returned lazy transpose is filled where the trace sees it
    } finally {
      hooks.recorder = null;
      restore();
    }
    rec.finish(result);
    flags.guards = rec.guards;
    return [result, rec, flags];
  }
}

/** Frees the memory plans of compiled functions that were garbage-collected. */
const plans = new FinalizationRegistry<Map<string, Entry>>((entries) => {
  for (const e of entries.values()) e.program?.dispose();
});

function scoped<R>(f: () => R): R {
  const r = runScoped(f, isTensor);
  if (r instanceof Promise) throw new ArgumentError('compile: fn returned a Promise; compiled functions are synchronous');
  return r;
}

/** Reports the arena's allocations and releases to the recorder for one call (the instance's methods shadowed, then removed). */
function interposeArena(rec: Trace): () => void {
  const arena = runtime().arena;
  const { alloc, free } = arena;
  arena.alloc = (bytes: number): number => {
    const p = alloc.call(arena, bytes);
    rec.alloc(p, bytes);
    return p;
  };
  arena.free = (ptr: number, bytes: number, gradient?: boolean): void => {
    rec.free(ptr);
    free.call(arena, ptr, bytes, gradient);
  };
  return () => {
    Reflect.deleteProperty(arena, 'alloc');
    Reflect.deleteProperty(arena, 'free');
  };
}
