// compile(fn): the same function, replayed from a fixed kernel schedule with a static memory plan.
// Per signature of the arguments (tensor shapes and dtypes, array lengths, other values as they
// are) the first call runs eagerly (optimizers create their state on their first step), the next
// two are traced (src/compile/trace.ts) and must record the same schedule (src/compile/trace-diff.ts),
// and from then on calls replay it (src/compile/program.ts): the recorded kernel launches with
// pointers rebased, no tensor allocation but the outputs, no graph building, no JS per op.
// A signature whose calls cannot be replayed runs eagerly, after a one-time console warning.
import { ArgumentError, OutOfMemoryError } from '../errors.js';
import { isTensor, type Tensor } from '../ops/tensor.js';
import { nextTensorId } from '../tensor/tensor.js';
import { runScoped } from '../tensor/scope.js';
import { runtime } from '../wasm/module.js';
import { poolSize } from '../wasm/threads.js';
import { modes } from '../ops/modes.js';
import { hooks } from '../wasm/hooks.js';
import { Trace } from './trace.js';
import { scheduleDiff } from './trace-diff.js';
import { Program } from './program.js';
import { fusion } from './fuse.js';
import { describe } from '../args.js';

/** Signatures kept per compiled function; beyond, the oldest is dropped (and traced again if seen again). */
const MAX_SIGNATURES = 8;

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

export interface CompileOptions {
  /**
   * Replay runs of consecutive elementwise ops tile by tile, so their intermediates stay in cache
   * (and get tile-sized buffers when nothing else uses them); same bits either way. Default true.
   */
  fuse?: boolean;
}

export type Compiled<A extends unknown[], R> = ((...args: A) => R) & {
  readonly stats: Readonly<CompileStats>;
  /** Drops every schedule and frees the memory plans; later calls trace again (after changing JS state fn reads). */
  reset(): void;
};

const WARM = 0, TRACED_ONCE = 1, READY = 2, EAGER = 3;
interface Entry {
  state: typeof WARM | typeof TRACED_ONCE | typeof READY | typeof EAGER;
  first: Trace | null;
  program: Program | null;
}

/** A call's arguments: tensors and array data by position, and the signature they make. */
interface Args {
  tensors: Tensor[];
  data: unknown[];
  dataPaths: string[];
  key: string;
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
  if (typeof fn !== 'function') throw new ArgumentError(`compile: fn must be a function, got ${describe(fn)}`);
  if (options === null || typeof options !== 'object') throw new ArgumentError(`compile: options must be an object such as { fuse: false }, got ${options === null ? 'null' : typeof options}`);
  const unknown = Object.keys(options).filter((k) => k !== 'fuse');
  if (unknown.length) throw new ArgumentError(`compile: unknown option ${JSON.stringify(unknown[0])} (the options are: fuse)`);
  if (options.fuse !== undefined && typeof options.fuse !== 'boolean') throw new ArgumentError(`compile: options.fuse must be a boolean, got ${describe(options.fuse)}`);
  const entries = new Map<string, Entry>();
  /** Array arguments (by path) fn uses as values rather than as data: keyed by value. */
  const statics = new Set<string>();
  const stats: CompileStats = { eager: 0, traced: 0, replayed: 0, signatures: 0, planBytes: 0, fused: 0, fallback: null };
  let warnedFallback = false, warnedMany = false;
  /** The last replayed signature, for a quick check of the next call's arguments (no key string built). */
  let last: { sig: Quick; entry: Entry } | null = null;

  const eager = (args: A): R => {
    stats.eager++;
    return scoped(() => fn(...args));
  };

  const drop = (key: string, e: Entry): void => {
    if (e.program !== null) stats.planBytes -= e.program.bytes, stats.fused -= e.program.fused;
    e.program?.dispose();
    e.program = null;
    e.state = WARM;
    if (last?.entry === e) last = null;
    entries.delete(key);
    stats.signatures = entries.size;
  };

  const giveUp = (e: Entry, reason: string): void => {
    e.state = EAGER;
    e.first = null;
    stats.fallback = reason;
    if (!warnedFallback) {
      warnedFallback = true;
      console.warn(`adjoint: compile: ${reason}; this signature runs eagerly (same results, without the compiled schedule)`);
    }
  };

