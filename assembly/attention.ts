// Fused scaled dot-product attention, forward and backward (FlashAttention: Dao et al. 2022;
// the backward as FlashAttention-2). f32 without dropout, d and dv multiples of 4 (the common
// case) runs attention-f32.ts's register-blocked kernels instead; this tiled-GEMM path is the rest.
// One call handles heads n ∈ [n0, n1) of q [N, Tq, d], k [N, Tk, d], v [N, Tk, dv]. Query rows
// go in blocks of BQ, keys in tiles of BK; each tile's scores are one GEMM (matmul.ts's kernels)
// into a BQ×BK scratch block, then an online softmax per row (running max m, running sum l, the output block rescaled by e^{m_old − m_new}) and a
// second GEMM adds P·V. No Tq×Tk matrix is ever stored. The output y is packed [N, Tq, dv + 1]:
// each row's output then its log-sum-exp, which the backward uses to recompute p_ij =
// e^{s_ij − lse_i} tile by tile, with D_i = do_i·o_i for the softmax VJP; dq, dk, dv are GEMMs
// accumulated over the tiles in a fixed order. GEMM sums every element in an order fixed by its
// shape alone, and heads are independent, so any cut of [0, N) across threads gives the same bits.
// Scores s_ij = scale·q_i·k_j + mask_ij; causal keeps j ≤ i (PyTorch's top-left aligned
// tril(ones(Tq, Tk))). Dropout keeps p_ij with probability 1 − p and scales it by 1/(1 − p), the
// decision drawn from the counter generator at element (n·Tq + i)·Tk + j, so the backward
// replays it exactly. A row with every key masked gives o = 0 and lse = −∞ (and no gradient);
// a NaN or +∞ score makes the row's l NaN, and o and lse NaN with it.
// The seed comes last (compile() recomputes trailing arguments per call). Geometry: an i32 block [Tq, Tk, d, dv, causal, mdiv, mmod, mstride, mrow] (a threaded call
// takes at most 24 arguments). Mask: additive [·, Tq or 1, Tk] rows; head n reads block
// ⌊n / mdiv⌋ mod mmod (stride mstride), row i at i·mrow (mrow = 0: one row for every query);
// mask = 0: none. Scratch (per call, aliasing nothing): forward BQ·BK + BQ·dv + 2·BQ elements,
// backward 2·BQ·BK + BQ. Kernels never allocate.
import { lanes, ld, st, at, ldi, hsum, hmax } from './lanes';
import { exp_s, log_s } from './scalar';
import { exp4 } from './vmath';
import { uniform } from './counter';
import { gemm_f32, gemm_f64 } from './matmul';
import { attnFwdF32, attnBwdF32 } from './attention-f32';

/** Query rows per block and keys per tile: the BQ×BK score block stays in L1/L2 between its GEMMs. */
const BQ = 128;
const BK = 128;

/** e^v lane-wise: vmath's exp4 for f32, the musl scalar per lane for f64. */
@inline function expv<T>(v: v128): v128 {
  if (sizeof<T>() == 4) return exp4(v);
  return f64x2.replace_lane(f64x2.splat(exp_s<f64>(f64x2.extract_lane(v, 0))), 1, exp_s<f64>(f64x2.extract_lane(v, 1)));
}

/** C (+)= op(A)·op(B) through matmul.ts's GEMM (its registered packing scratch; same bits without one). */
@inline function gemm<T>(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, ta: i32, tb: i32, acc: i32): void {
  if (M <= 0 || N <= 0) return;
  if (sizeof<T>() == 4) gemm_f32(a, b, c, M, N, K, lda, ldb, ldc, ta, tb, acc);
  else gemm_f64(a, b, c, M, N, K, lda, ldb, ldc, ta, tb, acc);
}

/** max_j s[j] over n ≥ 1 elements. */
@inline function rowMax<T>(s: usize, n: i32): T {
  const L = lanes<T>();
  let v = v128.splat<T>(<T>-Infinity);
  let j = 0;
  for (; j + L <= n; j += L) v = v128.max<T>(v, v128.load(at<T>(s, j)));
  let m = hmax<T>(v);
  for (; j < n; j++) m = max<T>(m, ld<T>(s, j));
  return m;
}

