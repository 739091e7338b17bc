// Creating tensors: from JS data, constants, ranges and seeded random streams (generated in
// wasm by a counter-based generator, so a seed gives the same numbers in every runtime).
import { ShapeError, ArgumentError, OutOfMemoryError } from '../errors.js';
import { views, kernel } from '../wasm/module.js';
import { Tensor } from './tensor.js';
import { checkDtype, checkAnyDtype, SUFFIX, type DType } from '../tensor/dtype.js';
import { filled } from './launch.js';
import { replayable } from '../tensor/replay.js';
import { hooks, seedArgs } from '../wasm/hooks.js';
import { describe, optionsArg, boolArg, tooMany } from '../args.js';

/** Options for {@link tensor}, {@link zeros}, {@link ones}, {@link full} and {@link arange}. */
export interface TensorOptions {
  /** Shape of the result; by default inferred from nested arrays (a typed array gives 1-D). Must hold exactly as many elements as the data. */
  shape?: readonly number[];
  /** Element type; default `'float32'`. */
  dtype?: DType;
  /** Whether `backward()` accumulates a gradient into this leaf's `.grad`; default `false`. */
  requiresGrad?: boolean;
}
/** Options for {@link randn} and {@link rand}. */
export interface RandomOptions {
  /** A safe integer seeding the counter-based generator (same numbers in every runtime); when omitted, the next seed of a fixed sequence, so unseeded runs are reproducible too. */
  seed?: number;
  /** Element type; default `'float32'`. */
  dtype?: DType;
  /** Whether the result is a leaf that records gradients; default `false`. */
  requiresGrad?: boolean;
}
/**
 * A number or (nested) arrays of numbers, whose innermost rows may be typed arrays (as torch.tensor
 * takes a list of numpy arrays): the data {@link tensor} accepts besides a typed array.
 */
export type Nested =
  | number
  | readonly Nested[]
  | Float32Array
  | Float64Array
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray;

function checkShape(op: string, shape: readonly number[]): void {
  if (!Array.isArray(shape) || shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new ShapeError(`${op}: shape must be an array of non-negative integers, got ${describe(shape)}`);
  }
}

const isTyped = (v: unknown): v is ArrayLike<number> => ArrayBuffer.isView(v) && !(v instanceof DataView);

/** Shape of nested arrays, checking that they are not ragged; a typed array is a row. */
function inferShape(data: Nested, path = 'data'): number[] {
  if (typeof data === 'number') return [];
  if (isTyped(data)) return [data.length];
  if (!Array.isArray(data)) throw new ArgumentError(`tensor: ${path} must be a number, an array or a typed array, got ${describe(data)}`);
  if (data.length === 0) return [0];
  // A row of numbers (the innermost level, and all of flat data) needs no shape per element:
  // since tensor() walks the data even when a shape is given, that cost every such call ~50 ns a value.
  let k = 0;
  while (k < data.length && typeof data[k] === 'number') k++;
  if (k === data.length) return [data.length];
  const inner = inferShape(data[0], `${path}[0]`);
  for (let i = 1; i < data.length; i++) {
    const s = inferShape(data[i], `${path}[${i}]`);
    if (s.length !== inner.length || s.some((d, j) => d !== inner[j])) {
      throw new ShapeError(`tensor: ragged nested array: ${path}[${i}] has shape [${s}], ${path}[0] has [${inner}]`);
    }
  }
  return [data.length, ...inner];
}

/**
 * Nesting deeper than this is refused before the recursion overflows the stack (a RangeError
 * escaped at 10,000 levels, and an array that contains itself never ends); no tensor of use has
 * a rank near it.
 */
const MAX_DEPTH = 1024;

/** The values of nested arrays in row-major order; Array.prototype.flat would keep typed-array rows whole. */
function flatten(data: Nested, out: unknown[] = [], depth = 0): unknown[] {
  if (isTyped(data)) for (let i = 0; i < data.length; i++) out.push(data[i]);
  else if (!Array.isArray(data)) out.push(data);
  else if (depth === MAX_DEPTH)
    throw new ArgumentError(`tensor: data is nested more than ${MAX_DEPTH} arrays deep (does an array contain itself?)`);
  else for (const d of data) flatten(d, out, depth + 1);
  return out;
}

