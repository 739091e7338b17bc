// Ready-to-train data sets: the embedded 8×8 digits with a seeded stratified split, and
// Fashion-MNIST from its four IDX files. Pixels become float32 tensors scaled to [0, 1] in
// wasm (in place, so a 60 000-image set needs no second copy); labels are Int32Arrays.
import { ArgumentError, FormatError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { fromValues } from '../ops/create.js';
import { filled, k } from '../ops/launch.js';
import { digitsRaw } from './digits.js';
import { loadIdx } from './idx.js';
import { integerStream, shuffleInPlace } from './shuffle.js';
import { describe, optionsArg, tooMany } from '../args.js';

/** A data set split into training and test parts. */
export interface Split {
  /** Training inputs, float32 `[N, features]` scaled to [0, 1]. */
  xTrain: Tensor;
  /** Training labels, one class index per row. */
  yTrain: Int32Array;
  /** Test inputs, float32 `[M, features]` scaled to [0, 1]. */
  xTest: Tensor;
  /** Test labels, one class index per row. */
  yTest: Int32Array;
}

/** Rows `rows` of `pixels` (each `width` bytes) as a float32 tensor [rows.length, width] divided by `max`. */
function scaled(pixels: Uint8Array, rows: ArrayLike<number> | null, width: number, max: number): Tensor {
  const n = rows === null ? pixels.length / width : rows.length;
  let src = pixels;
  if (rows !== null) {
    src = new Uint8Array(n * width);
    for (let i = 0; i < n; i++) src.set(pixels.subarray(rows[i] * width, (rows[i] + 1) * width), i * width);
  }
  const t = fromValues(src, [n, width], 'float32');
  const s = filled([], 'float32', max);
  // The binary kernel over a 1 × size view with b broadcast (stride 0), writing in place.
  k('div', 'float32')(t.ptr, s.ptr, t.ptr, 1, t.size, 0, 1, 0, 0);
  s.dispose();
  return t;
}

/** Options for {@link digits}. */
export interface DigitsOptions {
  /** Fraction of each class held out for testing (default 0.2). */
  testFraction?: number;
  /** Seed of the split and of the order within each part (default 0). */
  seed?: number;
}

/**
 * The embedded 1 797 8×8 digits (Alpaydin and Kaynak 1998, UCI, CC BY 4.0), split per class
 * (stratified) with a seeded shuffle: x [N, 64] in [0, 1] (pixel/16), y in 0..9.
 */
export function digits(options?: DigitsOptions): Split {
  if (arguments.length > 1) throw tooMany('data.digits', 1, arguments.length);
  const { testFraction = 0.2, seed = 0 } = optionsArg('digits', options, ['testFraction', 'seed']);
  if (typeof testFraction !== 'number' || !(testFraction > 0 && testFraction < 1)) {
    throw new ArgumentError(`digits: testFraction must be in (0, 1), got ${describe(testFraction)}`);
  }
  const { pixels, labels, count } = digitsRaw();
  const next = integerStream('digits', seed);
  const train: number[] = [],
    test: number[] = [];
  for (let c = 0; c < 10; c++) {
    const members = Int32Array.from(Array.from({ length: count }, (_, i) => i).filter((i) => labels[i] === c));
    shuffleInPlace(members, next);
    const nTest = Math.round(members.length * testFraction);
    members.forEach((i, j) => (j < nTest ? test : train).push(i));
  }
  const trainRows = shuffleInPlace(Int32Array.from(train), next),
    testRows = shuffleInPlace(Int32Array.from(test), next);
  const pick = (rows: Int32Array) => Int32Array.from(rows, (i) => labels[i]);
  return {
    xTrain: scaled(pixels, trainRows, 64, 16),
    yTrain: pick(trainRows),
    xTest: scaled(pixels, testRows, 64, 16),
    yTest: pick(testRows),
  };
}

const FASHION_FILES = {
  xTrain: 'train-images-idx3-ubyte',
  yTrain: 'train-labels-idx1-ubyte',
  xTest: 't10k-images-idx3-ubyte',
  yTest: 't10k-labels-idx1-ubyte',
} as const;

/**
 * Fashion-MNIST (Xiao et al. 2017) from `dir` holding the four IDX files, gzipped or not
 * (train-images-idx3-ubyte[.gz], ...): x [N, 784] in [0, 1] (pixel/255), y in 0..9, the official
 * 60 000 / 10 000 split. Node, Deno and Bun only (reads files with node:fs).
 */
export async function fashionMnist(dir: string): Promise<Split> {
  if (arguments.length > 1) throw tooMany('data.fashionMnist', 1, arguments.length);
  if (typeof dir !== 'string' || dir === '') throw new ArgumentError(`fashionMnist: dir must be a directory path, got ${describe(dir)}`);
  const fs = await import('node:fs/promises');
  const names = await fs.readdir(dir).catch((e: NodeJS.ErrnoException) => {
    throw new ArgumentError(`fashionMnist: cannot read data directory ${dir} (${e.code ?? e.message})`);
  });
  const read = async (base: string): Promise<Uint8Array> => {
    const file = [base, `${base}.gz`].find((f) => names.includes(f));
    if (file === undefined) throw new ArgumentError(`fashionMnist: ${dir} has no ${base} or ${base}.gz`);
    const bytes = new Uint8Array(await fs.readFile(`${dir}/${file}`));
    try {
      return checkIdx(file, loadIdx(bytes), base.includes('images'));
    } catch (e) {
      throw e instanceof FormatError && !e.message.startsWith(file) ? new FormatError(`${file}: ${e.message}`) : e;
    }
  };
  const [xa, ya, xb, yb] = await Promise.all(Object.values(FASHION_FILES).map(read));
  if (xa.length / 784 !== ya.length || xb.length / 784 !== yb.length) {
    throw new FormatError(`fashionMnist: image and label counts differ in ${dir}`);
  }
  return { xTrain: scaled(xa, null, 784, 255), yTrain: Int32Array.from(ya), xTest: scaled(xb, null, 784, 255), yTest: Int32Array.from(yb) };
}

/** The data of an IDX file after checking it is [N, 28, 28] images or [N] labels in 0..9. */
function checkIdx(file: string, { shape, data }: { shape: number[]; data: Uint8Array }, images: boolean): Uint8Array {
  const ok = images ? shape.length === 3 && shape[1] === 28 && shape[2] === 28 : shape.length === 1;
  if (!ok) throw new FormatError(`${file}: shape [${shape}] is not ${images ? '[N, 28, 28] images' : '[N] labels'}`);
  if (!images) {
    const bad = data.findIndex((v) => v > 9);
    if (bad >= 0) throw new FormatError(`${file}: label ${data[bad]} at position ${bad} is outside 0..9`);
  }
  return data;
}