/** s[j] = e^{s[j] − m} in place; returns Σ_j s[j] (lane partials, fixed fold, tail). */
@inline function expShift<T>(s: usize, n: i32, m: T): T {
  const L = lanes<T>();
  const mv = v128.splat<T>(m);
  let acc = v128.splat<T>(<T>0);
  let j = 0;
  for (; j + L <= n; j += L) {
    const e = expv<T>(v128.sub<T>(v128.load(at<T>(s, j)), mv));
    v128.store(at<T>(s, j), e);
    acc = v128.add<T>(acc, e);
  }
  let sum = hsum<T>(acc);
  for (; j < n; j++) {
    const e = exp_s<T>(ld<T>(s, j) - m);
    st<T>(s, j, e);
    sum += e;
  }
  return sum;
}

/** y[c] = a·x[c] for c < n (in place allowed). */
@inline function scaleInto<T>(y: usize, x: usize, a: T, n: i32): void {
  const L = lanes<T>();
  const av = v128.splat<T>(a);
  let c = 0;
  for (; c + L <= n; c += L) v128.store(at<T>(y, c), v128.mul<T>(av, v128.load(at<T>(x, c))));
  for (; c < n; c++) st<T>(y, c, a * ld<T>(x, c));
}

/** Σ_c x[c]·y[c] (lane partials, fixed fold, tail). */
@inline function dot<T>(x: usize, y: usize, n: i32): T {
  const L = lanes<T>();
  let acc = v128.splat<T>(<T>0);
  let c = 0;
  for (; c + L <= n; c += L) acc = v128.add<T>(acc, v128.mul<T>(v128.load(at<T>(x, c)), v128.load(at<T>(y, c))));
  let s = hsum<T>(acc);
  for (; c < n; c++) s += ld<T>(x, c) * ld<T>(y, c);
  return s;
}

/** The dropout factor of element idx: 1/(1 − p) if kept, 0 if dropped; 1 without dropout. */
@inline function keepScale<T>(seedLo: u32, seedHi: u32, p: f64, idx: u64): T {
  if (p == 0) return <T>1;
  return uniform(seedLo, seedHi, idx) >= p ? <T>(1.0 / (1.0 - p)) : <T>0;
}

/** Address of mask row i of head n, or 0 without a mask. */
@inline function maskRow<T>(mask: usize, n: i32, i: i32, mdiv: i32, mmod: i32, mstride: i32, mrow: i32): usize {
  if (mask == 0) return 0;
  return at<T>(mask, ((n / mdiv) % mmod) * mstride + i * mrow);
}

/** The i32 geometry block both kernels read: Tq, Tk, d, dv, causal, mdiv, mmod, mstride, mrow. */
@inline function geo(g: usize, i: i32): i32 { return ldi(g, i); }

/**
 * Row r (query i) of a score tile: s·scale + mask row, −∞ past the causal limit; returns how
 * many leading keys of the tile the row may see at all (0: none).
 */
@inline function scoreRow<T>(s: usize, nb: i32, scale: T, mr: usize, j0: i32, i: i32, causal: i32): i32 {
  const lim = causal != 0 ? min(nb, i + 1 - j0) : nb;
  if (lim <= 0) {
    for (let jj = 0; jj < nb; jj++) st<T>(s, jj, <T>-Infinity);
    return 0;
  }
  scaleInto<T>(s, s, scale, lim);
  if (mr != 0) for (let jj = 0; jj < lim; jj++) st<T>(s, jj, ld<T>(s, jj) + ld<T>(mr, j0 + jj));
  for (let jj = lim; jj < nb; jj++) st<T>(s, jj, <T>-Infinity);
  return lim;
}

