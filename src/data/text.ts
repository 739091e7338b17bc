// Character-level language-model data, as the published tiny-Shakespeare setup: the text,
// a vocabulary of its sorted distinct characters, the first 90 % of the characters for
// training and the last 10 % for validation, and random windows of blockSize + 1 characters
// drawn with our seeded integer stream (never Math.random), so a seed gives the same batches
// in every runtime.
import { ArgumentError, FormatError } from '../errors.js';
import { gunzip, isGzip } from '../io/inflate.js';
import { integerStream } from './shuffle.js';
import { describe, tooMany, optionsArg } from '../args.js';
import { tensor } from '../ops/create.js';
import type { Tensor } from '../ops/tensor.js';

/** The characters of a string by code point (a surrogate pair is one character). */
function codePoints(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.codePointAt(i)!;
    out.push(c);
    if (c > 0xffff) i++;
  }
  return out;
}

/** A character-level tokenizer: id i is the i-th character of `vocab`. */
export class CharTokenizer {
  /** The characters, one string each, in id order. */
  readonly vocab: readonly string[];
  private readonly ids = new Map<number, number>();

  /** A tokenizer over these characters (e.g. a saved `vocab`, or `vocab.join('')`). */
  constructor(vocab: readonly string[] | string) {
    if (arguments.length > 1) throw tooMany('data.CharTokenizer', 1, arguments.length);
    if (typeof vocab !== 'string' && !Array.isArray(vocab)) {
      throw new ArgumentError(`CharTokenizer: vocab must be a string or an array of characters, got ${describe(vocab)}`);
    }
    const chars = typeof vocab === 'string' ? codePoints(vocab).map((c) => String.fromCodePoint(c)) : [...vocab];
    if (chars.length === 0) throw new ArgumentError('CharTokenizer: the vocabulary is empty');
    chars.forEach((ch, i) => {
      if (typeof ch !== 'string' || codePoints(ch).length !== 1)
        throw new ArgumentError(`CharTokenizer: vocab[${i}] must be one character, got ${describe(ch)}`);
      const c = ch.codePointAt(0)!;
      if (this.ids.has(c))
        throw new ArgumentError(`CharTokenizer: ${JSON.stringify(ch)} appears twice in the vocabulary (at ${this.ids.get(c)} and ${i})`);
      this.ids.set(c, i);
    });
    this.vocab = chars;
  }

  /** The sorted distinct characters of `text` (by code point, as Python's sorted(set(text))). */
  static fromText(text: string): CharTokenizer {
    if (typeof text !== 'string' || text.length === 0)
      throw new ArgumentError(
        `CharTokenizer.fromText: expected a non-empty string, got ${typeof text === 'string' ? 'an empty string' : typeof text}`,
      );
    const distinct = [...new Set(codePoints(text))].sort((a, b) => a - b);
    return new CharTokenizer(distinct.map((c) => String.fromCodePoint(c)));
  }

  /** Number of distinct characters (ids are `0 … vocabSize − 1`). */
  get vocabSize(): number {
    return this.vocab.length;
  }

  /** The ids of the characters of `text`. */
  encode(text: string): Int32Array {
    if (typeof text !== 'string') throw new ArgumentError(`CharTokenizer.encode: expected a string, got ${typeof text}`);
    const out = new Int32Array(text.length);
    let n = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.codePointAt(i)!;
      const id = this.ids.get(c);
      if (id === undefined)
        throw new ArgumentError(
          `CharTokenizer.encode: character ${JSON.stringify(String.fromCodePoint(c))} at position ${i} is not in the vocabulary of ${this.vocabSize}`,
        );
      out[n++] = id;
      if (c > 0xffff) i++;
    }
    return n === out.length ? out : out.slice(0, n);
  }

  /** The text of `ids` (integers in [0, vocabSize)). */
  decode(ids: ArrayLike<number>): string {
    if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number')
      throw new ArgumentError(`CharTokenizer.decode: expected an array of ids, got ${describe(ids)}`);
    let s = '';
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!Number.isInteger(id) || id < 0 || id >= this.vocab.length)
        throw new ArgumentError(`CharTokenizer.decode: ids[${i}] = ${id} is not in [0, ${this.vocab.length})`);
      s += this.vocab[id];
    }
    return s;
  }
}

/**
 * The first `fraction` of a sequence for training, the rest for validation (views, no copy). A
 * string is split by characters (code points), so it splits where its ids would.
 */
export function splitText<T extends Int32Array | string>(
  ids: T,
  fraction = 0.9,
): {
  /** The first part. */
  train: T;
  /** The rest. */
  val: T;
} {
  if (arguments.length > 2) throw tooMany('data.splitText', 2, arguments.length);
  if (typeof ids !== 'string' && !(ids instanceof Int32Array))
    throw new ArgumentError(`splitText: expected an Int32Array of ids or a string, got ${describe(ids)}`);
  if (typeof fraction !== 'number' || !(fraction > 0 && fraction < 1))
    throw new ArgumentError(`splitText: fraction must be in (0, 1), got ${describe(fraction)}`);
  if (typeof ids === 'string') {
    // Counted in characters, as the ids of the same text: a cut by UTF-16 unit could halve a surrogate pair.
    const at = unitOffset(ids, Math.floor(codePoints(ids).length * fraction));
    return { train: ids.slice(0, at) as T, val: ids.slice(at) as T };
  }
  // Python's int(n * 0.9), as the published split.
  const n = Math.floor(ids.length * fraction);
  return { train: ids.subarray(0, n) as T, val: ids.subarray(n) as T };
}

