// Filter gradient of conv2d by direct convolution, for the shapes where the direct forward is
// used (src/ops/conv.ts picks): no col matrix and no GEMM packing. Per image, x[n] is copied into
// conv-layout.ts's zero-padded, phase-split image, where tap k = (c·kh + i)·kw + j of output
// pixel (oh, ow) is img[tap(k) + oh·sh·sw·Wq + ow], and g[n] is transposed to gT[p, o] (output
// channels padded with zeros to Op, a multiple of two vectors). The micro-kernel computes a block
// of dw's transpose, 4 taps × 2 vectors of output channels (8 f32 / 4 f64), in registers:
//   acc[k, o..] = Σ_p img[tap(k) + off(p)] · gT[p, o..],   p ascending over a band of output rows,
// from 0 per band (madd), then dwT = acc (first band of the first image) or dwT + acc; images in
// order. Each dw element's order depends only on the geometry, never on the range of taps it is
// computed in, so the thread pool's cuts over taps give the same bits. Bands of about 256 pixels
// (whole rows) keep f32 chains as short as the GEMM's K blocks.
// Geometry block as in conv.ts; [lo, hi) = geo[13], geo[14] is the range of taps (columns of dw).
// Scratch `pad`: K i32 tap offsets (rounded to 16 B), gT (P·Op), dwT (⌈m/4⌉·4·Op, m = hi − lo),
// then the padded image (C·Hp·sw·Wq); src/ops/conv.ts sizes it.
import { lanes, ld, st, ldi } from './lanes';
import { madd } from './madd';
import { GN, GC, GH, GW, GO, GKH, GKW, GSH, GSW, GPH, GHO, GWO, GLO, GHI, bytes, zeroRun, phaseWidth, padImage } from './conv-layout';

/** One element of T at p, in every lane. */
@inline function splatLoad<T>(p: usize): v128 {
  return sizeof<T>() == 4 ? v128.load32_splat(p) : v128.load64_splat(p);
}

/** Output rows per accumulation band: whole rows of about 256 pixels, at least one. */
@inline function bandRows(Wo: i32): i32 { return max(1, 256 / Wo); }

/** Two accumulator vectors to a row of dwT: overwrite, or dwT + acc. */
@inline function addRow2<T>(d: usize, v0: v128, v1: v128, first: bool): void {
  if (!first) {
    v0 = v128.add<T>(v128.load(d), v0);
    v1 = v128.add<T>(v128.load(d, 16), v1);
  }
  v128.store(d, v0);
  v128.store(d, v1, 16);
}

/**
 * 4 taps (byte offsets a0..a3 into each image row) × 2 vectors of output channels at gt, summed
 * over output rows [oh0, oh1) (image row stride rowB, gT row stride ldgB bytes), into the 4 rows
 * of dwT at d (row stride lddB bytes).
 */
@inline function filterTile<T>(
  img: usize, a0: usize, a1: usize, a2: usize, a3: usize, gt: usize, ldgB: usize, rowB: usize,
  oh0: i32, oh1: i32, Wo: i32, d: usize, lddB: usize, first: bool,
): void {
  const z = v128.splat<T>(<T>0), S = <usize>sizeof<T>();
  let c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  for (let oh = oh0; oh < oh1; oh++) {
    let p = img + <usize>oh * rowB, gp = gt + <usize>(oh * Wo) * ldgB;
    const end = p + <usize>Wo * S;
    while (p < end) {
      const b0 = v128.load(gp), b1 = v128.load(gp, 16);
      let s = splatLoad<T>(p + a0);
      c00 = madd<T>(s, b0, c00);
      c01 = madd<T>(s, b1, c01);
      s = splatLoad<T>(p + a1);
      c10 = madd<T>(s, b0, c10);
      c11 = madd<T>(s, b1, c11);
      s = splatLoad<T>(p + a2);
      c20 = madd<T>(s, b0, c20);
      c21 = madd<T>(s, b1, c21);
      s = splatLoad<T>(p + a3);
      c30 = madd<T>(s, b0, c30);
      c31 = madd<T>(s, b1, c31);
      p += S;
      gp += ldgB;
    }
  }
  addRow2<T>(d, c00, c01, first);
  addRow2<T>(d + lddB, c10, c11, first);
  addRow2<T>(d + 2 * lddB, c20, c21, first);
  addRow2<T>(d + 3 * lddB, c30, c31, first);
}