/** f32 calls without dropout and with d, dv multiples of 4 take attention-f32.ts's register-blocked kernels. */
@inline function fastF32(g: usize, p: f64): bool { return p == 0 && (geo(g, 2) & 3) == 0 && (geo(g, 3) & 3) == 0; }

@inline function attnFwd<T>(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize,
  scaled: f64, p: f64, scratch: usize, seedLo: u32, seedHi: u32): void {
  const Tq = geo(g, 0), Tk = geo(g, 1), d = geo(g, 2), dv = geo(g, 3), causal = geo(g, 4);
  const mdiv = geo(g, 5), mmod = geo(g, 6), mstride = geo(g, 7), mrow = geo(g, 8);
  const scale = <T>scaled;
  const S = scratch, O = at<T>(S, BQ * BK), M = at<T>(O, BQ * dv), Lsum = at<T>(M, BQ);
  for (let n = n0; n < n1; n++) {
    const kn = at<T>(k, n * Tk * d), vn = at<T>(v, n * Tk * dv);
    for (let i0 = 0; i0 < Tq; i0 += BQ) {
      const bq = min(BQ, Tq - i0), qb = at<T>(q, (n * Tq + i0) * d);
      memory.fill(O, 0, <usize>(bq * dv) * sizeof<T>());
      for (let r = 0; r < bq; r++) {
        st<T>(M, r, <T>-Infinity);
        st<T>(Lsum, r, <T>0);
      }
      const jEnd = causal != 0 ? min(Tk, i0 + bq) : Tk;
      for (let j0 = 0; j0 < jEnd; j0 += BK) {
        const nb = min(BK, jEnd - j0);
        gemm<T>(qb, at<T>(kn, j0 * d), S, bq, nb, d, d, d, BK, 0, 1, 0); // S = Q Kᵀ
        for (let r = 0; r < bq; r++) {
          const i = i0 + r, sr = at<T>(S, r * BK);
          const lim = scoreRow<T>(sr, nb, scale, maskRow<T>(mask, n, i, mdiv, mmod, mstride, mrow), j0, i, causal);
          const m = ld<T>(M, r), mNew = lim > 0 ? max<T>(m, rowMax<T>(sr, lim)) : m;
          if (mNew == <T>-Infinity) { // nothing visible yet: weights 0
            memory.fill(sr, 0, <usize>nb * sizeof<T>());
            continue;
          }
          const alpha = m == <T>-Infinity ? <T>0 : exp_s<T>(m - mNew);
          st<T>(Lsum, r, ld<T>(Lsum, r) * alpha + expShift<T>(sr, nb, mNew));
          st<T>(M, r, mNew);
          if (alpha != <T>1) scaleInto<T>(at<T>(O, r * dv), at<T>(O, r * dv), alpha, dv);
          if (p != 0) {
            const base = (<u64>(n * Tq + i)) * <u64>Tk + <u64>j0;
            for (let jj = 0; jj < nb; jj++) st<T>(sr, jj, ld<T>(sr, jj) * keepScale<T>(seedLo, seedHi, p, base + <u64>jj));
          }
        }
        gemm<T>(S, at<T>(vn, j0 * dv), O, bq, dv, nb, BK, dv, dv, 0, 0, 1); // O += P V
      }
      for (let r = 0; r < bq; r++) {
        const yi = at<T>(y, (n * Tq + i0 + r) * (dv + 1)), l = ld<T>(Lsum, r);
        // l is 0 only when every key was masked; a NaN l (a NaN or +∞ score) must give NaN, as
        // PyTorch, not the masked row's zeros (l > 0 turned NaN inputs into silent zeros).
        if (l != <T>0) {
          scaleInto<T>(yi, at<T>(O, r * dv), <T>1 / l, dv);
          st<T>(yi, dv, ld<T>(M, r) + log_s<T>(l));
        } else {
          memory.fill(yi, 0, <usize>dv * sizeof<T>());
          st<T>(yi, dv, <T>-Infinity);
        }
      }
    }
  }
}
/** y[n, i] = [softmax(scale·q kᵀ + mask)·v, lse] for heads [n0, n1); g: the geometry block; see the file comment. */
export function attention_f32(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize,
  scale: f64, p: f64, scratch: usize, seedLo: u32, seedHi: u32): void {
  if (fastF32(g, p)) attnFwdF32(q, k, v, mask, y, n0, n1, g, <f32>scale, scratch);
  else attnFwd<f32>(q, k, v, mask, y, n0, n1, g, scale, p, scratch, seedLo, seedHi);
}
export function attention_f64(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize,
  scale: f64, p: f64, scratch: usize, seedLo: u32, seedHi: u32): void {
  attnFwd<f64>(q, k, v, mask, y, n0, n1, g, scale, p, scratch, seedLo, seedHi);
}

