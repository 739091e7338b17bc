// init(): instantiates the kernels against a JS-owned memory (shared, with a worker pool, when
// threads are asked for) and installs them as the runtime every other module reads.
import { ArgumentError, AdjointError } from '../errors.js';
import { Arena } from './arena.js';
import { ARGS_BYTES, compileKernels, isInitialised, setRuntime, type InitOptions, type Kernel } from './module.js';
import { prepareThreads, reinitThreads, startThreads } from './pool.js';
import { describe, optionsArg, tooMany } from '../args.js';
import { kernelSource } from './relaxed.js';

const PAGE = 65536;
const MAX_BYTES = 65536 * PAGE; // wasm32's 4 GiB
/**
 * The init() in progress (instantiating, or resizing the pool). Calls overlap only one at a time:
 * two resizes at once would each start a pool, and the one that finished second would orphan the
 * other's workers (never stopped) while a call that came later lost to one that came earlier.
 */
let pending: Promise<void> | null = null;

/**
 * Instantiates the wasm kernels once; later calls return at once (with `threads`, they resize the
 * pool). Every other function throws an {@link AdjointError} until this has resolved.
 *
 * @param opts - `module` (a precompiled `WebAssembly.Module` for edge workers, bytes, or a URL),
 *   `memory: { initialBytes?, maximumBytes? }`, `threads: n | 'auto'`.
 * @throws {@link AdjointError} when the runtime's WebAssembly lacks SIMD or the module cannot be loaded.
 * @example
 * ```ts
 * import { init, tensor } from 'adjoint';
 * await init();                     // or: await init({ threads: 'auto' })
 * tensor([1, 2, 3]).sum().item();   // 6
 * ```
 */
export function init(opts?: InitOptions): Promise<void> {
  let options: InitOptions;
  try {
    if (arguments.length > 1) throw tooMany('init', 1, arguments.length); // rejects, like every other init error
    options = optionsArg('init', opts, ['module', 'memory', 'threads', 'relaxedSimd']);
    if (options.memory !== undefined) optionsArg('init', options.memory, ['initialBytes', 'maximumBytes'], 'memory');
  } catch (e) {
    return Promise.reject(e);
  }
  // A call made meanwhile runs after it, as if the caller had awaited it (also when it failed).
  if (pending !== null) return pending.catch(() => undefined).then(() => init(options));
  if (isInitialised()) {
    const conflict = changedFixedOption(options);
    if (conflict !== null) return Promise.reject(conflict);
    return (pending = reinitThreads(options).finally(() => (pending = null)));
  }
  first = options;
  return (pending = instantiate(options).finally(() => (pending = null)));
}

/** The options of the call that instantiated the kernels. */
let first: InitOptions = {};

/**
 * A later init() may resize the thread pool, and may repeat the first call's other options; asking
 * for another memory, module or kernel build would be silently ignored, so it is an error instead.
 */
function changedFixedOption(options: InitOptions): ArgumentError | null {
  const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);
  for (const key of ['memory', 'module', 'relaxedSimd'] as const) {
    const v = options[key];
    if (v === undefined || (key === 'module' ? sameModule(v, first.module) : same(v, first[key]))) continue;
    // memory is a plain object, which describe() only calls "an object": show its fields.
    const show = (o: unknown) => (key === 'memory' && o !== undefined ? JSON.stringify(o) : describe(o));
    return new ArgumentError(
      `init: ${key} was fixed by the first init() call (${show(first[key])}) and cannot change to ${show(v)}; ` +
        'a later init() can only change threads',
    );
  }
  return null;
}

/**
 * Whether a later init()'s module repeats the first one's: the same object, the same URL text, or
 * the same bytes. Overlapping calls run after the first, so two entry points that each read the
 * wasm file into a buffer of their own must not be told that the module changed.
 */
function sameModule(a: InitOptions['module'], b: InitOptions['module']): boolean {
  if (a === b) return true;
  const text = (v: unknown) => (typeof v === 'string' || (typeof URL !== 'undefined' && v instanceof URL) ? String(v) : null);
  const bytes = (v: unknown) =>
    v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : null;
  if (text(a) !== null || text(b) !== null) return text(a) === text(b);
  const x = bytes(a),
    y = bytes(b);
  if (x === null || y === null || x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

async function instantiate(options: InitOptions): Promise<void> {
  for (const key of ['initialBytes', 'maximumBytes'] as const) {
    const v = options.memory?.[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0))
      throw new ArgumentError(`init: memory.${key} must be a positive integer, got ${describe(v)}`);
  }
  // Whole pages: memory grows in pages, so the arena's limit is the page-rounded maximum.
  const maxBytes = Math.floor(Math.min(options.memory?.maximumBytes ?? MAX_BYTES, MAX_BYTES) / PAGE) * PAGE;
  if (maxBytes < PAGE)
    throw new ArgumentError(`init: memory.maximumBytes must be at least one 64 KiB page (${PAGE}), got ${options.memory?.maximumBytes}`);
  const initial = Math.max(1, Math.ceil((options.memory?.initialBytes ?? Math.min(16 * PAGE, maxBytes)) / PAGE));
  if (initial * PAGE > maxBytes) {
    throw new ArgumentError(`init: memory.initialBytes (${initial * PAGE}) exceeds memory.maximumBytes (${maxBytes})`);
  }
  if (typeof WebAssembly !== 'object')
    throw new AdjointError(
      'init: this runtime has no WebAssembly (disabled by a setting or flag such as --jitless?); the adjoint kernels need WebAssembly with SIMD',
    );
  // One source for this thread and the workers, so every thread runs the same kernel build.
  const source = kernelSource(options);
  const threads = await prepareThreads({ ...options, module: source }, initial, Math.floor(maxBytes / PAGE));
  const memory = threads?.memory ?? new WebAssembly.Memory({ initial, maximum: Math.floor(maxBytes / PAGE) });
  const module = threads?.module ?? (await compileKernels(source));
  const instance = await WebAssembly.instantiate(module, { env: { memory } });
  const exports = instance.exports as unknown as Record<string, Kernel>;
  const args = Math.ceil(exports.heap_base() / 64) * 64;
  // The static data and the argument block must fit, with room for tensors above them.
  const base = args + ARGS_BYTES;
  if (base + PAGE > maxBytes) {
    throw new ArgumentError(
      `init: memory.maximumBytes (${maxBytes}) leaves no room for tensors: the kernels' static data and argument block take ${base} bytes`,
    );
  }
  if (memory.buffer.byteLength < base) memory.grow(Math.ceil((base - memory.buffer.byteLength) / PAGE));
  setRuntime({
    memory,
    exports,
    args,
    relaxed: exports.kernels_relaxed?.() === 1,
    arena: new Arena(memory, args + ARGS_BYTES, maxBytes),
    buffer: null,
    f32: new Float32Array(0),
    f64: new Float64Array(0),
    i32: new Int32Array(0),
    u8: new Uint8Array(0),
  });
  if (threads !== null) await startThreads(threads);
}
