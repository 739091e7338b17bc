// Register-blocked f32 attention without dropout, for d and dv multiples of 4 (attention.ts
// dispatches here; everything else takes its tiled-GEMM path). Each head is one thread's, in a
// fixed order, so any cut of the heads across threads gives the same bits.
// Queries go in blocks of 8 rows, held as the two f32x4 lanes of every key: the score block is
// stored key-major, S[j] = (s_0j … s_7j), so the softmax statistics of all 8 rows are lane-wise
// (no horizontal sums) and the causal limit is one lane compare per key. Every product is the
// GEMM micro-kernel's shape (gemmtile.ts: 4 A values × 2 vectors of B, 8 accumulators; here A is
// splat on load, which costs no more than gemmtile's pre-broadcast packs and saves packing): Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ with K, V packed by 4-key groups (16 B per column);
// Oᵀ = Vᵀ·Pᵀ and dQᵀ = Kᵀ·dSᵀ read V, K in place (4 adjacent columns per key); dV += Pᵀ·dO and
// dK += dSᵀ·Q as rank-8 updates of 4-key × 8-column tiles. The score tile applies the scale and
// takes the rows' maxima in its epilogue; only key groups that need a mask or a limit get a
// second pass. The whole key row of a block is scored before its softmax (scratch O(Tk), no
// rescaling), causal blocks stop at the diagonal. Scratch layout: see attnFwdF32/attnBwdF32.
import { ld, st, at } from './lanes';
import { madd } from './madd';
import { log_s } from './scalar';

/** Query rows per block (two f32x4 lanes) and keys per group (one micro-tile's A rows). */
const QB = 8;
const KG = 4;

@inline function ru4(x: i32): i32 { return (x + 3) & ~3; }
@inline function fl(n: i32): usize { return <usize>n << 2; }

// e^x for the softmax weights, x ≤ 0 (s − max, s − lse): x = q·ln2 + t, |t| ≤ ln2/2 (ln2 split so
// q·LN2_HI is exact), e^t by vmath.ts's minimax polynomial, 2^q added to the exponent field.
// Plain IEEE add and mul: the same bits on every engine. About 3 ulp (no compensated sum as in
// vmath's exp4, which costs a third more and is not needed for weights summed in f32); lanes
// below −86 (where 2^q leaves the normal range) give 0, −∞ gives 0, NaN stays NaN.
const LOG2E = memory.data<f32>([1.4426950216293335]);
const LN2_HI = memory.data<f32>([0.693145751953125]);
const LN2_LO = memory.data<f32>([1.428606765330187e-6]);
const ROUND = memory.data<f32>([12582912]); // 1.5·2^23
const E3 = memory.data<f32>([0.1666666716337204]);
const E4 = memory.data<f32>([0.041666485369205475]);
const E5 = memory.data<f32>([0.008333360776305199]);
const E6 = memory.data<f32>([0.0013930435525253415]);
const E7 = memory.data<f32>([0.00019852761761285365]);
const EXP_FLOOR = memory.data<f32>([-86]);
const HALF = memory.data<f32>([0.5]);
const ONE = memory.data<f32>([1]);
const ROUND_BITS = memory.data<i32>([0x4b400000]);
/** The 32-bit constant at p in every lane (one load: V8 rebuilds a v128.const at every use, see vmath.ts). */
@inline function k(p: usize): v128 { return v128.load32_splat(p); }

@inline function expw(x: v128): v128 {
  const xc = f32x4.max(x, k(EXP_FLOOR));
  const qr = f32x4.add(f32x4.mul(xc, k(LOG2E)), k(ROUND));
  const q = f32x4.sub(qr, k(ROUND));
  const t = f32x4.sub(f32x4.sub(xc, f32x4.mul(q, k(LN2_HI))), f32x4.mul(q, k(LN2_LO)));
  let p = f32x4.add(f32x4.mul(k(E7), t), k(E6));
  p = f32x4.add(f32x4.mul(p, t), k(E5));
  p = f32x4.add(f32x4.mul(p, t), k(E4));
  p = f32x4.add(f32x4.mul(p, t), k(E3));
  p = f32x4.add(f32x4.mul(p, t), k(HALF));
  const e = f32x4.add(f32x4.add(f32x4.mul(f32x4.mul(t, t), p), t), k(ONE));
  const y = i32x4.add(e, i32x4.shl(i32x4.sub(qr, k(ROUND_BITS)), 23)); // e·2^q
  return v128.bitselect(y, v128.and(x, f32x4.ne(x, x)), f32x4.ge(x, k(EXP_FLOOR)));
}