/**
 * One score tile of the backward pass, in place: S holds p = e^{s − lse} (the weights), dP is
 * turned into dS = scale·p·(z·dp − D + dlse), and S into p·z (the dropped weights).
 */
@inline function tileVjp<T>(S: usize, dP: usize, bq: i32, nb: i32, i0: i32, j0: i32, n: i32, Tq: i32, Tk: i32, dv: i32, y: usize, gy: usize,
  Dv: usize, scale: T, mask: usize, mdiv: i32, mmod: i32, mstride: i32, mrow: i32, causal: i32, seedLo: u32, seedHi: u32, p: f64): void {
  for (let r = 0; r < bq; r++) {
    const i = i0 + r, sr = at<T>(S, r * BK), dr = at<T>(dP, r * BK);
    const lse = ld<T>(y, (n * Tq + i) * (dv + 1) + dv);
    const lim = lse == <T>-Infinity ? 0 : scoreRow<T>(sr, nb, scale, maskRow<T>(mask, n, i, mdiv, mmod, mstride, mrow), j0, i, causal);
    if (lim == 0) {
      memory.fill(sr, 0, <usize>nb * sizeof<T>());
      memory.fill(dr, 0, <usize>nb * sizeof<T>());
      continue;
    }
    expShift<T>(sr, nb, lse);
    const D = ld<T>(Dv, r), gl = ld<T>(gy, (n * Tq + i) * (dv + 1) + dv);
    const base = (<u64>(n * Tq + i)) * <u64>Tk + <u64>j0;
    for (let jj = 0; jj < nb; jj++) {
      const pj = ld<T>(sr, jj), z = keepScale<T>(seedLo, seedHi, p, base + <u64>jj);
      st<T>(dr, jj, (pj * ((z * ld<T>(dr, jj) - D) + gl)) * scale);
      st<T>(sr, jj, pj * z);
    }
  }
}

