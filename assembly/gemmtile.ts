// The GEMM's register tile, shared by matmul.ts and the recurrent layers (rnn.ts, which multiply
// by one weight matrix T times and so pack it once): block sizes, the packing of op(A) and op(B)
// into micro-kernel slivers, and the micro-kernel over a packed block. Inline helpers only: no
// kernel exports here (this file is not re-exported by index.ts).
import { madd } from './madd';

/** Rows of C per micro-tile: 4 (kernel_4x2v) in the default build, 6 (kernel_6x2v) in the relaxed one. */
export const MR: i32 = ASC_FEATURE_RELAXED_SIMD ? 6 : 4;
/** v128 vectors of C per micro-tile row; NR = NRV * lanes (8 f32 or 4 f64 columns). */
export const NRV: i32 = 2;
/** Depth of one packed block. Fixes the summation order, so it never adapts to the scratch size. */
export const KC: i32 = 256;

@inline export function nrOf<T>(): i32 { return NRV * <i32>(16 / sizeof<T>()); }
@inline export function imin(a: i32, b: i32): i32 { return a < b ? a : b; }
@inline export function roundUp(x: i32, m: i32): i32 { return (x + m - 1) / m * m; }
/** Byte offset of element (i, j) of a matrix with element strides (rs, cs). */
@inline export function off<T>(i: i32, j: i32, rs: i32, cs: i32): usize {
  return (<usize>i * <usize>rs + <usize>j * <usize>cs) * sizeof<T>();
}


/** Runs the micro-kernel over an m×n block of C from packed A (m rows) and B (n cols) of depth kc; edge tiles go through `tile` (MR×NR scratch; slivers of ≤ NR/2 columns computed one vector wide) and are merged into C. */
export function macro_tile<T>(ap: usize, bp: usize, c: usize, ldc: i32, m: i32, n: i32, kc: i32, overwrite: bool, tile: usize): void {
  const S = <i32>sizeof<T>(), nr = nrOf<T>();
  const ldcB = <usize>ldc * S;
  for (let jr = 0; jr < n; jr += nr) {
    const nn = imin(nr, n - jr);
    const bs = bp + <usize>(jr * kc * S);
    for (let ir = 0; ir < m; ir += MR) {
      const mm = imin(MR, m - ir);
      const as = ap + <usize>(ir * kc * 16);
      const ct = c + off<T>(ir, jr, ldc, 1);
      if (mm == MR && nn == nr) {
        if (ASC_FEATURE_RELAXED_SIMD && !overwrite) {
          kernel_6x2v<T>(kc, as, bs, tile, <usize>(nr * S));
          add_tile<T>(tile, ct, ldcB);
        } else {
          micro_kernel<T>(kc, as, bs, ct, ldcB, overwrite);
        }
      } else {
        if (nn <= nr / 2) kernel_x1v<T>(kc, as, bs, tile, <usize>(nr * S));
        else micro_kernel<T>(kc, as, bs, tile, <usize>(nr * S), true);
        merge_edge<T>(tile, nr, ct, ldc, mm, nn, overwrite);
      }
    }
  }
}

/** The build's MR×NR micro-kernel (one branch per build: ASC_FEATURE_RELAXED_SIMD is a compile-time constant). */
@inline function micro_kernel<T>(kc: i32, ap: usize, bp: usize, c: usize, ldcB: usize, overwrite: bool): void {
  if (ASC_FEATURE_RELAXED_SIMD) kernel_6x2v<T>(kc, ap, bp, c, ldcB);
  else kernel_4x2v<T>(kc, ap, bp, c, ldcB, overwrite);
}

