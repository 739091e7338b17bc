// Convolution and pooling primitives (NCHW). conv2d is bilinear in (x, w); its two VJPs are
// primitives of their own, conv2dInputGrad(g, w) and conv2dFilterGrad(x, g), and all three are
// adjoint to each other through one identity,
//   ⟨g, conv2d(x, w)⟩ = ⟨x, conv2dInputGrad(g, w)⟩ = ⟨w, conv2dFilterGrad(x, g)⟩,
// so every VJP and JVP below is again one of the three with roles swapped: gradients of
// gradients (hvp through a CNN) need no extra kernel. Max pooling is linear in the values it
// picks once x fixes the argmax, so maxPool2dGrad (scatter g to the argmax) and maxPool2dGather
// (pick v at the argmax) are each other's transpose; avgPool2d and avgPool2dGrad likewise.
import { Tensor } from './tensor.js';
import { BYTES, SUFFIX, type DType } from '../tensor/dtype.js';
import { kernel, writeArgs } from '../wasm/module.js';
import type { Rule } from './rule.js';
import { runPieces, imagePieces, splitRun } from '../wasm/split.js';
import { add, zerosLike } from './api.js';
import { apply } from './apply.js';
import { foldBatch, type Dim, type Self } from './batch.js';
import { conv2dMappedFilter, conv2dInputGradMappedFilter, conv2dFilterGradMapped } from './conv-batch.js';
import {
  conv2dRaw,
  conv2dInputGrad,
  conv2dFilterGrad,
  maxPool2dGrad,
  maxPool2dGather,
  avgPool2dRaw,
  avgPool2dGrad,
  type Pair,
  type ConvParams,
  type PoolParams,
} from './conv-api.js';

export interface ConvInputGradParams extends ConvParams {
  /** The convolution input's spatial size [H, W] (not recoverable from g when stride > 1). */
  readonly size: Pair;
}
export interface ConvFilterGradParams extends ConvParams {
  /** The filter's spatial size [kh, kw]. */
  readonly kernel: Pair;
}
export interface PoolGradParams extends PoolParams {
  readonly size: Pair;
}

const SAVE_BOTH = { inputs: [0, 1], output: false } as const;
const SAVE_X = { inputs: [0], output: false } as const;
const NONE = { inputs: [], output: false } as const;
const plus = (u: Tensor | null, v: Tensor | null): Tensor => (u === null ? v! : v === null ? u : add(u, v));

/** The output extent along one axis: ⌊(n + 2·pad − k) / stride⌋ + 1. */
const outExtent = (n: number, k: number, stride: number, pad: number): number => Math.floor((n + 2 * pad - k) / stride) + 1;

/** The kernels' geometry block up to Wo: N, C, H, W, O, kh, kw, sh, sw, ph, pw, Ho, Wo (launchConv appends each piece's channel range). */
function convGeometry(N: number, C: number, [H, W]: Pair, O: number, [kh, kw]: Pair, p: ConvParams): number[] {
  const [sh, sw] = p.stride,
    [ph, pw] = p.padding;
  return [N, C, H, W, O, kh, kw, sh, sw, ph, pw, outExtent(H, kh, sh, ph), outExtent(W, kw, sw, pw)];
}

/**
 * Runs f with a GEMM packing region for an M×N×K product registered with the gemm kernels
 * (which the conv kernels call from inside wasm; without one they take their slow unpacked
 * path). The region is a temporary tensor, so memory() accounts for it, and it is unregistered
 * before being freed so no later GEMM can write into a dead block.
 */
function withGemmScratch(dtype: DType, [M, N, K]: readonly number[], f: () => void): void {
  const bytes = kernel('gemm_scratch_bytes')(M, N, K, BYTES[dtype]);
  const scratch = Tensor.empty([Math.max(1, Math.ceil(bytes / BYTES[dtype]))], dtype);
  try {
    kernel('gemm_set_scratch')(scratch.ptr, bytes);
    f();
  } finally {
    kernel('gemm_set_scratch')(0, 0);
    scratch.dispose();
  }
}

/**
 * How a conv kernel may be cut: a range of its `ch` output channels (dw: columns), in multiples
 * of `align`, and, unless `images` is null, images (per-image element strides of its first
 * argument and its output). See assembly/conv.ts for why every cut gives the same bits.
 */
interface Cut {
  ch: number;
  align: number;
  images: readonly [number, number] | null;
}

/**
 * Runs a conv kernel (a, b → out) whose per-image GEMM is M×N×K, cut into pieces across the
 * thread pool when large; each piece gets its own geometry block (its images and channels) and
 * its own im2col scratch (workers have their own GEMM packing scratch).
 */
