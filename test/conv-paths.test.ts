// The convolution forward's two paths (src/ops/conv.ts picks by shape): direct convolution and
// im2col + GEMM, each forced on the same geometries and checked against a float64 reference;
// and the picks the automatic policy makes for the shapes it was tuned on.
import { describe, it, expect, beforeAll, afterEach } from 'vitest';
import * as A from '../src/index.js';
import { setConvForwardPath } from '../src/ops/conv.js';

beforeAll(async () => {
  await A.init();
});
afterEach(() => setConvForwardPath('auto'));

type G = [N: number, C: number, H: number, W: number, O: number, kh: number, kw: number, s: [number, number], p: [number, number]];
const out = (n: number, k: number, s: number, p: number) => Math.floor((n + 2 * p - k) / s) + 1;

/** y[n, o, oh, ow] = Σ x·w over in-image taps, in float64. */
function reference([N, C, H, W, O, kh, kw, [sh, sw], [ph, pw]]: G, x: ArrayLike<number>, w: ArrayLike<number>): Float64Array {
  const Ho = out(H, kh, sh, ph),
    Wo = out(W, kw, sw, pw),
    y = new Float64Array(N * O * Ho * Wo);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < O; o++)
      for (let oh = 0; oh < Ho; oh++)
        for (let ow = 0; ow < Wo; ow++) {
          let acc = 0;
          for (let c = 0; c < C; c++)
            for (let i = 0; i < kh; i++)
              for (let j = 0; j < kw; j++) {
                const ih = oh * sh - ph + i,
                  iw = ow * sw - pw + j;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) acc += x[((n * C + c) * H + ih) * W + iw] * w[((o * C + c) * kh + i) * kw + j];
              }
          y[((n * O + o) * Ho + oh) * Wo + ow] = acc;
        }
  return y;
}

// Edge tiles in both directions (O not a multiple of 4, Wo not of 8), strides 1–3 per axis,
// paddings wider than the kernel reach, 1×1, one output column, the Fashion-MNIST CNN's layers.
const CASES: [string, G][] = [
  ['5×5 pad 2, C = 1 (a first layer)', [3, 1, 28, 28, 16, 5, 5, [1, 1], [2, 2]]],
  ['5×5 pad 2, 16 → 32', [2, 16, 14, 14, 32, 5, 5, [1, 1], [2, 2]]],
  ['3×3, O = 5, Wo = 11', [2, 3, 9, 11, 5, 3, 3, [1, 1], [1, 1]]],
  ['stride 2, pad 1', [2, 1, 28, 28, 8, 3, 3, [2, 2], [1, 1]]],
  ['stride [2, 3], pad [0, 2]', [2, 2, 10, 13, 6, 2, 3, [2, 3], [0, 2]]],
  ['1×1, one output column', [1, 7, 5, 1, 3, 1, 1, [1, 1], [0, 0]]],
  ['kernel wider than the image, padding 3', [1, 2, 4, 3, 2, 5, 7, [1, 1], [3, 3]]],
];

describe('conv2d forward: direct and im2col paths vs a float64 reference', () => {
  for (const [name, g] of CASES) {
    for (const path of ['direct', 'im2col'] as const) {
      for (const dtype of ['float32', 'float64'] as const) {
        it(`${name}: ${path} (${dtype})`, () => {
          const [N, C, H, W, O, kh, kw, stride, padding] = g;
          A.tidy(() => {
            const x = A.randn([N, C, H, W], { seed: 1, dtype }),
              w = A.randn([O, C, kh, kw], { seed: 2, dtype });
            setConvForwardPath(path);
            const y = A.conv2d(x, w, { stride, padding }).toArray();
            const ref = reference(g, x.toArray(), w.toArray());
            expect(y.length).toBe(ref.length);
            let worst = 0;
            for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(y[i] - ref[i]) / Math.max(1, Math.abs(ref[i])));
            expect(worst).toBeLessThan(dtype === 'float64' ? 1e-12 : 2e-5);
          });
        });
      }
    }
  }
});
