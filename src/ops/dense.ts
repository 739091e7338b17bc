// A dense layer as one primitive: y = act(x·Wᵀ + b), W [out, in] as in nn.Linear, act one of
// none, relu, tanh, sigmoid. What fusing buys over matmul → add → act:
//   forward  one GEMM whose epilogue adds the bias and applies act to each block of y while it
//            is still in cache (gemm_bias_act, assembly/epilogue.ts) instead of two more passes.
//            The bias is added to the finished sum, one rounding, as add() does, and act is the
//            unary kernel's code: y is bit-identical to the unfused ops.
//   backward gz = g·act'(y) from the saved output and the bias gradient db = Σ_rows gz in one
//            pass (bias_act_vjp, assembly/dense.ts), then the two GEMMs with transpose flags:
//            dx = gz·W, dW = gzᵀ·x. db is summed over rows in ascending order.
// The JVP is written with ops, and so is the VJP whenever a tangent flows through the backward
// pass (a Hessian-vector product), so higher derivatives keep working.
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor } from './tensor.js';
import { BYTES, SUFFIX } from '../tensor/dtype.js';
import type { Rule } from './rule.js';
import { apply } from './apply.js';
import { modes } from './modes.js';
import { gemm, splitRun } from '../wasm/split.js';
import { sizeOf } from './launch.js';
import { matmulT, reshape, sum, add, tensorArg } from './api.js';
import { tanhGrad, sigmoidGrad, reluGrad } from './nn.js';
import { front, frontAll, isBatched, type Dim, type Self } from './batch.js';
import { relu, tanh, sigmoid } from './api.js';
import { describe } from '../args.js';

export type Activation = 'none' | 'relu' | 'tanh' | 'sigmoid';
/** Kernel codes of the activations (assembly/epilogue.ts's ACT_*). */
const CODE: Record<Activation, number> = { none: 0, relu: 1, tanh: 2, sigmoid: 3 };

export interface DenseParams {
  readonly act: Activation;
}

/** act(x·Wᵀ + b) for x [..., in], W [out, in], b [out] → [..., out]. */
export function dense(x: Tensor, w: Tensor, b: Tensor, act: Activation = 'none'): Tensor {
  const ts = [tensorArg('dense', x, 'input'), tensorArg('dense', w, 'weight'), tensorArg('dense', b, 'bias')];
  if (!Object.hasOwn(CODE, act))
    throw new ArgumentError(
      `dense: act must be one of ${Object.keys(CODE)
        .map((a) => `'${a}'`)
        .join(', ')}, got ${describe(act)}`,
    );
  if (ts.some((t) => t.dtype !== x.dtype))
    throw new DtypeError(`dense: dtypes differ: input ${x.dtype}, weight ${w.dtype}, bias ${b.dtype}`);
  return apply(act === 'none' ? 'affine' : 'dense', ts, { act });
}

/** [rows, in, out] of a dense layer, or a ShapeError naming the three shapes. */
function denseDims(x: Tensor, w: Tensor, b: Tensor): [number, number, number] {
  const K = x.shape[x.shape.length - 1];
  if (x.shape.length < 1 || w.shape.length !== 2 || w.shape[1] !== K || b.shape.length !== 1 || b.shape[0] !== w.shape[0]) {
    throw new ShapeError(
      `dense: expected input [..., in], weight [out, in] and bias [out], got [${x.shape}], [${w.shape}] and [${b.shape}]`,
    );
  }
  return [sizeOf(x.shape.slice(0, -1)), K, w.shape[0]];
}

/** g·act'(y) as ops (the fused VJP primitives of nn.ts). */
function actGrad(act: Activation, y: Tensor, g: Tensor): Tensor {
  switch (act) {
    case 'relu':
      return reluGrad(y, g);
    case 'tanh':
      return tanhGrad(y, g);
    case 'sigmoid':
      return sigmoidGrad(y, g);
  }
  return g;
}

/**
 * [gz, db] = [g·act'(y), column sums of gz over all leading axes]: one kernel pass, cut over
 * columns across threads (each column's sum keeps its order). When a tangent flows (forward
 * mode through the backward pass) or the sweep records (the gradient is differentiated again)
 * the ops run instead, so gz and db carry their tangents and their graph.
 */