function launchConv(
  name: string,
  a: Tensor,
  b: Tensor,
  outShape: readonly number[],
  geo: number[],
  gemm: number[],
  cut: Cut,
  flipped = false,
): Tensor {
  const y = Tensor.empty(outShape, a.dtype);
  if (y.size === 0) return y;
  const [N, C, , , , kh, kw, sh, sw, ph, pw, Ho, Wo] = geo,
    bytes = BYTES[a.dtype];
  const pointwise = kh === 1 && kw === 1 && sh === 1 && sw === 1 && ph === 0 && pw === 0; // the kernels skip im2col
  const direct = name === 'conv2d_direct' || name === 'conv2d_filter_grad_direct';
  const pieces = imagePieces(N, cut.ch, cut.align, N * gemm[0] * gemm[1] * gemm[2], cut.images !== null);
  const tile = direct ? (flipped ? 1 : 0) : colTile(name, geo); // direct: geo[15] says whether w is flipped
  const geos = pieces.map(([n0, n1, c0, c1], i) => writeArgs(16 * i, [n1 - n0, ...geo.slice(1), c0, c1, tile]));
  // Scratch elements per piece: the col matrix, or the direct kernel's padded image and packed
  // filters (sized by the kernel; whole 64-byte lines, so every piece's region stays aligned).
  const colSize = direct
    ? Math.max(
        ...pieces.map(
          ([, , c0, c1]) =>
            Math.ceil((name === 'conv2d_direct' ? directBytes : filterDirectBytes)(geo, c1 - c0, bytes) / 64) * (64 / bytes),
        ),
      )
    : pointwise
      ? 1
      : Math.max(1, tile * (name === 'conv2d' ? C * kh * kw * Wo : name === 'conv2d_input_grad' ? kh * kw * Ho * Wo : Ho * Wo));
  const [sa, sy] = cut.images ?? [0, 0];
  let col: Tensor | null = null;
  try {
    col = Tensor.empty([colSize * pieces.length], a.dtype);
    const colPtr = col.ptr,
      ap = a.ptr,
      bp = b.ptr,
      yp = y.ptr;
    const jobs = pieces.map(([n0], i) => [ap + n0 * sa * bytes, bp, yp + n0 * sy * bytes, colPtr + i * colSize * bytes, geos[i]]);
    const run = () => runPieces(`${name}_${SUFFIX[a.dtype]}`, jobs);
    if (direct) run();
    else withGemmScratch(a.dtype, gemm, run);
  } catch (e) {
    y.dispose();
    throw e;
  } finally {
    col?.dispose();
  }
  return y;
}

/**
 * Scratch bytes of conv2d_direct for m output channels, as assembly/conv.ts lays it out:
 * pre-broadcast filters (⌈m/4⌉·4·K v128), K tap offsets (i32, whole v128s), the phase-split
 * padded image (C·Hp·sw·Wq), a 128-byte edge tile. Computed here, not asked of the kernel: a
 * kernel's return value would read as data-dependent to compile()'s tracer.
 */
function directBytes(geo: number[], m: number, bytes: number): number {
  const [, C, H, , , kh, kw, , sw, ph, , , Wo] = geo;
  const K = C * kh * kw,
    nb = 32 / bytes,
    Wq = Math.ceil(Wo / nb) * nb + Math.floor((kw - 1) / sw) + 1;
  return Math.ceil(m / 4) * 4 * K * 16 + Math.ceil(K / 4) * 16 + C * (H + 2 * ph) * sw * Wq * bytes + 128;
}

/**
 * Scratch bytes of conv2d_filter_grad_direct for m taps (assembly/convfilter.ts): K tap offsets
 * (i32, whole v128s), gT (P·Op), dwT (⌈m/4⌉·4·Op), the phase-split padded image.
 */
function filterDirectBytes(geo: number[], m: number, bytes: number): number {
  const [, C, H, , O, kh, kw, , sw, ph, , Ho, Wo] = geo;
  const K = C * kh * kw,
    nb = 32 / bytes,
    Op = Math.ceil(O / nb) * nb,
    Wq = Math.ceil(Wo / nb) * nb + Math.floor((kw - 1) / sw) + 1;
  return Math.ceil(K / 4) * 16 + (Ho * Wo + Math.ceil(m / 4) * 4) * Op * bytes + C * (H + 2 * ph) * sw * Wq * bytes;
}