/** Micro-kernel, 4 rows × 2 vectors (4×8 f32 / 4×4 f64): C tile = acc or C + acc, acc[r] = Σ_k Ap[k][r] · Bp[k], Ap pre-broadcast. ldcB in bytes. */
// 8 accumulators + 2 B + 4 A + 1 product = 15 xmm, exactly V8's budget: V8 hoists all loads of an
// iteration, so 6×2v, 4×3v or unrolling k by 2 spill and run ~40% slower (measured).
export function kernel_4x2v<T>(kc: i32, ap: usize, bp: usize, c: usize, ldcB: usize, overwrite: bool): void {
  const z = v128.splat<T>(<T>0);
  let c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  const bEnd = bp + <usize>kc * 32; // end pointer instead of a counter: one instruction less per k
  while (bp < bEnd) {
    const b0 = v128.load(bp), b1 = v128.load(bp, 16);
    let a = v128.load(ap);
    c00 = madd<T>(a, b0, c00);
    c01 = madd<T>(a, b1, c01);
    a = v128.load(ap, 16);
    c10 = madd<T>(a, b0, c10);
    c11 = madd<T>(a, b1, c11);
    a = v128.load(ap, 32);
    c20 = madd<T>(a, b0, c20);
    c21 = madd<T>(a, b1, c21);
    a = v128.load(ap, 48);
    c30 = madd<T>(a, b0, c30);
    c31 = madd<T>(a, b1, c31);
    ap += 64;
    bp += 32;
  }
  store_row<T>(c, c00, c01, overwrite);
  store_row<T>(c + ldcB, c10, c11, overwrite);
  store_row<T>(c + 2 * ldcB, c20, c21, overwrite);
  store_row<T>(c + 3 * ldcB, c30, c31, overwrite);
}

/** Edge micro-kernel for a B sliver of at most NR/2 columns (its upper half zero padding): the first vector of each of the MR rows of the tile at c (overwrite), the same sums as the full kernels' first vector. */
function kernel_x1v<T>(kc: i32, ap: usize, bp: usize, c: usize, ldcB: usize): void {
  const z = v128.splat<T>(<T>0);
  let c0 = z, c1 = z, c2 = z, c3 = z, c4 = z, c5 = z;
  const bEnd = bp + <usize>kc * 32;
  while (bp < bEnd) {
    const b = v128.load(bp);
    c0 = madd<T>(v128.load(ap), b, c0);
    c1 = madd<T>(v128.load(ap, 16), b, c1);
    c2 = madd<T>(v128.load(ap, 32), b, c2);
    c3 = madd<T>(v128.load(ap, 48), b, c3);
    if (MR == 6) {
      c4 = madd<T>(v128.load(ap, 64), b, c4);
      c5 = madd<T>(v128.load(ap, 80), b, c5);
    }
    ap += <usize>(MR * 16);
    bp += 32;
  }
  v128.store(c, c0);
  v128.store(c + ldcB, c1);
  v128.store(c + 2 * ldcB, c2);
  v128.store(c + 3 * ldcB, c3);
  if (MR == 6) {
    v128.store(c + 4 * ldcB, c4);
    v128.store(c + 5 * ldcB, c5);
  }
}

/** Relaxed build's micro-kernel, 6 rows × 2 vectors (6×8 f32 / 6×4 f64): C tile = acc (overwrite only: macro_tile adds to C with add_tile), acc as in kernel_4x2v. */
// A fused multiply-add needs no product register, so 12 accumulators + 2 B + 1 A fill V8's 15 xmm,
// and 12 independent chains hide the 4-cycle FMA latency on 2 FMA pipes (8 chains are just enough,
// and any stall costs). V8 keeps this loop's loads next to their uses, without spills, only while
// the function loads nothing after the loop (C + acc here made it hoist all 8 loads and spill 4
// accumulators: half speed, seen with --print-wasm-code); hence no accumulate mode. Only the
// relaxed build compiles it: with mul+add, 12 accumulators + a product register spill.
export function kernel_6x2v<T>(kc: i32, ap: usize, bp: usize, c: usize, ldcB: usize): void {
  const z = v128.splat<T>(<T>0);
  let c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
  const bEnd = bp + <usize>kc * 32;
  while (bp < bEnd) {
    const b0 = v128.load(bp), b1 = v128.load(bp, 16);
    let a = v128.load(ap);
    c00 = madd<T>(a, b0, c00);
    c01 = madd<T>(a, b1, c01);
    a = v128.load(ap, 16);
    c10 = madd<T>(a, b0, c10);
    c11 = madd<T>(a, b1, c11);
    a = v128.load(ap, 32);
    c20 = madd<T>(a, b0, c20);
    c21 = madd<T>(a, b1, c21);
    a = v128.load(ap, 48);
    c30 = madd<T>(a, b0, c30);
    c31 = madd<T>(a, b1, c31);
    a = v128.load(ap, 64);
    c40 = madd<T>(a, b0, c40);
    c41 = madd<T>(a, b1, c41);
    a = v128.load(ap, 80);
    c50 = madd<T>(a, b0, c50);
    c51 = madd<T>(a, b1, c51);
    ap += 96;
    bp += 32;
  }
  store_row<T>(c, c00, c01, true);
  store_row<T>(c + ldcB, c10, c11, true);
  store_row<T>(c + 2 * ldcB, c20, c21, true);
  store_row<T>(c + 3 * ldcB, c30, c31, true);
  store_row<T>(c + 4 * ldcB, c40, c41, true);
  store_row<T>(c + 5 * ldcB, c50, c51, true);
}

