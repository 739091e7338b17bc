// Scaled dot-product attention as one primitive with fused kernels (assembly/attention.ts).
// attention(q, k, v[, mask]) on [N, T, ·] operands gives the packed y [N, Tq, dv + 1]: each
// row's output followed by its log-sum-exp, all the backward pass needs besides the inputs (so
// memory stays O(T·d), never Tq×Tk). Its VJP is the primitive attentionGrad, one fused kernel
// that recomputes the probabilities tile by tile and returns dq, dk, dv packed in one flat
// tensor. attentionGrad's own VJP and both JVPs are written with ordinary ops (matmul, softmax
// Jacobian products), composing attention from them, so second and higher derivatives hold.
import { Tensor } from './tensor.js';
import { BYTES, SUFFIX, type DType } from '../tensor/dtype.js';
import type { Rule } from './rule.js';
import { ranges, runPieces, thresholds } from '../wasm/split.js';
import { threadCount } from '../wasm/threads.js';
import { scratchOf } from '../wasm/scratch.js';
import { writeArgs, kernel } from '../wasm/module.js';
import { seedArgs } from '../wasm/hooks.js';
import { fromValues } from './create.js';
import { apply } from './apply.js';
import { foldBatch, loopBatch, type Dim, type Self } from './batch.js';
import { add, sub, mul, sum, max, eq, where, reshape, slice, concat, matmulT, softmax, zerosLike } from './api.js';

/** Where a head n reads its mask rows: block ⌊n / div⌋ mod mod, `stride` elements apart; rows `row` apart (0: one row). */
export interface MaskLayout {
  readonly div: number;
  readonly mod: number;
  readonly stride: number;
  readonly row: number;
}

/**
 * The dropout seed of one attention call: the forward launch draws it (draw(), as a per-call
 * argument, so a compiled step draws a new one on every replay, as eager mode does) and keeps it
 * in `value` for the backward launch and the composed rules, which must replay the same mask.
 */
interface SeedCell {
  value: readonly [number, number];
  readonly draw: () => readonly [number, number];
  /** The caller gave the seed: an ordinary kernel argument, not a per-call one (see launch). */
  readonly given?: boolean;
}

export interface AttentionParams {
  readonly scale: number;
  readonly causal: boolean;
  /** Dropout probability on the attention weights (0: none) and its seed. */
  readonly dropoutP: number;
  readonly seed: SeedCell;
  /** The leading axes the caller flattened into N (the mask broadcasts against [...lead, Tq, Tk]). */
  readonly lead: readonly number[];
  /** How the kernels read the mask input (null: no mask input). */
  readonly mask: MaskLayout | null;
}

/** Query rows per block and keys per tile (assembly/attention.ts BQ, BK). */
const BQ = 128,
  BK = 128;

/**
 * Scratch elements per thread: the tiled-GEMM kernels' blocks, or for float32 without dropout
 * and d, dv multiples of 4 the register-blocked kernels' packed K (and V, dK, dV) of one head
 * (assembly/attention-f32.ts), O(Tk·d) either way.
 */
function scratchElems(backward: boolean, dtype: DType, Tk: number, d: number, dv: number, p: AttentionParams): number {
  if (dtype !== 'float32' || p.dropoutP !== 0 || d % 4 !== 0 || dv % 4 !== 0)
    return backward ? 2 * BQ * BK + BQ : BQ * BK + BQ * dv + 2 * BQ;
  const T4 = Math.ceil(Tk / 4) * 4;
  return backward ? T4 * (2 * d + 2 * dv + 16) + 16 * (d + dv) + 80 : T4 * (d + 8) + 16 * d + 96;
}

const dims = (q: Tensor, k: Tensor, v: Tensor) => ({ N: q.shape[0], Tq: q.shape[1], Tk: k.shape[1], d: q.shape[2], dv: v.shape[2] });

