// Seeded generators of hostile safetensors and IDX files, shared by test/hostile-files.test.ts
// (a few thousand files) and bench/fuzz.ts (100,000+). Each file is a valid seed file put
// through one or more mutations: byte-level (flips, truncation, splices, inserted garbage)
// and structure-aware (the safetensors JSON header's dtypes, shapes, offsets and metadata;
// the IDX magic, dimension count and dims; gzip wrapping of mutated content).
import { gzipSync } from 'node:zlib';
import { encodeSafetensors, type SafetensorsEntry } from '../src/io/safetensors-format.js';
import * as A from '../src/index.js';

/** A small fast PRNG (mulberry32): one seed, one sequence, in every runtime. */
export class Rng {
  constructor(private state: number) {}
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const enc = new TextEncoder();

// ---------------------------------------------------------------- seed files

function entry(name: string, dtype: 'F32' | 'F64', shape: number[], rng: Rng): SafetensorsEntry {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = dtype === 'F32' ? new Float32Array(n) : new Float64Array(n);
  for (let i = 0; i < n; i++) data[i] = rng.next() * 2 - 1;
  return { name, dtype, shape, data };
}

/** Valid safetensors files: one tensor, several, scalars, empty tensors, metadata, odd names. */
export function safetensorsSeeds(): Uint8Array[] {
  const rng = new Rng(1);
  return [
    encodeSafetensors([entry('weight', 'F32', [2, 3], rng)]),
    encodeSafetensors([entry('0.weight', 'F32', [4, 3], rng), entry('0.bias', 'F32', [4], rng), entry('2.weight', 'F64', [2, 4], rng)]),
    encodeSafetensors([entry('s', 'F64', [], rng), entry('e', 'F32', [0, 5], rng)], { format: 'pt', note: 'ünïcödé ✓' }),
    encodeSafetensors([entry('big', 'F32', [16, 16], rng)], { a: '1' }),
    encodeSafetensors([]),
  ];
}

/** An IDX file: magic 00 00 type ndims, big-endian u32 dims, then `data`. */
export function idxFile(type: number, dims: number[], data: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(4 + 4 * dims.length + data.length);
  const view = new DataView(out.buffer);
  out.set([0, 0, type, dims.length]);
  dims.forEach((d, i) => view.setUint32(4 + 4 * i, d, false));
  out.set(data, 4 + 4 * dims.length);
  return out;
}

/** Valid IDX files (labels, images, empty), raw and gzipped. */
export function idxSeeds(): Uint8Array[] {
  const rng = new Rng(2);
  const bytes = (n: number) => Array.from({ length: n }, () => rng.int(256));
  const raw = [
    idxFile(8, [10], bytes(10)),
    idxFile(8, [3, 4, 5], bytes(60)),
    idxFile(8, [0, 28, 28], []),
    idxFile(8, [2, 2, 2, 2], bytes(16)),
  ];
  return [...raw, ...raw.map((f) => new Uint8Array(gzipSync(f)))];
}

// ---------------------------------------------------------------- byte-level mutations

const SPECIAL_BYTES = [0, 1, 0x7f, 0x80, 0xff, 0x22, 0x5b, 0x7b, 0x7d, 0x5d, 0x2c, 0x3a, 0x5c, 0xc3, 0xed, 0xfe];

function flipBits(f: Uint8Array, rng: Rng): Uint8Array {
  const out = f.slice();
  for (let i = 1 + rng.int(4); i > 0 && out.length > 0; i--) out[rng.int(out.length)] ^= 1 << rng.int(8);
  return out;
}
function setBytes(f: Uint8Array, rng: Rng): Uint8Array {
  const out = f.slice();
  for (let i = 1 + rng.int(4); i > 0 && out.length > 0; i--)
    out[rng.int(out.length)] = rng.chance(0.5) ? rng.pick(SPECIAL_BYTES) : rng.int(256);
  return out;
}
const truncate = (f: Uint8Array, rng: Rng): Uint8Array => f.slice(0, rng.int(f.length + 1));
function extend(f: Uint8Array, rng: Rng): Uint8Array {
  const extra = new Uint8Array(1 + rng.int(64)).map(() => rng.int(256));
  const out = new Uint8Array(f.length + extra.length);
  out.set(f);
  out.set(extra, f.length);
  return out;
}
function splice(f: Uint8Array, rng: Rng): Uint8Array {
  // Delete, duplicate or insert garbage at a random point.
  const at = rng.int(f.length + 1),
    len = rng.int(Math.min(32, f.length - at) + 1);
  const kind = rng.int(3);
  const mid =
    kind === 0 ? new Uint8Array(0) : kind === 1 ? f.slice(at, at + len).slice() : new Uint8Array(1 + rng.int(16)).map(() => rng.int(256));
  const tail = kind === 0 ? f.subarray(at + len) : f.subarray(at);
  const out = new Uint8Array(at + mid.length + tail.length);
  out.set(f.subarray(0, at));
  out.set(mid, at);
  out.set(tail, at + mid.length);
  return out;
}
const BYTE_MUTATIONS = [flipBits, setBytes, truncate, extend, splice];

function mutateBytes(f: Uint8Array, rng: Rng): Uint8Array {
  return rng.pick(BYTE_MUTATIONS)(f, rng);
}

// ---------------------------------------------------------------- safetensors structure

const HOSTILE_NUMBERS: unknown[] = [
  -1,
  0,
  1,
  2,
  7,
  0.5,
  -0.0,
  1e308,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  2 ** 64,
  Number.MAX_SAFE_INTEGER,
  '3',
  null,
  true,
  [],
  {},
  [1],
];
const DTYPES: unknown[] = ['F32', 'F64', 'F16', 'BF16', 'I32', 'I64', 'U8', 'BOOL', 'f32', '', null, 5, {}, ['F32'], 'F32 '];

function splitHeader(f: Uint8Array): { json: Record<string, unknown>; data: Uint8Array } | null {
  if (f.length < 8) return null;
  const n = Number(new DataView(f.buffer, f.byteOffset, 8).getBigUint64(0, true));
  if (n > f.length - 8) return null;
  try {
    const json = JSON.parse(new TextDecoder().decode(f.subarray(8, 8 + n)));
    return typeof json === 'object' && json !== null && !Array.isArray(json) ? { json, data: f.subarray(8 + n) } : null;
  } catch {
    return null;
  }
}

/** A safetensors file from header text and data bytes; `lengthDelta` misstates the header length. */
export function assemble(header: string | Uint8Array, data: Uint8Array, lengthDelta = 0): Uint8Array {
  const h = typeof header === 'string' ? enc.encode(header) : header;
  const out = new Uint8Array(8 + h.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(Math.max(0, h.length + lengthDelta)), true);
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

function tensorKeys(json: Record<string, unknown>): string[] {
  return Object.keys(json).filter((k) => k !== '__metadata__');
}

/** Mutates one field of the parsed header (dtype, shape, offsets, names, metadata). */
function mutateHeaderJson(json: Record<string, unknown>, rng: Rng): void {
  const keys = tensorKeys(json);
  const key = keys.length > 0 ? rng.pick(keys) : null;
  const v = key === null ? null : json[key];
  const t = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  switch (rng.int(12)) {
    case 0:
      if (t) t.dtype = rng.pick(DTYPES);
      break;
    case 1:
      if (t) t.shape = Array.from({ length: rng.int(5) }, () => rng.pick(HOSTILE_NUMBERS));
      break;
    case 2:
      if (t && Array.isArray(t.shape) && t.shape.length > 0) (t.shape as unknown[])[rng.int(t.shape.length)] = rng.pick(HOSTILE_NUMBERS);
      break;
    case 3:
      if (t) t.data_offsets = [rng.pick(HOSTILE_NUMBERS), rng.pick(HOSTILE_NUMBERS)];
      break;
    case 4:
      if (t && Array.isArray(t.data_offsets)) (t.data_offsets as unknown[])[rng.int(2)] = rng.pick(HOSTILE_NUMBERS);
      break;
    case 5:
      if (t && Array.isArray(t.data_offsets)) t.data_offsets = (t.data_offsets as unknown[]).slice().reverse();
      break;
    case 6: {
      // Overlap or alias another tensor's bytes.
      const other = keys.length > 1 ? (json[rng.pick(keys)] as Record<string, unknown> | null) : null;
      if (t && typeof other === 'object' && other !== null) t.data_offsets = other.data_offsets;
      break;
    }
    case 7:
      if (t) delete t[rng.pick(['dtype', 'shape', 'data_offsets'])];
      break;
    case 8:
      if (t) t[rng.pick(['extra', '__proto__', 'constructor'])] = rng.pick(HOSTILE_NUMBERS);
      break;
    case 9:
      json.__metadata__ = rng.pick([{ a: 1 }, ['x'], 'meta', null, { b: { c: 'd' } }, { e: 'f' }]);
      break;
    case 10:
      if (key !== null) json[rng.pick(['', '__metadata__', '\u0000', 'x'.repeat(300), '🙂'])] = json[key];
      break;
    default:
      if (key !== null) json[`${key}_copy`] = t;
      break;
  }
}

/** Header texts no encoder would write: deep nesting, non-objects, broken UTF-8, huge numbers. */
function hostileHeader(rng: Rng): string | Uint8Array {
  const depth = rng.pick([65, 1000, 100_000]);
  switch (rng.int(9)) {
    case 0:
      return '['.repeat(depth) + ']'.repeat(depth);
    case 1:
      return `{"a":${'{"b":'.repeat(depth)}1${'}'.repeat(depth)}}`;
    case 2:
      return rng.pick(['[]', '1', 'null', '"str"', 'true', '', ' ', '{', '}', '{"a":}']);
    case 3:
      return Uint8Array.from([
        0x7b,
        0x22,
        rng.pick([0xc3, 0xed, 0xc0, 0xf8, 0xff]),
        rng.pick([0x28, 0xa0, 0x80]),
        0x80,
        0x22,
        0x3a,
        0x31,
        0x7d,
      ]);
    case 4:
      return Uint8Array.from([0xef, 0xbb, 0xbf, ...enc.encode('{}')]); // byte-order mark
    case 5:
      return `{"t":{"dtype":"F32","shape":[${'9'.repeat(rng.pick([20, 400]))}],"data_offsets":[0,4]}}`;
    case 6:
      return `{"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"t":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`;
    case 7:
      return `{"t":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}}`;
    default:
      return `{"${'\\'.repeat(rng.int(5))}"${'x'.repeat(rng.int(100))}":1}`;
  }
}

function mutateSafetensors(f: Uint8Array, rng: Rng): Uint8Array {
  const kind = rng.int(10);
  const parts = splitHeader(f);
  if (kind < 4 || parts === null) return mutateBytes(f, rng);
  if (kind === 4) return assemble(hostileHeader(rng), rng.chance(0.5) ? parts.data : new Uint8Array(0));
  if (kind === 5) {
    // Header length misstated: beyond the file, huge, or slightly off.
    const out = f.slice();
    const v = new DataView(out.buffer);
    const n = Number(v.getBigUint64(0, true));
    const choice = rng.int(4);
    if (choice === 0) v.setBigUint64(0, BigInt(out.length), true);
    else if (choice === 1) v.setBigUint64(0, rng.pick([2n ** 64n - 1n, 2n ** 63n, 2n ** 53n + 1n, 2n ** 32n, 100_000_001n]), true);
    else v.setBigUint64(0, BigInt(Math.max(0, n + rng.pick([-8, -1, 1, 8]))), true);
    return out;
  }
  let json: Record<string, unknown>, text: string;
  try {
    json = structuredClone(parts.json); // a deeply nested header (from an earlier mutation) overflows the stack here
    for (let i = 1 + rng.int(2); i > 0; i--) mutateHeaderJson(json, rng);
    text = JSON.stringify(json);
  } catch {
    return mutateBytes(f, rng);
  }
  let data = parts.data;
  if (rng.chance(0.2)) data = rng.chance(0.5) ? data.subarray(0, rng.int(data.length + 1)) : extend(data, rng);
  return assemble(text, data, rng.chance(0.1) ? rng.pick([-1, 1]) : 0);
}

// ---------------------------------------------------------------- IDX structure

function mutateIdx(f: Uint8Array, rng: Rng): Uint8Array {
  const gz = f.length >= 2 && f[0] === 0x1f && f[1] === 0x8b;
  const kind = rng.int(10);
  if (kind < 4 || gz) {
    // Mutate the raw bytes (for a gzipped file: the compressed stream, CRC and ISIZE included).
    return mutateBytes(f, rng);
  }
  const out = kind === 9 ? extend(f, rng) : f.slice();
  const v = new DataView(out.buffer);
  if (out.length < 4) return out;
  switch (kind) {
    case 4:
      out[2] = rng.pick([0x08, 0x09, 0x0b, 0x0c, 0x0d, 0x0e, 0x00, 0xff]);
      break;
    case 5:
      out[3] = rng.pick([0, 1, 2, 3, 4, 60, 255]);
      break;
    case 6: {
      const nd = out[3];
      if (nd > 0 && out.length >= 4 + 4 * nd)
        v.setUint32(4 + 4 * rng.int(nd), rng.pick([0, 1, 2, 255, 65536, 2 ** 31, 2 ** 32 - 1]), false);
      break;
    }
    case 7:
      out[rng.int(2)] = rng.pick([1, 0x1f, 0xff]);
      break;
    case 8:
      return new Uint8Array(gzipSync(mutateIdx(f, rng))); // valid gzip around hostile content
    default:
      break;
  }
  return out;
}

/** The idx-th file of a seeded stream: a seed file with 1-3 mutations. */
export function hostileFile(format: 'safetensors' | 'idx', seeds: readonly Uint8Array[], rng: Rng): Uint8Array {
  let f = rng.pick(seeds);
  const mutate = format === 'safetensors' ? mutateSafetensors : mutateIdx;
  for (let i = 1 + (rng.chance(0.3) ? rng.int(3) : 0); i > 0; i--) f = mutate(f, rng);
  return f;
}

// ---------------------------------------------------------------- running the loaders

export type Outcome = 'decoded' | 'FormatError' | 'other';

export interface Verdict {
  outcome: Outcome;
  /** The unexpected error (outcome 'other'), or a decoded result larger than the file implies. */
  problem?: string;
}

/** DEFLATE's best ratio is about 1032:1, so a gzipped file implies at most that much output. */
const MAX_RATIO = 1032;

/**
 * Loads one file through the public loader (io.loadSafetensors or data.loadIdx) and classifies
 * the result. A decoded file must not have produced more data than its bytes can hold.
 */
export function verdict(format: 'safetensors' | 'idx', bytes: Uint8Array): Verdict {
  try {
    let produced: number, implied: number;
    if (format === 'safetensors') {
      const record = A.io.loadSafetensors(bytes);
      produced = 0;
      for (const t of Object.values(record)) {
        produced += t.size * (t.dtype === 'float64' ? 8 : 4); // float32 and int32: 4 bytes
        t.dispose();
      }
      implied = bytes.length;
    } else {
      const { shape, data } = A.data.loadIdx(bytes);
      produced = data.length;
      implied = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b ? bytes.length * MAX_RATIO : bytes.length;
      if (shape.reduce((a, b) => a * b, 1) !== data.length)
        return { outcome: 'other', problem: `shape [${shape}] does not match ${data.length} bytes` };
    }
    if (produced > implied) return { outcome: 'other', problem: `decoded ${produced} bytes from a file implying at most ${implied}` };
    return { outcome: 'decoded' };
  } catch (e) {
    if (e instanceof A.FormatError) return { outcome: 'FormatError' };
    return { outcome: 'other', problem: `${(e as Error)?.name}: ${(e as Error)?.message}` };
  }
}