/** C[0:MR, 0:NR] = C + t (t an MR×NR tile, row stride NR): kernel_6x2v's accumulate mode, the same sums as store_row's. */
function add_tile<T>(t: usize, c: usize, ldcB: usize): void {
  for (let r = 0; r < MR; r++) {
    v128.store(c, v128.add<T>(v128.load(c), v128.load(t)));
    v128.store(c, v128.add<T>(v128.load(c, 16), v128.load(t, 16)), 16);
    t += 32;
    c += ldcB;
  }
}

/** Writes two accumulator vectors to a C row: overwrite, or add to what is there (C + acc). */
@inline export function store_row<T>(c: usize, v0: v128, v1: v128, overwrite: bool): void {
  if (!overwrite) {
    v0 = v128.add<T>(v128.load(c), v0);
    v1 = v128.add<T>(v128.load(c, 16), v1);
  }
  v128.store(c, v0);
  v128.store(c, v1, 16);
}

/** Copies the valid m×n corner of an edge tile (row stride ldt) into C with the same overwrite/add rule as full tiles. */
export function merge_edge<T>(t: usize, ldt: i32, c: usize, ldc: i32, m: i32, n: i32, overwrite: bool): void {
  if (n == nrOf<T>()) {
    // Full rows (an edge in M only): store_row's vector ops, the same sums.
    for (let i = 0; i < m; i++) store_row<T>(c + off<T>(i, 0, ldc, 1), v128.load(t + off<T>(i, 0, ldt, 1)), v128.load(t + off<T>(i, 0, ldt, 1), 16), overwrite);
    return;
  }
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      const v = load<T>(t + off<T>(i, j, ldt, 1));
      const p = c + off<T>(i, j, ldc, 1);
      store<T>(p, overwrite ? v : load<T>(p) + v);
    }
  }
}

/** Packs op(A)[0:m, 0:kc] (element strides rs, cs) into MR-row slivers of pre-broadcast elements: sliver s at dst + s*MR*kc*16 holds, per k, MR v128 splats of rows s*MR.., zero past m. */
export function pack_a<T>(dst: usize, a: usize, rs: i32, cs: i32, m: i32, kc: i32): void {
  const S = sizeof<T>();
  const rsB = <usize>rs * S, csB = <usize>cs * S;
  let i = 0;
  if (rs == 1) {
    // Stored transposed (the MR rows of a k are contiguous): four slivers per pass, so each k's
    // source line is read once rather than once per sliver (kc lines lda apart alias in L1).
    const sl = <usize>(MR * kc * 16);
    for (; i + 4 * MR <= m; i += 4 * MR) {
      let p = a + off<T>(i, 0, rs, cs), d = dst;
      for (let k = 0; k < kc; k++) {
        for (let g: usize = 0; g < 4; g++) splat_rows<T>(d + g * sl, p + g * <usize>MR * S, <usize>S);
        d += <usize>(MR * 16);
        p += csB;
      }
      dst += 4 * sl;
    }
  }
  for (; i < m; i += MR) {
    const rows = imin(MR, m - i);
    let p = a + off<T>(i, 0, rs, cs);
    if (rows == MR) {
      for (let k = 0; k < kc; k++) {
        splat_rows<T>(dst, p, rsB);
        dst += <usize>(MR * 16);
        p += csB;
      }
    } else {
      for (let k = 0; k < kc; k++) {
        for (let r = 0; r < MR; r++) {
          const v = r < rows ? load<T>(p + <usize>r * rsB) : <T>0;
          v128.store(dst + <usize>r * 16, v128.splat<T>(v));
        }
        dst += <usize>(MR * 16);
        p += csB;
      }
    }
  }
}

