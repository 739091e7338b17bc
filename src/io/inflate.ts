/**
 * Synchronous DEFLATE (RFC 1951) and gzip (RFC 1952) decoding in plain TypeScript, so the same
 * code runs in every target runtime: zlib is Node-only and DecompressionStream is asynchronous.
 * Every read is bounds-checked and every loop consumes input or output, so malformed or hostile
 * input ends in a FormatError, never in a hang or a RangeError.
 */
import { ArgumentError, FormatError } from '../errors.js';

export interface InflateOptions {
  /** Throw a FormatError rather than produce more than this many bytes (default 1 GiB): stops decompression bombs. */
  maxOutputBytes?: number;
}

const DEFAULT_MAX_OUTPUT = 2 ** 30;
/** DEFLATE cannot compress better than about 1032:1, so no valid input needs a bigger first buffer than this ratio implies. */
const MAX_RATIO = 1032;

// RFC 1951 §3.2.5: base values and extra-bit counts of the length (257..285) and distance (0..29) symbols.
const LENGTH_BASE = Uint16Array.of(
  3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258,
);
const LENGTH_EXTRA = Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0);
const DIST_BASE = Uint16Array.of(
  1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
  8193, 12289, 16385, 24577,
);
const DIST_EXTRA = Uint8Array.of(0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13);
/** RFC 1951 §3.2.7: the order in which code-length code lengths are stored. */
const CL_ORDER = Uint8Array.of(16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15);

/**
 * A canonical Huffman code as one direct lookup table: the next `bits` input bits (first bit
 * lowest) index an entry `symbol << 4 | codeLength`; entry 0 marks a bit pattern that is no code.
 */
interface Huffman {
  table: Uint16Array;
  bits: number;
}

function reverseBits(code: number, len: number): number {
  let r = 0;
  for (let i = 0; i < len; i++, code >>>= 1) r = (r << 1) | (code & 1);
  return r;
}

/**
 * Builds the table for the code with these lengths (RFC 1951 §3.2.2) into `table` (2^15 entries
 * suffice). Like zlib: over-subscribed codes are errors, and incomplete codes are only accepted when
 * they are at most one bit long (a lone distance code, say) and not the code-length code.
 */
function buildHuffman(lengths: Uint8Array, table: Uint16Array, what: string, fn: string, allowIncomplete: boolean): Huffman {
  const counts = new Uint16Array(16);
  let maxLen = 0;
  for (const len of lengths) {
    counts[len]++;
    if (len > maxLen) maxLen = len;
  }
  counts[0] = 0;
  const next = new Uint16Array(16);
  let left = 1;
  for (let len = 1, code = 0; len <= 15; len++) {
    left = (left << 1) - counts[len];
    if (left < 0) throw new FormatError(`${fn}: over-subscribed ${what} code`);
    code = (code + counts[len - 1]) << 1;
    next[len] = code;
  }
  if (left > 0 && (!allowIncomplete || maxLen > 1)) throw new FormatError(`${fn}: incomplete ${what} code`);
  const size = 1 << maxLen;
  table.fill(0, 0, size);
  for (let sym = 0; sym < lengths.length; sym++) {
    const len = lengths[sym];
    if (len === 0) continue;
    const entry = (sym << 4) | len;
    for (let i = reverseBits(next[len]++, len); i < size; i += 1 << len) table[i] = entry;
  }
  return { table, bits: maxLen };
}

let fixedCodes: { lit: Huffman; dist: Huffman } | undefined;

/** The fixed codes of block type 1 (RFC 1951 §3.2.6), built on first use. */
function fixed(): { lit: Huffman; dist: Huffman } {
  if (!fixedCodes) {
    const lit = new Uint8Array(288);
    lit.fill(8, 0, 144).fill(9, 144, 256).fill(7, 256, 280).fill(8, 280, 288);
    const dist = new Uint8Array(32).fill(5);
    fixedCodes = {
      lit: buildHuffman(lit, new Uint16Array(1 << 9), 'fixed literal/length', 'inflate', false),
      dist: buildHuffman(dist, new Uint16Array(1 << 5), 'fixed distance', 'inflate', false),
    };
  }
  return fixedCodes;
}

