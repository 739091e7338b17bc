/**
 * Synchronous gzip (RFC 1952) decoding for every target runtime: zlib is Node-only and
 * DecompressionStream is asynchronous. fflate's streaming Gunzip does the DEFLATE work; this file
 * adds what it leaves out: a strict header check, each member's CRC32 and ISIZE, and an output cap
 * counted as the data comes out. Malformed or hostile input ends in a FormatError.
 */
import { Gunzip } from 'fflate';
import { ArgumentError, FormatError } from '../errors.js';

export interface InflateOptions {
  /** Throw a FormatError rather than produce more than this many bytes (default 1 GiB): stops decompression bombs. */
  maxOutputBytes?: number;
}

const DEFAULT_MAX_OUTPUT = 2 ** 30;
/** DEFLATE cannot compress better than about 1032:1, so no valid input needs a bigger first buffer than this ratio implies. */
const MAX_RATIO = 1032;
/** Input is fed in slices this big, so one slice inflates to at most about 17 MB past the cap before the count stops it. */
const SLICE = 1 << 14;

/** True when `bytes` starts with the gzip magic number 1f 8b. */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * Decodes a gzip file, concatenated members included; verifies each member's header, CRC32 and
 * length. Anything after the last member (GNU gzip's zero padding included) is a FormatError.
 */
export function gunzip(bytes: Uint8Array, options: InflateOptions = {}): Uint8Array {
  const out = new Output(maxOutput(options), gzipSizeHint(bytes));
  readGzipHeader(bytes, 0);
  let memberStart = 0;
  const stream = new Gunzip((chunk) => out.push(chunk));
  stream.onmember = (offset) => {
    // A member ended just before `offset`: its trailer is the 8 bytes before it.
    out.endMember(bytes, offset - 8);
    readGzipHeader(bytes, offset);
    memberStart = offset;
  };
  try {
    for (let p = 0; p < bytes.length; p += SLICE) {
      const end = Math.min(p + SLICE, bytes.length);
      stream.push(bytes.subarray(p, end), end === bytes.length);
    }
  } catch (e) {
    // fflate's errors carry a numeric code ("unexpected EOF", "invalid distance", ...).
    if (e instanceof Error && !(e instanceof FormatError) && typeof (e as { code?: unknown }).code === 'number') {
      throw new FormatError(`gunzip: ${e.message} (in or after the member at offset ${memberStart})`);
    }
    throw e;
  }
  if (bytes.length - memberStart < 18) throw new FormatError('gunzip: input ends inside the gzip trailer (CRC32 and ISIZE, 8 bytes)');
  out.endMember(bytes, bytes.length - 8);
  return out.result();
}

/** The growing output: counts bytes against the cap and checksums the current member. */
class Output {
  private buf: Uint8Array;
  private len = 0;
  private crc = -1;
  private memberLen = 0;

  constructor(
    private readonly max: number,
    sizeHint: number,
  ) {
    this.buf = new Uint8Array(Math.min(max, sizeHint));
  }

  push(chunk: Uint8Array): void {
    const need = this.len + chunk.length;
    if (need > this.max) throw new FormatError(`gunzip: output exceeds maxOutputBytes (${this.max})`);
    if (need > this.buf.length) {
      const grown = new Uint8Array(Math.min(this.max, Math.max(need, 2 * this.buf.length)));
      grown.set(this.buf.subarray(0, this.len));
      this.buf = grown;
    }
    this.buf.set(chunk, this.len);
    this.len = need;
    this.crc = crc32Update(this.crc, chunk);
    this.memberLen += chunk.length;
  }

  /** Checks the member that just ended against its trailer at `p` (CRC32, then ISIZE = length mod 2^32). */
  endMember(b: Uint8Array, p: number): void {
    if (p < 0 || p + 8 > b.length) throw new FormatError('gunzip: input ends inside the gzip trailer (CRC32 and ISIZE, 8 bytes)');
    const stored = readU32LE(b, p);
    const actual = ~this.crc >>> 0;
    if (stored !== actual) throw new FormatError(`gunzip: CRC32 mismatch: trailer says 0x${hex(stored, 8)}, data has 0x${hex(actual, 8)}`);
    const size = readU32LE(b, p + 4);
    if (size !== this.memberLen >>> 0) {
      throw new FormatError(`gunzip: ISIZE mismatch: trailer says ${size} bytes, data has ${this.memberLen} (mod 2^32)`);
    }
    this.crc = -1;
    this.memberLen = 0;
  }

  result(): Uint8Array {
    return this.len === this.buf.length ? this.buf : this.buf.slice(0, this.len);
  }
}

function maxOutput(options: InflateOptions): number {
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  if (!Number.isSafeInteger(max) || max < 0) {
    throw new ArgumentError(`gunzip: maxOutputBytes must be a non-negative integer, got ${max}`);
  }
  return max;
}

/** The last member's ISIZE, if plausible for this input size: saves regrowing the output buffer. */
function gzipSizeHint(bytes: Uint8Array): number {
  if (bytes.length < 18) return 0;
  return Math.min(readU32LE(bytes, bytes.length - 4), bytes.length * MAX_RATIO);
}

const FHCRC = 2;
const FEXTRA = 4;
const FNAME = 8;
const FCOMMENT = 16;

/** Validates the gzip member header at `start` (RFC 1952 §2.3), which fflate only skips. */
function readGzipHeader(b: Uint8Array, start: number): void {
  if (b.length - start < 10) {
    throw new FormatError(`gunzip: ${b.length - start} bytes at offset ${start} are too few for a gzip header (10 bytes)`);
  }
  if (b[start] !== 0x1f || b[start + 1] !== 0x8b) throw new FormatError(`gunzip: no gzip magic number (1f 8b) at offset ${start}`);
  if (b[start + 2] !== 8) throw new FormatError(`gunzip: compression method ${b[start + 2]} is not supported (only 8, deflate)`);
  const flags = b[start + 3];
  if (flags & 0xe0) throw new FormatError(`gunzip: reserved header flag bits set (FLG 0x${flags.toString(16)})`);
  let p = start + 10;
  if (flags & FEXTRA) {
    if (p + 2 > b.length) throw new FormatError('gunzip: input ends inside the FEXTRA length');
    p += 2 + (b[p] | (b[p + 1] << 8));
    if (p > b.length) throw new FormatError('gunzip: input ends inside the FEXTRA field');
  }
  if (flags & FNAME) p = skipZeroTerminated(b, p, 'FNAME');
  if (flags & FCOMMENT) p = skipZeroTerminated(b, p, 'FCOMMENT');
  if (flags & FHCRC) {
    if (p + 2 > b.length) throw new FormatError('gunzip: input ends inside the FHCRC header checksum');
    const stored = b[p] | (b[p + 1] << 8);
    const actual = ~crc32Update(-1, b.subarray(start, p)) & 0xffff;
    if (stored !== actual)
      throw new FormatError(`gunzip: header CRC16 0x${hex(stored, 4)} does not match the header (0x${hex(actual, 4)})`);
  }
}

function skipZeroTerminated(b: Uint8Array, p: number, field: string): number {
  const end = b.indexOf(0, p);
  if (end < 0) throw new FormatError(`gunzip: input ends inside the zero-terminated ${field} field`);
  return end + 1;
}

function readU32LE(b: Uint8Array, p: number): number {
  return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
}

function hex(n: number, digits: number): string {
  return n.toString(16).padStart(digits, '0');
}

let crcTable: Int32Array | undefined;

/** One step of CRC-32 as gzip uses it (ISO 3309, reflected polynomial 0xedb88320); start from -1, finish with ~c >>> 0. */
function crc32Update(c: number, data: Uint8Array): number {
  crcTable ??= makeCrcTable();
  const table = crcTable;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return c;
}

function makeCrcTable(): Int32Array {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
}