/** Runs an allocation, naming the public function in an OutOfMemoryError. */
function named<T>(op: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw e instanceof OutOfMemoryError ? e.in(op) : e;
  }
}

function finish(t: Tensor, requiresGrad: boolean | undefined): Tensor {
  try {
    t.requiresGrad = requiresGrad ?? false; // refused for int32
  } catch (e) {
    t.dispose();
    throw e;
  }
  return t;
}

/** Writes JS numbers into a new tensor of the given shape. */
export function fromValues(values: ArrayLike<number>, shape: readonly number[], dtype: DType): Tensor {
  const t = Tensor.empty(shape, dtype);
  const v = views();
  if (dtype === 'float32') v.f32.set(values, t.ptr >> 2);
  else if (dtype === 'int32') v.i32.set(values, t.ptr >> 2);
  else v.f64.set(values, t.ptr >> 3);
  hooks.recorder?.write(t.ptr, values.length, SUFFIX[dtype] as 'f32' | 'f64' | 'i32', values); // compile() rebinds `values`
  return t;
}

/** An int32 tensor takes integers in its range only: a float would be silently truncated. */
function checkInt32(op: string, v: number, where: string): void {
  if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31) {
    throw new ArgumentError(
      `${op}: ${where} is ${v}, not an int32 integer (to truncate floats, create a float tensor and call astype('int32'))`,
    );
  }
}

/**
 * A new tensor holding a copy of `data`: a number (shape `[]`), nested arrays, or a typed array.
 *
 * @param data - The values; nested arrays must not be ragged, and their innermost rows may be typed arrays.
 * @param options - `shape` (reshapes flat data), `dtype` (default `'float32'`), `requiresGrad` (default `false`).
 * @throws {@link ShapeError} when the data are ragged or do not fill `options.shape`.
 * @throws {@link ArgumentError} when `data` is not a number, an array or a typed array.
 * @example
 * ```ts
 * await init();
 * const x = tensor([[1, 2], [3, 4]], { requiresGrad: true }); // shape [2, 2], float32
 * const y = x.mul(x).sum();                                   // shape []
 * y.backward();
 * x.grad!.toArray(); // Float32Array [2, 4, 6, 8]
 * ```
 */
export function tensor(data: Nested | ArrayLike<number>, options?: TensorOptions): Tensor {
  if (arguments.length > 2) throw tooMany('tensor', 2, arguments.length);
  const opts = optionsArg('tensor', options, ['shape', 'dtype', 'requiresGrad']);
  boolArg('tensor', 'requiresGrad', opts.requiresGrad, false);
  const dtype = checkAnyDtype('tensor', opts.dtype ?? 'float32');
  if (typeof data !== 'number' && !Array.isArray(data) && !isTyped(data)) {
    throw new ArgumentError(
      `tensor: data must be a number, a (nested) array or a typed array, got ${data === null ? 'null' : typeof data}`,
    );
  }
  const flat = (isTyped(data) ? data : flatten(data as Nested)) as ArrayLike<number>;
  // Walked even when a shape is given: ragged rows are refused, not flattened into it.
  const natural = inferShape(data as Nested);
  const shape = opts.shape ?? natural;
  checkShape('tensor', shape);
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== flat.length) throw new ShapeError(`tensor: ${flat.length} values do not fill shape [${shape}] (${n} elements)`);
  for (let i = 0; i < flat.length; i++) {
    if (typeof flat[i] !== 'number') throw new ArgumentError(`tensor: element ${i} is ${typeof flat[i]}, expected a number`);
  }
  if (dtype === 'int32' && !(data instanceof Int32Array))
    for (let i = 0; i < flat.length; i++) checkInt32('tensor', flat[i], `element ${i}`);
  return finish(
    named('tensor', () => fromValues(flat, shape, dtype)),
    opts.requiresGrad,
  );
}

