// Fused scaled dot-product attention, forward and backward (FlashAttention: Dao et al. 2022).
// One call handles heads n ∈ [n0, n1) of q [N, Tq, d], k [N, Tk, d], v [N, Tk, dv]; each query
// row walks the keys in tiles of BK with an online softmax (running max m, running sum l, the
// output accumulator rescaled by e^{m_old − m_new}), so no Tq×Tk matrix is ever stored. The
// output y is packed [N, Tq, dv + 1]: each row's output then its log-sum-exp, which the backward
// uses to recompute the probabilities p_ij = e^{s_ij − lse_i} tile by tile (FlashAttention-2's
// D_i = do_i·o_i trick for the softmax VJP). Heads are independent and every row is reduced in a
// fixed order, so any cut of [0, N) across threads gives the same bits.
// Scores s_ij = scale·q_i·k_j + mask_ij; causal keeps j ≤ i (PyTorch's top-left aligned
// tril(ones(Tq, Tk))). Dropout keeps p_ij with probability 1 − p and scales it by 1/(1 − p), the
// decision drawn from the counter generator at element (n·Tq + i)·Tk + j, so the backward
// replays it exactly. A row with every key masked gives o = 0 and lse = −∞ (and no gradient).
// Geometry: an i32 block [Tq, Tk, d, dv, causal, mdiv, mmod, mstride, mrow] (the threaded call
// limit is 24 arguments). Mask: additive [·, Tq or 1, Tk] rows; head n reads block ⌊n / mdiv⌋ mod mmod (stride mstride),
// row i at i·mrow (mrow = 0: one row for every query). mask = 0: none.
// Scratch (per call, not aliasing anything): forward d·Tk + BK + dv elements, backward
// (d + dv)·Tk + 2·BK. Kernels never allocate.
import { lanes, ld, st, at, ldi, hsum, hmax } from './lanes';
import { exp_s, log_s } from './scalar';
import { exp4 } from './vmath';
import { uniform } from './counter';

/** Keys per tile: the tile's scores stay in L1 next to the row's accumulator. */
const BK = 64;

/** e^v lane-wise: vmath's exp4 for f32, the musl scalar per lane for f64. */
@inline function expv<T>(v: v128): v128 {
  if (sizeof<T>() == 4) return exp4(v);
  return f64x2.replace_lane(f64x2.splat(exp_s<f64>(f64x2.extract_lane(v, 0))), 1, exp_s<f64>(f64x2.extract_lane(v, 1)));
}

/** kt[c·rows + j] = k[j·d + c]: one head's keys (or values) transposed, so dot products vectorise over keys. */
@inline function transposeInto<T>(k: usize, kt: usize, rows: i32, d: i32): void {
  for (let j = 0; j < rows; j++) {
    const kj = at<T>(k, j * d);
    for (let c = 0; c < d; c++) st<T>(kt, c * rows + j, ld<T>(kj, c));
  }
}

/**
 * s[jj] = scale·Σ_c x[c]·kt[c, j0 + jj] (+ mrow[jj] when mrow ≠ 0) for jj < nb. Every score is
 * summed over c in order, in a vector lane or the scalar tail alike (no FMA), so tiles and cuts
 * never change a bit.
 */
