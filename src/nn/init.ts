// Seeded parameter initialisation (PyTorch's defaults). One seed gives one counter-based
// stream (assembly/random.ts); a module draws its tensors from consecutive slices of that
// stream, so its weight and bias never repeat each other and a seed fully fixes a layer.
import { ArgumentError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { checkDtype, SUFFIX, type DType } from '../tensor/dtype.js';
import { seedOf } from '../ops/create.js';
import { kernel } from '../wasm/module.js';
import { describe } from '../args.js';

/** A positive integer size argument, or an ArgumentError naming the module and argument. */
export function count(op: string, name: string, v: unknown): number {
  if (!Number.isInteger(v) || (v as number) <= 0) throw new ArgumentError(`${op}: ${name} must be a positive integer, got ${describe(v)}`);
  return v as number;
}

export function dtypeOf(op: string, dtype: unknown): DType {
  return checkDtype(op, dtype ?? 'float32');
}

/** 1/√fanIn, PyTorch's bound for kaiming_uniform_(a=√5) weights and for biases (√ in wasm). */
export function fanInBound(fanIn: number): number {
  return 1 / kernel('sqrt_scalar')(fanIn);
}

/** Draws successive tensors from one seeded stream. */
export class Stream {
  private readonly seed: [number, number];
  private offset = 0;
  constructor(seed: number | undefined, op?: string) {
    this.seed = seedOf(seed, op);
  }

  /** U(−bound, bound) of the given shape, the next shape-size slice of the stream. */
  uniform(shape: readonly number[], bound: number, dtype: DType): Tensor {
    return this.draw('rand_uniform', shape, dtype, -bound, bound);
  }

  /** N(0, 1) of the given shape. */
  normal(shape: readonly number[], dtype: DType): Tensor {
    return this.draw('rand_normal', shape, dtype, 0, 1);
  }

  private draw(name: string, shape: readonly number[], dtype: DType, a: number, b: number): Tensor {
    const t = Tensor.empty(shape, dtype);
    kernel(`${name}_${SUFFIX[dtype]}`)(t.ptr, t.size, this.seed[0], this.seed[1], this.offset, a, b);
    this.offset += t.size;
    return t;
  }
}
