// Mapped-filter convolutions (vmap with a per-example filter: ensembles, per-example filter
// gradients of a CNN) without a per-example loop: the examples' patches (im2col, built from
// kh·kw strided slices of the padded images) meet the examples' filters in one batched GEMM.
//   conv2d            y[b]  = W[b] [O, C·kh·kw] · P(x[b]) [C·kh·kw, Ho·Wo]
//   conv2dInputGrad   dx[b] = col2im(W[b]ᵀ · g[b])     (col2im: the transpose of P, padded adds)
//   conv2dFilterGrad  dW[b] = Σ_n g[b, n] · P(x[b, n])ᵀ
// Everything is built from primitives (pad, slice, reshape, concat, matmul, sum) through apply,
// so outer transforms differentiate it as usual. The sums run in another order than the conv
// kernels': equal to them within float rounding, not bit for bit.
import type { Tensor } from './tensor.js';
import { pad, slice, reshape, concat, matmulT, sum, add } from './api.js';
import { frontAll, type Dim } from './batch.js';
import type { ConvParams, Pair } from './conv-api.js';

/** The padded extent: holds the image after its leading padding and every strided window. */
const extent = (n: number, k: number, s: number, p: number, out: number): number => Math.max(n + p, k - 1 + s * out);

/** x [..., C, H, W] zero-padded to [..., C, Hp, Wp] (padding first, room for every window after). */
function padded(x: Tensor, kernel: Pair, p: ConvParams, out: Pair): Tensor {
  const lead = x.shape.slice(0, -2),
    [H, W] = x.shape.slice(-2);
  const Hp = extent(H, kernel[0], p.stride[0], p.padding[0], out[0]),
    Wp = extent(W, kernel[1], p.stride[1], p.padding[1], out[1]);
  return pad(x, [...lead.map(() => 0), p.padding[0], p.padding[1]], [...lead, Hp, Wp]);
}

/** The window at offset (i, j) of padded xp [..., C, Hp, Wp]: rows i, i+s, …, as [..., C, Ho, Wo]. */
function window(xp: Tensor, i: number, j: number, [sh, sw]: Pair, [Ho, Wo]: Pair): Tensor {
  const lead = xp.shape.slice(0, -2),
    z = lead.map(() => 0);
  const s = slice(xp, [...z, i, j], [...lead, sh * Ho, sw * Wo]);
  if (sh === 1 && sw === 1) return s;
  const r = reshape(s, [...lead, Ho, sh, Wo, sw]);
  return reshape(slice(r, [...z, 0, 0, 0, 0], [...lead, Ho, 1, Wo, 1]), [...lead, Ho, Wo]);
}

/** Patches of x [..., C, H, W]: [..., C·kh·kw, Ho·Wo], rows in the filter's (c, i, j) order. */
function patches(x: Tensor, kernel: Pair, p: ConvParams, out: Pair): Tensor {
  const xp = padded(x, kernel, p, out),
    lead = x.shape.slice(0, -2),
    L = out[0] * out[1];
  const cols: Tensor[] = [];
  for (let i = 0; i < kernel[0]; i++)
    for (let j = 0; j < kernel[1]; j++) cols.push(reshape(window(xp, i, j, p.stride, out), [...lead, 1, L]));
  const C = lead[lead.length - 1];
  return reshape(concat(cols, lead.length), [...lead.slice(0, -1), C * kernel[0] * kernel[1], L]);
}

