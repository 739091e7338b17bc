// The loaded kernels: one WebAssembly.Memory owned by JS, the module instantiated against it
// (by init(), src/wasm/init.ts), and typed-array views that are rebuilt whenever memory.grow
// has detached the old ones.
import { ArgumentError, AdjointError } from '../errors.js';
import { Arena } from './arena.js';
import { inflateSync } from 'fflate';
import { WASM_DEFLATE_BASE64, WASM_LENGTH } from './bytes.generated.js';
import { hooks } from './hooks.js';

/** Options for {@link init}: where the kernels come from, the memory's size, and threads. */
export interface InitOptions {
  /** A precompiled module (edge workers), the wasm bytes, or a URL to fetch them from. */
  module?: WebAssembly.Module | ArrayBuffer | ArrayBufferView | URL | string;
  /** Size of the wasm memory in bytes: `initialBytes` to reserve at start, `maximumBytes` (at most 4 GiB) it may grow to; an allocation beyond it throws an {@link OutOfMemoryError}. */
  memory?: {
    /** Bytes to reserve at start. */
    initialBytes?: number;
    /** Bytes the memory may grow to (at most 4 GiB). */
    maximumBytes?: number;
  };
  /**
   * Threads for large kernels (see src/wasm/threads.ts): n, or 'auto' for one per core. Needs
   * SharedArrayBuffer (a cross-origin isolated page in browsers); elsewhere one thread is used,
   * with a console notice. Results are bit-identical for any count. On an initialised engine
   * whose first init asked for threads, init({ threads }) resizes or restarts the pool.
   */
  threads?: number | 'auto';
  /**
   * Opt in to the relaxed-SIMD kernels (fused multiply-add in the GEMM and convolution inner
   * loops) where the engine has relaxed SIMD; elsewhere the default kernels load. Results stay
   * within f32 rounding of the default's, but their last bits may differ between engines and
   * CPUs. Ignored when `module` is given (that module is the build). `backend()` says which
   * kernels loaded. Fixed by the first init() call.
   */
  relaxedSimd?: boolean;
}

export type Kernel = (...args: number[]) => number;
/** Bytes reserved above the static data for i32 kernel arguments (shapes, strides, indices). */
export const ARGS_BYTES = 1 << 16;

export interface Runtime {
  memory: WebAssembly.Memory;
  /** The relaxed-SIMD kernel build is loaded (its kernels_relaxed export says 1). */
  relaxed: boolean;
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

/** Installs the instantiated kernels (init() calls it once). */
export function setRuntime(r: Runtime): void {
  rt = r;
}

/** `() -> v128 { i8x16.splat(0) }`: valid only where the engine has fixed-width SIMD. */
const SIMD_PROBE = [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 8, 1, 6, 0, 65, 0, 253, 15, 11];

/** The kernels as a compiled module: `source` itself, the embedded bytes, given bytes or a URL. */
export async function compileKernels(source: InitOptions['module']): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  // Checked up front so such a runtime gets this message at init, not a bare CompileError.
  if (!WebAssembly.validate(new Uint8Array(SIMD_PROBE))) {
    throw new AdjointError(
      "init: this runtime's WebAssembly has no SIMD support, which the adjoint kernels need " +
        '(fixed-width 128-bit SIMD: Chrome 91+, Firefox 89+, Safari 16.4+, Node 16.4+, Deno, Bun, workerd)',
    );
  }
  try {
    if (source === undefined) return await WebAssembly.compile(embeddedKernelBytes());
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
      `init: could not compile the adjoint kernels (${(e as Error).message}). Where compiling WebAssembly from bytes ` +
        "is forbidden (Cloudflare Workers, workerd), pass the precompiled module: import wasm from 'adjoint/adjoint.wasm'; " +
        'await init({ module: wasm })',
    );
  }
}

/** The embedded kernels' bytes (build/adjoint.wasm), inflated from the bundle's compressed copy. */
export function embeddedKernelBytes(): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(WASM_LENGTH);
  if (inflateSync(decodeBase64(WASM_DEFLATE_BASE64), { out }).length !== WASM_LENGTH)
    throw new AdjointError('internal: the embedded kernels did not inflate to their length (run npm run asbuild)');
  return out;
}

export function decodeBase64(s: string): Uint8Array<ArrayBuffer> {
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
  hooks.recorder?.access(); // compile()'s tracer: JS is touching tensor memory
  return r;
}

/** The kernel export `name` (e.g. 'tanh_f32'). */
export function kernel(name: string): Kernel {
  const k = runtime().exports[name];
  if (k === undefined) throw new AdjointError(`internal: no kernel named ${name}`);
  const rec = hooks.recorder; // compile()'s tracer records the launch (src/compile/trace.ts)
  return rec === null ? k : rec.kernel(name, k);
}

/** Writes i32 values into the argument block at slot `slot` (in i32s) and returns their address. */
export function writeArgs(slot: number, values: ArrayLike<number>): number {
  const r = views();
  if ((slot + values.length) * 4 > ARGS_BYTES) throw new AdjointError('internal: kernel argument block overflow');
  r.i32.set(values, (r.args >> 2) + slot);
  hooks.recorder?.write(r.args + slot * 4, values.length, 'i32', values);
  return r.args + slot * 4;
}
