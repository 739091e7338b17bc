// Element types: float32 for speed, float64 for exactness (gradient checking), int32 for
// indices and labels (never differentiable; float arithmetic on it is a DtypeError).
import { DtypeError } from '../errors.js';
import { describe } from '../args.js';

/**
 * Element type of a tensor: `'float32'` (the default), `'float64'` (exact enough for gradient
 * checks), or `'int32'` (indices and labels: never differentiable).
 */
export type DType = 'float32' | 'float64' | 'int32';
/** The dtypes that carry gradients and run arithmetic. */
export type FloatDType = 'float32' | 'float64';

export const BYTES: Record<DType, number> = { float32: 4, float64: 8, int32: 4 };
/** Kernel name suffix for a dtype: tanh + f32 → tanh_f32. */
export const SUFFIX: Record<DType, string> = { float32: 'f32', float64: 'f64', int32: 'i32' };

/** A float dtype (modules, random tensors, arithmetic). */
export function checkDtype(op: string, dtype: unknown): FloatDType {
  if (dtype === 'float32' || dtype === 'float64') return dtype;
  throw new DtypeError(`${op}: dtype must be 'float32' or 'float64', got ${describe(dtype)}`);
}

/** Any dtype, int32 included (creation, astype). */
export function checkAnyDtype(op: string, dtype: unknown): DType {
  if (dtype === 'float32' || dtype === 'float64' || dtype === 'int32') return dtype;
  throw new DtypeError(`${op}: dtype must be 'float32', 'float64' or 'int32', got ${describe(dtype)}`);
}

/** The DtypeError for an int32 tensor reaching float arithmetic, saying how to cast. */
export function intArithmetic(op: string, shape: readonly number[]): DtypeError {
  return new DtypeError(
    `${op}: got an int32 tensor [${shape}]; int32 holds indices and labels and takes no arithmetic ` +
      `(cast it first: x.astype('float32'))`,
  );
}
