// Loading the kernels: one WebAssembly.Memory owned by JS, the module instantiated against it,
// and typed-array views that are rebuilt whenever memory.grow has detached the old ones.
import { ArgumentError, AdjointError } from '../errors.js';
import { Arena } from './arena.js';
import { WASM_BASE64 } from './bytes.generated.js';

export interface InitOptions {
  /** A precompiled module (edge workers), the wasm bytes, or a URL to fetch them from. */
  module?: WebAssembly.Module | ArrayBuffer | ArrayBufferView | URL | string;
  memory?: { initialBytes?: number; maximumBytes?: number };
  /** Reserved for the worker pool; one thread is used for now. */
  threads?: number | 'auto';
}

type Kernel = (...args: number[]) => number;
const PAGE = 65536;
const MAX_BYTES = 65536 * PAGE; // wasm32's 4 GiB
/** Bytes reserved above the static data for i32 kernel arguments (shapes, strides, indices). */
export const ARGS_BYTES = 1 << 16;

interface Runtime {
  memory: WebAssembly.Memory;
  exports: Record<string, Kernel>;
  arena: Arena;
  args: number;
  buffer: ArrayBuffer | null;
  f32: Float32Array;
  f64: Float64Array;
  i32: Int32Array;
  u8: Uint8Array;
}
let rt: Runtime | null = null;
let pending: Promise<void> | null = null;

/** Instantiates the kernels once; later calls return at once. */
export function init(options: InitOptions = {}): Promise<void> {
  if (rt !== null) return Promise.resolve();
  if (pending === null) pending = instantiate(options).finally(() => (pending = null));
  return pending;
}

async function instantiate(options: InitOptions): Promise<void> {
  const maxBytes = Math.min(options.memory?.maximumBytes ?? MAX_BYTES, MAX_BYTES);
  const initial = Math.max(1, Math.ceil((options.memory?.initialBytes ?? 16 * PAGE) / PAGE));
  if (initial * PAGE > maxBytes) {
    throw new ArgumentError(`init: memory.initialBytes (${initial * PAGE}) exceeds memory.maximumBytes (${maxBytes})`);
  }
  if (typeof WebAssembly !== 'object') throw new AdjointError('init: this runtime has no WebAssembly');
  const memory = new WebAssembly.Memory({ initial, maximum: Math.floor(maxBytes / PAGE) });
  const module = await compile(options.module);
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  const exports = instance.exports as unknown as Record<string, Kernel>;
  const args = Math.ceil(exports.heap_base() / 64) * 64;
  rt = {
    memory, exports, args, arena: new Arena(memory, args + ARGS_BYTES, maxBytes),
    buffer: null, f32: new Float32Array(0), f64: new Float64Array(0), i32: new Int32Array(0), u8: new Uint8Array(0),
  };
}

async function compile(source: InitOptions['module']): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  try {
    if (source === undefined) return await WebAssembly.compile(decodeBase64(WASM_BASE64));
    if (typeof source === 'string' || source instanceof URL) {
      const res = await fetch(source);
      if (!res.ok) throw new ArgumentError(`init: fetching ${String(source)} gave HTTP ${res.status}`);
      return await WebAssembly.compile(await res.arrayBuffer());
    }
    const bytes = ArrayBuffer.isView(source) ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength) : new Uint8Array(source);
    return await WebAssembly.compile(bytes.slice() as Uint8Array<ArrayBuffer>);
  } catch (e) {
    if (e instanceof AdjointError) throw e;
    throw new AdjointError(
      `init: could not compile the adjoint kernels (${(e as Error).message}). This runtime needs WebAssembly SIMD; ` +
        'where compiling from bytes is forbidden (Cloudflare workerd), pass a precompiled module: init({ module })',
    );
  }
}

function decodeBase64(s: string): Uint8Array<ArrayBuffer> {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The runtime; throws a clear error before init(). */
export function runtime(): Runtime {
  if (rt === null) throw new AdjointError('adjoint is not initialised: call `await init()` first');
  return rt;
}

export function isInitialised(): boolean {
  return rt !== null;
}

/** Current views of the memory (rebuilt after memory.grow detached the previous ones). */
export function views(): Runtime {
  const r = runtime();
  if (r.buffer !== r.memory.buffer) {
    const b = r.memory.buffer;
    r.buffer = b;
    r.f32 = new Float32Array(b);
    r.f64 = new Float64Array(b);
    r.i32 = new Int32Array(b);
    r.u8 = new Uint8Array(b);
  }
  return r;
}

/** The kernel export `name` (e.g. 'tanh_f32'). */
export function kernel(name: string): Kernel {
  const k = runtime().exports[name];
  if (k === undefined) throw new AdjointError(`internal: no kernel named ${name}`);
  return k;
}

/** Writes i32 values into the argument block at slot `slot` (in i32s) and returns their address. */
export function writeArgs(slot: number, values: ArrayLike<number>): number {
  const r = views();
  if ((slot + values.length) * 4 > ARGS_BYTES) throw new AdjointError('internal: kernel argument block overflow');
  r.i32.set(values, (r.args >> 2) + slot);
  return r.args + slot * 4;
}