/** Decodes DEFLATE streams from `src` into one growing output buffer (gzip members append to it). */
class Inflater {
  out: Uint8Array;
  outLen = 0;
  private readonly src: Uint8Array;
  private readonly fn: string;
  private readonly maxOut: number;
  private pos = 0;
  /** Up to 23 not yet consumed input bits, the next one lowest. */
  private bitBuf = 0;
  private bitCount = 0;
  /** Output offset where the current stream began: back-references may not reach before it. */
  private streamStart = 0;
  private readonly litTable = new Uint16Array(1 << 15);
  private readonly distTable = new Uint16Array(1 << 15);
  private readonly clTable = new Uint16Array(1 << 7);

  constructor(src: Uint8Array, fn: string, maxOut: number, sizeHint: number) {
    this.src = src;
    this.fn = fn;
    this.maxOut = maxOut;
    this.out = new Uint8Array(Math.min(maxOut, sizeHint));
  }

  /** Decodes one whole DEFLATE stream starting at byte `start`; returns the offset just past it. */
  inflate(start: number): number {
    this.pos = start;
    this.bitBuf = 0;
    this.bitCount = 0;
    this.streamStart = this.outLen;
    let last: number;
    do {
      last = this.bits(1);
      const type = this.bits(2);
      if (type === 0) this.stored();
      else if (type === 1) this.codes(fixed().lit, fixed().dist);
      else if (type === 2) this.dynamic();
      else throw this.error('invalid block type 3');
    } while (last === 0);
    this.alignToByte();
    return this.pos;
  }

  result(): Uint8Array {
    return this.out.length === this.outLen ? this.out : this.out.slice(0, this.outLen);
  }

  private error(message: string): FormatError {
    return new FormatError(`${this.fn}: ${message}`);
  }

  private truncated(): FormatError {
    return this.error(`input ends inside the deflate stream (truncated at byte ${this.src.length})`);
  }

  /** Loads whole bytes until `n` bits are buffered or the input ends (callers check which). */
  private fill(n: number): void {
    while (this.bitCount < n && this.pos < this.src.length) {
      this.bitBuf |= this.src[this.pos++] << this.bitCount;
      this.bitCount += 8;
    }
  }

  private bits(n: number): number {
    if (this.bitCount < n) {
      this.fill(n);
      if (this.bitCount < n) throw this.truncated();
    }
    const v = this.bitBuf & ((1 << n) - 1);
    this.bitBuf >>>= n;
    this.bitCount -= n;
    return v;
  }

  private decode(h: Huffman, what: string): number {
    if (this.bitCount < h.bits) this.fill(h.bits);
    // Near the end of input the missing high bits read as zeros; a code no longer than the bits
    // actually present is still found correctly, a longer one means the input is truncated.
    const entry = h.table[this.bitBuf & ((1 << h.bits) - 1)];
    const len = entry & 15;
    if (len === 0) throw this.error(`invalid ${what} code`);
    if (len > this.bitCount) throw this.truncated();
    this.bitBuf >>>= len;
    this.bitCount -= len;
    return entry >>> 4;
  }

  /** Drops the bits left in the current byte and hands whole buffered bytes back to the input. */
  private alignToByte(): void {
    this.pos -= this.bitCount >>> 3;
    this.bitBuf = 0;
    this.bitCount = 0;
  }

  private reserve(n: number): void {
    if (this.outLen + n <= this.out.length) return;
    const need = this.outLen + n;
    if (need > this.maxOut) throw this.error(`output exceeds maxOutputBytes (${this.maxOut})`);
    const grown = new Uint8Array(Math.min(this.maxOut, Math.max(need, this.out.length * 2)));
    grown.set(this.out.subarray(0, this.outLen));
    this.out = grown;
  }