  const trace = (args: A, a: Args): [R, Trace] => {
    stats.traced++;
    for (const t of a.tensors) void t.storage.ptr; // fills a lazy argument (src/ops/shape.ts): an input, not a block of the call
    const rec = new Trace(a.tensors, a.data, nextTensorId());
    const restore = interposeArena(rec);
    hooks.recorder = rec;
    let result: R;
    try {
      result = scoped(() => fn(...args));
      for (const t of inspect([result], new Set()).tensors) void t.storage.ptr; // a returned lazy transpose is filled where the trace sees it
    } finally {
      hooks.recorder = null;
      restore();
    }
    rec.finish(result);
    return [result, rec];
  };

  const call = (...args: A): R => {
    if (hooks.recorder !== null) return eager(args); // inside another compiled fn's trace: recorded there
    if (last !== null && last.entry.state === READY) {
      const q = quickArgs(args, last.sig);
      if (q !== null && last.entry.program!.valid()) {
        stats.replayed++;
        return last.entry.program!.run(q.tensors, q.data) as R;
      }
    }
    const a = inspect(args, statics);
    let e = entries.get(a.key);
    if (e === undefined) {
      if (entries.size >= MAX_SIGNATURES) {
        const [k0, e0] = entries.entries().next().value!;
        drop(k0, e0);
        if (!warnedMany) {
          warnedMany = true;
          console.warn(`adjoint: compile: more than ${MAX_SIGNATURES} signatures (argument shapes, dtypes, and number arguments by value); the oldest are dropped and traced again when seen again`);
        }
      }
      entries.set(a.key, (e = { state: WARM, first: null, program: null }));
      stats.signatures = entries.size;
    }
    if (e.state === READY && !e.program!.valid()) {
      // A tensor the schedule reads or returns was disposed (a new optimizer or model?): start over.
      stats.planBytes -= e.program!.bytes;
      stats.fused -= e.program!.fused;
      e.program!.dispose();
      e.program = null;
      e.state = WARM;
    }
    switch (e.state) {
      case WARM: {
        const r = eager(args);
        e.state = TRACED_ONCE;
        return r;
      }
      case TRACED_ONCE:
      case READY:
        break;
      case EAGER:
        return eager(args);
    }
    if (e.state === READY) {
      const sig = quickSig(args, a);
      last = sig === null ? null : { sig, entry: e };
      stats.replayed++;
      return e.program!.run(a.tensors, a.data) as R;
    }
    const [result, t] = trace(args, a);
    if (t.taint !== null) giveUp(e, t.taint);
    else if (t.unbound.length > 0) {
      // Arrays fn turned into memory contents in JS (not as labels or tensor data): their values
      // are part of the signature from now on, like numbers.
      for (const k of t.unbound) statics.add(a.dataPaths[k]);
      drop(a.key, e);
      last = null;
    } else if (e.first === null) e.first = t;
    else {
      const diff = scheduleDiff(e.first, t);
      if (diff !== null) giveUp(e, `fn's kernel schedule changed between two calls with the same signature (${diff}) — JS state that changes every call, such as a counter or an unseeded random draw, reaches the kernels`);
      else {
        try {
          e.program = Program.build(t, options.fuse ?? fusion.enabled);
        } catch (err) {
          if (!(err instanceof OutOfMemoryError)) throw err;
          giveUp(e, `no memory for the static plan (${err.message})`);
          return result;
        }
        stats.planBytes += e.program.bytes;
        stats.fused += e.program.fused;
        e.first = null;
        e.state = READY;
      }
    }
    return result;
  };

