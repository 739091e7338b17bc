// How kernel calls are cut across the thread pool. The rule that makes results independent of
// the thread count: every piece writes its own contiguous part of the output and computes each
// output element exactly as the whole call would — same inputs, same operation order. So cuts
// go only where the kernel's per-element work does not depend on where a call starts:
//   GEMM       rows of C (or columns): each C element is a dot product over K in a fixed order
//              (KC blocks, k ascending, no FMA) whatever the tile it falls in; see assembly/matmul.ts.
//   maps       elementwise kernels: cuts at multiples of 16 elements, so every piece starts on a
//              SIMD lane boundary and the scalar tail stays where it was.
//   rows       row-wise kernels (softmax, cross-entropy, layerNorm rows; reductions over
//              [outer, r, inner] by outer, or by inner columns when outer is small).
//   conv       conv2d and its input gradient over images (or channels, for a small batch), the
//              filter gradient over its columns (c, i, j); pools over (image, channel) planes.
// Reductions across a cut (a full sum, the filter gradient's sum over images) would change the
// summation order, so they are never cut.
// Small calls stay on the calling thread: waking a worker costs microseconds.
import { kernel } from './module.js';
import { runJobs, threadCount } from './threads.js';
import { scratchOf } from './scratch.js';
import { cutShares } from './balance.js';

/**
 * Work (≈ multiply-adds, or element visits with transcendental functions counting 8) below
 * which a call stays on the calling thread: a split costs a few µs when the worker is awake and
 * tens when it sleeps, about what a cheap elementwise op takes for 2^17 elements.
 */
export const thresholds = { gemm: 1 << 17, elementwise: 1 << 17 };

/** Rows per thread from which a GEMM is cut by rows of C even when it is wider than tall. */
const ROWS_MIN = 32;

/**
 * [lo, hi) ranges covering [0, n), at most `parts`, with inner boundaries at multiples of `align`:
 * equal, or by the threads' shares when they are uneven (balance.ts; a cut into fewer pieces than
 * threads stays equal). Piece i runs on thread i.
 */
export function ranges(n: number, parts: number, align: number): [number, number][] {
  const units = Math.ceil(n / align);
  const p = Math.max(1, Math.min(parts, units));
  const shares = p === parts ? cutShares(p) : null;
  // Boundary i (0 ≤ i ≤ p) in units: equal cuts as (units·i)/p, rounded once.
  let sum = 0;
  const at = (i: number): number => {
    if (i === p) return units;
    if (shares === null) return Math.round((units * i) / p);
    sum += shares[i - 1];
    return Math.round(units * sum);
  };
  const out: [number, number][] = [];
  let lo = 0;
  for (let i = 1; i <= p; i++) {
    const hi = Math.min(n, at(i) * align);
    if (hi > lo) out.push([lo, hi]);
    lo = Math.max(lo, hi);
  }
  return out;
}

/** Whether a call of this much work stays on the calling thread (callers then launch directly, building no argument arrays). */
export function runsLocally(work: number): boolean {
  return work < thresholds.elementwise || threadCount() === 1;
}

/** Runs `name` over [0, n) in pieces when the pool is up and `work` is large enough; args(lo, hi) gives a piece's arguments. */
export function splitRun(name: string, n: number, align: number, work: number, args: (lo: number, hi: number) => number[]): void {
  const f = kernel(name);
  const t = threadCount();
  if (t === 1 || work < thresholds.elementwise || n <= align) {
    f(...args(0, n));
    return;
  }
  runJobs(
    name,
    ranges(n, t, align).map(([lo, hi]) => args(lo, hi)),
    f,
  );
}

/** Elementwise kernel (x, y, n, ...rest) on `bytes`-sized elements, cut into 16-element-aligned pieces. */
export function splitMap(name: string, bytes: number, ptrs: readonly number[], n: number, rest: readonly number[], cost = 1): void {
  if (runsLocally(n * cost)) {
    kernel(name)(...ptrs, n, ...rest); // the one piece splitRun would launch, without its closure and arrays
    return;
  }
  splitRun(name, n, 16, n * cost, (lo, hi) => [...ptrs.map((p) => p + lo * bytes), hi - lo, ...rest]);
}

/**
 * C (+)= op(A)·op(B) through gemm_f32/f64 with the calling thread's packing scratch, cut over
 * rows of C (or columns when C is wide and short) across the pool when it is large enough.
 * Arguments as the kernel's: element strides, trans flags, accumulate. With `epi`, runs
 * gemm_bias_act instead (C = act(op(A)·op(B) + bias), acc ignored); a column cut passes the
 * bias from its first column.
 */