/**
 * out[m][0..8] (row stride 32 B) = sc·Σ_k A[k][m]·B[k] for m < 4: A[k] four floats (aStep bytes
 * apart, splat on load), B two vectors (32 B per k); sc the f32 at scp (scp = 0: 1; a pointer, not
 * an f32 argument, which would hold a 16th xmm register through the loop and spill). mx ≠ 0: the
 * lane-wise max of the 4 rows is merged into mx[0..8) too (scores: saves a pass over the block).
 */
@inline function tile4x8(ap: usize, aStep: usize, bp: usize, n: i32, out: usize, scp: usize, mx: usize): void {
  const z = f32x4.splat(0);
  let c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  const bEnd = bp + <usize>n * 32;
  while (bp < bEnd) {
    const b0 = v128.load(bp), b1 = v128.load(bp, 16);
    let a = v128.load32_splat(ap);
    c00 = madd<f32>(a, b0, c00);
    c01 = madd<f32>(a, b1, c01);
    a = v128.load32_splat(ap, 4);
    c10 = madd<f32>(a, b0, c10);
    c11 = madd<f32>(a, b1, c11);
    a = v128.load32_splat(ap, 8);
    c20 = madd<f32>(a, b0, c20);
    c21 = madd<f32>(a, b1, c21);
    a = v128.load32_splat(ap, 12);
    c30 = madd<f32>(a, b0, c30);
    c31 = madd<f32>(a, b1, c31);
    ap += aStep;
    bp += 32;
  }
  if (scp != 0) {
    const s = v128.load32_splat(scp);
    c00 = f32x4.mul(c00, s);
    c01 = f32x4.mul(c01, s);
    c10 = f32x4.mul(c10, s);
    c11 = f32x4.mul(c11, s);
    c20 = f32x4.mul(c20, s);
    c21 = f32x4.mul(c21, s);
    c30 = f32x4.mul(c30, s);
    c31 = f32x4.mul(c31, s);
  }
  v128.store(out, c00);
  v128.store(out, c01, 16);
  v128.store(out, c10, 32);
  v128.store(out, c11, 48);
  v128.store(out, c20, 64);
  v128.store(out, c21, 80);
  v128.store(out, c30, 96);
  v128.store(out, c31, 112);
  if (mx != 0) {
    v128.store(mx, f32x4.max(v128.load(mx), f32x4.max(f32x4.max(c00, c10), f32x4.max(c20, c30))));
    v128.store(mx, f32x4.max(v128.load(mx, 16), f32x4.max(f32x4.max(c01, c11), f32x4.max(c21, c31))), 16);
  }
}

/** C[m][0..8] += Σ_{r<8} P[m][r]·B[r][0..8] for a 4 × 8 tile of C (row stride ldcB bytes); P key-major (32 B per key), B rows ldbB bytes apart. */
function rank8x8(p: usize, b: usize, ldbB: usize, c: usize, ldcB: usize): void {
  let c00 = v128.load(c), c01 = v128.load(c, 16), c10 = v128.load(c + ldcB), c11 = v128.load(c + ldcB, 16);
  let c20 = v128.load(c + 2 * ldcB), c21 = v128.load(c + 2 * ldcB, 16), c30 = v128.load(c + 3 * ldcB), c31 = v128.load(c + 3 * ldcB, 16);
  const pEnd = p + 32;
  while (p < pEnd) {
    const b0 = v128.load(b), b1 = v128.load(b, 16);
    let a = v128.load32_splat(p);
    c00 = madd<f32>(a, b0, c00);
    c01 = madd<f32>(a, b1, c01);
    a = v128.load32_splat(p + 32);
    c10 = madd<f32>(a, b0, c10);
    c11 = madd<f32>(a, b1, c11);
    a = v128.load32_splat(p + 64);
    c20 = madd<f32>(a, b0, c20);
    c21 = madd<f32>(a, b1, c21);
    a = v128.load32_splat(p + 96);
    c30 = madd<f32>(a, b0, c30);
    c31 = madd<f32>(a, b1, c31);
    p += 4;
    b += ldbB;
  }
  v128.store(c, c00);
  v128.store(c, c01, 16);
  v128.store(c + ldcB, c10);
  v128.store(c + ldcB, c11, 16);
  v128.store(c + 2 * ldcB, c20);
  v128.store(c + 2 * ldcB, c21, 16);
  v128.store(c + 3 * ldcB, c30);
  v128.store(c + 3 * ldcB, c31, 16);
}

