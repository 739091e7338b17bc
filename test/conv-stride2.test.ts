// conv2d with column stride 2 (its im2col gathers every other pixel with a SIMD even-lane
// shuffle, assembly/conv.ts copyRunStride2) against a float64 direct convolution written here:
// widths that give output runs of 1 to 13 columns (vector loop, scalar tail, runs shorter than a
// vector), with and without padding, f32 and f64; the filter gradient, which gathers too; and the
// input gradient, whose col2im scatters into every other pixel (addRunStride2).
import { describe, expect, it } from 'vitest';
import * as A from '../src/index.js';

await A.init();

/** y[n, o, oh, ow] = Σ x[n, c, oh·sh − ph + i, ow·sw − pw + j] · w[o, c, i, j], in float64. */
function reference(
  x: Float64Array,
  [N, C, H, W]: number[],
  w: Float64Array,
  [O, , kh, kw]: number[],
  [sh, sw]: number[],
  [ph, pw]: number[],
): Float64Array {
  const Ho = Math.floor((H + 2 * ph - kh) / sh) + 1,
    Wo = Math.floor((W + 2 * pw - kw) / sw) + 1;
  const y = new Float64Array(N * O * Ho * Wo);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < O; o++)
      for (let oh = 0; oh < Ho; oh++)
        for (let ow = 0; ow < Wo; ow++) {
          let s = 0;
          for (let c = 0; c < C; c++)
            for (let i = 0; i < kh; i++)
              for (let j = 0; j < kw; j++) {
                const ih = oh * sh - ph + i,
                  iw = ow * sw - pw + j;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) s += x[((n * C + c) * H + ih) * W + iw] * w[((o * C + c) * kh + i) * kw + j];
              }
          y[((n * O + o) * Ho + oh) * Wo + ow] = s;
        }
  return y;
}

describe('conv2d, column stride 2', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`matches a float64 direct convolution for output widths 1..13, padded or not (${dtype})`, () => {
      const tol = dtype === 'float32' ? 1e-5 : 1e-12;
      for (let W = 3; W <= 28; W += 1) {
        for (const pad of [0, 1]) {
          A.tidy(() => {
            const xs = [2, 3, 5, W],
              ws = [4, 3, 3, 3];
            const x = A.randn(xs, { seed: W, dtype }),
              w = A.randn(ws, { seed: W + 100, dtype });
            const y = A.conv2d(x, w, null, { stride: [1, 2], padding: pad }).toArray();
            const ref = reference(Float64Array.from(x.toArray()), xs, Float64Array.from(w.toArray()), ws, [1, 2], [pad, pad]);
            expect(y.length).toBe(ref.length);
            for (let i = 0; i < y.length; i++) expect(Math.abs(y[i] - ref[i]), `W=${W} pad=${pad} i=${i}`).toBeLessThan(tol * 10);
          });
        }
      }
    });
  }

  for (const dtype of ['float32', 'float64'] as const) {
    it(`input gradient matches a float64 transposed convolution for output widths 1..13 (${dtype})`, () => {
      const tol = dtype === 'float32' ? 1e-4 : 1e-12;
      for (let W = 3; W <= 28; W += 1) {
        for (const pad of [0, 1]) {
          A.tidy(() => {
            const [N, C, H, O, kh, kw] = [2, 3, 5, 4, 3, 3];
            const x = A.zeros([N, C, H, W], { dtype }),
              w = A.randn([O, C, kh, kw], { seed: W + 100, dtype });
            const f = (xx: A.Tensor) => A.conv2d(xx, w, null, { stride: [1, 2], padding: pad });
            const ys = f(x).shape as number[],
              Ho = ys[2],
              Wo = ys[3];
            const g = A.randn(ys, { seed: W + 200, dtype });
            const dx = A.vjp(f, x)[1](g)[0].toArray();
            const gv = g.toArray(),
              wv = w.toArray(),
              ref = new Float64Array(N * C * H * W);
            for (let n = 0; n < N; n++)
              for (let o = 0; o < O; o++)
                for (let oh = 0; oh < Ho; oh++)
                  for (let ow = 0; ow < Wo; ow++) {
                    for (let c = 0; c < C; c++)
                      for (let i = 0; i < kh; i++)
                        for (let j = 0; j < kw; j++) {
                          const ih = oh - pad + i,
                            iw = ow * 2 - pad + j;
                          if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                            ref[((n * C + c) * H + ih) * W + iw] +=
                              gv[((n * O + o) * Ho + oh) * Wo + ow] * wv[((o * C + c) * kh + i) * kw + j];
                        }
                  }
            for (let i = 0; i < ref.length; i++) expect(Math.abs(dx[i] - ref[i]), `W=${W} pad=${pad} i=${i}`).toBeLessThan(tol * 10);
          });
        }
      }
    });
  }

  it('filter gradient: ⟨g, conv2d(x, w)⟩ = ⟨dw, w⟩ for a conv linear in w, stride 2 both ways', () => {
    for (const W of [9, 10, 17, 28]) {
      A.tidy(() => {
        const x = A.randn([3, 2, 11, W], { seed: W, dtype: 'float64' }),
          w = A.randn([5, 2, 3, 3], { seed: 7, dtype: 'float64' });
        const f = (ww: A.Tensor) => A.conv2d(x, ww, null, { stride: 2, padding: 1 });
        const g = A.randn(f(w).shape as number[], { seed: 9, dtype: 'float64' });
        const [dw] = A.vjp(f, w)[1](g);
        const lhs = A.sum(A.mul(g, f(w))).item(),
          rhs = A.sum(A.mul(dw, w)).item();
        expect(Math.abs(lhs - rhs)).toBeLessThan(1e-10 * Math.max(1, Math.abs(lhs)));
      });
    }
  });
});
