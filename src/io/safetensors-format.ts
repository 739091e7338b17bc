/**
 * The safetensors container (https://github.com/huggingface/safetensors), byte level only:
 * an 8-byte little-endian header length N, N bytes of UTF-8 JSON describing each tensor, then the
 * tensors' little-endian bytes, contiguous. F32, F64 and I32 are supported, the dtypes adjoint
 * has (I32 for indices and labels); anything else is refused rather than converted.
 */
import { ArgumentError, DtypeError, FormatError, ShapeError } from '../errors.js';

type SafetensorsDtype = 'F32' | 'F64' | 'I32';

export interface SafetensorsEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  data: Float32Array | Float64Array | Int32Array;
}

export interface SafetensorsFile {
  tensors: SafetensorsEntry[];
  metadata: Record<string, string>;
}

const BYTES: Record<SafetensorsDtype, number> = { F32: 4, F64: 8, I32: 4 };
const ARRAYS = { F32: Float32Array, F64: Float64Array, I32: Int32Array } as const;
const isDtype = (d: unknown): d is SafetensorsDtype => d === 'F32' || d === 'F64' || d === 'I32';
const METADATA_KEY = '__metadata__';
/** The reference implementation refuses headers above 100 MB; checked before anything is decoded. */
const MAX_HEADER_BYTES = 100_000_000;
/** A valid header nests 3 deep (file, tensor, shape); deeper JSON is refused before JSON.parse sees it. */
const MAX_NESTING = 64;

/**
 * Serializes tensors, in name order, into a safetensors file. `metadata`, when given, is stored
 * as the string-to-string "__metadata__" entry.
 */
export function encodeSafetensors(entries: readonly SafetensorsEntry[], metadata?: Record<string, string>): Uint8Array {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  sorted.forEach((e, i) => checkEntry(e, sorted[i - 1]));
  const parts: string[] = [];
  if (metadata !== undefined) parts.push(`${JSON.stringify(METADATA_KEY)}:${metadataJson(metadata)}`);
  let offset = 0;
  for (const e of sorted) {
    const end = offset + e.data.byteLength;
    // Built by hand: a JS object would move integer-like names ("0", "12") ahead of the others.
    parts.push(`${JSON.stringify(e.name)}:{"dtype":"${e.dtype}","shape":${JSON.stringify(e.shape)},"data_offsets":[${offset},${end}]}`);
    offset = end;
  }
  const json = new TextEncoder().encode(`{${parts.join(',')}}`);
  const headerLen = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + headerLen + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerLen), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.length, 8 + headerLen);
  let p = 8 + headerLen;
  for (const e of sorted) {
    writeLE(view, p, e.data);
    p += e.data.byteLength;
  }
  return out;
}

function checkEntry(e: SafetensorsEntry, previous: SafetensorsEntry | undefined): void {
  const where = `encodeSafetensors: tensor ${JSON.stringify(e.name)}`;
  if (typeof e.name !== 'string') throw new ArgumentError(`encodeSafetensors: tensor name must be a string, got ${describe(e.name)}`);
  if (e.name === METADATA_KEY) throw new ArgumentError(`encodeSafetensors: "${METADATA_KEY}" is reserved and cannot name a tensor`);
  if (previous && previous.name === e.name) throw new ArgumentError(`${where} appears more than once`);
  const expected = isDtype(e.dtype) ? ARRAYS[e.dtype] : undefined;
  if (!expected) throw new DtypeError(`${where} has dtype ${describe(e.dtype)}; only F32, F64 and I32 are supported`);
  if (!(e.data instanceof expected)) {
    throw new DtypeError(
      `${where} has dtype ${e.dtype} but its data is a ${e.data?.constructor?.name ?? typeof e.data}, not a ${expected.name}`,
    );
  }
  if (!isShape(e.shape)) throw new ShapeError(`${where} shape must be an array of non-negative integers, got ${describe(e.shape)}`);
  const count = product(e.shape);
  if (count !== e.data.length)
    throw new ShapeError(`${where} shape [${e.shape.join(', ')}] holds ${count} elements but data has ${e.data.length}`);
}

function metadataJson(metadata: Record<string, string>): string {
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value !== 'string') {
      throw new ArgumentError(
        `encodeSafetensors: metadata must map strings to strings, but key ${JSON.stringify(key)} holds ${describe(value)}`,
      );
    }
  }
  return JSON.stringify(metadata);
}

function writeLE(view: DataView, p: number, data: Float32Array | Float64Array | Int32Array): void {
  if (data instanceof Float32Array) {
    for (let i = 0; i < data.length; i++) view.setFloat32(p + 4 * i, data[i], true);
  } else if (data instanceof Int32Array) {
    for (let i = 0; i < data.length; i++) view.setInt32(p + 4 * i, data[i], true);
  } else {
    for (let i = 0; i < data.length; i++) view.setFloat64(p + 8 * i, data[i], true);
  }
}

/** Decodes a safetensors file's tensors, in the order of their bytes, each with a fresh copy of its data. */
export function decodeSafetensors(bytes: Uint8Array): SafetensorsEntry[] {
  return decodeSafetensorsFile(bytes).tensors;
}