/** rank8x8 on a 4 × 4 tile (the last column vector when the width is 4 mod 8). */
function rank8x4(p: usize, b: usize, ldbB: usize, c: usize, ldcB: usize): void {
  let c0 = v128.load(c), c1 = v128.load(c + ldcB), c2 = v128.load(c + 2 * ldcB), c3 = v128.load(c + 3 * ldcB);
  const pEnd = p + 32;
  while (p < pEnd) {
    const b0 = v128.load(b);
    c0 = madd<f32>(v128.load32_splat(p), b0, c0);
    c1 = madd<f32>(v128.load32_splat(p + 32), b0, c1);
    c2 = madd<f32>(v128.load32_splat(p + 64), b0, c2);
    c3 = madd<f32>(v128.load32_splat(p + 96), b0, c3);
    p += 4;
    b += ldbB;
  }
  v128.store(c, c0);
  v128.store(c + ldcB, c1);
  v128.store(c + 2 * ldcB, c2);
  v128.store(c + 3 * ldcB, c3);
}

/** C[j][·] += Σ_r P[j][r]·B[r][·] for keys j < nk (multiple of 4) and w columns (multiple of 4); C rows w apart, B rows w apart. */
function rankUpdate(p: usize, b: usize, c: usize, nk: i32, w: i32): void {
  const wB = fl(w);
  for (let j = 0; j < nk; j += KG) {
    const pj = p + fl(j * QB), cj = c + fl(j * w);
    let cc = 0;
    for (; cc + 8 <= w; cc += 8) rank8x8(pj, b + fl(cc), wB, cj + fl(cc), wB);
    if (cc < w) rank8x4(pj, b + fl(cc), wB, cj + fl(cc), wB);
  }
}

/** The 4×4 transpose of the rows a, b, c, d, into o[0..4) (16 B apart). */
@inline function tr4(a: v128, b: v128, c: v128, d: v128, o: usize): void {
  const t0 = v128.shuffle<f32>(a, b, 0, 4, 1, 5), t1 = v128.shuffle<f32>(a, b, 2, 6, 3, 7);
  const t2 = v128.shuffle<f32>(c, d, 0, 4, 1, 5), t3 = v128.shuffle<f32>(c, d, 2, 6, 3, 7);
  v128.store(o, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
  v128.store(o, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7), 16);
  v128.store(o, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5), 32);
  v128.store(o, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7), 48);
}

/** x [T, c] (row stride ldx, c ≡ 0 mod 4) by key groups: group g holds, per column k, rows 4g..4g+3 (16 B; zero past T). */
function packKeys(dst: usize, x: usize, T: i32, c: i32, ldx: i32): void {
  const z = f32x4.splat(0), ldB = fl(ldx);
  for (let j0 = 0; j0 < T; j0 += KG) {
    const r0 = at<f32>(x, j0 * ldx), n = T - j0;
    for (let k = 0; k < c; k += 4) {
      const p = r0 + fl(k);
      tr4(v128.load(p), n > 1 ? v128.load(p + ldB) : z, n > 2 ? v128.load(p + 2 * ldB) : z, n > 3 ? v128.load(p + 3 * ldB) : z, dst + fl(k * 4));
    }
    dst += fl(c * 4);
  }
}

