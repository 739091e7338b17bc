// The shape of a primitive's definition. Every primitive is one Rule: its forward kernel
// launch, what it saves for the backward pass, its VJP and its JVP. The rule tables are
// checked against this type, so a primitive without a VJP, JVP or batching rule does not compile.
import type { Tensor } from './tensor.js';
import type { Dim, Self } from './batch.js';

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

/** Per-element cost of an elementwise kernel, in units of a cheap op (one add): sizes thread splits. */
export const COST = { cheap: 1, transcendental: 8 } as const;
export type CostClass = keyof typeof COST;

/**
 * The kernel of an elementwise primitive. Everything that treats elementwise launches alike reads
 * it from the row: the thread split sizes pieces by `cost`, and compile() replays `fusable`
 * kernels tile by tile (src/compile/fuse.ts, which finds their pointers by `layout`).
 */
export interface Element {
  /** The kernel family: exports `<kernel>_f32` and `<kernel>_f64` (assembly/). */
  readonly kernel: string;
  /**
   * Argument layout: 'map' (x, y, n, p0, p1), 'grad' (y, g, dx, n) or 'zip' (a, b, y, rows, cols,
   * sar, sac, sbr, sbc: strided rows, each operand contiguous or a broadcast scalar in a row).
   */
  readonly layout: 'map' | 'grad' | 'zip';
  readonly cost: CostClass;
  /** compile() may replay it inside a fused run of elementwise launches (same bits either way). */
  readonly fusable: boolean;
}

export interface Rule<P> {
  readonly saves: Saves;
  /** Set on elementwise primitives: their kernel's facts. */
  readonly element?: Element;
  /** Takes int32 inputs (data movement, comparisons, selection); any other primitive refuses them with a DtypeError. */
  readonly int32?: true;
  /** Piecewise constant (comparisons): the output records no node and carries no tangent, so it never requires grad, as in PyTorch. */
  readonly constant?: true;
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
  /**
   * vmap: the output for physical inputs that hold every example, the examples of input i running
   * along axis dims[i] (null: not mapped, shared by all), and the axis they run along in the
   * output. `self` runs this primitive on physical tensors (src/ops/batch.ts).
   */
  batch(xs: readonly Tensor[], dims: readonly Dim[], p: P, self: Self<P>): [Tensor, number];
  /**
   * Frees what the forward kept for the VJP besides `saves` (customVjp: the intermediates of the
   * user's forward, which backward may read through its closure). Called once, when the node of
   * the call whose inputs array is `xs` is released.
   */
  release?(p: P, xs: readonly Tensor[]): void;
}

/** A rule with no parameters. */
export type Rule0 = Rule<Record<string, never>>;