@inline function dots<T>(x: usize, kt: usize, Tk: i32, d: i32, j0: i32, nb: i32, s: usize, scale: T, mrow: usize): void {
  const L = lanes<T>();
  let jj = 0;
  for (; jj + 4 * L <= nb; jj += 4 * L) {
    let a0 = v128.splat<T>(<T>0), a1 = a0, a2 = a0, a3 = a0;
    let p = at<T>(kt, j0 + jj);
    for (let c = 0; c < d; c++) {
      const xc = v128.splat<T>(ld<T>(x, c));
      a0 = v128.add<T>(a0, v128.mul<T>(xc, v128.load(p)));
      a1 = v128.add<T>(a1, v128.mul<T>(xc, v128.load(p, 16)));
      a2 = v128.add<T>(a2, v128.mul<T>(xc, v128.load(p, 32)));
      a3 = v128.add<T>(a3, v128.mul<T>(xc, v128.load(p, 48)));
      p += <usize>Tk * sizeof<T>();
    }
    const sv = v128.splat<T>(scale), o = at<T>(s, jj);
    v128.store(o, v128.mul<T>(a0, sv));
    v128.store(o, v128.mul<T>(a1, sv), 16);
    v128.store(o, v128.mul<T>(a2, sv), 32);
    v128.store(o, v128.mul<T>(a3, sv), 48);
  }
  for (; jj + L <= nb; jj += L) {
    let a = v128.splat<T>(<T>0);
    let p = at<T>(kt, j0 + jj);
    for (let c = 0; c < d; c++) {
      a = v128.add<T>(a, v128.mul<T>(v128.splat<T>(ld<T>(x, c)), v128.load(p)));
      p += <usize>Tk * sizeof<T>();
    }
    v128.store(at<T>(s, jj), v128.mul<T>(a, v128.splat<T>(scale)));
  }
  for (; jj < nb; jj++) {
    let a = <T>0;
    for (let c = 0; c < d; c++) a += ld<T>(x, c) * ld<T>(kt, c * Tk + j0 + jj);
    st<T>(s, jj, a * scale);
  }
  if (mrow != 0) for (jj = 0; jj < nb; jj++) st<T>(s, jj, ld<T>(s, jj) + ld<T>(mrow, jj));
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

/** y[c] += w·x[c] for c < n. */
@inline function axpy<T>(y: usize, x: usize, w: T, n: i32): void {
  const L = lanes<T>();
  const wv = v128.splat<T>(w);
  let c = 0;
  for (; c + L <= n; c += L) v128.store(at<T>(y, c), v128.add<T>(v128.load(at<T>(y, c)), v128.mul<T>(wv, v128.load(at<T>(x, c)))));
  for (; c < n; c++) st<T>(y, c, ld<T>(y, c) + w * ld<T>(x, c));
}

/**
 * y[c] += Σ_jj w[jj]·r[jj·stride + c] for c < n over nb rows r: the weighted sum of a tile's value
 * (or key) rows, with 4 vectors of y held in registers across the rows. Each y[c] still adds
 * the rows in order, one product at a time, as an axpy per row would.
 */
@inline function gemvRows<T>(y: usize, w: usize, r: usize, stride: i32, nb: i32, n: i32): void {
  const L = lanes<T>();
  let c = 0;
  for (; c + 4 * L <= n; c += 4 * L) {
    const yc = at<T>(y, c);
    let a0 = v128.load(yc), a1 = v128.load(yc, 16), a2 = v128.load(yc, 32), a3 = v128.load(yc, 48);
    let p = at<T>(r, c);
    for (let jj = 0; jj < nb; jj++) {
      const wv = v128.splat<T>(ld<T>(w, jj));
      a0 = v128.add<T>(a0, v128.mul<T>(wv, v128.load(p)));
      a1 = v128.add<T>(a1, v128.mul<T>(wv, v128.load(p, 16)));
      a2 = v128.add<T>(a2, v128.mul<T>(wv, v128.load(p, 32)));
      a3 = v128.add<T>(a3, v128.mul<T>(wv, v128.load(p, 48)));
      p += <usize>stride * sizeof<T>();
    }
    v128.store(yc, a0);
    v128.store(yc, a1, 16);
    v128.store(yc, a2, 32);
    v128.store(yc, a3, 48);
  }
  for (; c + L <= n; c += L) {
    let a = v128.load(at<T>(y, c));
    for (let jj = 0; jj < nb; jj++) a = v128.add<T>(a, v128.mul<T>(v128.splat<T>(ld<T>(w, jj)), v128.load(at<T>(r, jj * stride + c))));
    v128.store(at<T>(y, c), a);
  }
  for (; c < n; c++) {
    let a = ld<T>(y, c);
    for (let jj = 0; jj < nb; jj++) a += ld<T>(w, jj) * ld<T>(r, jj * stride + c);
    st<T>(y, c, a);
  }
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

@inline function attnFwd<T>(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize,
  scaled: f64, seedLo: u32, seedHi: u32, p: f64, scratch: usize): void {
  const Tq = geo(g, 0), Tk = geo(g, 1), d = geo(g, 2), dv = geo(g, 3), causal = geo(g, 4);
  const mdiv = geo(g, 5), mmod = geo(g, 6), mstride = geo(g, 7), mrow = geo(g, 8);
  const scale = <T>scaled;
  const kt = scratch, s = at<T>(scratch, d * Tk), acc = at<T>(s, BK);
  for (let n = n0; n < n1; n++) {
    const kn = at<T>(k, n * Tk * d), vn = at<T>(v, n * Tk * dv);
    transposeInto<T>(kn, kt, Tk, d);
    for (let i = 0; i < Tq; i++) {
      const qi = at<T>(q, (n * Tq + i) * d), yi = at<T>(y, (n * Tq + i) * (dv + 1));
      const mr = maskRow<T>(mask, n, i, mdiv, mmod, mstride, mrow);
      const jEnd = causal != 0 ? min(Tk, i + 1) : Tk;
      let m = <T>-Infinity, l = <T>0;
      memory.fill(acc, 0, <usize>dv * sizeof<T>());
      for (let j0 = 0; j0 < jEnd; j0 += BK) {
        const nb = min(BK, jEnd - j0);
        dots<T>(qi, kt, Tk, d, j0, nb, s, scale, mr == 0 ? 0 : at<T>(mr, j0));
        const mNew = max<T>(m, rowMax<T>(s, nb));
        if (mNew == <T>-Infinity) continue; // every key so far masked
        const alpha = m == <T>-Infinity ? <T>0 : exp_s<T>(m - mNew);
        l = l * alpha + expShift<T>(s, nb, mNew);
        if (alpha != <T>1) scaleInto<T>(acc, acc, alpha, dv);
        if (p != 0) {
          const base = (<u64>(n * Tq + i)) * <u64>Tk + <u64>j0;
          for (let jj = 0; jj < nb; jj++) st<T>(s, jj, ld<T>(s, jj) * keepScale<T>(seedLo, seedHi, p, base + <u64>jj));
        }
        gemvRows<T>(acc, s, at<T>(vn, j0 * dv), dv, nb, dv);
        m = mNew;
      }
      if (l > <T>0) {
        scaleInto<T>(yi, acc, <T>1 / l, dv);
        st<T>(yi, dv, m + log_s<T>(l));
      } else {
        memory.fill(yi, 0, <usize>dv * sizeof<T>());
        st<T>(yi, dv, <T>-Infinity);
      }
    }
  }
}
/** y[n, i] = [softmax(scale·q kᵀ + mask)·v, lse] for heads [n0, n1); g: the geometry block; see the file comment. */
export function attention_f32(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize,
  scale: f64, seedLo: u32, seedHi: u32, p: f64, scratch: usize): void {
  attnFwd<f32>(q, k, v, mask, y, n0, n1, g, scale, seedLo, seedHi, p, scratch);
}
export function attention_f64(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize,
  scale: f64, seedLo: u32, seedHi: u32, p: f64, scratch: usize): void {
  attnFwd<f64>(q, k, v, mask, y, n0, n1, g, scale, seedLo, seedHi, p, scratch);
}

/**
 * One query row's share of the backward pass: with p_j = e^{s_j − lse}, z_j the dropout factor,
 * dp_j = do·v_j and D = do·o, ds_j = p_j·(z_j·dp_j − D + dlse); dv_j += p_j z_j do,
 * dq += scale·Σ ds_j k_j, dk_j += scale·ds_j q.
 */
@inline function rowVjp<T>(qi: usize, kn: usize, kt: usize, vt: usize, dqi: usize, dkn: usize, dvn: usize, goi: usize, mr: usize,
  Tk: i32, d: i32, dv: i32, jEnd: i32, scale: T, lse: T, D: T, gl: T, s: usize, t: usize, base: u64, seedLo: u32, seedHi: u32, p: f64): void {
  for (let j0 = 0; j0 < jEnd; j0 += BK) {
    const nb = min(BK, jEnd - j0);
    dots<T>(qi, kt, Tk, d, j0, nb, s, scale, mr == 0 ? 0 : at<T>(mr, j0));
    dots<T>(goi, vt, Tk, dv, j0, nb, t, <T>1, 0);
    expShift<T>(s, nb, lse);
    for (let jj = 0; jj < nb; jj++) {
      const pj = ld<T>(s, jj);
      if (pj == <T>0) {
        st<T>(t, jj, <T>0);
        continue;
      }
      const j = j0 + jj, z = keepScale<T>(seedLo, seedHi, p, base + <u64>j);
      if (z != <T>0) axpy<T>(at<T>(dvn, j * dv), goi, pj * z, dv);
      const ds = (pj * ((z * ld<T>(t, jj) - D) + gl)) * scale;
      st<T>(t, jj, ds);
      axpy<T>(at<T>(dkn, j * d), qi, ds, d);
    }
    gemvRows<T>(dqi, t, at<T>(kn, j0 * d), d, nb, d);
  }
}

@inline function attnBwd<T>(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dvv: usize,
  n0: i32, n1: i32, g: usize, scaled: f64, seedLo: u32, seedHi: u32, p: f64, scratch: usize): void {
  const Tq = geo(g, 0), Tk = geo(g, 1), d = geo(g, 2), dv = geo(g, 3), causal = geo(g, 4);
  const mdiv = geo(g, 5), mmod = geo(g, 6), mstride = geo(g, 7), mrow = geo(g, 8);
  const scale = <T>scaled;
  const kt = scratch, vt = at<T>(kt, d * Tk), s = at<T>(vt, dv * Tk), t = at<T>(s, BK);
  for (let n = n0; n < n1; n++) {
    const kn = at<T>(k, n * Tk * d), vn = at<T>(v, n * Tk * dv);
    const dkn = at<T>(dk, n * Tk * d), dvn = at<T>(dvv, n * Tk * dv);
    memory.fill(dkn, 0, <usize>(Tk * d) * sizeof<T>());
    memory.fill(dvn, 0, <usize>(Tk * dv) * sizeof<T>());
    transposeInto<T>(kn, kt, Tk, d);
    transposeInto<T>(vn, vt, Tk, dv);
    for (let i = 0; i < Tq; i++) {
      const row = n * Tq + i;
      const qi = at<T>(q, row * d), yi = at<T>(y, row * (dv + 1)), goi = at<T>(gy, row * (dv + 1)), dqi = at<T>(dq, row * d);
      memory.fill(dqi, 0, <usize>d * sizeof<T>());
      const lse = ld<T>(yi, dv);
      if (lse == <T>-Infinity) continue; // a fully masked row: constant output
      const D = dot<T>(goi, yi, dv), gl = ld<T>(goi, dv);
      const jEnd = causal != 0 ? min(Tk, i + 1) : Tk;
      rowVjp<T>(qi, kn, kt, vt, dqi, dkn, dvn, goi, maskRow<T>(mask, n, i, mdiv, mmod, mstride, mrow), Tk, d, dv, jEnd, scale, lse, D, gl,
        s, t, <u64>row * <u64>Tk, seedLo, seedHi, p);
    }
  }
}
/**
 * dq [N, Tq, d], dk [N, Tk, d], dv [N, Tk, dv] for heads [n0, n1) from y and its cotangent gy
 * (both packed [N, Tq, dv + 1]: output, lse); arguments otherwise as attention's.
 */
export function attention_vjp_f32(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dv: usize,
  n0: i32, n1: i32, g: usize, scale: f64, seedLo: u32, seedHi: u32, p: f64, scratch: usize): void {
  attnBwd<f32>(q, k, v, mask, y, gy, dq, dk, dv, n0, n1, g, scale, seedLo, seedHi, p, scratch);
}
export function attention_vjp_f64(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dv: usize,
  n0: i32, n1: i32, g: usize, scale: f64, seedLo: u32, seedHi: u32, p: f64, scratch: usize): void {
  attnBwd<f64>(q, k, v, mask, y, gy, dq, dk, dv, n0, n1, g, scale, seedLo, seedHi, p, scratch);
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
