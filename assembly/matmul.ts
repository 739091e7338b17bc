// GEMM kernels: C (+)= op(A)·op(B) for f32 and f64, written once over T.
//
// Design (Goto/BLIS style): op(B) is packed into NR-column slivers and op(A) into MR-row slivers
// of depth ≤ KC inside a caller-provided scratch region, so the register-blocked micro-kernel
// streams both operands contiguously whatever the transposition, and the packed blocks stay in
// cache across the loops that reuse them. Packed A holds every element pre-broadcast to a full
// v128: V8 folds constant offsets into v128.load addressing but not into load_splat, and the
// extra address arithmetic in the 4-cycle inner loop cost ~15% (measured); the 4× larger A block
// is why MC is small.
//
// Kernels never allocate: JS reserves the scratch region once (gemm_scratch_bytes(2**30, 2**30,
// 2**30, 8) bytes, ~1.3 MB, fits every call) and registers it with gemm_set_scratch. Without
// (enough) scratch an unpacked scalar path runs instead, with the SAME per-element summation
// order, so results are bit-identical either way.
//
// Summation order of every C element: for each K block of KC (ascending), acc = 0, then
// acc = acc + a·b for k ascending (separate mul and add, no FMA), then C = acc (first block when
// not accumulating) or C = C + acc. It depends only on (M, N, K, transA, transB) — never on the
// scratch size, the MC/NC blocking or the engine. The relaxed build (madd.ts) fuses acc + a·b
// into one rounding where the engine has FMA, in the same order, on both paths.
//
// gemm_bias_act adds an epilogue (epilogue.ts's biasAct): once a C block's last K block is stored,
// while the block is still in cache, C = act(C + bias) — the bias added to the finished sum,
// one rounding, exactly as a separate add would, then the unary kernel's activation. gemm_sgd's
// epilogue (epilogue.ts's sgdStep) instead treats the finished block as a parameter's gradient
// and applies the plain SGD update to the same block of the parameter.
import { biasAct, sgdStep, EPI_SGD } from './epilogue';
import { maddScalar } from './madd';
import { MR, NRV, KC, nrOf, imin, roundUp, off, macro_tile, pack_a, pack_b } from './gemmtile';

/** Rows of op(A) packed at once (multiple of MR: 64 default, 72 relaxed): the pre-broadcast MC×KC block (256 or 288 KB) stays L2-resident while every B sliver streams past it. */
const MC: i32 = ASC_FEATURE_RELAXED_SIMD ? 72 : 64;
/** Max columns of op(B) packed at once (multiple of NR); shrinks when the scratch region is smaller. */
const NC: i32 = 512;

/** Scratch region registered by JS (byte pointer and size); 0 means unset. */
let scratchPtr: usize = 0;
let scratchBytes: i32 = 0;

/** Scratch bytes for full-speed packing of a gemm of this shape (elemBytes 4 or 8), including 64 B alignment slack; the value for (2^30, 2^30, 2^30, 8) bounds every call. 0 for empty shapes. */
export function gemm_scratch_bytes(M: i32, N: i32, K: i32, elemBytes: i32): i32 {
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  const nr = NRV * (16 / elemBytes);
  const kc = imin(K, KC);
  const lanes = 16 / elemBytes; // packed A is pre-broadcast: one v128 per element
  const elems = roundUp(imin(M, MC), MR) * kc * lanes + kc * roundUp(imin(N, NC), nr) + MR * nr;
  return elems * elemBytes + 64;
}

/** Registers the scratch region [ptr, ptr+bytes) used by gemm_f32/gemm_f64 for packing; bytes = 0 unregisters it. Not reentrant: one gemm at a time. */
export function gemm_set_scratch(ptr: usize, bytes: i32): void {
  scratchPtr = ptr;
  scratchBytes = bytes > 0 ? bytes : 0;
}

/** f32 C[M,N] (+)= op(A)[M,K]·op(B)[K,N]; row-major, strides in elements; transX=1 means X is stored transposed; accumulate=0 overwrites C. C must not alias A or B. Uses the scratch set by gemm_set_scratch when large enough. */
export function gemm_f32(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, accumulate: i32): void {
  gemm<f32>(a, b, c, M, N, K, lda, ldb, ldc, transA, transB, accumulate);
}