let colLimit = 1 << 20;
/** Internal (tests): the im2col scratch bound, in elements per piece (default 2²⁰); lower values force tiling. */
export function setConvColLimit(elements: number): void {
  colLimit = elements;
}

/**
 * The im2col kernels' `tile` (assembly/conv.ts): the most output rows (forward), input channels
 * (input gradient) or col rows (filter gradient) whose col block fits colLimit, at least one.
 * Every tiling gives the same bits: each output element's sum lies whole in one tile.
 */
function colTile(name: string, geo: number[]): number {
  const [, C, , , , kh, kw, , , , , Ho, Wo] = geo;
  if (name === 'conv2d') return Math.max(1, Math.min(Ho, Math.floor(colLimit / Math.max(1, C * kh * kw * Wo))));
  if (name === 'conv2d_input_grad') return Math.max(1, Math.min(C, Math.floor(colLimit / Math.max(1, kh * kw * Ho * Wo))));
  return Math.max(1, Math.min(C * kh * kw, Math.floor(colLimit / Math.max(1, Ho * Wo))));
}

/** K = C·kh·kw and P = Ho·Wo of a geometry block. */
const kp = (geo: number[]): [number, number] => [geo[1] * geo[5] * geo[6], geo[11] * geo[12]];

let forwardPath: 'auto' | 'direct' | 'im2col' = 'auto';
/** Internal (tests, benches): 'auto' picks the forward, input- and filter-gradient path by shape (useDirect); the others force one. */
export function setConvForwardPath(p: typeof forwardPath): void {
  forwardPath = p;
}
/**
 * Direct convolution (assembly/conv.ts) while the padded, phase-split image stays cache-sized
 * (its taps are read in place, not packed) and K is moderate: it skips im2col and the GEMM's
 * packing of it (and, with many images, the per-image packing of the filters). Measured (CPU
 * time, paired rounds, load 10–26 on 2 vCPUs) against im2col + GEMM: 1.8× and 1.4× on the
 * Fashion-MNIST CNN's 5×5 layers, 1.05× and 1.4× on the bench CNN's two 3×3/2 layers.
 */
function useDirect(geo: number[]): boolean {
  if (forwardPath !== 'auto') return forwardPath === 'direct';
  const [, C, H, , O, kh, kw, , sw, ph, , , Wo] = geo;
  // Bounds on its scratch: the padded image (elements) and the pre-broadcast filters (1 MB).
  return C * kh * kw <= 1152 && C * (H + 2 * ph) * sw * (Wo + kw + 8) <= 1 << 17 && O * C * kh * kw <= 1 << 16;
}

function conv2dForward(x: Tensor, w: Tensor, p: ConvParams): Tensor {
  const [N, C, H, W] = x.shape,
    [O, , kh, kw] = w.shape;
  const geo = convGeometry(N, C, [H, W], O, [kh, kw], p);
  const [K, P] = kp(geo);
  return launchConv(useDirect(geo) ? 'conv2d_direct' : 'conv2d', x, w, [N, O, geo[11], geo[12]], geo, [O, P, K], {
    ch: O,
    align: 4,
    images: [C * H * W, O * P],
  });
}

function inputGradForward(g: Tensor, w: Tensor, p: ConvInputGradParams): Tensor {
  const [N, O] = g.shape,
    [, C, kh, kw] = w.shape;
  const geo = convGeometry(N, C, p.size, O, [kh, kw], p),
    [K, P] = kp(geo);
  // Stride 1: the input gradient is the conv of g with w transposed and flipped, padded k − 1 − p.
  const [H, W] = p.size,
    [ph, pw] = p.padding;
  const full = [N, O, geo[11], geo[12], C, kh, kw, 1, 1, kh - 1 - ph, kw - 1 - pw, H, W];
  if (p.stride[0] === 1 && p.stride[1] === 1 && ph < kh && pw < kw && useDirect(full))
    return launchConv(
      'conv2d_direct',
      g,
      w,
      [N, C, H, W],
      full,
      [C, H * W, O * kh * kw],
      { ch: C, align: 4, images: [O * P, C * H * W] },
      true,
    );
  return launchConv('conv2d_input_grad', g, w, [N, C, ...p.size], geo, [K, P, O], {
    ch: C,
    align: 1,
    images: [O * P, C * p.size[0] * p.size[1]],
  });
}

/**
 * Direct (assembly/convfilter.ts) where the forward is, else im2col + GEMM. Cut over the C·kh·kw
 * columns of dw (each piece unrolls only its rows of col; 8 = a GEMM micro-tile's width, when
 * there are enough), never over images: dw sums over them, in order.
 */