/** One k of a pre-broadcast sliver: the MR elements at p, rsB bytes apart, as MR v128 splats at d. */
@inline function splat_rows<T>(d: usize, p: usize, rsB: usize): void {
  v128.store(d, v128.splat<T>(load<T>(p)));
  v128.store(d, v128.splat<T>(load<T>(p + rsB)), 16);
  v128.store(d, v128.splat<T>(load<T>(p + 2 * rsB)), 32);
  v128.store(d, v128.splat<T>(load<T>(p + 3 * rsB)), 48);
  if (MR == 6) {
    v128.store(d, v128.splat<T>(load<T>(p + 4 * rsB)), 64);
    v128.store(d, v128.splat<T>(load<T>(p + 5 * rsB)), 80);
  }
}

/** Packs op(B)[0:kc, 0:n] (element strides rs, cs) into NR-column slivers: sliver s at dst + s*NR*kc holds, per k, columns s*NR..s*NR+NR-1, zero-padded past n. */
export function pack_b<T>(dst: usize, b: usize, rs: i32, cs: i32, kc: i32, n: i32): void {
  const S = sizeof<T>(), nr = nrOf<T>();
  const rsB = <usize>rs * S, csB = <usize>cs * S;
  for (let j = 0; j < n; j += nr) {
    const cols = imin(nr, n - j);
    let p = b + off<T>(0, j, rs, cs);
    if (cols == nr && cs == 1) {
      // Row-major op(B): the NR values of one k are two contiguous vectors.
      for (let k = 0; k < kc; k++) {
        v128.store(dst, v128.load(p));
        v128.store(dst, v128.load(p, 16), 16);
        dst += 32;
        p += rsB;
      }
    } else if (cols == nr && sizeof<T>() == 4 && rs == 1) {
      packColsT4(dst, p, csB, kc);
      dst += <usize>(nr * kc) * S;
    } else if (cols == nr) {
      // transB: each column is contiguous along k; walk columns outer so reads stream.
      for (let jj = 0; jj < nr; jj++) {
        let q = p + <usize>jj * csB, d = dst + <usize>jj * S;
        for (let k = 0; k < kc; k++) {
          store<T>(d, load<T>(q));
          q += rsB;
          d += <usize>nr * S;
        }
      }
      dst += <usize>(nr * kc) * S;
    } else {
      for (let k = 0; k < kc; k++) {
        for (let jj = 0; jj < nr; jj++) {
          store<T>(dst + <usize>jj * S, jj < cols ? load<T>(p + <usize>jj * csB) : <T>0);
        }
        dst += <usize>nr * S;
        p += rsB;
      }
    }
  }
}

/**
 * One full f32 sliver of a transposed op(B) (each column contiguous along k, columns csB bytes
 * apart): 4×4 blocks (four columns × four k) loaded as vectors and transposed with shuffles,
 * instead of one scalar store per element (dX = dY·Wᵀ packs a whole weight matrix this way).
 * A copy: the packed values are the same as the scalar path's.
 */
function packColsT4(dst: usize, p: usize, csB: usize, kc: i32): void {
  const row = <usize>nrOf<f32>() * 4; // bytes per k in the sliver
  let k = 0;
  for (; k + 4 <= kc; k += 4) {
    const d = dst + <usize>k * row, q = p + <usize>k * 4;
    for (let g = 0; g < 2; g++) {
      const c = q + <usize>(4 * g) * csB;
      const r0 = v128.load(c), r1 = v128.load(c + csB), r2 = v128.load(c + 2 * csB), r3 = v128.load(c + 3 * csB);
      const t0 = v128.shuffle<f32>(r0, r1, 0, 4, 1, 5), t1 = v128.shuffle<f32>(r0, r1, 2, 6, 3, 7);
      const t2 = v128.shuffle<f32>(r2, r3, 0, 4, 1, 5), t3 = v128.shuffle<f32>(r2, r3, 2, 6, 3, 7);
      const o = d + <usize>(16 * g);
      v128.store(o, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
      v128.store(o + row, v128.shuffle<f32>(t0, t2, 2, 3, 6, 7));
      v128.store(o + 2 * row, v128.shuffle<f32>(t1, t3, 0, 1, 4, 5));
      v128.store(o + 3 * row, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7));
    }
  }
  for (; k < kc; k++) {
    for (let jj = 0; jj < nrOf<f32>(); jj++) store<f32>(dst + <usize>k * row + <usize>jj * 4, load<f32>(p + <usize>jj * csB + <usize>k * 4));
  }
}