/** Rows i0.. (rows ≤ 8 valid, row stride ldx) of x [·, c] as q8 [8][c] and qp [c][8] (column-major, for Sᵀ); zero past `rows`; c ≡ 0 mod 4; t: 16 scratch elements. */
function packRows(qp: usize, q8: usize, x: usize, rows: i32, c: i32, ldx: i32, t: usize): void {
  for (let r = 0; r < QB; r++) {
    if (r < rows) memory.copy(q8 + fl(r * c), at<f32>(x, r * ldx), fl(c));
    else memory.fill(q8 + fl(r * c), 0, fl(c));
  }
  for (let k = 0; k < c; k += 4) {
    for (let h = 0; h < QB; h += 4) {
      const p = q8 + fl(h * c + k), cB = fl(c);
      tr4(v128.load(p), v128.load(p + cB), v128.load(p + 2 * cB), v128.load(p + 3 * cB), t);
      for (let m = 0; m < 4; m++) v128.store(qp + fl((k + m) * QB + h), v128.load(t + fl(4 * m)));
    }
  }
}

/**
 * Writes a 4-column × 8-row micro-tile (tile[m][r], the transposed result of columns c0..c0+3)
 * into rows r < rows of dst (row stride ldB bytes), row r multiplied by f[r] (f = 0: by 1).
 */
function scatterRows(tile: usize, dst: usize, ldB: usize, rows: i32, f: usize, t: usize): void {
  for (let h = 0; h < QB; h += 4) {
    tr4(v128.load(tile + fl(h)), v128.load(tile + fl(QB + h)), v128.load(tile + fl(2 * QB + h)), v128.load(tile + fl(3 * QB + h)), t);
    for (let rr = 0; rr < 4; rr++) {
      const r = h + rr;
      if (r >= rows) return;
      const v = v128.load(t + fl(4 * rr));
      v128.store(dst + <usize>r * ldB, f == 0 ? v : f32x4.mul(v128.load32_splat(f + fl(r)), v));
    }
  }
}

/** Lanes r of the mask rows' key j (rows mr[r] pointers, 4 at mr): the additive mask of 4 rows. */
@inline function maskLanes(mr: usize, j: i32): v128 {
  let v = f32x4.splat(ld<f32>(load<usize>(mr), j));
  v = f32x4.replace_lane(v, 1, ld<f32>(load<usize>(mr, sizeof<usize>()), j));
  v = f32x4.replace_lane(v, 2, ld<f32>(load<usize>(mr, 2 * sizeof<usize>()), j));
  return f32x4.replace_lane(v, 3, ld<f32>(load<usize>(mr, 3 * sizeof<usize>()), j));
}

/**
 * Scores of one block's keys [j0, jG) in place (S key-major, already scaled): + mask, −∞ where a
 * key is past Tk or (causal) past the row; mr: 8 mask row pointers (0: no mask); i0 the block's
 * first row. Their lane-wise maxima are merged into mx[0..8) (lane r = row r).
 */
function scoreBlock(S: usize, j0: i32, jG: i32, Tk: i32, causal: i32, i0: i32, mr: usize, mx: usize): void {
  const ninf = f32x4.splat(-Infinity);
  let mLo = v128.load(mx), mHi = v128.load(mx, 16);
  const iLo = i32x4.add(i32x4.splat(i0), i32x4(0, 1, 2, 3)), iHi = i32x4.add(iLo, i32x4.splat(4));
  const jA = causal != 0 ? min(i0, Tk) : Tk; // keys every row of the block sees
  for (let j = j0; j < jG; j++) {
    const p = S + fl(j * QB);
    let lo = v128.load(p), hi = v128.load(p, 16);
    if (mr != 0 && j < Tk) {
      lo = f32x4.add(lo, maskLanes(mr, j));
      hi = f32x4.add(hi, maskLanes(mr + 4 * sizeof<usize>(), j));
    }
    if (j >= jA) {
      const jv = i32x4.splat(j), inK = i32x4.splat(j < Tk ? -1 : 0);
      const vLo = causal != 0 ? v128.and(inK, i32x4.le_s(jv, iLo)) : inK;
      const vHi = causal != 0 ? v128.and(inK, i32x4.le_s(jv, iHi)) : inK;
      lo = v128.bitselect(lo, ninf, vLo);
      hi = v128.bitselect(hi, ninf, vHi);
    }
    v128.store(p, lo);
    v128.store(p, hi, 16);
    mLo = f32x4.max(mLo, lo);
    mHi = f32x4.max(mHi, hi);
  }
  v128.store(mx, mLo);
  v128.store(mx, mHi, 16);
}