function filterGradForward(x: Tensor, g: Tensor, p: ConvFilterGradParams): Tensor {
  const [N, C, H, W] = x.shape,
    O = g.shape[1];
  const geo = convGeometry(N, C, [H, W], O, p.kernel, p),
    [K, P] = kp(geo);
  const name = useDirect(geo) ? 'conv2d_filter_grad_direct' : 'conv2d_filter_grad';
  return launchConv(name, x, g, [O, C, ...p.kernel], geo, [O, K, P], { ch: K, align: K >= 32 ? 8 : 1, images: null });
}

/**
 * Runs a pool kernel over the planes of an [N, C, H, W] tensor, cut over planes across the pool
 * when large. `ptrs` are its pointers before the geometry; `kinds` says for each whether it
 * points at input-sized ('i') or output-sized ('o') planes.
 */
function launchPool(name: string, dtype: DType, ptrs: number[], kinds: string, [N, C, H, W]: readonly number[], p: PoolParams): void {
  const [kh, kw] = p.kernel,
    [sh, sw] = p.stride,
    Ho = outExtent(H, kh, sh, 0),
    Wo = outExtent(W, kw, sw, 0);
  if (N * C * H * W === 0) return;
  const step = (i: number) => (kinds[i] === 'i' ? H * W : Ho * Wo) * BYTES[dtype];
  let piece = 0; // each piece's geometry in its own slot of the argument block
  splitRun(`${name}_${SUFFIX[dtype]}`, N * C, 1, N * C * Ho * Wo * kh * kw, (lo, hi) => [
    ...ptrs.map((ptr, i) => ptr + lo * step(i)),
    writeArgs(16 * piece++, [hi - lo, H, W, kh, kw, sh, sw, Ho, Wo]),
  ]);
}

function pooledShape([N, C, H, W]: readonly number[], p: PoolParams): number[] {
  return [N, C, outExtent(H, p.kernel[0], p.stride[0], 0), outExtent(W, p.kernel[1], p.stride[1], 0)];
}

/** y = v at the argmax of each window of x (v = x: max pooling). */
function maxPoolForward(x: Tensor, v: Tensor, p: PoolParams): Tensor {
  const y = Tensor.empty(pooledShape(x.shape, p), x.dtype);
  if (y.size > 0) launchPool('max_pool2d', x.dtype, [x.ptr, v.ptr, y.ptr], 'iio', x.shape, p);
  return y;
}

function maxPoolGradForward(x: Tensor, g: Tensor, p: PoolParams): Tensor {
  const dx = Tensor.empty(x.shape, x.dtype);
  launchPool('max_pool2d_vjp', x.dtype, [x.ptr, g.ptr, dx.ptr], 'ioi', x.shape, p);
  return dx;
}

function avgPoolForward(x: Tensor, p: PoolParams): Tensor {
  const y = Tensor.empty(pooledShape(x.shape, p), x.dtype);
  if (y.size > 0) launchPool('avg_pool2d', x.dtype, [x.ptr, y.ptr], 'io', x.shape, p);
  return y;
}

function avgPoolGradForward(g: Tensor, p: PoolGradParams): Tensor {
  const shape = [g.shape[0], g.shape[1], ...p.size];
  const dx = Tensor.empty(shape, g.dtype);
  launchPool('avg_pool2d_vjp', g.dtype, [g.ptr, dx.ptr], 'oi', shape, p);
  return dx;
}

const spatial = (shape: readonly number[]): Pair => [shape[2], shape[3]];

type Op2<P> = (a: Tensor, b: Tensor, p: P) => Tensor;

/**
 * A bilinear primitive f(a, b) (the rule `name`, its kernel `forward`): JVP f(ta, b) + f(a, tb)
 * through apply, so batched tangents (jacfwd, vmap of jvp) meet the batch rule rather than the
 * kernel; the VJPs are given per argument.
 */
function bilinear<P extends object>(
  name: 'conv2d' | 'conv2dInputGrad' | 'conv2dFilterGrad',
  forward: Op2<P>,
  vjpA: (g: Tensor, a: Tensor, b: Tensor, p: P) => Tensor,
  vjpB: (g: Tensor, a: Tensor, b: Tensor, p: P) => Tensor,
  batch: Rule<P>['batch'],
): Rule<P> {
  // apply's name and params types come from the rule table, which this file's rules are part of.
  const applyAny = apply as unknown as (n: string, xs: readonly Tensor[], p: P) => Tensor;
  const f = (a: Tensor, b: Tensor, p: P): Tensor => applyAny(name, [a, b], p);
  return {
    batch,
    saves: SAVE_BOTH,
    forward: ([a, b], p) => forward(a, b, p),
    vjp: (g, s, p, needs) => [needs[0] ? vjpA(g, s.x[0]!, s.x[1]!, p) : null, needs[1] ? vjpB(g, s.x[0]!, s.x[1]!, p) : null],
    jvp: ([ta, tb], [a, b], _y, p) => plus(ta && f(ta, b, p), tb && f(a, tb, p)),
  };
}

