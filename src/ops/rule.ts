// The shape of a primitive's definition. Every primitive is one Rule: its forward kernel
// launch, what it saves for the backward pass, its VJP and its JVP. The rule tables are
// checked against this type, so a primitive without a VJP or JVP rule does not compile.
import type { Tensor } from './tensor.js';

/** What a primitive keeps for its VJP: input positions, and whether the output. */
export interface Saves {
  readonly inputs: readonly number[] | 'all';
  readonly output: boolean;
}

/** What the VJP rule sees: the saved tensors (undefined where not declared) and every input's shape. */
export interface Saved {
  readonly x: readonly (Tensor | undefined)[];
  readonly y: Tensor | undefined;
  readonly shapes: readonly (readonly number[])[];
}

export interface Rule<P> {
  readonly saves: Saves;
  /** Computes the output with kernels. Inputs are live, of one dtype; it validates shapes and params. */
  forward(xs: readonly Tensor[], p: P): Tensor;
  /**
   * Cotangents of the inputs given the output's cotangent g, written with differentiable ops
   * (so forward mode can run through it: Hessian-vector products). A result may have the
   * output's broadcast shape; the engine sums it back to the input's shape.
   */
  vjp(g: Tensor, s: Saved, p: P, needs: readonly boolean[]): (Tensor | null)[];
  /** The output's tangent given the inputs' tangents (null is zero), with inputs and output at hand. */
  jvp(ts: readonly (Tensor | null)[], xs: readonly Tensor[], y: Tensor, p: P): Tensor;
}

/** A rule with no parameters. */
export type Rule0 = Rule<Record<string, never>>;