/** f64 C[M,N] (+)= op(A)[M,K]·op(B)[K,N]; same contract as gemm_f32. */
export function gemm_f64(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, accumulate: i32): void {
  gemm<f64>(a, b, c, M, N, K, lda, ldb, ldc, transA, transB, accumulate);
}

/** f32 C[M,N] = act(op(A)·op(B) + bias[0:N]) (bias per column; act 0 none, 1 relu, 2 tanh, 3 sigmoid): gemm_f32 with the epilogue; bias must not alias C. */
export function gemm_bias_act_f32(a: usize, b: usize, c: usize, bias: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, act: i32): void {
  gemm<f32>(a, b, c, M, N, K, lda, ldb, ldc, transA, transB, 0, bias, act);
}

/** f64 C[M,N] = act(op(A)·op(B) + bias); same contract as gemm_bias_act_f32. */
export function gemm_bias_act_f64(a: usize, b: usize, c: usize, bias: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, act: i32): void {
  gemm<f64>(a, b, c, M, N, K, lda, ldb, ldc, transA, transB, 0, bias, act);
}

/** f32 C[M,N] = op(A)·op(B), then p[M,N] (row stride ldc) = p − lr·(C + wd·p) on each finished block, as sgd_f32 with momentum 0: a weight gradient's GEMM fused with its SGD step; p must not alias A, B or C. */
export function gemm_sgd_f32(a: usize, b: usize, c: usize, p: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, lr: f64, wd: f64): void {
  gemm<f32>(a, b, c, M, N, K, lda, ldb, ldc, transA, transB, 0, p, EPI_SGD, lr, wd);
}

/** f64 C = op(A)·op(B), then p = p − lr·(C + wd·p); same contract as gemm_sgd_f32. */
export function gemm_sgd_f64(a: usize, b: usize, c: usize, p: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, lr: f64, wd: f64): void {
  gemm<f64>(a, b, c, M, N, K, lda, ldb, ldc, transA, transB, 0, p, EPI_SGD, lr, wd);
}

/** The epilogue on the m×n block of C at cb (row ic, column jc of C): bias + activation, or the SGD step on the same block of p (aux). */
@inline function epilogue<T>(c: usize, cb: usize, ldc: i32, aux: usize, jc: i32, m: i32, n: i32, act: i32, lr: f64, wd: f64): void {
  if (act == EPI_SGD) sgdStep<T>(cb, aux + (cb - c), ldc, m, n, lr, wd);
  else biasAct<T>(cb, ldc, aux + <usize>jc * sizeof<T>(), m, n, act);
}

/** C[M,N] (+)= op(A)·op(B) for T = f32 | f64: normalises transposition into (row, col) element strides and dispatches to the packed or the unpacked path. act ≥ 0 runs the bias epilogue. */
function gemm<T>(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, lda: i32, ldb: i32, ldc: i32, transA: i32, transB: i32, accumulate: i32,
  bias: usize = 0, act: i32 = -1, lr: f64 = 0, wd: f64 = 0): void {
  if (M <= 0 || N <= 0) return;
  const acc = accumulate != 0;
  if (K <= 0) {
    if (!acc) zero_c<T>(c, M, N, ldc);
    if (act >= 0) epilogue<T>(c, c, ldc, bias, 0, M, N, act, lr, wd);
    return;
  }
  // op(X)[i, j] lives at X + (i*rs + j*cs) elements.
  const ars = transA ? 1 : lda, acs = transA ? lda : 1;
  const brs = transB ? 1 : ldb, bcs = transB ? ldb : 1;
  if (!gemm_packed<T>(a, ars, acs, b, brs, bcs, c, ldc, M, N, K, acc, bias, act, lr, wd)) {
    gemm_unpacked<T>(a, ars, acs, b, brs, bcs, c, ldc, M, N, K, acc);
    if (act >= 0) epilogue<T>(c, c, ldc, bias, 0, M, N, act, lr, wd);
  }
}