  private stored(): void {
    this.alignToByte();
    const src = this.src;
    const p = this.pos;
    if (p + 4 > src.length) throw this.truncated();
    const len = src[p] | (src[p + 1] << 8);
    const nlen = src[p + 2] | (src[p + 3] << 8);
    if ((len ^ 0xffff) !== nlen) throw this.error(`stored block length ${len} does not match its complement ${nlen}`);
    if (p + 4 + len > src.length) throw this.truncated();
    this.reserve(len);
    this.out.set(src.subarray(p + 4, p + 4 + len), this.outLen);
    this.outLen += len;
    this.pos = p + 4 + len;
  }

  private codes(lit: Huffman, dist: Huffman): void {
    for (;;) {
      const sym = this.decode(lit, 'literal/length');
      if (sym < 256) {
        this.reserve(1);
        this.out[this.outLen++] = sym;
      } else if (sym === 256) {
        return;
      } else {
        this.copyMatch(sym - 257, dist);
      }
    }
  }

  private copyMatch(lenSym: number, dist: Huffman): void {
    if (lenSym >= 29) throw this.error(`invalid length symbol ${lenSym + 257}`);
    const length = LENGTH_BASE[lenSym] + this.bits(LENGTH_EXTRA[lenSym]);
    const distSym = this.decode(dist, 'distance');
    if (distSym >= 30) throw this.error(`invalid distance symbol ${distSym}`);
    const distance = DIST_BASE[distSym] + this.bits(DIST_EXTRA[distSym]);
    const available = this.outLen - this.streamStart;
    if (distance > available) throw this.error(`distance ${distance} reaches before the start of the output (${available} bytes so far)`);
    this.reserve(length);
    const out = this.out;
    let to = this.outLen;
    // Byte by byte on purpose: a match may overlap the bytes it is producing (distance < length).
    for (let from = to - distance, end = to + length; to < end; ) out[to++] = out[from++];
    this.outLen = to;
  }

  private dynamic(): void {
    const nlit = this.bits(5) + 257;
    const ndist = this.bits(5) + 1;
    const ncl = this.bits(4) + 4;
    if (nlit > 286 || ndist > 30) {
      throw this.error(`dynamic block declares ${nlit} literal/length and ${ndist} distance codes (at most 286 and 30)`);
    }
    const clLengths = new Uint8Array(19);
    for (let i = 0; i < ncl; i++) clLengths[CL_ORDER[i]] = this.bits(3);
    const cl = buildHuffman(clLengths, this.clTable, 'code-length', this.fn, false);
    const lengths = this.readLengths(cl, nlit + ndist);
    if (lengths[256] === 0) throw this.error('dynamic block has no end-of-block code');
    const lit = buildHuffman(lengths.subarray(0, nlit), this.litTable, 'literal/length', this.fn, true);
    const dist = buildHuffman(lengths.subarray(nlit), this.distTable, 'distance', this.fn, true);
    this.codes(lit, dist);
  }

  /** Reads the run-length coded literal/length and distance code lengths (RFC 1951 §3.2.7). */
  private readLengths(cl: Huffman, total: number): Uint8Array {
    const lengths = new Uint8Array(total);
    let i = 0;
    while (i < total) {
      const sym = this.decode(cl, 'code-length');
      if (sym < 16) {
        lengths[i++] = sym;
        continue;
      }
      let value = 0;
      let repeat: number;
      if (sym === 16) {
        if (i === 0) throw this.error('code-length repeat (16) with no previous length');
        value = lengths[i - 1];
        repeat = 3 + this.bits(2);
      } else {
        repeat = sym === 17 ? 3 + this.bits(3) : 11 + this.bits(7);
      }
      if (i + repeat > total) throw this.error(`code-length repeat runs past the ${total} declared codes`);
      lengths.fill(value, i, i + repeat);
      i += repeat;
    }
    return lengths;
  }
}