@inline function filterGradDirect<T>(x: usize, g: usize, dw: usize, pad: usize, geo: usize): void {
  const N = ldi(geo, GN), C = ldi(geo, GC), H = ldi(geo, GH), W = ldi(geo, GW), O = ldi(geo, GO);
  const kh = ldi(geo, GKH), kw = ldi(geo, GKW), sh = ldi(geo, GSH), sw = ldi(geo, GSW), ph = ldi(geo, GPH);
  const Ho = ldi(geo, GHO), Wo = ldi(geo, GWO), lo = ldi(geo, GLO), m = ldi(geo, GHI) - lo;
  const K = C * kh * kw, P = Ho * Wo, Hp = H + 2 * ph, Wq = phaseWidth<T>(geo), S = <i32>sizeof<T>();
  const nb = 2 * lanes<T>(), Op = (O + nb - 1) / nb * nb, mp = (m + 3) / 4 * 4;
  const taps = pad, gt = taps + <usize>((K + 3) / 4 * 16), dwt = gt + bytes<T>(P * Op), img = dwt + bytes<T>(mp * Op);
  if (N == 0 || P == 0) {
    for (let o = 0; o < O; o++) zeroRun<T>(dw + bytes<T>(o * K + lo), m);
    return;
  }
  for (let k = 0; k < K; k++) {
    const c = k / (kh * kw), i = k / kw % kh, j = k % kw;
    store<i32>(taps + (<usize>k << 2), (((c * Hp + i) * sw + j % sw) * Wq + j / sw) * S);
  }
  zeroRun<T>(gt, P * Op); // channels O..Op stay zero: their lanes of dwT are never read
  const ldgB = <usize>(Op * S), rowB = <usize>(sh * sw * Wq * S), band = bandRows(Wo);
  for (let n = 0; n < N; n++) {
    padImage<T>(x + bytes<T>(n) * <usize>(C * H * W), img, geo);
    const gn = g + bytes<T>(n) * <usize>(O * P);
    for (let o = 0; o < O; o++) for (let p = 0; p < P; p++) st<T>(gt, p * Op + o, ld<T>(gn, o * P + p));
    for (let oh0 = 0; oh0 < Ho; oh0 += band) {
      const oh1 = min(Ho, oh0 + band), first = n == 0 && oh0 == 0;
      for (let t = 0; t < m; t += 4) {
        // Taps past hi (the last tile) repeat the last one: their rows of dwT are scratch.
        const tp = taps + (<usize>lo << 2), e = m - 1;
        const a0 = <usize>load<i32>(tp + (<usize>t << 2)), a1 = <usize>load<i32>(tp + (<usize>min(t + 1, e) << 2));
        const a2 = <usize>load<i32>(tp + (<usize>min(t + 2, e) << 2)), a3 = <usize>load<i32>(tp + (<usize>min(t + 3, e) << 2));
        for (let o = 0; o < Op; o += nb) {
          filterTile<T>(img, a0, a1, a2, a3, gt + bytes<T>(o), ldgB, rowB, oh0, oh1, Wo, dwt + bytes<T>(t * Op + o), ldgB, first);
        }
      }
    }
  }
  for (let o = 0; o < O; o++) for (let t = 0; t < m; t++) st<T>(dw, o * K + lo + t, ld<T>(dwt, t * Op + o));
}

/** dw[O, C·kh·kw][:, lo:hi] = VJP of conv2d w.r.t. w at cotangent g, by direct convolution (overwritten; images summed in order); pad: scratch as laid out above, 16-byte aligned; no aliasing. */
export function conv2d_filter_grad_direct_f32(x: usize, g: usize, dw: usize, pad: usize, geo: usize): void { filterGradDirect<f32>(x, g, dw, pad, geo); }
export function conv2d_filter_grad_direct_f64(x: usize, g: usize, dw: usize, pad: usize, geo: usize): void { filterGradDirect<f64>(x, g, dw, pad, geo); }