/** Sᵀ = scale·K Qᵀ for keys [0, jG) of a block, then scoreBlock from the first key group it must see (with a mask: all); row maxima into mx[0..8), mx[8] scratch. */
function scores(S: usize, Kb: usize, Qp: usize, d: i32, jG: i32, Tk: i32, scale: f32, causal: i32, i0: i32, mr: usize, mx: usize): void {
  const jS = mr != 0 ? 0 : min(causal != 0 ? min(i0, Tk) : Tk, jG) & ~(KG - 1); // groups before jS: every key valid for every row
  const ninf = f32x4.splat(-Infinity);
  v128.store(mx, ninf);
  v128.store(mx, ninf, 16);
  store<f32>(mx, scale, 32);
  for (let j = 0; j < jG; j += KG) tile4x8(Kb + fl(j * d), 16, Qp, d, S + fl(j * QB), mx + 32, j < jS ? mx : 0);
  scoreBlock(S, jS, jG, Tk, causal, i0, mr, mx);
}

/** The 8 mask row pointers of block rows i0.. (rows past Tq repeat the last valid one) into mr; 0 without a mask. */
function maskRows(mr: usize, mask: usize, n: i32, i0: i32, rows: i32, g: usize): usize {
  if (mask == 0) return 0;
  const mdiv = load<i32>(g, 20), mmod = load<i32>(g, 24), mstride = load<i32>(g, 28), mrow = load<i32>(g, 32);
  for (let r = 0; r < QB; r++) store<usize>(mr + <usize>r * sizeof<usize>(), at<f32>(mask, ((n / mdiv) % mmod) * mstride + (i0 + min(r, rows - 1)) * mrow));
  return mr;
}

// Scratch (f32 elements; attention.ts's JS side reserves the same): forward
// T4·(d + 8) + 16·d + 96, backward T4·(2·d + 2·dv + 16) + 16·(d + dv) + 80, T4 = Tk rounded up to 4.