function maxOutput(fn: string, options: InflateOptions): number {
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  if (!Number.isSafeInteger(max) || max < 0) {
    throw new ArgumentError(`${fn}: maxOutputBytes must be a non-negative integer, got ${max}`);
  }
  return max;
}

/** Decodes a raw DEFLATE stream (no zlib or gzip wrapper) that must fill `bytes` exactly. */
export function inflateRaw(bytes: Uint8Array, options: InflateOptions = {}): Uint8Array {
  const inflater = new Inflater(bytes, 'inflateRaw', maxOutput('inflateRaw', options), bytes.length * 4);
  const end = inflater.inflate(0);
  if (end !== bytes.length) {
    throw new FormatError(`inflateRaw: ${bytes.length - end} unexpected bytes after the end of the deflate stream`);
  }
  return inflater.result();
}

/** True when `bytes` starts with the gzip magic number 1f 8b. */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** Decodes a gzip file, concatenated members included; verifies each member's CRC32 and length. */
export function gunzip(bytes: Uint8Array, options: InflateOptions = {}): Uint8Array {
  const inflater = new Inflater(bytes, 'gunzip', maxOutput('gunzip', options), gzipSizeHint(bytes));
  let pos = 0;
  do {
    const start = inflater.outLen;
    pos = inflater.inflate(readGzipHeader(bytes, pos));
    checkGzipTrailer(bytes, pos, inflater.out.subarray(start, inflater.outLen));
    pos += 8;
  } while (pos < bytes.length && isGzip(bytes.subarray(pos)));
  // GNU gzip accepts zero padding after the last member (tape and block-device tools add it).
  for (let i = pos; i < bytes.length; i++) {
    if (bytes[i] !== 0) throw new FormatError(`gunzip: unexpected data at offset ${pos} after the last gzip member`);
  }
  return inflater.result();
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

/** Validates the gzip member header at `start` (RFC 1952 §2.3) and returns where its deflate data begins. */
function readGzipHeader(b: Uint8Array, start: number): number {
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
    const actual = crc32(b.subarray(start, p)) & 0xffff;
    if (stored !== actual) throw new FormatError(`gunzip: header CRC16 0x${hex(stored, 4)} does not match the header (0x${hex(actual, 4)})`);
    p += 2;
  }
  return p;
}

function skipZeroTerminated(b: Uint8Array, p: number, field: string): number {
  const end = b.indexOf(0, p);
  if (end < 0) throw new FormatError(`gunzip: input ends inside the zero-terminated ${field} field`);
  return end + 1;
}

function checkGzipTrailer(b: Uint8Array, p: number, member: Uint8Array): void {
  if (p + 8 > b.length) throw new FormatError('gunzip: input ends inside the gzip trailer (CRC32 and ISIZE, 8 bytes)');
  const stored = readU32LE(b, p);
  const actual = crc32(member);
  if (stored !== actual) throw new FormatError(`gunzip: CRC32 mismatch: trailer says 0x${hex(stored, 8)}, data has 0x${hex(actual, 8)}`);
  const size = readU32LE(b, p + 4);
  if (size !== member.length >>> 0) {
    throw new FormatError(`gunzip: ISIZE mismatch: trailer says ${size} bytes, data has ${member.length} (mod 2^32)`);
  }
}

function readU32LE(b: Uint8Array, p: number): number {
  return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
}

function hex(n: number, digits: number): string {
  return n.toString(16).padStart(digits, '0');
}

let crcTable: Int32Array | undefined;

/** CRC-32 as used by gzip (ISO 3309, reflected polynomial 0xedb88320). */
function crc32(data: Uint8Array): number {
  crcTable ??= makeCrcTable();
  const table = crcTable;
  let c = -1;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
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
