// The convolution forward's two paths (src/ops/conv.ts picks by shape): direct convolution and
// im2col + GEMM, each forced on the same geometries and checked against a float64 reference;
// and the picks the automatic policy makes for the shapes it was tuned on.
import { describe, it, expect, beforeAll, afterEach } from 'vitest';
import * as A from '../src/index.js';
import { setConvColLimit, setConvForwardPath } from '../src/ops/conv.js';

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

/** dw[o, c, i, j] = Σ_n Σ_(oh, ow) g[n, o, oh, ow] · x[n, c, oh·sh − ph + i, ow·sw − pw + j] over in-image taps, in float64. */
function filterReference([N, C, H, W, O, kh, kw, [sh, sw], [ph, pw]]: G, x: ArrayLike<number>, g: ArrayLike<number>): Float64Array {
  const Ho = out(H, kh, sh, ph),
    Wo = out(W, kw, sw, pw),
    dw = new Float64Array(O * C * kh * kw);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < O; o++)
      for (let oh = 0; oh < Ho; oh++)
        for (let ow = 0; ow < Wo; ow++) {
          const gv = g[((n * O + o) * Ho + oh) * Wo + ow];
          for (let c = 0; c < C; c++)
            for (let i = 0; i < kh; i++)
              for (let j = 0; j < kw; j++) {
                const ih = oh * sh - ph + i,
                  iw = ow * sw - pw + j;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) dw[((o * C + c) * kh + i) * kw + j] += gv * x[((n * C + c) * H + ih) * W + iw];
              }
        }
  return dw;
}

// The filter gradient sums N·Ho·Wo products per element (f32: relative to the sum of their sizes).
describe('conv2d filter gradient: direct and im2col paths vs a float64 reference', () => {
  for (const [name, g] of CASES) {
    for (const path of ['direct', 'im2col'] as const) {
      for (const dtype of ['float32', 'float64'] as const) {
        it(`${name}: ${path} (${dtype})`, () => {
          const [N, C, H, W, O, kh, kw, stride, padding] = g;
          A.tidy(() => {
            const x = A.randn([N, C, H, W], { seed: 1, dtype }),
              w = A.randn([O, C, kh, kw], { seed: 2, dtype });
            setConvForwardPath(path);
            const [y, back] = A.vjp((b) => A.conv2d(x, b, { stride, padding }), w);
            const gy = A.randn(y.shape, { seed: 3, dtype });
            const dw = back(gy)[0].toArray();
            const ref = filterReference(g, x.toArray(), gy.toArray());
            expect(dw.length).toBe(ref.length);
            const scale = Math.sqrt(N * out(H, kh, stride[0], padding[0]) * out(W, kw, stride[1], padding[1]));
            let worst = 0;
            for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(dw[i] - ref[i]) / Math.max(scale, Math.abs(ref[i])));
            expect(worst).toBeLessThan(dtype === 'float64' ? 1e-12 : 2e-5);
          });
        });
      }
    }
  }
});

describe('bounded im2col scratch', () => {
  afterEach(() => setConvColLimit(1 << 20));
  // A 3×240×320 image: its whole col matrix (27·76800 elements at stride 1) is over 8 MB; tiled
  // to 20000 elements (under a band of one output row for the forward at stride 1: tile 1).
  for (const [stride, path] of [
    [1, 'im2col'],
    [2, 'auto'],
  ] as const) {
    it(`a large image, stride ${stride}: the same bytes from tiles as from one block, in less memory`, () => {
      setConvForwardPath(path);
      const run = (limit: number) => {
        setConvColLimit(limit);
        return A.tidy(() => {
          const x = A.randn([2, 3, 240, 320], { seed: 5 }),
            w = A.randn([8, 3, 3, 3], { seed: 6 });
          A.resetPeak();
          const base = A.memory().bytesInUse;
          const [y, back] = A.vjp((a, b) => A.conv2d(a, b, { stride, padding: 1 }), x, w);
          const [dx, dw] = back(A.randn(y.shape, { seed: 7 }));
          return { y: y.toArray(), dx: dx.toArray(), dw: dw.toArray(), peak: A.memory().peakBytes - base };
        });
      };
      const whole = run(1 << 24),
        tiled = run(20000);
      expect(Buffer.from(tiled.y.buffer).equals(Buffer.from(whole.y.buffer))).toBe(true);
      expect(Buffer.from(tiled.dx.buffer).equals(Buffer.from(whole.dx.buffer))).toBe(true);
      expect(Buffer.from(tiled.dw.buffer).equals(Buffer.from(whole.dw.buffer))).toBe(true);
      // The col block alone is 27·(240·320/stride²)·4 bytes when whole (the peaks fall at
      // different moments of forward and backward, so not all of it shows in their difference).
      expect(whole.peak - tiled.peak).toBeGreaterThan(0.5 * 27 * ((240 * 320) / stride ** 2) * 4);
    });
  }
});
