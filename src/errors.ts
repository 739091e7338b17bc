/** Every error adjoint throws is an AdjointError; the subclass says which kind of mistake it was. */
export class AdjointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
/** Operand shapes do not fit the op (message names the op and the shapes). */
export class ShapeError extends AdjointError {}
/** Operand dtypes differ or are not supported; adjoint never casts silently. */
export class DtypeError extends AdjointError {}
/** A disposed tensor was used. */
export class DisposedError extends AdjointError {}
/** Differentiation was asked for something it cannot do (non-scalar without seed, released graph, ...). */
export class GradError extends AdjointError {}
/** The wasm memory cannot grow to satisfy an allocation. */
export class OutOfMemoryError extends AdjointError {}
/** A file (safetensors, IDX, CSV) is malformed. */
export class FormatError extends AdjointError {}
/** Engine used before `await init()`, or a bad argument that is none of the above. */
export class ArgumentError extends AdjointError {}