export function gemm(
  dtypeBytes: 4 | 8,
  a: number,
  b: number,
  c: number,
  M: number,
  N: number,
  K: number,
  lda: number,
  ldb: number,
  ldc: number,
  ta: boolean,
  tb: boolean,
  acc: boolean,
  epi?: { bias: number; act: number },
): void {
  const name = epi ? (dtypeBytes === 4 ? 'gemm_bias_act_f32' : 'gemm_bias_act_f64') : dtypeBytes === 4 ? 'gemm_f32' : 'gemm_f64'; // no string building per call
  const f = kernel(name);
  useScratch();
  const t = threadCount();
  const job = (i0: number, i1: number, j0: number, j1: number): number[] => [
    a + i0 * (ta ? 1 : lda) * dtypeBytes,
    b + j0 * (tb ? ldb : 1) * dtypeBytes,
    c + (i0 * ldc + j0) * dtypeBytes,
    ...(epi ? [epi.bias + j0 * dtypeBytes] : []),
    i1 - i0,
    j1 - j0,
    K,
    lda,
    ldb,
    ldc,
    ta ? 1 : 0,
    tb ? 1 : 0,
    epi ? epi.act : acc ? 1 : 0,
  ];
  if (t === 1 || M * N * K < thresholds.gemm) {
    // job(0, M, 0, N) without building its array (small matmuls are dispatch-bound).
    if (epi === undefined) f(a, b, c, M, N, K, lda, ldb, ldc, ta ? 1 : 0, tb ? 1 : 0, acc ? 1 : 0);
    else f(...job(0, M, 0, N));
    return;
  }
  // Each piece packs all of the operand it shares and its share of the other: cutting rows
  // costs M/t·K + K·N packed elements per thread, cutting columns M·K + K·N/t, so cut the longer
  // side. Rows go in multiples of 8 (two micro-tiles), columns in multiples of 16 (64-byte lines).
  const rows = ranges(M, t, 8),
    cols = ranges(N, t, 16);
  // Rows also when C is wider than tall but every piece still gets ROWS_MIN rows: the extra
  // packing is small (a batch of 128 through a 784 → 256 layer: K·N + M/t·K = 250k elements per
  // thread instead of 200k, against 12.8M multiply-adds), and row pieces of consecutive layers
  // touch the same rows of the batch, so compile()'s parallel schedule chains them on their
  // threads without a barrier (src/compile/parallel.ts).
  const byRows = (M >= N || M >= ROWS_MIN * t) && rows.length > 1 ? true : cols.length === 1;
  runJobs(name, byRows ? rows.map(([i0, i1]) => job(i0, i1, 0, N)) : cols.map(([j0, j1]) => job(0, M, j0, j1)), f);
}

/** Registers the calling thread's scratch region (other kernels, conv's GEMMs, may have set theirs). */
function useScratch(): void {
  const s = scratchOf(0);
  if (s.bytes === 0) return;
  kernel('gemm_set_scratch')(s.ptr, s.bytes);
}

/** Row-wise kernel over `rows` independent rows of `cols` elements; args(lo, hi) for a block of rows. */
export function splitRows(name: string, rows: number, cols: number, cost: number, args: (lo: number, hi: number) => number[]): void {
  splitRun(name, rows, Math.max(1, Math.ceil(16 / cols)), rows * cols * cost, args);
}

/** Runs kernel `name` once per argument list: directly for one, across the pool (runJobs) for more. */
export function runPieces(name: string, jobs: readonly (readonly number[])[]): void {
  const f = kernel(name);
  if (jobs.length === 1) f(...jobs[0]);
  else runJobs(name, jobs, f);
}

/**
 * Pieces [n0, n1, c0, c1] of a kernel over n images × ch channels with `work` multiply-adds
 * (conv2d and its gradients): images when every thread gets at least one and `byImages`, else
 * channels (or columns) in multiples of `align`; one piece for a small call.
 */
export function imagePieces(n: number, ch: number, align: number, work: number, byImages: boolean): [number, number, number, number][] {
  const t = threadCount();
  if (t === 1 || work < thresholds.gemm) return [[0, n, 0, ch]];
  if (byImages && n >= t) return ranges(n, t, 1).map(([a, b]) => [a, b, 0, ch]);
  return ranges(ch, t, align).map(([a, b]) => [0, n, a, b]);
}

/**
 * Reduction `name` ('sum_f32', 'max_f64', …) of x [outer, r, inner] over r into y [outer, inner].
 * Cut over outer rows when there are enough to share evenly; otherwise (a bias gradient
 * [B, n] → [n] has one row) over inner columns in multiples of 16 with the `_cols` variant,
 * which reduces every column alone in the same order. The sum along r is never cut.
 */
export function splitReduce(name: string, bytes: number, x: number, y: number, outer: number, r: number, inner: number): void {
  const t = threadCount();
  if (inner < 32 || outer >= 4 * t || outer % t === 0) {
    splitRows(name, outer, r * inner, 1, (lo, hi) => [x + lo * r * inner * bytes, y + lo * inner * bytes, hi - lo, r, inner]);
    return;
  }
  const cols = name.replace(/_(f32|f64)$/, '_cols_$1');
  splitRun(cols, inner, 16, outer * r * inner, (lo, hi) => [x + lo * bytes, y + lo * bytes, outer, r, inner, hi - lo]);
}

/** Binary kernel (a, b, y, rows, cols, sar, sac, sbr, sbc): cut over rows, or over columns of a single row. */
export function splitBinary(
  name: string,
  bytes: number,
  a: number,
  b: number,
  y: number,
  rows: number,
  cols: number,
  sar: number,
  sac: number,
  sbr: number,
  sbc: number,
  cost = 1,
): void {
  if (runsLocally(rows * cols * cost)) {
    kernel(name)(a, b, y, rows, cols, sar, sac, sbr, sbc); // what the one-piece split below would launch
    return;
  }
  const s = [sar, sac, sbr, sbc];
  if (rows === 1)
    splitRun(name, cols, 16, cols * cost, (lo, hi) => [a + lo * sac * bytes, b + lo * sbc * bytes, y + lo * bytes, 1, hi - lo, ...s]);
  else
    splitRows(name, rows, cols, cost, (lo, hi) => [a + lo * sar * bytes, b + lo * sbr * bytes, y + lo * cols * bytes, hi - lo, cols, ...s]);
}