/** attention_f32's fast path (no dropout, d ≡ dv ≡ 0 mod 4); g: the geometry block. */
export function attnFwdF32(q: usize, k: usize, v: usize, mask: usize, y: usize, n0: i32, n1: i32, g: usize, scale: f32, scratch: usize): void {
  const Tq = load<i32>(g), Tk = load<i32>(g, 4), d = load<i32>(g, 8), dv = load<i32>(g, 12), causal = load<i32>(g, 16);
  const T4 = ru4(Tk);
  const Kb = scratch, S = Kb + fl(T4 * d), Qp = S + fl(QB * T4), Q8 = Qp + fl(QB * d), tile = Q8 + fl(QB * d), misc = tile + fl(32);
  const mr = misc, st8 = misc + 64, inv = st8 + 64, t16 = inv + 32; // 8 mask row pointers; row statistics; 1/l; transpose scratch
  for (let n = n0; n < n1; n++) {
    const vn = at<f32>(v, n * Tk * dv);
    packKeys(Kb, at<f32>(k, n * Tk * d), Tk, d, d);
    for (let i0 = 0; i0 < Tq; i0 += QB) {
      const rows = min(QB, Tq - i0);
      const jG = ru4(causal != 0 ? min(Tk, i0 + QB) : Tk);
      packRows(Qp, Q8, at<f32>(q, (n * Tq + i0) * d), rows, d, d, t16);
      scores(S, Kb, Qp, d, jG, Tk, scale, causal, i0, maskRows(mr, mask, n, i0, rows, g), st8 + 32); // Sᵀ = scale·K Qᵀ (+ mask)
      const ninf = f32x4.splat(-Infinity), zero = f32x4.splat(0);
      let mLo = v128.load(st8, 32), mHi = v128.load(st8, 48);
      mLo = v128.bitselect(zero, mLo, f32x4.eq(mLo, ninf)); // a fully masked row: weights e^{−∞} = 0
      mHi = v128.bitselect(zero, mHi, f32x4.eq(mHi, ninf));
      let lLo = zero, lHi = zero;
      for (let j = 0; j < jG; j++) {
        const p = S + fl(j * QB);
        const eLo = expw(f32x4.sub(v128.load(p), mLo)), eHi = expw(f32x4.sub(v128.load(p, 16), mHi));
        v128.store(p, eLo);
        v128.store(p, eHi, 16);
        lLo = f32x4.add(lLo, eLo);
        lHi = f32x4.add(lHi, eHi);
      }
      // Row statistics: st8[0..8) l, st8[8..16) m, lane r = row r.
      v128.store(st8, lLo);
      v128.store(st8, lHi, 16);
      v128.store(st8, mLo, 32);
      v128.store(st8, mHi, 48);
      for (let r = 0; r < QB; r++) {
        const l = ld<f32>(st8, r);
        st<f32>(inv, r, l != 0 ? <f32>1 / l : 0); // 0 only for a fully masked row: a NaN l (NaN or +∞ scores) stays NaN
      }
      const jK = min(jG, Tk); // the weights past Tk are 0: V's rows stop at Tk
      for (let c0 = 0; c0 < dv; c0 += 4) {
        tile4x8(vn + fl(c0), fl(dv), S, jK, tile, 0, 0); // Oᵀ = Vᵀ Pᵀ, columns c0..c0+3
        scatterRows(tile, at<f32>(y, (n * Tq + i0) * (dv + 1) + c0), fl(dv + 1), rows, inv, t16);
      }
      for (let r = 0; r < rows; r++) {
        const l = ld<f32>(st8, r);
        st<f32>(y, (n * Tq + i0 + r) * (dv + 1) + dv, l != 0 ? ld<f32>(st8, 8 + r) + log_s<f32>(l) : <f32>-Infinity);
      }
    }
  }
}

/** Σ_c x[c]·y[c] over n ≡ 0 mod 4 elements (lane partials, fixed fold). */
@inline function dot4(x: usize, y: usize, n: i32): f32 {
  let acc = f32x4.splat(0);
  for (let c = 0; c < n; c += 4) acc = f32x4.add(acc, f32x4.mul(v128.load(x + fl(c)), v128.load(y + fl(c))));
  return (f32x4.extract_lane(acc, 0) + f32x4.extract_lane(acc, 1)) + (f32x4.extract_lane(acc, 2) + f32x4.extract_lane(acc, 3));
}

/** Per-row backward statistics of block rows i0.. into st8: lse (+∞ for padding and fully masked rows), D = do·o, gl. */
function rowStats(st8: usize, y: usize, gy: usize, row0: i32, rows: i32, dv: i32): void {
  for (let r = 0; r < QB; r++) {
    const yi = at<f32>(y, (row0 + r) * (dv + 1)), gi = at<f32>(gy, (row0 + r) * (dv + 1));
    const lse: f32 = r < rows ? ld<f32>(yi, dv) : <f32>Infinity;
    st<f32>(st8, r, lse == <f32>-Infinity ? <f32>Infinity : lse);
    st<f32>(st8, 8 + r, r < rows ? dot4(gi, yi, dv) : 0);
    st<f32>(st8, 16 + r, r < rows ? ld<f32>(gi, dv) : 0);
  }
}