/** A primitive f(x, v) linear in v once x fixes the argmax (x only selects: zero derivative). */
function selected<P>(forward: Op2<P>, op: Op2<P>, transpose: Op2<P>): Rule<P> {
  return {
    batch: (xs, dims, p, self) => foldBatch(xs, dims, p, self, [true, true]),
    saves: SAVE_X,
    forward: ([x, v], p) => forward(x, v, p),
    vjp: (u, s, p) => [null, transpose(s.x[0]!, u, p)],
    jvp: ([, tv], [x], y, p) => (tv ? op(x, tv, p) : zerosLike(y)),
  };
}

/** A linear primitive: its JVP is the op itself, its VJP the transpose (JAX's deflinear). */
function linear<P>(
  forward: (x: Tensor, p: P) => Tensor,
  op: (t: Tensor, p: P) => Tensor,
  transpose: (g: Tensor, p: P, xShape: readonly number[]) => Tensor,
): Rule<P> {
  return {
    batch: (xs, dims, p, self) => foldBatch(xs, dims, p, self, [true]),
    saves: NONE,
    forward: ([x], p) => forward(x, p),
    vjp: (g, s, p) => [transpose(g, p, s.shapes[0])],
    jvp: ([t], _x, _y, p) => op(t!, p),
  };
}

/**
 * Mapped convolution: images batched, filter shared — the batch folds into N (one launch). A mapped
 * filter (per-example filter gradients, ensembles): one batched GEMM over patches (./conv-batch.ts).
 */
function imagesBatch<P>(mapped: (xs: readonly Tensor[], dims: readonly Dim[], p: P) => [Tensor, number]) {
  return (xs: readonly Tensor[], dims: readonly Dim[], p: P, self: Self<P>): [Tensor, number] =>
    dims[1] === null ? foldBatch(xs, dims, p, self, [true, false]) : mapped(xs, dims, p);
}

export const convRules = {
  conv2d: bilinear<ConvParams>(
    'conv2d',
    conv2dForward,
    (g, x, w, p) => conv2dInputGrad(g, w, p, spatial(x.shape)),
    (g, x, w, p) => conv2dFilterGrad(x, g, p, spatial(w.shape)),
    imagesBatch(conv2dMappedFilter),
  ),
  conv2dInputGrad: bilinear<ConvInputGradParams>(
    'conv2dInputGrad',
    inputGradForward,
    (v, _g, w, p) => conv2dRaw(v, w, p),
    (v, g, w, p) => conv2dFilterGrad(v, g, p, spatial(w.shape)),
    imagesBatch(conv2dInputGradMappedFilter),
  ),
  conv2dFilterGrad: bilinear<ConvFilterGradParams>(
    'conv2dFilterGrad',
    filterGradForward,
    (u, x, g, p) => conv2dInputGrad(g, u, p, spatial(x.shape)),
    (u, x, _g, p) => conv2dRaw(x, u, p),
    (xs, dims, p) => conv2dFilterGradMapped(xs, dims, p),
  ),

  maxPool2d: {
    saves: SAVE_X,
    forward: ([x], p) => maxPoolForward(x, x, p),
    vjp: (g, s, p) => [maxPool2dGrad(s.x[0]!, g, p)],
    jvp: ([t], [x], _y, p) => maxPool2dGather(x, t!, p),
    batch: (xs, dims, p, self) => foldBatch(xs, dims, p, self, [true]),
  } satisfies Rule<PoolParams>,
  /** dx = g scattered to the argmax of each window of x. */
  maxPool2dGrad: selected<PoolParams>(maxPoolGradForward, maxPool2dGrad, maxPool2dGather),
  /** v picked at the argmax of each window of x. */
  maxPool2dGather: selected<PoolParams>(maxPoolForward, maxPool2dGather, maxPool2dGrad),
  avgPool2d: linear<PoolParams>(avgPoolForward, avgPool2dRaw, (g, p, shape) => avgPool2dGrad(g, p, spatial(shape))),
  avgPool2dGrad: linear<PoolGradParams>(avgPoolGradForward, (t, p) => avgPool2dGrad(t, p, p.size), avgPool2dRaw),
};
