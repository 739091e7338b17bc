// Tensors ↔ safetensors files (the byte format lives in safetensors-format.ts): a record of
// named tensors, e.g. model.stateDict(), so weights move to and from PyTorch and the HF hub.
import { ArgumentError, FormatError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { fromValues } from '../ops/create.js';
import { encodeSafetensors, decodeSafetensorsFile, type SafetensorsEntry, type SafetensorsFile } from './safetensors-format.js';
import { describe, tooMany } from '../args.js';

const TO_FILE = { float32: 'F32', float64: 'F64', int32: 'I32' } as const;
const FROM_FILE = { F32: 'float32', F64: 'float64', I32: 'int32' } as const;

/** Serialises the tensors (float32 → F32, float64 → F64, int32 → I32) into a safetensors file, keys sorted. */
export function saveSafetensors(record: Record<string, Tensor>, metadata?: Record<string, string>): Uint8Array {
  if (arguments.length > 2) throw tooMany('io.saveSafetensors', 2, arguments.length);
  if (record === null || typeof record !== 'object')
    throw new ArgumentError(`saveSafetensors: expected a record of Tensors, got ${describe(record)}`);
  const entries: SafetensorsEntry[] = Object.entries(record).map(([name, t]) => {
    if (!(t instanceof Tensor)) throw new ArgumentError(`saveSafetensors: ${JSON.stringify(name)} must be a Tensor, got ${describe(t)}`);
    t.check(`saveSafetensors (${name})`);
    return { name, dtype: TO_FILE[t.dtype], shape: [...t.shape], data: t.toArray() };
  });
  return encodeSafetensors(entries, metadata);
}

/** Reads a safetensors file into new tensors (F32 → float32, F64 → float64, I32 → int32); throws FormatError on a bad file. */
export function loadSafetensors(bytes: Uint8Array): Record<string, Tensor> {
  if (arguments.length > 1) throw tooMany('io.loadSafetensors', 1, arguments.length);
  const entries = decoded('loadSafetensors', bytes).tensors;
  const out: Record<string, Tensor> = {};
  try {
    // Defined, not assigned: `out["__proto__"] = t` would set the record's prototype to t (the
    // name vanishes and the tensor leaks), and the spec allows any string as a name.
    for (const e of entries)
      Object.defineProperty(out, e.name, {
        value: fromValues(e.data, e.shape, FROM_FILE[e.dtype]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  } catch (e) {
    for (const t of Object.values(out)) t.dispose(); // out of memory halfway: give back what was loaded
    throw e;
  }
  return out;
}

/**
 * The `__metadata__` strings of a safetensors file (`{}` when it has none): what
 * `saveSafetensors(record, metadata)` wrote, such as a tokenizer's vocabulary or a scheduler's
 * state as JSON. Throws FormatError on a bad file.
 */
export function loadSafetensorsMetadata(bytes: Uint8Array): Record<string, string> {
  if (arguments.length > 1) throw tooMany('io.loadSafetensorsMetadata', 1, arguments.length);
  return { ...decoded('loadSafetensorsMetadata', bytes).metadata };
}

/** The decoded file, for the public function `op`: a non-Uint8Array is an ArgumentError, a bad file a FormatError naming `op`. */
function decoded(op: string, bytes: Uint8Array): SafetensorsFile {
  if (!(bytes instanceof Uint8Array)) throw new ArgumentError(`${op}: expected a Uint8Array, got ${describe(bytes)}`);
  try {
    return decodeSafetensorsFile(bytes);
  } catch (e) {
    // Name the function the caller used, not the byte-level decoder behind it.
    throw e instanceof FormatError ? new FormatError(e.message.replace(/^decodeSafetensors\w*/, op)) : e;
  }
}
