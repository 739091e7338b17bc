// Element types: float32 for speed, float64 for exactness (gradient checking).
import { DtypeError } from '../errors.js';
import { describe } from '../args.js';

export type DType = 'float32' | 'float64';

export const BYTES: Record<DType, number> = { float32: 4, float64: 8 };
/** Kernel name suffix for a dtype: tanh + f32 → tanh_f32. */
export const SUFFIX: Record<DType, string> = { float32: 'f32', float64: 'f64' };

export function checkDtype(op: string, dtype: unknown): DType {
  if (dtype === 'float32' || dtype === 'float64') return dtype;
  throw new DtypeError(`${op}: dtype must be 'float32' or 'float64', got ${describe(dtype)}`);
}