/**
 * Runs kernel `name` over heads [0, N), cut across threads when large, each piece with its own
 * scratch of `per` elements; `ptrs` precede the head range, then the geometry block, scale,
 * dropout probability, the scratch pointer and the seed (drawn here by the forward: `draw`).
 */
function launch(
  name: string,
  xs: readonly Tensor[],
  ptrs: readonly number[],
  work: number,
  per: number,
  p: AttentionParams,
  draw: boolean,
): void {
  const [q, k, v] = xs,
    dtype = q.dtype,
    N = q.shape[0],
    m = p.mask ?? { div: 1, mod: 1, stride: 0, row: 0 };
  const pieces = threadCount() === 1 || work < thresholds.gemm ? [[0, N] as [number, number]] : ranges(N, threadCount(), 1);
  const scratch = Tensor.empty([Math.max(1, per * pieces.length)], dtype);
  try {
    const base = scratch.ptr,
      b = BYTES[dtype];
    const own = scratchOf(0); // the kernels' GEMMs pack into the calling thread's region (workers have theirs)
    kernel('gemm_set_scratch')(own.ptr, own.bytes);
    // After every allocation: the block lives in the shared argument area.
    const g = writeArgs(0, [q.shape[1], k.shape[1], q.shape[2], v.shape[2], p.causal ? 1 : 0, m.div, m.mod, m.stride, m.row]);
    // The last arguments (seedArgs: drawn again on every replay unless the caller gave the seed).
    const seed =
      p.dropoutP === 0 ? [0, 0] : seedArgs(p.seed.given === true, () => [...(draw ? (p.seed.value = p.seed.draw()) : p.seed.value)]);
    runPieces(
      `${name}_${SUFFIX[dtype]}`,
      pieces.map(([n0, n1], i) => [...ptrs, n0, n1, g, p.scale, p.dropoutP, base + i * per * b, ...seed]),
    );
  } finally {
    scratch.dispose();
  }
}