/** The UTF-16 offset of character `n` of `text` (characters by code point, as codePoints counts them). */
function unitOffset(text: string, n: number): number {
  let i = 0;
  for (let k = 0; k < n; k++) i += text.codePointAt(i)! > 0xffff ? 2 : 1;
  return i;
}

/** Options for {@link lmBatches}. */
export interface LmBatchOptions {
  /** Windows per batch. */
  batchSize: number;
  /** Characters per window (the model's context). */
  blockSize: number;
  /** Seed of the window positions (default 0). */
  seed?: number;
}

/**
 * One batch of windows: row r of x is ids[s_r .. s_r + blockSize), of y the same shifted by one.
 * x and y are new tensors: dispose them, or draw the batch inside tidy().
 */
export interface LmBatch {
  /** The input ids, an int32 tensor `[batchSize, blockSize]`. */
  x: Tensor;
  /** The target ids, an int32 tensor `[batchSize, blockSize]`: `x` shifted by one character. */
  y: Tensor;
  /** Each row's start s_r in ids. */
  starts: Int32Array;
}

/** Checks a positive integer option. */
function positive(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0)
    throw new ArgumentError(`lmBatches: ${name} must be a positive integer, got ${describe(v)}`);
  return v;
}

/**
 * An endless stream of random windows for next-character prediction: each batch draws batchSize
 * starts uniformly from [0, ids.length − blockSize) with the seeded stream (as the published
 * setup's randint), so a seed gives the same batches everywhere.
 */
export function lmBatches(ids: Int32Array, opts: LmBatchOptions): Generator<LmBatch, never, undefined> {
  if (arguments.length > 2) throw tooMany('data.lmBatches', 2, arguments.length); // here, not in the generator: at the call
  optionsArg('lmBatches', opts ?? {}, ['batchSize', 'blockSize', 'seed']);
  return lmBatchesOf(ids, opts);
}

function* lmBatchesOf(ids: Int32Array, opts: LmBatchOptions): Generator<LmBatch, never, undefined> {
  if (!(ids instanceof Int32Array))
    throw new ArgumentError(`lmBatches: ids must be an Int32Array (from CharTokenizer.encode), got ${describe(ids)}`);
  const { batchSize, blockSize, seed = 0 } = opts ?? ({} as LmBatchOptions);
  positive('batchSize', batchSize);
  positive('blockSize', blockSize);
  const span = ids.length - blockSize;
  if (span <= 0) throw new ArgumentError(`lmBatches: a window needs blockSize + 1 = ${blockSize + 1} ids, but ids has ${ids.length}`);
  const next = integerStream('lmBatches', seed);
  for (;;) {
    const x = new Int32Array(batchSize * blockSize),
      y = new Int32Array(batchSize * blockSize),
      starts = new Int32Array(batchSize);
    for (let r = 0; r < batchSize; r++) {
      const s = next() % span;
      starts[r] = s;
      x.set(ids.subarray(s, s + blockSize), r * blockSize);
      y.set(ids.subarray(s + 1, s + 1 + blockSize), r * blockSize);
    }
    const shape = [batchSize, blockSize];
    yield { x: tensor(x, { dtype: 'int32', shape }), y: tensor(y, { dtype: 'int32', shape }), starts };
  }
}

const FILE = 'tinyshakespeare.txt.gz';

/** The text of a (possibly gzipped) UTF-8 file's bytes. */
function textOf(bytes: Uint8Array, what: string): string {
  const raw = isGzip(bytes) ? gunzip(bytes) : bytes;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new FormatError(`shakespeare: ${what} is not UTF-8 text`);
  }
}

/**
 * The tiny-Shakespeare text (about 1.1 M characters, 65 distinct). `source` is a path to
 * tinyshakespeare.txt or .txt.gz, or its bytes (e.g. fetched in a browser); by default the copy
 * in the repository's data/ folder (Node, Deno, Bun: read with node:fs, imported only here).
 */
export async function shakespeare(source?: string | Uint8Array): Promise<string> {
  if (arguments.length > 1) throw tooMany('data.shakespeare', 1, arguments.length);
  if (source instanceof Uint8Array) return textOf(source, 'the given bytes');
  if (source !== undefined && (typeof source !== 'string' || source === ''))
    throw new ArgumentError(`shakespeare: source must be a file path or the file's bytes, got ${describe(source)}`);
  let fs: typeof import('node:fs/promises'), url: typeof import('node:url');
  try {
    [fs, url] = await Promise.all([import('node:fs/promises'), import('node:url')]);
  } catch {
    throw new ArgumentError('shakespeare: reading files needs Node, Deno or Bun; in a browser, fetch the file and pass its bytes');
  }
  // From src/data/ (sources) or dist/ (the bundle) up to the repository, then the working directory.
  const near = (rel: string): string[] => {
    try {
      return [url.fileURLToPath(new URL(rel, import.meta.url))];
    } catch {
      return []; // loaded from a non-file URL
    }
  };
  const candidates = source !== undefined ? [source] : [...near(`../../data/${FILE}`), ...near(`../data/${FILE}`), `data/${FILE}`];
  for (const path of candidates) {
    const bytes = await fs.readFile(path).catch((e: NodeJS.ErrnoException) => {
      if (source !== undefined) throw new ArgumentError(`shakespeare: cannot read ${path} (${e.code ?? e.message})`);
      return null;
    });
    if (bytes !== null) return textOf(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), path);
  }
  throw new ArgumentError(
    `shakespeare: no ${FILE} found (looked in ${candidates.join(', ')}); pass its path: data.shakespeare('path/to/${FILE}')`,
  );
}