function fullAs(op: string, shape: readonly number[], value: number, options: TensorOptions | undefined): Tensor {
  const opts = optionsArg(op, options, ['dtype', 'requiresGrad']);
  boolArg(op, 'requiresGrad', opts.requiresGrad, false);
  checkShape(op, shape);
  if (typeof value !== 'number') throw new ArgumentError(`${op}: value must be a number, got ${describe(value)}`);
  const dtype = checkAnyDtype(op, opts.dtype ?? 'float32');
  if (dtype === 'int32') checkInt32(op, value, 'the value');
  return finish(
    named(op, () => filled(shape, dtype, value)),
    opts.requiresGrad,
  );
}
/** A tensor of `shape` filled with `value` (dtype default `'float32'`). */
export function full(shape: readonly number[], value: number, opts?: TensorOptions): Tensor {
  if (arguments.length > 3) throw tooMany('full', 3, arguments.length);
  return fullAs('full', shape, value, opts);
}
/** A tensor of `shape` filled with zeros (dtype default `'float32'`). */
export function zeros(shape: readonly number[], opts?: TensorOptions): Tensor {
  if (arguments.length > 2) throw tooMany('zeros', 2, arguments.length);
  return fullAs('zeros', shape, 0, opts);
}
/** A tensor of `shape` filled with ones (dtype default `'float32'`). */
export function ones(shape: readonly number[], opts?: TensorOptions): Tensor {
  if (arguments.length > 2) throw tooMany('ones', 2, arguments.length);
  return fullAs('ones', shape, 1, opts);
}

/**
 * The 1-D tensor `[0, 1, …, n-1]` (dtype default `'float32'`).
 * @throws {@link ArgumentError} when `n` is not a non-negative integer.
 */
export function arange(n: number, options?: TensorOptions): Tensor {
  if (arguments.length > 2) throw tooMany('arange', 2, arguments.length);
  const opts = optionsArg('arange', options, ['dtype', 'requiresGrad']);
  boolArg('arange', 'requiresGrad', opts.requiresGrad, false);
  if (!Number.isInteger(n) || n < 0) throw new ArgumentError(`arange: n must be a non-negative integer, got ${describe(n)}`);
  const dtype = checkAnyDtype('arange', opts.dtype ?? 'float32');
  if (dtype === 'int32' && n > 2 ** 31) throw new ArgumentError(`arange: n = ${n} does not fit int32`);
  const t = named('arange', () => Tensor.empty([n], dtype)); // a huge n fails here (OutOfMemoryError)
  kernel(`arange_${SUFFIX[dtype]}`)(t.ptr, n);
  return finish(t, opts.requiresGrad);
}

let autoSeed = 0x5eed;
/** A seed from the options, or the next of a fixed sequence (so unseeded runs are reproducible too). */
export function seedOf(seed: number | undefined, op?: string): [number, number] {
  const s = seed ?? replayable(() => autoSeed++); // a checkpoint's recompute gets the same automatic seed
  if (!Number.isSafeInteger(s))
    throw new ArgumentError(`${op === undefined ? '' : `${op}: `}seed must be a safe integer, got ${describe(s)}`);
  return [s >>> 0, Math.floor(s / 2 ** 32) >>> 0];
}

function random(
  op: 'rand_uniform' | 'rand_normal',
  shape: readonly number[],
  options: RandomOptions | undefined,
  a: number,
  b: number,
): Tensor {
  const fname = op === 'rand_uniform' ? 'rand' : 'randn';
  const opts = optionsArg(fname, options, ['seed', 'dtype', 'requiresGrad']);
  boolArg(fname, 'requiresGrad', opts.requiresGrad, false);
  checkShape(fname, shape);
  const dtype = checkDtype(fname, opts.dtype ?? 'float32');
  // null draws an automatic seed too (seedOf's ??)
  const draw = seedArgs(opts.seed != null, () => [...seedOf(opts.seed, fname), 0, a, b]);
  const t = named(fname, () => Tensor.empty(shape, dtype));
  kernel(`${op}_${SUFFIX[dtype]}`)(t.ptr, t.size, ...draw);
  return finish(t, opts.requiresGrad);
}
/** Standard normal samples. */
export function randn(shape: readonly number[], opts?: RandomOptions): Tensor {
  if (arguments.length > 2) throw tooMany('randn', 2, arguments.length);
  return random('rand_normal', shape, opts, 0, 1);
}
/** Uniform samples in [0, 1). */
export function rand(shape: readonly number[], opts?: RandomOptions): Tensor {
  if (arguments.length > 2) throw tooMany('rand', 2, arguments.length);
  return random('rand_uniform', shape, opts, 0, 1);
}