function forward(xs: readonly Tensor[], p: AttentionParams): Tensor {
  const [q, k, v, mask] = xs,
    { N, Tq, Tk, d, dv } = dims(q, k, v);
  const y = Tensor.empty([N, Tq, dv + 1], q.dtype);
  if (N * Tq === 0) return y;
  try {
    launch(
      'attention',
      xs,
      [q.ptr, k.ptr, v.ptr, mask?.ptr ?? 0, y.ptr],
      N * Tq * Tk * (d + dv),
      scratchElems(false, q.dtype, Tk, d, dv, p),
      p,
      true,
    );
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}

/** The flat [dq | dk | dv] of attentionGrad. */
function backward(xs: readonly Tensor[], p: AttentionParams): Tensor {
  const [q, k, v, y, gy, mask] = xs,
    { N, Tq, Tk, d, dv } = dims(q, k, v),
    b = BYTES[q.dtype];
  const out = Tensor.empty([N * (Tq * d + Tk * d + Tk * dv)], q.dtype);
  if (out.size === 0) return out;
  try {
    const o = out.ptr,
      ptrs = [q.ptr, k.ptr, v.ptr, mask?.ptr ?? 0, y.ptr, gy.ptr, o, o + N * Tq * d * b, o + N * (Tq + Tk) * d * b];
    launch('attention_vjp', xs, ptrs, 2 * N * Tq * Tk * (d + dv), scratchElems(true, q.dtype, Tk, d, dv, p), p, false);
  } catch (e) {
    out.dispose();
    throw e;
  }
  return out;
}

/** Splits attentionGrad's flat result into dq, dk, dv. */
function unpackGrads(g: Tensor, q: readonly number[], k: readonly number[], v: readonly number[]): [Tensor, Tensor, Tensor] {
  const nq = q.reduce((a, b) => a * b, 1),
    nk = k.reduce((a, b) => a * b, 1),
    nv = v.reduce((a, b) => a * b, 1);
  return [reshape(slice(g, [0], [nq]), q), reshape(slice(g, [nq], [nk]), k), reshape(slice(g, [nq + nk], [nv]), v)];
}

// ---- attention composed of ops: the higher-order rules -------------------------------------

/** 0 on and below the diagonal j ≤ i, −∞ above: PyTorch's causal mask as an additive bias. */
function causalBias(Tq: number, Tk: number, dtype: DType): Tensor {
  const a = new Float64Array(Tq * Tk);
  for (let i = 0; i < Tq; i++) for (let j = i + 1; j < Tk; j++) a[i * Tk + j] = -Infinity;
  return fromValues(a, [Tq, Tk], dtype);
}

/** The dropout factors [N, Tq, Tk] the kernels apply (1/(1 − p) or 0), null without dropout. */
function dropFactors(N: number, Tq: number, Tk: number, dtype: DType, p: AttentionParams): Tensor | null {
  if (p.dropoutP === 0) return null;
  const z = Tensor.empty([N, Tq, Tk], dtype);
  if (z.size > 0) runPieces(`attention_dropout_${SUFFIX[dtype]}`, [[z.ptr, 0, N, Tq, Tk, p.seed.value[0], p.seed.value[1], p.dropoutP]]);
  return z;
}

/**
 * Probabilities P [N, Tq, Tk] and dropout factors Z of attention(q, k, v), composed of ops. A row
 * whose every key is masked has P = 0, as in the kernels: softmax of a row of −∞ is NaN, and the
 * rules sum over rows (dk = c·dSᵀq), so one such row would make every derivative NaN. Its scores
 * are replaced before the softmax (not just its output), so no derivative of any order sees a NaN.
 */
function probs(q: Tensor, k: Tensor, mask: Tensor | undefined, p: AttentionParams): { P: Tensor; Z: Tensor | null } {
  const [N, Tq, Tk] = [q.shape[0], q.shape[1], k.shape[1]];
  let S = withMask(mul(matmulT(q, k, false, true), p.scale), mask, p);
  if (p.causal) S = add(S, causalBias(Tq, Tk, q.dtype));
  const Z = dropFactors(N, Tq, Tk, q.dtype, p);
  if (mask === undefined) return { P: softmax(S, -1), Z }; // causal alone leaves key 0 to every row
  const dead = eq(max(S, [2], true), -Infinity); // [N, Tq, 1], 0/1: a comparison, constant
  return { P: mul(softmax(where(dead, 0, S), -1), sub(1, dead)), Z };
}

const rowsum = (t: Tensor): Tensor => sum(t, [2], true);
/** y ⊙ (v − Σ_last v ⊙ y): the (symmetric) softmax Jacobian at y applied to v. */
const softmaxJ = (y: Tensor, v: Tensor): Tensor => mul(y, sub(v, sum(mul(v, y), [y.shape.length - 1], true)));
/** S + mask (broadcast against [...lead, Tq, Tk]) as [N, Tq, Tk]; S itself without a mask. */
function withMask(S: Tensor, mask: Tensor | null | undefined, p: AttentionParams): Tensor {
  if (mask == null) return S;
  const [N, Tq, Tk] = S.shape;
  return reshape(add(reshape(S, [...p.lead, Tq, Tk]), mask), [N, Tq, Tk]);
}
/** A score cotangent [N, Tq, Tk] as the mask's (the engine sums it over the mask's broadcast axes). */
const asMaskGrad = (dS: Tensor, p: AttentionParams): Tensor => reshape(dS, [...p.lead, ...dS.shape.slice(1)]);
const dropped = (t: Tensor, Z: Tensor | null): Tensor => (Z === null ? t : mul(t, Z));
const orZero = (t: Tensor | null, like: Tensor): Tensor => t ?? zerosLike(like);
const lastSplit = (t: Tensor, n: number): [Tensor, Tensor] => {
  const [N, T] = t.shape;
  return [slice(t, [0, 0, 0], [N, T, n]), slice(t, [0, 0, n], [N, T, 1])];
};

/** The tangent of attention's packed y along (tq, tk, tv). */
function attentionJvp(ts: readonly (Tensor | null)[], xs: readonly Tensor[], p: AttentionParams): Tensor {
  const [q, k, v, mask] = xs,
    [tq, tk, tv] = [orZero(ts[0], q), orZero(ts[1], k), orZero(ts[2], v)];
  const { P, Z } = probs(q, k, mask, p);
  const tS = withMask(mul(add(matmulT(tq, k, false, true), matmulT(q, tk, false, true)), p.scale), ts[3] ?? null, p);
  const tP = softmaxJ(P, tS);
  const to = add(matmulT(dropped(tP, Z), v, false, false), matmulT(dropped(P, Z), tv, false, false));
  return concat([to, rowsum(mul(P, tS))], 2);
}

/** First-order quantities of the backward pass, composed of ops (see attentionGrad's rules). */
function backwardTerms(q: Tensor, k: Tensor, v: Tensor, gy: Tensor, mask: Tensor | undefined, p: AttentionParams) {
  const [go, gl] = lastSplit(gy, v.shape[2]);
  const { P, Z } = probs(q, k, mask, p);
  const dP = dropped(matmulT(go, v, false, true), Z);
  const W = add(sub(dP, rowsum(mul(P, dP))), gl);
  return { go, gl, P, Z, Pd: dropped(P, Z), dP, W, dS: mul(P, W) };
}

/**
 * VJP of attentionGrad (dq = c·dS k, dk = c·dSᵀ q, dv = Pdᵀ go with dS = P∘W, W = dP − D + gl,
 * dP = (go vᵀ)∘Z, D = rowsum(P∘dP)) for cotangents Gq, Gk, Gv. With H = c(Gq kᵀ + q Gkᵀ) (the
 * cotangent of dS) and h = rowsum(H∘P): ∂dP = E = P∘(H − h), ∂gl = h,
 * ∂P = H∘W − h·dP + (go Gvᵀ)∘Z, ∂S = softmaxJ(P, ∂P), and then the two matmul rules each way.
 */
function attentionGradVjp(G: Tensor, x: readonly Tensor[], p: AttentionParams, needs: readonly boolean[]): (Tensor | null)[] {
  const [q, k, v, , gy, mask] = x,
    c = p.scale;
  const [Gq, Gk, Gv] = unpackGrads(G, q.shape, k.shape, v.shape);
  const t = backwardTerms(q, k, v, gy, mask, p);
  const H = mul(add(matmulT(Gq, k, false, true), matmulT(q, Gk, false, true)), c);
  const h = rowsum(mul(H, t.P));
  const EZ = dropped(mul(t.P, sub(H, h)), t.Z);
  const dPbar = add(sub(mul(H, t.W), mul(h, t.dP)), dropped(matmulT(t.go, Gv, false, true), t.Z));
  const dS2 = softmaxJ(t.P, dPbar);
  return [
    needs[0] ? mul(add(matmulT(t.dS, Gk, false, false), matmulT(dS2, k, false, false)), c) : null,
    needs[1] ? mul(add(matmulT(t.dS, Gq, true, false), matmulT(dS2, q, true, false)), c) : null,
    needs[2] ? matmulT(EZ, t.go, true, false) : null,
    null, // y is attention(q, k, v): its dependence is counted through q, k, v above
    needs[4] ? concat([add(matmulT(t.Pd, Gv, false, false), matmulT(EZ, v, false, false)), h], 2) : null,
    needs[5] ? asMaskGrad(dS2, p) : null,
  ];
}

/** JVP of attentionGrad along (tq, tk, tv, ·, tgy), as the VJP's terms carried forward. */
function attentionGradJvp(ts: readonly (Tensor | null)[], x: readonly Tensor[], p: AttentionParams): Tensor {
  const [q, k, v, , gy, mask] = x,
    c = p.scale;
  const [tq, tk, tv, tgy] = [orZero(ts[0], q), orZero(ts[1], k), orZero(ts[2], v), orZero(ts[4], gy)];
  const t = backwardTerms(q, k, v, gy, mask, p);
  const [tgo, tgl] = lastSplit(tgy, v.shape[2]);
  const tP = softmaxJ(t.P, withMask(mul(add(matmulT(tq, k, false, true), matmulT(q, tk, false, true)), c), ts[5], p));
  const tdP = dropped(add(matmulT(tgo, v, false, true), matmulT(t.go, tv, false, true)), t.Z);
  const tD = rowsum(add(mul(tP, t.dP), mul(t.P, tdP)));
  const tdS = add(mul(tP, t.W), mul(t.P, add(sub(tdP, tD), tgl)));
  const dq = mul(add(matmulT(tdS, k, false, false), matmulT(t.dS, tk, false, false)), c);
  const dk = mul(add(matmulT(tdS, q, true, false), matmulT(t.dS, tq, true, false)), c);
  const dv = add(matmulT(dropped(tP, t.Z), t.go, true, false), matmulT(t.Pd, tgo, true, false));
  return concat([reshape(dq, [-1]), reshape(dk, [-1]), reshape(dv, [-1])], 0);
}

/**
 * Mapped attention without a mask or dropout: the examples' heads fold into N (one launch), and
 * attentionGrad's packed [dq, dk, dv] is regrouped per example. With a mask (its layout is tied
 * to the caller's leading axes) or dropout: the per-example loop.
 */
function attentionBatch(grad: boolean) {
  return (xs: readonly Tensor[], dims: readonly Dim[], p: AttentionParams, self: Self<AttentionParams>): [Tensor, number] => {
    if (p.mask !== null || p.dropoutP > 0 || xs.length > (grad ? 5 : 3)) return loopBatch(xs, dims, self, p);
    const [y, d] = foldBatch(
      xs,
      dims,
      p,
      self,
      xs.map(() => true),
    );
    if (!grad) return [y, d];
    const B = y.shape[0],
      flat = reshape(y, [(B * y.size) / B]);
    const sizes = [0, 1, 2].map((i) => xs[i].size / (dims[i] === null ? 1 : xs[i].shape[dims[i]!]));
    let at = 0;
    const parts = sizes.map((n) => {
      const part = reshape(slice(flat, [at], [B * n]), [B, n]);
      at += B * n;
      return part;
    });
    return [concat(parts, 1), 0];
  };
}

export const attentionRules = {
  attention: {
    saves: { inputs: 'all', output: true },
    forward,
    vjp: (g, s, p, needs) => {
      const [q, k, v, mask] = s.x as Tensor[];
      const grads = apply('attentionGrad', mask === undefined ? [q, k, v, s.y!, g] : [q, k, v, s.y!, g, mask], p);
      const [dq, dk, dv] = unpackGrads(grads, q.shape, k.shape, v.shape);
      // An additive mask's gradient is the scores' (Tq×Tk, composed: only when the mask is differentiated).
      const dm = needs[3] ? asMaskGrad(backwardTerms(q, k, v, g, mask, p).dS, p) : null;
      return [needs[0] ? dq : null, needs[1] ? dk : null, needs[2] ? dv : null, dm].slice(0, s.x.length);
    },
    jvp: (ts, xs, _y, p) => attentionJvp(ts, xs, p),
    batch: attentionBatch(false),
  } satisfies Rule<AttentionParams>,
  attentionGrad: {
    saves: { inputs: 'all', output: false },
    forward: backward,
    vjp: (G, s, p, needs) => attentionGradVjp(G, s.x as Tensor[], p, needs).slice(0, s.x.length),
    jvp: (ts, xs, _y, p) => attentionGradJvp(ts, xs, p),
    batch: attentionBatch(true),
  } satisfies Rule<AttentionParams>,
};
