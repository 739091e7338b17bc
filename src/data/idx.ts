/**
 * IDX files, the MNIST / Fashion-MNIST container: two zero bytes, a type byte, a dimension count,
 * the dimensions as big-endian u32, then the data. Only unsigned bytes (type 0x08) are supported,
 * which is what every MNIST-style image and label file uses.
 */
import { ArgumentError, FormatError } from '../errors.js';
import { gunzip, isGzip } from '../io/inflate.js';
import { describe, tooMany } from '../args.js';

/** A parsed IDX (MNIST-format) file. */
export interface IdxData {
  /** The dimensions, e.g. `[60000, 28, 28]` for images or `[60000]` for labels. */
  shape: number[];
  /** The values, row-major. */
  data: Uint8Array;
}

/** The dimensions are only known after inflating, so the output is capped generously and checked afterwards. */
const MAX_INFLATED_BYTES = 2 ** 30;
const UBYTE = 0x08;
const TYPE_NAMES: Record<number, string> = {
  0x08: 'unsigned byte',
  0x09: 'signed byte',
  0x0b: 'int16',
  0x0c: 'int32',
  0x0d: 'float32',
  0x0e: 'float64',
};

/** Parses an IDX file, gzipped or not; `data` is a fresh copy that does not alias `bytes`. */
export function loadIdx(bytes: Uint8Array): IdxData {
  if (arguments.length > 1) throw tooMany('data.loadIdx', 1, arguments.length);
  if (!(bytes instanceof Uint8Array)) throw new ArgumentError(`loadIdx: expected the file's bytes as a Uint8Array, got ${describe(bytes)}`);
  const gzipped = isGzip(bytes);
  const raw = gzipped ? inflate(bytes) : bytes;
  const shape = readShape(raw);
  const headerLen = 4 + 4 * shape.length;
  // An overflowing product is huge or Infinity, never equal to a real length.
  const expected = shape.reduce((a, b) => a * b, 1);
  const actual = raw.length - headerLen;
  if (actual !== expected) {
    const why = actual < expected ? 'truncated' : 'trailing bytes';
    throw new FormatError(`loadIdx: dims [${shape.join(', ')}] need ${expected} data bytes but the file has ${actual} (${why})`);
  }
  // gunzip's output is already private to us; the caller's buffer is not.
  return { shape, data: gzipped ? raw.subarray(headerLen) : raw.slice(headerLen) };
}

function inflate(bytes: Uint8Array): Uint8Array {
  try {
    return gunzip(bytes, { maxOutputBytes: MAX_INFLATED_BYTES });
  } catch (e) {
    if (e instanceof FormatError) throw new FormatError(`loadIdx: ${e.message}`);
    throw e;
  }
}

function readShape(b: Uint8Array): number[] {
  if (b.length < 4) throw new FormatError(`loadIdx: file is ${b.length} bytes, too short for the 4-byte magic number`);
  if (b[0] !== 0 || b[1] !== 0) throw new FormatError(`loadIdx: magic number must start with two zero bytes, got ${b[0]} ${b[1]}`);
  if (b[2] !== UBYTE) {
    const name = TYPE_NAMES[b[2]] ?? 'unknown';
    throw new FormatError(
      `loadIdx: data type 0x${b[2].toString(16).padStart(2, '0')} (${name}) is not supported; only 0x08 (unsigned byte) is`,
    );
  }
  const ndims = b[3];
  if (ndims === 0) throw new FormatError('loadIdx: dims count is 0; expected at least 1');
  if (b.length < 4 + 4 * ndims)
    throw new FormatError(`loadIdx: file is ${b.length} bytes, too short for ${ndims} dims (${4 + 4 * ndims} header bytes)`);
  const view = new DataView(b.buffer, b.byteOffset, 4 + 4 * ndims);
  return Array.from({ length: ndims }, (_, i) => view.getUint32(4 + 4 * i, false));
}