/** The transpose of patches: d [..., C·kh·kw, Ho·Wo] summed back onto the images [..., C, H, W]. */
function col2im(d: Tensor, C: number, kernel: Pair, p: ConvParams, out: Pair, size: Pair): Tensor {
  const lead = d.shape.slice(0, -2),
    z = lead.map(() => 0),
    [Ho, Wo] = out,
    [sh, sw] = p.stride,
    K = kernel[0] * kernel[1];
  const Hp = extent(size[0], kernel[0], sh, p.padding[0], Ho),
    Wp = extent(size[1], kernel[1], sw, p.padding[1], Wo);
  const d5 = reshape(d, [...lead, C, K, Ho, Wo]);
  let acc: Tensor | null = null;
  for (let i = 0; i < kernel[0]; i++)
    for (let j = 0; j < kernel[1]; j++) {
      let piece = reshape(slice(d5, [...z, 0, i * kernel[1] + j, 0, 0], [...lead, C, 1, Ho, Wo]), [...lead, C, Ho, Wo]);
      if (sh !== 1 || sw !== 1)
        piece = reshape(pad(reshape(piece, [...lead, C, Ho, 1, Wo, 1]), [...z, 0, 0, 0, 0, 0], [...lead, C, Ho, sh, Wo, sw]), [
          ...lead,
          C,
          Ho * sh,
          Wo * sw,
        ]);
      const placed = pad(piece, [...z, 0, i, j], [...lead, C, Hp, Wp]);
      acc = acc === null ? placed : add(acc, placed);
    }
  return slice(acc!, [...z, 0, p.padding[0], p.padding[1]], [...lead, C, size[0], size[1]]);
}

/** Output spatial size of a convolution over [H, W]. */
const outOf = ([H, W]: readonly number[], kernel: Pair, p: ConvParams): Pair => [
  Math.floor((H + 2 * p.padding[0] - kernel[0]) / p.stride[0]) + 1,
  Math.floor((W + 2 * p.padding[1] - kernel[1]) / p.stride[1]) + 1,
];

/** conv2d(x, w) with a mapped filter: one batched GEMM of each example's filter with its images' patches. */
export function conv2dMappedFilter(xs: readonly Tensor[], dims: readonly Dim[], p: ConvParams): [Tensor, number] {
  const [x, w] = frontAll(xs, dims); // x [B, N, C, H, W], w [B, O, C, kh, kw]
  const [B, N, C] = x.shape,
    O = w.shape[1],
    kernel: Pair = [w.shape[3], w.shape[4]];
  const out = outOf(x.shape.slice(3), kernel, p);
  const y = matmulT(reshape(w, [B, 1, O, C * kernel[0] * kernel[1]]), patches(x, kernel, p, out), false, false);
  return [reshape(y, [B, N, O, out[0], out[1]]), 0];
}

/** conv2dInputGrad(g, w) with a mapped filter: Wᵀ·g per example in one batched GEMM, then col2im. */
export function conv2dInputGradMappedFilter(xs: readonly Tensor[], dims: readonly Dim[], p: ConvParams & { size: Pair }): [Tensor, number] {
  const [g, w] = frontAll(xs, dims); // g [B, N, O, Ho, Wo], w [B, O, C, kh, kw]
  const [B, N, O, Ho, Wo] = g.shape,
    C = w.shape[2],
    kernel: Pair = [w.shape[3], w.shape[4]];
  const d = matmulT(reshape(w, [B, 1, O, C * kernel[0] * kernel[1]]), reshape(g, [B, N, O, Ho * Wo]), true, false);
  return [col2im(d, C, kernel, p, [Ho, Wo], p.size), 0];
}

/** conv2dFilterGrad(x, g), mapped: every example's Σ_n g·Pᵀ in one batched GEMM, summed over its images. */
export function conv2dFilterGradMapped(xs: readonly Tensor[], dims: readonly Dim[], p: ConvParams & { kernel: Pair }): [Tensor, number] {
  const [x, g] = frontAll(xs, dims); // x [B, N, C, H, W], g [B, N, O, Ho, Wo]
  const [B, N, O, Ho, Wo] = g.shape,
    C = x.shape[2];
  const dw = matmulT(reshape(g, [B, N, O, Ho * Wo]), patches(x, p.kernel, p, [Ho, Wo]), false, true); // [B, N, O, C·kh·kw]
  return [reshape(sum(dw, 1), [B, O, C, p.kernel[0], p.kernel[1]]), 0];
}
