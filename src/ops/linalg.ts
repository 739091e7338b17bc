// Matrix multiplication, batched with broadcast batch axes. The primitive carries transpose
// flags so the VJP (g·Bᵀ and Aᵀ·g) runs the GEMM kernels directly on the stored operands,
// never materialising a transpose. Bilinear: the JVP is matmul(ta, b) + matmul(a, tb).
import { ShapeError } from '../errors.js';
import { Tensor } from './tensor.js';
import type { Rule, Rule0 } from './rule.js';
import { broadcastShapes, broadcastStrides, filled, sizeOf, pairOffsets } from './launch.js';
import { matmulT, add } from './api.js';
import { gemm } from '../wasm/split.js';
import { front, frontAll, frontRank, type Dim, type Self } from './batch.js';
import { reshape, transpose, mul } from './api.js';

/**
 * Mapped matmul, as one launch in each case: a batched A against a shared 2-D B folds every
 * example's rows into one GEMM ([B·M, K]·B, examples out along axis 0); a shared 2-D A against a
 * batched B puts the examples side by side as columns (A·[K, B·N], out along axis 1; for one
 * vector per example, [B, K]·op(A)ᵀ without moving any data); an inner
 * dimension of 1 (the per-example outer products of a weight gradient) is the broadcast product,
 * exact as the one-term sums are. Otherwise both go to the front, rank-matched, and the kernel's
 * batch axes pair them (one GEMM per example, no per-example dispatch in JS).
 */
function matmulBatch([a, b]: readonly Tensor[], [da, db]: readonly Dim[], p: MatmulParams, self: Self<MatmulParams>): [Tensor, number] {
  if (db === null && b.shape.length === 2 && !p.ta) {
    const f = front(a, da),
      K = f.shape[f.shape.length - 1];
    const y = self([reshape(f, [f.shape.slice(0, -1).reduce((m, d) => m * d, 1), K]), b], p);
    return [reshape(y, [...f.shape.slice(0, -1), y.shape[1]]), 0];
  }
  if (da === null && a.shape.length === 2 && b.shape.length === 3 && !p.tb && b.shape[2] === 1 && db !== 2) {
    // Matrix-vector per example: the examples' vectors are the rows of [B, K], and Y = [B, K]·op(A)ᵀ (no copy).
    const f = front(b, db),
      B = f.shape[0];
    const y = self([reshape(f, [B, f.shape[1]]), a], { ta: false, tb: !p.ta });
    return [reshape(y, [B, y.shape[1], 1]), 0];
  }
  if (da === null && a.shape.length === 2 && b.shape.length === 3) {
    const f = front(b, db),
      [B, r, c] = f.shape;
    // tb: each example's [N, K] rows stack into [B·N, K] as they lie; else [K, B·N] needs one transpose.
    const cols = p.tb ? reshape(f, [B * r, c]) : reshape(transpose(f, [1, 0, 2]), [r, B * c]);
    const y = self([a, cols], p);
    return [reshape(y, [y.shape[0], B, p.tb ? r : c]), 1]; // N from the operand: y's B·N says nothing when B = 0
  }
  const rank = Math.max(a.shape.length - (da === null ? 0 : 1), b.shape.length - (db === null ? 0 : 1));
  const fa = frontRank(a, da, rank),
    fb = frontRank(b, db, rank);
  const [M, K, N] = matmulDims(fa.shape, fb.shape, p);
  if (K === 1) {
    const col = reshape(fa, [...fa.shape.slice(0, -2), M, 1]),
      row = reshape(fb, [...fb.shape.slice(0, -2), 1, N]);
    return [mul(col, row), 0];
  }
  return [self([fa, fb], p), 0];
}

export interface MatmulParams {
  /** Use the stored A as transposed (A is [..., K, M]) / B likewise ([..., N, K]). */
  readonly ta: boolean;
  readonly tb: boolean;
}

/** [M, K, N] of op(A)·op(B), or a ShapeError naming both shapes. */
export function matmulDims(a: readonly number[], b: readonly number[], p: MatmulParams): [number, number, number] {
  // Indexed, not destructured: this runs on every matmul and the VJP's two.
  const ar = a[a.length - 2],
    ac = a[a.length - 1],
    br = b[b.length - 2],
    bc = b[b.length - 1];
  const M = p.ta ? ac : ar,
    K = p.ta ? ar : ac,
    K2 = p.tb ? bc : br,
    N = p.tb ? br : bc;
  if (K !== K2) {
    const show = (s: readonly number[], t: boolean) => `[${s}]${t ? 'ᵀ' : ''}`;
    throw new ShapeError(`matmul: inner dimensions differ: ${show(a, p.ta)} x ${show(b, p.tb)} (${K} vs ${K2})`);
  }
  return [M, K, N];
}