  const reset = (): void => {
    for (const [k, e] of [...entries]) drop(k, e);
    statics.clear();
  };
  const compiled = Object.assign(call, { stats: stats as Readonly<CompileStats>, reset });
  plans.register(compiled, entries); // a compiled function dropped without reset() still frees its plans
  return compiled;
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

/** A signature made of top-level tensors and number arrays only, checked without building a key. */
interface Quick {
  readonly modes: number;
  readonly threads: number;
  readonly items: readonly ({ readonly dtype: string; readonly shape: readonly number[]; readonly alias: number } | { readonly tag: string; readonly length: number })[];
}

const modeBits = (): number => (+modes.record) | (+modes.forward << 1) | (+modes.anomaly << 2);

function quickSig(args: readonly unknown[], a: Args): Quick | null {
  if (a.tensors.length + a.data.length !== args.length) return null;
  const items: Quick['items'][number][] = [], seen: Tensor[] = [];
  for (const v of args) {
    if (isTensor(v)) items.push({ dtype: v.dtype, shape: v.shape, alias: seen.findIndex((t) => t.storage === v.storage) }), seen.push(v);
    else if (isNumberArray(v) && a.data.includes(v)) items.push({ tag: Object.prototype.toString.call(v), length: v.length });
    else return null;
  }
  return { modes: modeBits(), threads: poolSize(), items };
}

/** The tensors and data of a call whose arguments fit `q`, or null. */
function quickArgs(args: readonly unknown[], q: Quick): { tensors: Tensor[]; data: unknown[] } | null {
  if (args.length !== q.items.length || modeBits() !== q.modes || poolSize() !== q.threads) return null;
  const tensors: Tensor[] = [], data: unknown[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args[i], it = q.items[i];
    if ('dtype' in it) {
      if (!isTensor(v) || v.dtype !== it.dtype || v.shape.length !== it.shape.length) return null;
      for (let d = 0; d < it.shape.length; d++) if (v.shape[d] !== it.shape[d]) return null;
      if (tensors.findIndex((t) => t.storage === v.storage) !== it.alias) return null;
      tensors.push(v);
    } else {
      if (!isNumberArray(v) || v.length !== it.length || Object.prototype.toString.call(v) !== it.tag) return null;
      data.push(v);
    }
  }
  return { tensors, data };
}

const ids = new WeakMap<object, number>();
let nextObjectId = 0;
const idOf = (o: object): number => {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextObjectId++));
  return id;
};

const isNumberArray = (v: unknown): v is ArrayLike<number> =>
  (ArrayBuffer.isView(v) && !(v instanceof DataView) && !(v instanceof BigInt64Array) && !(v instanceof BigUint64Array)) ||
  (Array.isArray(v) && v.every((x) => typeof x === 'number'));

/**
 * The call's signature: tensors by dtype, shape and which earlier argument shares their memory;
 * typed and number arrays by type and length (their values are data, rebound on every call) unless
 * fn used them as values; other values as they are (objects by identity); plus the global modes
 * and the thread count, which change the schedule.
 */
function inspect(args: readonly unknown[], statics: ReadonlySet<string>): Args {
  const a: Args = { tensors: [], data: [], dataPaths: [], key: '' };
  const parts: string[] = [`${+modes.record}${+modes.forward}${+modes.anomaly}t${poolSize()}`];
  const walk = (v: unknown, path: string, depth: number): void => {
    if (isTensor(v)) {
      const alias = a.tensors.findIndex((t) => t.storage === v.storage);
      parts.push(`T${v.dtype}[${v.shape}]${alias}`);
      a.tensors.push(v);
    } else if (isNumberArray(v)) {
      if (statics.has(path)) parts.push(`V${Array.prototype.join.call(v, ',')}`);
      else {
        parts.push(`A${Object.prototype.toString.call(v)}${v.length}`);
        a.data.push(v);
        a.dataPaths.push(path);
      }
    } else if (depth < 8 && Array.isArray(v)) {
      parts.push(`[${v.length}`);
      v.forEach((x, i) => walk(x, `${path}.${i}`, depth + 1));
      parts.push(']');
    } else if (depth < 8 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      parts.push('{');
      for (const [k, x] of Object.entries(v)) {
        parts.push(JSON.stringify(k));
        walk(x, `${path}.${k}`, depth + 1);
      }
      parts.push('}');
    } else if ((typeof v === 'object' && v !== null) || typeof v === 'function') parts.push(`o${idOf(v)}`);
    else if (typeof v === 'number') parts.push(Object.is(v, -0) ? 'n-0' : `n${v}`);
    else parts.push(typeof v === 'string' ? `s${JSON.stringify(v)}` : `${typeof v}:${String(v)}`);
  };
  args.forEach((v, i) => walk(v, String(i), 0));
  a.key = parts.join('|');
  return a;
}