/** S (scores) → P = e^{s − lse} and dP → dS = scale·P·(dP − D + gl), key-major, keys [0, jG). */
function softmaxVjpBlock(S: usize, dP: usize, jG: i32, st8: usize, scale: f32): void {
  const lseLo = v128.load(st8), lseHi = v128.load(st8, 16), DLo = v128.load(st8, 32), DHi = v128.load(st8, 48);
  const gLo = v128.load(st8, 64), gHi = v128.load(st8, 80), sc = f32x4.splat(scale);
  for (let j = 0; j < jG; j++) {
    const p = S + fl(j * QB), q = dP + fl(j * QB);
    const pLo = expw(f32x4.sub(v128.load(p), lseLo)), pHi = expw(f32x4.sub(v128.load(p, 16), lseHi));
    v128.store(p, pLo);
    v128.store(p, pHi, 16);
    v128.store(q, f32x4.mul(f32x4.mul(pLo, f32x4.add(f32x4.sub(v128.load(q), DLo), gLo)), sc));
    v128.store(q, f32x4.mul(f32x4.mul(pHi, f32x4.add(f32x4.sub(v128.load(q, 16), DHi), gHi)), sc), 16);
  }
}

/** attention_vjp_f32's fast path: dq, dk, dv for heads [n0, n1). */
export function attnBwdF32(q: usize, k: usize, v: usize, mask: usize, y: usize, gy: usize, dq: usize, dk: usize, dvv: usize,
  n0: i32, n1: i32, g: usize, scale: f32, scratch: usize): void {
  const Tq = load<i32>(g), Tk = load<i32>(g, 4), d = load<i32>(g, 8), dv = load<i32>(g, 12), causal = load<i32>(g, 16);
  const T4 = ru4(Tk);
  const Kb = scratch, Vb = Kb + fl(T4 * d), dK = Vb + fl(T4 * dv), dV = dK + fl(T4 * d);
  const S = dV + fl(T4 * dv), dP = S + fl(QB * T4), Qp = dP + fl(QB * T4), Q8 = Qp + fl(QB * d), Op = Q8 + fl(QB * d), O8 = Op + fl(QB * dv);
  const tile = O8 + fl(QB * dv), st8 = tile + fl(32), mr = st8 + fl(24), t16 = mr + fl(8);
  for (let n = n0; n < n1; n++) {
    const kn = at<f32>(k, n * Tk * d), vn = at<f32>(v, n * Tk * dv);
    packKeys(Kb, kn, Tk, d, d);
    packKeys(Vb, vn, Tk, dv, dv);
    memory.fill(dK, 0, fl(T4 * (d + dv)));
    for (let i0 = 0; i0 < Tq; i0 += QB) {
      const rows = min(QB, Tq - i0), row0 = n * Tq + i0;
      const jG = ru4(causal != 0 ? min(Tk, i0 + QB) : Tk);
      packRows(Qp, Q8, at<f32>(q, row0 * d), rows, d, d, t16);
      packRows(Op, O8, at<f32>(gy, row0 * (dv + 1)), rows, dv, dv + 1, t16);
      scores(S, Kb, Qp, d, jG, Tk, scale, causal, i0, maskRows(mr, mask, n, i0, rows, g), tile); // Sᵀ = scale·K Qᵀ (+ mask)
      for (let j = 0; j < jG; j += KG) tile4x8(Vb + fl(j * dv), 16, Op, dv, dP + fl(j * QB), 0, 0); // dPᵀ = V dOᵀ
      rowStats(st8, y, gy, row0, rows, dv);
      softmaxVjpBlock(S, dP, jG, st8, scale);
      const jK = min(jG, Tk); // dS past Tk is 0: K's rows stop at Tk
      for (let c0 = 0; c0 < d; c0 += 4) {
        tile4x8(kn + fl(c0), fl(d), dP, jK, tile, 0, 0); // dQᵀ = Kᵀ dSᵀ, columns c0..c0+3
        scatterRows(tile, at<f32>(dq, row0 * d + c0), fl(d), rows, 0, t16);
      }
      rankUpdate(S, O8, dV, jG, dv); // dV += Pᵀ dO
      rankUpdate(dP, Q8, dK, jG, d); // dK += dSᵀ Q
    }
    memory.copy(at<f32>(dk, n * Tk * d), dK, fl(Tk * d));
    memory.copy(at<f32>(dvv, n * Tk * dv), dV, fl(Tk * dv));
  }
}