@inline function attnBwd<T>(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dvv: usize,
  n0: i32, n1: i32, g: usize, scaled: f64, p: f64, scratch: usize, seedLo: u32, seedHi: u32): void {
  const Tq = geo(g, 0), Tk = geo(g, 1), d = geo(g, 2), dv = geo(g, 3), causal = geo(g, 4);
  const mdiv = geo(g, 5), mmod = geo(g, 6), mstride = geo(g, 7), mrow = geo(g, 8);
  const scale = <T>scaled;
  const S = scratch, dP = at<T>(S, BQ * BK), Dv = at<T>(dP, BQ * BK);
  for (let n = n0; n < n1; n++) {
    const kn = at<T>(k, n * Tk * d), vn = at<T>(v, n * Tk * dv);
    const dkn = at<T>(dk, n * Tk * d), dvn = at<T>(dvv, n * Tk * dv);
    memory.fill(dkn, 0, <usize>(Tk * d) * sizeof<T>());
    memory.fill(dvn, 0, <usize>(Tk * dv) * sizeof<T>());
    memory.fill(at<T>(dq, n * Tq * d), 0, <usize>(Tq * d) * sizeof<T>());
    for (let i0 = 0; i0 < Tq; i0 += BQ) {
      const bq = min(BQ, Tq - i0), qb = at<T>(q, (n * Tq + i0) * d), gob = at<T>(gy, (n * Tq + i0) * (dv + 1)), dqb = at<T>(dq, (n * Tq + i0) * d);
      for (let r = 0; r < bq; r++) st<T>(Dv, r, dot<T>(at<T>(gob, r * (dv + 1)), at<T>(y, (n * Tq + i0 + r) * (dv + 1)), dv)); // D = do·o
      const jEnd = causal != 0 ? min(Tk, i0 + bq) : Tk;
      for (let j0 = 0; j0 < jEnd; j0 += BK) {
        const nb = min(BK, jEnd - j0), kt = at<T>(kn, j0 * d);
        gemm<T>(qb, kt, S, bq, nb, d, d, d, BK, 0, 1, 0); // S = Q Kᵀ
        gemm<T>(gob, at<T>(vn, j0 * dv), dP, bq, nb, dv, dv + 1, dv, BK, 0, 1, 0); // dP = dO Vᵀ
        tileVjp<T>(S, dP, bq, nb, i0, j0, n, Tq, Tk, dv, y, gy, Dv, scale, mask, mdiv, mmod, mstride, mrow, causal, seedLo, seedHi, p);
        gemm<T>(S, gob, at<T>(dvn, j0 * dv), nb, dv, bq, BK, dv + 1, dv, 1, 0, 1); // dV += (P∘Z)ᵀ dO
        gemm<T>(dP, kt, dqb, bq, d, nb, BK, d, d, 0, 0, 1); // dQ += dS K
        gemm<T>(dP, qb, at<T>(dkn, j0 * d), nb, d, bq, BK, d, d, 1, 0, 1); // dK += dSᵀ Q
      }
    }
  }
}
/**
 * dq [N, Tq, d], dk [N, Tk, d], dv [N, Tk, dv] for heads [n0, n1) from y and its cotangent gy
 * (both packed [N, Tq, dv + 1]: output, lse); arguments otherwise as attention's.
 */
export function attention_vjp_f32(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dv: usize,
  n0: i32, n1: i32, g: usize, scale: f64, p: f64, scratch: usize, seedLo: u32, seedHi: u32): void {
  if (fastF32(g, p)) attnBwdF32(q, k, v, mask, y, gy, dq, dk, dv, n0, n1, g, <f32>scale, scratch);
  else attnBwd<f32>(q, k, v, mask, y, gy, dq, dk, dv, n0, n1, g, scale, p, scratch, seedLo, seedHi);
}
export function attention_vjp_f64(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dv: usize,
  n0: i32, n1: i32, g: usize, scale: f64, p: f64, scratch: usize, seedLo: u32, seedHi: u32): void {
  attnBwd<f64>(q, k, v, mask, y, gy, dq, dk, dv, n0, n1, g, scale, p, scratch, seedLo, seedHi);
}

/** z[n, i, j] = the dropout factor attention applies to p_ij (1/(1 − p) or 0): for composed (higher-order) rules. */
@inline function dropMask<T>(z: usize, n0: i32, n1: i32, Tq: i32, Tk: i32, seedLo: u32, seedHi: u32, p: f64): void {
  for (let n = n0; n < n1; n++) {
    for (let i = 0; i < Tq; i++) {
      const base = <u64>(n * Tq + i) * <u64>Tk;
      const zr = at<T>(z, (n * Tq + i) * Tk);
      for (let j = 0; j < Tk; j++) st<T>(zr, j, keepScale<T>(seedLo, seedHi, p, base + <u64>j));
    }
  }
}
export function attention_dropout_f32(z: usize, n0: i32, n1: i32, Tq: i32, Tk: i32, seedLo: u32, seedHi: u32, p: f64): void { dropMask<f32>(z, n0, n1, Tq, Tk, seedLo, seedHi, p); }
export function attention_dropout_f64(z: usize, n0: i32, n1: i32, Tq: i32, Tk: i32, seedLo: u32, seedHi: u32, p: f64): void { dropMask<f64>(z, n0, n1, Tq, Tk, seedLo, seedHi, p); }
