/**
 * The embedded default data set: 1,797 8×8 handwritten digits, pixel values 0..16
 * ("Optical Recognition of Handwritten Digits", Alpaydin and Kaynak 1998, UCI, CC BY 4.0).
 * Shipped as a generated base64 string so it loads with no file or network access in every runtime.
 */
import { FormatError } from '../errors.js';
import { gunzip } from '../io/inflate.js';
import { DIGITS_COUNT, DIGITS_GZIP_BASE64 } from './digits-data.js';
import { tooMany } from '../args.js';

/** The embedded digits as bytes (see {@link digitsRaw}). */
export interface DigitsRaw {
  /** count × 64 bytes, image after image, each row-major 8×8 with values 0..16. */
  pixels: Uint8Array;
  /** count bytes, 0..9. */
  labels: Uint8Array;
  /** Number of images (1 797). */
  count: number;
}

const PIXELS = 64;
let decoded: Uint8Array | undefined;

/** The digits as raw bytes. Decoded once; each call returns fresh copies the caller may modify. */
export function digitsRaw(): DigitsRaw {
  if (arguments.length > 0) throw tooMany('data.digitsRaw', 0, arguments.length);
  decoded ??= decode();
  const split = DIGITS_COUNT * PIXELS;
  return { pixels: decoded.slice(0, split), labels: decoded.slice(split), count: DIGITS_COUNT };
}

function decode(): Uint8Array {
  const binary = atob(DIGITS_GZIP_BASE64);
  const gz = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) gz[i] = binary.charCodeAt(i);
  const expected = DIGITS_COUNT * (PIXELS + 1);
  const bytes = gunzip(gz, { maxOutputBytes: expected });
  if (bytes.length !== expected) throw new FormatError(`digitsRaw: embedded data is ${bytes.length} bytes, expected ${expected}`);
  return bytes;
}
