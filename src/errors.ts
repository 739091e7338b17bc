/** Every error adjoint throws is an AdjointError; the subclass says which kind of mistake it was. */
export class AdjointError extends Error {
  constructor(message: string) {
    super(message);
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
/** The wasm memory cannot grow to satisfy an allocation (the message and fields give the bytes requested and in use). */
export class OutOfMemoryError extends AdjointError {
  /**
   * @param message - What was being allocated and why it did not fit.
   * @param bytesRequested - Size of the allocation that failed, in bytes (NaN when unknown).
   * @param bytesInUse - Bytes of tensor data in use when it failed (NaN when unknown).
   */
  constructor(
    message: string,
    readonly bytesRequested = NaN,
    readonly bytesInUse = NaN,
  ) {
    super(message);
  }
  /** The same error with the op that was allocating named in front. */
  in(op: string): OutOfMemoryError {
    return new OutOfMemoryError(`${op}: ${this.message}`, this.bytesRequested, this.bytesInUse);
  }
}
/** detectAnomaly found NaN/Inf in a kernel's output (message names the op, the pass, its place in the graph and the input shapes). */
export class AnomalyError extends AdjointError {}
/** A file (safetensors, IDX, CSV) is malformed. */
export class FormatError extends AdjointError {}
/** Engine used before `await init()`, or a bad argument that is none of the above. */
export class ArgumentError extends AdjointError {}

// Names set as strings on the prototypes, not taken from constructor.name: bundlers and
// minifiers rename classes (esbuild turns a self-referencing OutOfMemoryError into _OutOfMemoryError).
const names = {
  AdjointError,
  ShapeError,
  DtypeError,
  DisposedError,
  GradError,
  OutOfMemoryError,
  AnomalyError,
  FormatError,
  ArgumentError,
};
for (const [name, cls] of Object.entries(names))
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true });