/** C[M,N] = 0 (K = 0 and not accumulating). */
function zero_c<T>(c: usize, M: i32, N: i32, ldc: i32): void {
  for (let i = 0; i < M; i++) {
    const row = c + off<T>(i, 0, ldc, 1);
    for (let j = 0; j < N; j++) store<T>(row + off<T>(0, j, 0, 1), <T>0);
  }
}

/** Packed path: loops jc (NC) → pc (KC) → ic (MC) around the macro-tile; returns false, computing nothing, when the scratch region cannot hold one A block plus one B sliver. */
function gemm_packed<T>(a: usize, ars: i32, acs: i32, b: usize, brs: i32, bcs: i32, c: usize, ldc: i32, M: i32, N: i32, K: i32, accumulate: bool,
  bias: usize, act: i32, lr: f64, wd: f64): bool {
  if (scratchPtr == 0) return false;
  const S = <i32>sizeof<T>(), nr = nrOf<T>();
  const base = (scratchPtr + 63) & ~(<usize>63); // cache-line aligned packed panels
  const availBytes = <i64>scratchBytes - <i64>(base - scratchPtr);
  const kcMax = imin(K, KC);
  const mc = roundUp(imin(M, MC), MR);
  // Whatever remains after the edge tile and the (pre-broadcast) A block goes to the B panel.
  const rest = availBytes / S - MR * nr - mc * kcMax * (16 / S);
  const ncFit = rest <= 0 ? 0 : <i32>(rest / kcMax / nr) * nr;
  const nc = imin(roundUp(imin(N, NC), nr), ncFit);
  if (nc < nr) return false;
  const tile = base;
  const ap = tile + <usize>(MR * nr * S);
  const bp = ap + <usize>(mc * kcMax * 16);
  for (let jc = 0; jc < N; jc += nc) {
    const ncur = imin(nc, N - jc);
    for (let pc = 0; pc < K; pc += KC) {
      const kc = imin(KC, K - pc);
      const overwrite = pc == 0 && !accumulate;
      const epi = act >= 0 && pc + kc == K; // the block's sums are final after this K block
      pack_b<T>(bp, b + off<T>(pc, jc, brs, bcs), brs, bcs, kc, ncur);
      for (let ic = 0; ic < M; ic += mc) {
        const mcur = imin(mc, M - ic);
        const cb = c + off<T>(ic, jc, ldc, 1);
        pack_a<T>(ap, a + off<T>(ic, pc, ars, acs), ars, acs, mcur, kc);
        macro_tile<T>(ap, bp, cb, ldc, mcur, ncur, kc, overwrite, tile);
        if (epi) epilogue<T>(c, cb, ldc, bias, jc, mcur, ncur, act, lr, wd);
      }
    }
  }
  return true;
}

/** Fallback without scratch: scalar triple loop with exactly the packed path's summation order (K blocks of KC, acc from 0, then C = acc or C + acc), so both paths give identical bits. */
function gemm_unpacked<T>(a: usize, ars: i32, acs: i32, b: usize, brs: i32, bcs: i32, c: usize, ldc: i32, M: i32, N: i32, K: i32, accumulate: bool): void {
  const S = sizeof<T>();
  const acsB = <usize>acs * S, brsB = <usize>brs * S;
  for (let pc = 0; pc < K; pc += KC) {
    const kc = imin(KC, K - pc);
    const overwrite = pc == 0 && !accumulate;
    for (let i = 0; i < M; i++) {
      for (let j = 0; j < N; j++) {
        let pa = a + off<T>(i, pc, ars, acs), pb = b + off<T>(pc, j, brs, bcs);
        let acc = <T>0;
        for (let k = 0; k < kc; k++) {
          acc = maddScalar<T>(load<T>(pa), load<T>(pb), acc);
          pa += acsB;
          pb += brsB;
        }
        const p = c + off<T>(i, j, ldc, 1);
        store<T>(p, overwrite ? acc : load<T>(p) + acc);
      }
    }
  }
}