function gradAndBiasSum(act: Activation, y: Tensor, g: Tensor): [Tensor, Tensor] {
  const N = y.shape[y.shape.length - 1],
    R = sizeOf(y.shape.slice(0, -1));
  const differentiated = modes.record && (y.requiresGrad || g.requiresGrad); // a recording sweep (second order)
  if (differentiated || (modes.forward && (y.tangent !== null || g.tangent !== null)) || isBatched(y) || isBatched(g)) {
    const gz = actGrad(act, y, g);
    return [gz, sum(reshape(gz, [R, N]), 0)];
  }
  const bytes = BYTES[y.dtype];
  const gz = act === 'none' ? g : Tensor.empty(y.shape, y.dtype); // 'none': gz is g, the kernel only sums
  const db = Tensor.empty([N], y.dtype);
  if (N > 0) {
    splitRun(`bias_act_vjp_${SUFFIX[y.dtype]}`, N, 16, R * N, (lo, hi) => [
      y.ptr + lo * bytes,
      g.ptr + lo * bytes,
      gz.ptr + lo * bytes,
      db.ptr + lo * bytes,
      R,
      hi - lo,
      N,
      CODE[act],
    ]);
  }
  return [gz, db];
}

/** The rule; without an activation the VJP does not read y, so `affine` does not keep it alive. */
function denseRule(savesOutput: boolean): Rule<DenseParams> {
  return {
    saves: { inputs: [0, 1], output: savesOutput },
    forward: ([x, w, b], { act }) => {
      const [R, K, N] = denseDims(x, w, b);
      const y = Tensor.empty([...x.shape.slice(0, -1), N], x.dtype);
      if (y.size === 0) return y;
      try {
        gemm(BYTES[x.dtype] as 4 | 8, x.ptr, w.ptr, y.ptr, R, N, K, K, K, N, false, true, false, { bias: b.ptr, act: CODE[act] });
      } catch (e) {
        y.dispose(); // the packing scratch is reserved on first use and may not fit
        throw e;
      }
      return y;
    },
    vjp: (g, s, { act }, needs) => {
      const x = s.x[0]!,
        w = s.x[1]!,
        [N, K] = w.shape,
        R = sizeOf(x.shape.slice(0, -1));
      const [gz, db] = gradAndBiasSum(act, s.y ?? g, g); // 'none' reads only g
      const gz2 = reshape(gz, [R, N]);
      return [
        needs[0] ? reshape(matmulT(gz2, w, false, false), x.shape) : null, // gz·W
        needs[1] ? matmulT(gz2, reshape(x, [R, K]), true, false) : null, // gzᵀ·x
        needs[2] ? db : null,
      ];
    },
    // d act(z) = act'(z)·dz with dz = dx·Wᵀ + x·dWᵀ + db; act' is read from y as in the VJP.
    jvp: ([tx, tw, tb], [x, w], y, { act }) => {
      const terms = [tx && matmulT(tx, w, false, true), tw && matmulT(x, tw, false, true), tb].filter((t): t is Tensor => t !== null);
      const dz = terms.reduce((u, v) => add(u, v));
      return actGrad(act, y, dz);
    },
    batch: denseBatch,
  };
}

const ACT: Record<Activation, (z: Tensor) => Tensor> = {
  none: (z) => z,
  relu: (z) => relu(z),
  tanh: (z) => tanh(z),
  sigmoid: (z) => sigmoid(z),
};

/**
 * Mapped dense: with shared W and b the examples are more rows of the one fused GEMM; with mapped
 * W or b it is a batched matmul ([B, R, in]·[B, out, in]ᵀ), the bias add and the activation.
 */
function denseBatch([x, w, b]: readonly Tensor[], [dx, dw, db]: readonly Dim[], p: DenseParams, self: Self<DenseParams>): [Tensor, number] {
  if (dw === null && db === null) return [self([front(x, dx), w, b], p), 0];
  const [fx, fw, fb] = frontAll([x, w, b], [dx, dw, db]);
  const B = fx.shape[0],
    K = fx.shape[fx.shape.length - 1],
    N = fw.shape[1];
  const z = add(matmulT(reshape(fx, [B, fx.size / Math.max(1, B * K), K]), fw, false, true), reshape(fb, [B, 1, N]));
  return [reshape(ACT[p.act](z), [...fx.shape.slice(0, -1), N]), 0];
}

export const denseRules = {
  /** act(x·Wᵀ + b), act relu, tanh or sigmoid: saves x, W and y. */
  dense: denseRule(true),
  /** x·Wᵀ + b (act 'none'): saves x and W. */
  affine: denseRule(false),
};