/** Like decodeSafetensors, plus the "__metadata__" strings (empty when the file has none). */
export function decodeSafetensorsFile(bytes: Uint8Array): SafetensorsFile {
  const headerLen = readHeaderLength(bytes);
  const header = parseHeader(bytes.subarray(8, 8 + headerLen));
  const dataStart = 8 + headerLen;
  const dataLen = bytes.length - dataStart;
  let metadata: Record<string, string> = {};
  const infos: TensorInfo[] = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === METADATA_KEY) metadata = checkMetadata(value);
    else infos.push(checkTensorInfo(name, value, dataLen));
  }
  const ordered = checkCoverage(infos, dataLen);
  const view = new DataView(bytes.buffer, bytes.byteOffset + dataStart, dataLen);
  return { tensors: ordered.map((info) => readTensor(view, info)), metadata };
}

interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

function readHeaderLength(bytes: Uint8Array): number {
  if (bytes.length < 8) throw new FormatError(`decodeSafetensors: file is ${bytes.length} bytes, too short for the 8-byte header length`);
  const n = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES))
    throw new FormatError(`decodeSafetensors: header length ${n} is absurdly large (limit ${MAX_HEADER_BYTES} bytes)`);
  if (n > BigInt(bytes.length - 8))
    throw new FormatError(`decodeSafetensors: header length ${n} exceeds the ${bytes.length - 8} bytes after the length field`);
  return Number(n);
}

function parseHeader(bytes: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    // ignoreBOM keeps a byte-order mark in the text, so JSON.parse rejects it as the spec requires.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new FormatError('decodeSafetensors: header is not valid UTF-8');
  }
  checkNesting(text);
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (e) {
    throw new FormatError(`decodeSafetensors: header is not valid JSON (${(e as Error).message})`);
  }
  if (!isObject(header)) throw new FormatError(`decodeSafetensors: header must be a JSON object, got ${describe(header)}`);
  return header;
}

/** Rejects deeply nested headers up front: JSON.parse may recurse on them until the stack overflows. */
function checkNesting(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // skip the escaped character, which may be a quote
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_NESTING) throw new FormatError(`decodeSafetensors: header JSON nests deeper than ${MAX_NESTING} levels`);
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
}

function checkMetadata(value: unknown): Record<string, string> {
  if (!isObject(value)) throw new FormatError(`decodeSafetensors: ${METADATA_KEY} must be an object, got ${describe(value)}`);
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      throw new FormatError(
        `decodeSafetensors: ${METADATA_KEY} must map strings to strings, but key ${JSON.stringify(key)} holds ${describe(v)}`,
      );
    }
  }
  return value as Record<string, string>;
}

function checkTensorInfo(name: string, value: unknown, dataLen: number): TensorInfo {
  const where = `decodeSafetensors: tensor ${JSON.stringify(name)}`;
  if (!isObject(value)) throw new FormatError(`${where} must be an object with dtype, shape and data_offsets, got ${describe(value)}`);
  const { dtype, shape, data_offsets: offsets } = value;
  if (!isDtype(dtype)) throw new FormatError(`${where} has dtype ${describe(dtype)}; only F32, F64 and I32 are supported`);
  if (!isShape(shape)) throw new FormatError(`${where} shape must be an array of non-negative integers, got ${describe(shape)}`);
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
    throw new FormatError(`${where} data_offsets must be [begin, end] with non-negative integers, got ${describe(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end) throw new FormatError(`${where} data_offsets [${begin}, ${end}] end before they begin`);
  if (end > dataLen) throw new FormatError(`${where} data_offsets [${begin}, ${end}] exceed the data section (${dataLen} bytes)`);
  // An overflowing product is huge or Infinity, never equal to a span that fits in the file.
  const needed = product(shape) * BYTES[dtype];
  if (needed !== end - begin) {
    throw new FormatError(
      `${where} shape [${shape.join(', ')}] of ${dtype} needs ${needed} bytes but data_offsets [${begin}, ${end}] span ${end - begin}`,
    );
  }
  return { name, dtype, shape, begin, end };
}

/** Checks that the tensors tile the data section exactly, as the spec requires; returns them in byte order. */
function checkCoverage(infos: TensorInfo[], dataLen: number): TensorInfo[] {
  const sorted = [...infos].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  let previous = '';
  for (const t of sorted) {
    const where = `decodeSafetensors: tensor ${JSON.stringify(t.name)} data_offsets [${t.begin}, ${t.end}]`;
    if (t.begin > at) throw new FormatError(`${where} leave a gap: bytes [${at}, ${t.begin}] belong to no tensor`);
    if (t.begin < at) throw new FormatError(`${where} overlap tensor ${JSON.stringify(previous)}, which ends at ${at}`);
    at = t.end;
    previous = t.name;
  }
  if (at !== dataLen) throw new FormatError(`decodeSafetensors: the tensors cover ${at} bytes but the data section has ${dataLen}`);
  return sorted;
}

function readTensor(view: DataView, info: TensorInfo): SafetensorsEntry {
  const { name, dtype, shape, begin, end } = info;
  if (dtype === 'F32') {
    const data = new Float32Array((end - begin) / 4);
    for (let i = 0; i < data.length; i++) data[i] = view.getFloat32(begin + 4 * i, true);
    return { name, dtype, shape, data };
  }
  if (dtype === 'I32') {
    const data = new Int32Array((end - begin) / 4);
    for (let i = 0; i < data.length; i++) data[i] = view.getInt32(begin + 4 * i, true);
    return { name, dtype, shape, data };
  }
  const data = new Float64Array((end - begin) / 8);
  for (let i = 0; i < data.length; i++) data[i] = view.getFloat64(begin + 8 * i, true);
  return { name, dtype, shape, data };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isCount(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

function isShape(v: unknown): v is number[] {
  return Array.isArray(v) && v.every(isCount);
}

function product(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** A short rendering of a bad value for an error message. */
function describe(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v); // bigints and cyclic objects
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