function forward(a: Tensor, b: Tensor, p: MatmulParams): Tensor {
  const [M, K, N] = matmulDims(a.shape, b.shape, p);
  if (a.shape.length === 2 && b.shape.length === 2 && K > 0 && M * N > 0) return forward2(a, b, p, M, K, N);
  const batch = broadcastShapes('matmul', a.shape.slice(0, -2), b.shape.slice(0, -2));
  const y = K === 0 ? filled([...batch, M, N], a.dtype, 0) : Tensor.empty([...batch, M, N], a.dtype);
  if (K === 0 || y.size === 0) return y;
  const bytes = a.dtype === 'float32' ? 4 : 8;
  const sa = broadcastStrides(a.shape.slice(0, -2), batch),
    sb = broadcastStrides(b.shape.slice(0, -2), batch);
  const lda = a.shape[a.shape.length - 1],
    ldb = b.shape[b.shape.length - 1];
  const n = sizeOf(batch);
  for (let i = 0; i < n; i++) {
    // Batch offsets from the broadcast strides (in matrices), one GEMM per batch entry.
    const [oa, ob] = pairOffsets(batch, sa, sb, i);
    // Split over the thread pool when large; always with a packing scratch region.
    try {
      gemm(
        bytes,
        a.ptr + oa * M * K * bytes,
        b.ptr + ob * K * N * bytes,
        y.ptr + i * M * N * bytes,
        M,
        N,
        K,
        lda,
        ldb,
        N,
        p.ta,
        p.tb,
        false,
      );
    } catch (e) {
      y.dispose(); // the packing scratch is reserved on first use and may not fit: fail without leaving y behind
      throw e;
    }
  }
  return y;
}

/** The unbatched case without the batch-broadcast bookkeeping (the same one GEMM call as forward's loop makes). */
function forward2(a: Tensor, b: Tensor, p: MatmulParams, M: number, K: number, N: number): Tensor {
  const y = Tensor.empty([M, N], a.dtype);
  try {
    gemm(a.dtype === 'float32' ? 4 : 8, a.ptr, b.ptr, y.ptr, M, N, K, a.shape[1], b.shape[1], N, p.ta, p.tb, false);
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

export const linalgRules = {
  matmul: {
    saves: { inputs: [0, 1], output: false },
    forward: ([a, b], p) => forward(a, b, p),
    vjp: (g, s, { ta, tb }, needs) => {
      const a = s.x[0]!,
        b = s.x[1]!;
      return [
        needs[0] ? (ta ? matmulT(b, g, tb, true) : matmulT(g, b, false, !tb)) : null,
        needs[1] ? (tb ? matmulT(g, a, true, ta) : matmulT(a, g, !ta, false)) : null,
      ];
    },
    jvp: ([ta_, tb_], [a, b], _y, { ta, tb }) => {
      const u = ta_ && matmulT(ta_, b, ta, tb),
        v = tb_ && matmulT(a, tb_, ta, tb);
      return u === null ? v! : v === null ? u : add(u, v);
    },
    batch: matmulBatch,
  } satisfies Rule<MatmulParams>,
  // Feedback alignment (Lillicrap et al. 2016): the forward is x·Wᵀ, but the adjoint sent to x
  // goes through a fixed matrix B ([out, in], like W) instead of W. W's gradient gᵀ·x is the
  // true one; B is not learned (no cotangent). The JVP is the true derivative of x·Wᵀ.
  linearFA: {
    saves: { inputs: [0, 2], output: false },
    forward: ([x, w, b]) => {
      // W and B may carry leading batch axes together (a mapped weight under vmap: one batched GEMM).
      if (w.shape.length < 2 || b.shape.length !== w.shape.length || b.shape.some((d, i) => d !== w.shape[i])) {
        throw new ShapeError(`linearFA: feedback matrix B must have the weight's shape [${w.shape}], got [${b.shape}]`);
      }
      return forward(x, w, { ta: false, tb: true });
    },
    vjp: (g, s, _p, needs) => [
      needs[0] ? matmulT(g, s.x[2]!, false, false) : null,
      needs[1] ? matmulT(g, s.x[0]!, true, false) : null,
      null,
    ],
    jvp: ([tx, tw], [x, w], y) => {
      const u = tx && matmulT(tx, w, false, true),
        v = tw && matmulT(x, tw, false, true);
      // Only B carrying a tangent gives zero: x·Wᵀ does not depend on B.
      return u === null ? (v ?? filled(y.shape, y.dtype, 0)) : v === null ? u : add(u, v);
    },
    // Shared weights: the examples' rows fold into one GEMM. A mapped W or B: all three at the
    // front ([B, R, in], [B, out, in] twice), one batched GEMM whose VJP is per example as well.
    batch: ([x, w, b], [dx, dw, db], p, self) => {
      if (dw !== null || db !== null) {
        const [fx, fw, fb] = frontAll([x, w, b], [dx, dw, db]);
        const B = fx.shape[0],
          K = fx.shape[fx.shape.length - 1];
        const y = self([reshape(fx, [B, fx.size / Math.max(1, B * K), K]), fw, fb], p);
        return [reshape(y, [...fx.shape.slice(0, -1), y.shape[2]]), 0];
      }
      const f = front(x, dx),
        K = f.shape[f.shape.length - 1];
      const y = self([reshape(f, [f.size / Math.max(1, K), K]), w, b], p);
      return [reshape(y, [...f.shape.slice(0, -1), y.shape[1]]), 0];
    },
  } satisfies Rule0,
};
