// conv2d, maxPool2d, avgPool2d and dropout: forward and both conv VJPs against naive float64
// references (one table of geometries), gradcheck of every primitive (the gradient rules'
// own rules included), JVP and HVP against finite differences, a LeNet-style training step,
// dropout's mask, and bad input.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import {
  conv2dInputGrad,
  conv2dFilterGrad,
  maxPool2dGrad,
  maxPool2dGather,
  avgPool2dGrad,
  type ConvParams,
  type Pair,
} from '../src/ops/conv-api.js';

beforeAll(async () => {
  await A.init();
});

type F = Float64Array | Float32Array | Int32Array | number[];
interface Geo {
  N: number;
  C: number;
  H: number;
  W: number;
  O: number;
  kh: number;
  kw: number;
  s: Pair;
  p: Pair;
}

const out = (n: number, k: number, s: number, p: number) => Math.floor((n + 2 * p - k) / s) + 1;
const shapes = (g: Geo) => ({
  x: [g.N, g.C, g.H, g.W],
  w: [g.O, g.C, g.kh, g.kw],
  y: [g.N, g.O, out(g.H, g.kh, g.s[0], g.p[0]), out(g.W, g.kw, g.s[1], g.p[1])],
});

/** Calls f(n, o, oh, ow, c, i, j, xIndex) for every in-image term of the convolution sum. */
function eachTerm(g: Geo, f: (yi: number, wi: number, xi: number) => void): void {
  const Ho = out(g.H, g.kh, g.s[0], g.p[0]),
    Wo = out(g.W, g.kw, g.s[1], g.p[1]);
  for (let n = 0; n < g.N; n++)
    for (let o = 0; o < g.O; o++)
      for (let oh = 0; oh < Ho; oh++)
        for (let ow = 0; ow < Wo; ow++) {
          const yi = ((n * g.O + o) * Ho + oh) * Wo + ow;
          for (let c = 0; c < g.C; c++)
            for (let i = 0; i < g.kh; i++)
              for (let j = 0; j < g.kw; j++) {
                const ih = oh * g.s[0] - g.p[0] + i,
                  iw = ow * g.s[1] - g.p[1] + j;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                f(yi, ((o * g.C + c) * g.kh + i) * g.kw + j, ((n * g.C + c) * g.H + ih) * g.W + iw);
              }
        }
}
const size = (s: number[]) => s.reduce((a, b) => a * b, 1);
function refConv(g: Geo, x: F, w: F, b: F | null): Float64Array {
  const s = shapes(g),
    y = new Float64Array(size(s.y)),
    P = s.y[2] * s.y[3];
  if (b) for (let i = 0; i < y.length; i++) y[i] = b[Math.floor(i / P) % g.O];
  eachTerm(g, (yi, wi, xi) => (y[yi] += w[wi] * x[xi]));
  return y;
}
function refInputGrad(g: Geo, gy: F, w: F): Float64Array {
  const dx = new Float64Array(size(shapes(g).x));
  eachTerm(g, (yi, wi, xi) => (dx[xi] += gy[yi] * w[wi]));
  return dx;
}
function refFilterGrad(g: Geo, x: F, gy: F): Float64Array {
  const dw = new Float64Array(size(shapes(g).w));
  eachTerm(g, (yi, wi, xi) => (dw[wi] += gy[yi] * x[xi]));
  return dw;
}

function expectClose(actual: F, expected: F, tol: number): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / Math.max(1, Math.abs(expected[i])));
  expect(worst).toBeLessThan(tol);
}

const geo = (
  N: number,
  C: number,
  H: number,
  W: number,
  O: number,
  kh: number,
  kw: number,
  s: number | Pair = 1,
  p: number | Pair = 0,
): Geo => ({ N, C, H, W, O, kh, kw, s: typeof s === 'number' ? [s, s] : s, p: typeof p === 'number' ? [p, p] : p });

// One row per geometry: odd sizes, stride 2, padding 2, 1×1 (the pointwise path and not),
// batches, many channels, non-square kernels/strides/paddings, strides that skip pixels.
const GEOMETRIES: [string, Geo][] = [
  ['3×3 single channel', geo(1, 1, 5, 5, 1, 3, 3)],
  ['odd sizes, batch 3', geo(3, 2, 7, 9, 4, 3, 3)],
  ['stride 2', geo(2, 3, 8, 8, 5, 3, 3, 2)],
  ['stride 2 skipping the last row/column', geo(2, 2, 9, 10, 3, 2, 2, 2)],
  ['padding 2, 5×5', geo(2, 3, 6, 7, 4, 5, 5, 1, 2)],
  ['stride 2, padding 2', geo(1, 2, 11, 9, 3, 5, 5, 2, 2)],
  ['1×1 pointwise', geo(2, 5, 4, 6, 3, 1, 1)],
  ['1×1 stride 2', geo(2, 3, 5, 5, 2, 1, 1, 2)],
  ['1×1 padded', geo(1, 2, 3, 3, 2, 1, 1, 1, 1)],
  ['non-square kernel, stride and padding', geo(2, 2, 7, 8, 3, 2, 4, [1, 3], [2, 1])],
  ['kernel = padded input', geo(1, 2, 3, 3, 2, 5, 5, 1, 1)],
  ['many channels (GEMM edges)', geo(2, 17, 6, 5, 13, 3, 3, 1, 1)],
  ['LeNet conv2 shape', geo(2, 16, 14, 14, 32, 5, 5, 1, 2)],
];

const randn = (shape: number[], seed: number, dtype: 'float32' | 'float64' = 'float64') => A.randn(shape, { seed, dtype });

describe('conv2d kernels vs a float64 reference', () => {
  for (const [name, g] of GEOMETRIES) {
    for (const dtype of ['float64', 'float32'] as const) {
      it(`${name} (${dtype})`, () => {
        A.tidy(() => {
          const s = shapes(g);
          const x = randn(s.x, 1, dtype),
            w = randn(s.w, 2, dtype),
            b = randn([g.O], 3, dtype),
            gy = randn(s.y, 4, dtype);
          const tol = dtype === 'float64' ? 1e-12 : 2e-5;
          const y = A.conv2d(x, w, b, { stride: g.s, padding: g.p });
          expect(y.shape).toEqual(s.y);
          expectClose(y.toArray(), refConv(g, x.toArray(), w.toArray(), b.toArray()), tol);
          const [, back] = A.vjp((x, w) => A.conv2d(x, w, null, { stride: g.s, padding: g.p }), x, w);
          const [dx, dw] = back(gy);
          expectClose(dx.toArray(), refInputGrad(g, gy.toArray(), w.toArray()), tol);
          expectClose(dw.toArray(), refFilterGrad(g, x.toArray(), gy.toArray()), tol);
        });
      });
    }
  }
});

// Gradcheck's relative error has no absolute floor, so a gradient entry that is tiny by chance
// (a random-sign sum that nearly cancels) fails on finite-difference round-off alone. The checks
// below therefore use positive inputs and weights and a loss with a positive derivative: every
// gradient entry is then a sum of positive terms, or exactly zero (inputs a stride skips).
const pos = (shape: readonly number[], seed: number, scale = 1): Tensor =>
  A.mul(A.add(A.rand([...shape], { seed, dtype: 'float64' }), 0.5), scale);
/** Σ r·softplus(y), r in [0.5, 1.5): derivative r·σ(y) > 0 everywhere. */
function loss(y: Tensor, seed = 9): Tensor {
  return A.sum(A.mul(A.softplus(y), pos(y.shape, seed)));
}
const fanIn = (g: Geo) => 1 / (g.C * g.kh * g.kw);
function expectGradcheck(f: (...xs: Tensor[]) => Tensor, xs: Tensor[]): void {
  const r = A.gradcheck(f, xs);
  expect(r.maxRelError, JSON.stringify(r.worst)).toBeLessThan(1e-7);
}

describe('gradcheck (float64)', () => {
  const small: [string, Geo][] = [
    ['3×3', geo(2, 2, 5, 4, 3, 3, 3)],
    ['stride 2, padding 2', geo(1, 2, 6, 5, 2, 3, 3, 2, 2)],
    ['1×1', geo(2, 3, 3, 3, 2, 1, 1)],
    ['non-square', geo(1, 2, 5, 6, 2, 2, 3, [2, 1], [0, 1])],
  ];
  for (const [name, g] of small) {
    it(`conv2d w.r.t. x, w and b: ${name}`, () => {
      A.tidy(() => {
        const s = shapes(g);
        const p = { stride: g.s, padding: g.p };
        expectGradcheck((x, w, b) => loss(A.conv2d(x, w, b, p)), [pos(s.x, 1), pos(s.w, 2, fanIn(g)), pos([g.O], 3, 0.1)]);
      });
    });
    it(`conv2dInputGrad and conv2dFilterGrad (gradient rules' own VJPs): ${name}`, () => {
      A.tidy(() => {
        const s = shapes(g),
          p: ConvParams = { stride: g.s, padding: g.p };
        expectGradcheck((gy, w) => loss(conv2dInputGrad(gy, w, p, [g.H, g.W])), [pos(s.y, 4), pos(s.w, 2, 1 / (g.kh * g.kw))]);
        expectGradcheck((x, gy) => loss(conv2dFilterGrad(x, gy, p, [g.kh, g.kw])), [pos(s.x, 1), pos(s.y, 4)]);
      });
    });
  }

  /** Distinct values (a shuffled ramp), so every window has one clear maximum. */
  const distinct = (shape: number[], seed: number): Tensor => {
    const n = size(shape),
      v = Array.from({ length: n }, (_, i) => (i - n / 2) / n);
    let s = seed;
    for (let i = n - 1; i > 0; i--) {
      s = (s * 1103515245 + 12345) % 2147483648;
      const j = s % (i + 1);
      [v[i], v[j]] = [v[j], v[i]];
    }
    return A.tensor(v, { shape, dtype: 'float64' });
  };
  for (const [k, stride, shape] of [
    [2, 2, [2, 3, 6, 6]],
    [3, 2, [1, 2, 7, 8]],
    [2, 1, [1, 2, 4, 5]],
    [
      [2, 3],
      [1, 2],
      [2, 1, 5, 7],
    ],
  ] as const) {
    const tag = `k ${JSON.stringify(k)}, stride ${JSON.stringify(stride)}, [${shape}]`;
    it(`maxPool2d: ${tag}`, () => {
      A.tidy(() => expectGradcheck((x) => loss(A.maxPool2d(x, k, stride)), [distinct([...shape], 5)]));
    });
    it(`avgPool2d: ${tag}`, () => {
      A.tidy(() => expectGradcheck((x) => loss(A.avgPool2d(x, k, stride)), [pos(shape, 6)]));
    });
    it(`maxPool2dGrad / maxPool2dGather / avgPool2dGrad: ${tag}`, () => {
      A.tidy(() => {
        const x = distinct([...shape], 7),
          p = {
            kernel: (typeof k === 'number' ? [k, k] : k) as Pair,
            stride: (typeof stride === 'number' ? [stride, stride] : stride) as Pair,
          };
        const y = A.maxPool2d(x, k, stride);
        expectGradcheck((g) => loss(maxPool2dGrad(x, g, p)), [pos(y.shape, 8)]);
        expectGradcheck((v) => loss(maxPool2dGather(x, v, p)), [pos(shape, 8)]);
        expectGradcheck((g) => loss(avgPool2dGrad(g, p, [shape[2], shape[3]])), [pos(y.shape, 8)]);
      });
    });
  }
});

/** Max/avg pooling of a flat NCHW array in float64, with PyTorch's argmax rule (first max; the last NaN wins). */
function refPool(x: F, [N, C, H, W]: number[], [kh, kw]: Pair, [sh, sw]: Pair) {
  const Ho = out(H, kh, sh, 0),
    Wo = out(W, kw, sw, 0);
  const arg: number[] = [],
    avg: number[] = [];
  for (let p = 0; p < N * C; p++)
    for (let oh = 0; oh < Ho; oh++)
      for (let ow = 0; ow < Wo; ow++) {
        const corner = (p * H + oh * sh) * W + ow * sw;
        let bi = corner,
          s = 0;
        for (let i = 0; i < kh; i++)
          for (let j = 0; j < kw; j++) {
            const k = corner + i * W + j,
              v = x[k],
              best = x[bi];
            if (v > best || Number.isNaN(v)) bi = k;
            s += v;
          }
        arg.push(bi);
        avg.push(s / (kh * kw));
      }
  return { arg, avg, shape: [N, C, Ho, Wo] };
}

describe('pooling kernels vs a float64 reference', () => {
  // Widths around the SIMD group size (4 f32 / 2 f64 windows): narrower rows run scalar, wider
  // ones end with an overlapping group. Small integers make ties common; NaNs are sprinkled in.
  // 2-wide windows at stride 2 take the even/odd-lane path: planes they tile (no zeroing pass
  // in the 2×2 gradient), odd sizes they do not, and 3 window rows.
  const rows: [number[], Pair, Pair][] = [
    [
      [2, 3, 8, 16],
      [2, 2],
      [2, 2],
    ],
    [
      [1, 2, 9, 13],
      [2, 2],
      [2, 2],
    ],
    [
      [1, 1, 6, 10],
      [3, 2],
      [2, 2],
    ],
    [
      [2, 3, 6, 6],
      [2, 2],
      [2, 2],
    ],
    [
      [1, 2, 4, 3],
      [2, 2],
      [2, 2],
    ],
    [
      [1, 1, 5, 11],
      [3, 3],
      [2, 2],
    ],
    [
      [2, 2, 4, 9],
      [2, 2],
      [1, 1],
    ],
    [
      [1, 2, 7, 17],
      [2, 3],
      [1, 3],
    ],
    [
      [1, 1, 3, 3],
      [3, 3],
      [3, 3],
    ],
    [
      [1, 2, 6, 14],
      [1, 1],
      [1, 2],
    ],
    [
      [3, 1, 8, 8],
      [4, 2],
      [2, 1],
    ],
  ];
  for (const [shape, kp, sp] of rows) {
    for (const dtype of ['float32', 'float64'] as const) {
      it(`[${shape}] k ${kp} stride ${sp} (${dtype})`, () => {
        A.tidy(() => {
          const n = size(shape);
          const vals = Array.from({ length: n }, (_, i) => (i % 13 === 5 ? NaN : ((i * 7919) % 11) - 5));
          const x = A.tensor(vals, { shape, dtype }),
            v = A.tensor(
              vals.map((_, i) => i),
              { shape, dtype },
            );
          const ref = refPool(x.toArray(), shape, kp, sp),
            p = { kernel: kp, stride: sp };
          const y = A.maxPool2d(x, [...kp], [...sp]);
          expect(y.shape).toEqual(ref.shape);
          expect([...y.toArray()]).toEqual(ref.arg.map((k) => vals[k]));
          expect([...maxPool2dGather(x, v, p).toArray()]).toEqual(ref.arg);
          const g = A.tensor(
            ref.arg.map((_, i) => i + 1),
            { shape: ref.shape, dtype },
          );
          const dx = new Array<number>(n).fill(0);
          ref.arg.forEach((k, i) => (dx[k] += i + 1));
          expect([...maxPool2dGrad(x, g, p).toArray()]).toEqual(dx);
          const xa = A.tensor(
            vals.map((_, i) => Math.sin(i)),
            { shape, dtype },
          );
          expectClose(
            A.avgPool2d(xa, [...kp], [...sp]).toArray(),
            refPool(xa.toArray(), shape, kp, sp).avg,
            dtype === 'float32' ? 1e-6 : 1e-15,
          );
        });
      });
    }
  }
});

describe('pooling forward', () => {
  it('maxPool2d and avgPool2d match a direct computation; ties go to the first maximum', () => {
    A.tidy(() => {
      const x = A.tensor(
        [
          [
            [
              [1, 3, 2, 0],
              [3, 0, 1, 2],
              [5, 5, 0, 0],
            ],
          ],
        ],
        { dtype: 'float64', requiresGrad: true },
      );
      const y = A.maxPool2d(x, 2);
      expect([...y.toArray()]).toEqual([3, 2]);
      const a = A.avgPool2d(x, [2, 2], [1, 2]);
      expect([...a.toArray()]).toEqual([7 / 4, 5 / 4, 13 / 4, 3 / 4]);
      y.sum().backward();
      // Window 0 holds 3 at (0,1) and (1,0): the first in row-major order wins.
      expect([...x.grad!.toArray()]).toEqual([0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    });
  });
  it('maxPool2d propagates NaN', () => {
    A.tidy(() => {
      const x = A.tensor([1, NaN, 3, 2], { shape: [1, 1, 2, 2] });
      expect(Number.isNaN(A.maxPool2d(x, 2).item())).toBe(true);
    });
  });
  // Indices from PyTorch 1.13's F.max_pool2d(x, k, s, return_indices=True): its rule is
  // `v > best || isnan(v)`, so a window's last NaN takes the gradient (ties still go to the first
  // maximum). Rows 4–10 windows wide run the SIMD paths (the 2×2/2 one tiles the plane).
  const NaN2: number[] = [NaN, NaN, 1, NaN, NaN, 2, 5, 5, NaN, 0, 3, 4, NaN, 1, NaN, NaN, NaN, NaN, 5, NaN, 7, NaN, 1, 2];
  const torchIdx: [Pair, Pair, number[]][] = [
    [
      [2, 2],
      [2, 2],
      [12, 15, 17, 19, 21, 11],
    ],
    [
      [2, 3],
      [1, 3],
      [14, 17, 19, 21],
    ],
    [
      [1, 3],
      [1, 1],
      [1, 3, 4, 4, 4, 6, 8, 8, 8, 11, 14, 15, 16, 17, 17, 19, 19, 21, 21, 21],
    ],
  ];
  for (const dtype of ['float32', 'float64'] as const)
    for (const [k, st, idx] of torchIdx)
      it(`maxPool2d ${k.join('×')}/${st.join('×')} sends the gradient to a window's last NaN, as PyTorch (${dtype})`, () => {
        A.tidy(() => {
          const x = A.tensor(NaN2, { shape: [1, 1, 2, 12], dtype, requiresGrad: true });
          A.maxPool2d(x, k, st).sum().backward();
          const want = new Array<number>(24).fill(0);
          for (const i of idx) want[i] += 1;
          expect([...x.grad!.toArray()]).toEqual(want);
        });
      });
});

describe('JVP/VJP duality: ⟨u, J·t⟩ = ⟨Jᵀ·u, t⟩ for every primitive (float64)', () => {
  const p: ConvParams = { stride: [2, 1], padding: [1, 2] };
  const pool = { kernel: [3, 2] as Pair, stride: [2, 1] as Pair };
  // x: [2, 3, 7, 6], w: [4, 3, 3, 2] → y: [2, 4, 4, 9]; pooled: [2, 3, 3, 5]
  const rows: [string, (xs: Tensor[]) => Tensor, number[][]][] = [
    [
      'conv2d',
      ([x, w]) => A.conv2d(x, w, null, { stride: [2, 1], padding: [1, 2] }),
      [
        [2, 3, 7, 6],
        [4, 3, 3, 2],
      ],
    ],
    [
      'conv2dInputGrad',
      ([g, w]) => conv2dInputGrad(g, w, p, [7, 6]),
      [
        [2, 4, 4, 9],
        [4, 3, 3, 2],
      ],
    ],
    [
      'conv2dFilterGrad',
      ([x, g]) => conv2dFilterGrad(x, g, p, [3, 2]),
      [
        [2, 3, 7, 6],
        [2, 4, 4, 9],
      ],
    ],
    ['maxPool2d', ([x]) => A.maxPool2d(x, [3, 2], [2, 1]), [[2, 3, 7, 6]]],
    ['maxPool2dGrad', ([g]) => maxPool2dGrad(A.randn([2, 3, 7, 6], { seed: 99, dtype: 'float64' }), g, pool), [[2, 3, 3, 5]]],
    ['maxPool2dGather', ([v]) => maxPool2dGather(A.randn([2, 3, 7, 6], { seed: 99, dtype: 'float64' }), v, pool), [[2, 3, 7, 6]]],
    ['avgPool2d', ([x]) => A.avgPool2d(x, [3, 2], [2, 1]), [[2, 3, 7, 6]]],
    ['avgPool2dGrad', ([g]) => avgPool2dGrad(g, pool, [7, 6]), [[2, 3, 3, 5]]],
    ['dropout', ([x]) => A.dropout(x, 0.3, { seed: 5 }), [[2, 3, 7, 6]]],
  ];
  const dot = (a: Tensor, b: Tensor) => A.sum(A.mul(a, b)).item();
  for (const [name, f, shapes] of rows) {
    it(name, () => {
      A.tidy(() => {
        const xs = shapes.map((s, i) => randn(s, 10 + i)),
          ts = shapes.map((s, i) => randn(s, 20 + i));
        const [y, ty] = A.jvp((...a: Tensor[]) => f(a), xs, ts);
        const u = randn([...y.shape], 30);
        const [, back] = A.vjp((...a: Tensor[]) => f(a), ...xs);
        const cts = back(u);
        const lhs = dot(u, ty),
          rhs = cts.reduce((acc, c, i) => acc + dot(c, ts[i]), 0);
        expect(Math.abs(lhs - rhs)).toBeLessThan(1e-12 * Math.max(1, Math.abs(lhs)));
      });
    });
  }
});

describe('forward mode and second order', () => {
  it('jvp of conv2d matches central differences', () => {
    A.tidy(() => {
      const g = geo(2, 2, 6, 5, 3, 3, 3, 2, 1),
        s = shapes(g);
      const f = (x: Tensor, w: Tensor) => A.tanh(A.conv2d(x, w, null, { stride: 2, padding: 1 }));
      const x = randn(s.x, 1),
        w = randn(s.w, 2),
        tx = randn(s.x, 3),
        tw = randn(s.w, 4);
      const [, t] = A.jvp(f, [x, w], [tx, tw]);
      const eps = 1e-6;
      const plus = f(A.add(x, A.mul(tx, eps)), A.add(w, A.mul(tw, eps))).toArray();
      const minus = f(A.sub(x, A.mul(tx, eps)), A.sub(w, A.mul(tw, eps))).toArray();
      expectClose(
        t.toArray(),
        plus.map((v, i) => (v - minus[i]) / (2 * eps)),
        1e-7,
      );
    });
  });
  it('hvp through a small CNN matches differences of gradients', () => {
    A.tidy(() => {
      const x = randn([2, 1, 6, 6], 1),
        labels = [1, 0];
      const shape = [2, 1, 3, 3];
      const f = (w: Tensor) => {
        const h = A.maxPool2d(A.tanh(A.conv2d(x, w, null, { padding: 1 })), 2);
        return A.crossEntropy(A.reshape(A.avgPool2d(h, 3), [2, 2]), labels);
      };
      const w = randn(shape, 2),
        v = randn(shape, 3);
      const hv = A.hvp(f, w, v).toArray();
      const eps = 1e-5;
      const gp = (A.grad(f)(A.add(w, A.mul(v, eps))) as Tensor).toArray(),
        gm = (A.grad(f)(A.sub(w, A.mul(v, eps))) as Tensor).toArray();
      expectClose(
        hv,
        gp.map((a, i) => (a - gm[i]) / (2 * eps)),
        1e-7,
      );
    });
  });
});

describe('LeNet-style CNN', () => {
  it('a training step: gradients pass gradcheck in float64', () => {
    A.tidy(() => {
      const net = (x: Tensor, labels: number[]) => (w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, wf: Tensor) => {
        let h = A.maxPool2d(A.relu(A.conv2d(x, w1, b1, { padding: 2 })), 2); // [N, 4, 6, 6]
        h = A.maxPool2d(A.relu(A.conv2d(h, w2, b2, { padding: 2 })), 2); // [N, 3, 3, 3]
        return A.crossEntropy(A.matmul(A.reshape(h, [x.shape[0], 27]), wf), labels);
      };
      // Positive activations, and a last layer pushing every feature one way (towards class 2,
      // the label): each gradient entry is then a sum of same-signed terms (see pos above).
      const wf = A.concat([pos([27, 2], 6, 0.05), A.neg(pos([27, 1], 7, 0.05))], 1);
      const params = [pos([4, 1, 5, 5], 2, 0.04), pos([4], 3, 0.1), pos([3, 4, 5, 5], 4, 0.01), pos([3], 5, 0.1), wf];
      const f = net(pos([2, 1, 12, 12], 1), [2, 2]);
      expectGradcheck(f, params);
      // Random-sign weights, mixed labels: one SGD step lowers the loss.
      const g = net(randn([4, 1, 12, 12], 1), [2, 0, 1, 2]);
      const init = [
        A.mul(randn([4, 1, 5, 5], 2), 0.3),
        A.mul(randn([4], 3), 0.1),
        A.mul(randn([3, 4, 5, 5], 4), 0.1),
        A.mul(randn([3], 5), 0.1),
        A.mul(randn([27, 3], 6), 0.3),
      ];
      const [l0, gs] = A.valueAndGrad(g, { argnums: [0, 1, 2, 3, 4] })(...init) as [Tensor, Tensor[]];
      const stepped = init.map((p, i) => A.sub(p, A.mul(gs[i], 0.05)));
      expect(g(...(stepped as [Tensor, Tensor, Tensor, Tensor, Tensor])).item()).toBeLessThan(l0.item());
    });
  });
});

describe('memory', () => {
  it('conv, pool and dropout steps free everything they allocate (scratch included)', () => {
    const x = A.randn([3, 2, 9, 9], { seed: 1 }),
      w = A.randn([4, 2, 3, 3], { seed: 2 }),
      b = A.zeros([4]);
    const step = () =>
      A.tidy(() => {
        const f = (w: Tensor, b: Tensor) =>
          A.sum(A.dropout(A.avgPool2d(A.maxPool2d(A.conv2d(x, w, b, { padding: 1 }), 2, 1), 2), 0.2, { seed: 1 }));
        A.grad(f, { argnums: [0, 1] })(w, b);
      });
    step();
    const before = A.memory();
    step();
    const after = A.memory();
    expect([after.tensors, after.bytesInUse]).toEqual([before.tensors, before.bytesInUse]);
    [x, w, b].forEach((t) => t.dispose());
  });
});

describe('dropout', () => {
  it('same seed → same mask; another seed → another; keeps ≈ 1 − p scaled by 1/(1 − p)', () => {
    A.tidy(() => {
      const x = A.ones([200, 500]);
      const a = A.dropout(x, 0.3, { seed: 7 }).toArray(),
        b = A.dropout(x, 0.3, { seed: 7 }).toArray();
      const c = A.dropout(x, 0.3, { seed: 8 }).toArray();
      expect(a).toEqual(b);
      expect(a).not.toEqual(c);
      const kept = a.filter((v) => v !== 0);
      expect(kept.every((v) => Math.abs(v - 1 / 0.7) < 1e-6)).toBe(true);
      expect(Math.abs(kept.length / a.length - 0.7)).toBeLessThan(0.005);
      const mean = Array.from(a).reduce((s, v) => s + v, 0) / a.length;
      expect(Math.abs(mean - 1)).toBeLessThan(0.01);
    });
  });
  it('its gradient is the mask: 1/(1 − p) where kept, 0 where dropped', () => {
    A.tidy(() => {
      const x = randn([50, 40], 1);
      const p = 0.5;
      const g = (A.grad((x: Tensor) => A.sum(A.dropout(x, p, { seed: 3 })))(x) as Tensor).toArray();
      const y = A.dropout(x, p, { seed: 3 }).toArray(),
        xv = x.toArray();
      g.forEach((gi, i) => expect(gi).toBe(y[i] === 0 ? 0 : 2));
      y.forEach((yi, i) => expect(yi).toBe(g[i] * xv[i]));
      expectGradcheck((x) => loss(A.dropout(x, 0.4, { seed: 11 })), [pos([3, 4], 2)]);
    });
  });
  it('training = false and p = 0 are the identity (gradients flow)', () => {
    A.tidy(() => {
      const x = randn([4, 5], 1);
      x.requiresGrad = true;
      for (const y of [A.dropout(x, 0.5, { training: false }), A.dropout(x, 0)]) {
        expect(y.toArray()).toEqual(x.toArray());
        expect(y.requiresGrad).toBe(true);
      }
      expect((A.grad((x: Tensor) => A.sum(A.dropout(x, 0.9, { training: false })))(x) as Tensor).toArray()).toEqual(
        new Float64Array(20).fill(1),
      );
    });
  });
});

describe('bad input', () => {
  const cases: [string, () => unknown, typeof A.AdjointError, RegExp][] = [
    [
      'channel mismatch',
      () => A.conv2d(A.zeros([2, 3, 8, 8]), A.zeros([16, 1, 5, 5])),
      A.ShapeError,
      /conv2d: input has 3 channels but weight \[16,1,5,5\] expects 1/,
    ],
    [
      '3-D input',
      () => A.conv2d(A.zeros([3, 8, 8]), A.zeros([4, 3, 3, 3])),
      A.ShapeError,
      /conv2d: input must be 4-D \[N, C, H, W\], got \[3,8,8\]/,
    ],
    ['3-D weight', () => A.conv2d(A.zeros([1, 3, 8, 8]), A.zeros([4, 3, 3])), A.ShapeError, /conv2d: weight must be 4-D/],
    [
      'dtype mismatch',
      () => A.conv2d(A.zeros([1, 1, 4, 4]), A.zeros([1, 1, 3, 3], { dtype: 'float64' })),
      A.DtypeError,
      /conv2d: dtypes differ/,
    ],
    [
      'kernel too large',
      () => A.conv2d(A.zeros([1, 1, 3, 3]), A.zeros([1, 1, 5, 5])),
      A.ShapeError,
      /conv2d: window 5×5 is larger than the input 3×3/,
    ],
    [
      'bad stride',
      () => A.conv2d(A.zeros([1, 1, 4, 4]), A.zeros([1, 1, 3, 3]), null, { stride: 0 }),
      A.ArgumentError,
      /conv2d: stride must be a positive integer/,
    ],
    [
      'bad padding',
      () => A.conv2d(A.zeros([1, 1, 4, 4]), A.zeros([1, 1, 3, 3]), null, { padding: -1 }),
      A.ArgumentError,
      /conv2d: padding must be a non-negative integer/,
    ],
    ['bias shape', () => A.conv2d(A.zeros([1, 1, 4, 4]), A.zeros([2, 1, 3, 3]), A.zeros([3])), A.ShapeError, /conv2d: bias must be \[2\]/],
    [
      'bias not a tensor',
      () => A.conv2d(A.zeros([1, 1, 4, 4]), A.zeros([2, 1, 3, 3]), 5 as unknown as Tensor),
      A.ArgumentError,
      /conv2d: bias must be a Tensor/,
    ],
    ['not a tensor', () => A.conv2d([1, 2] as unknown as Tensor, A.zeros([2, 1, 3, 3])), A.ArgumentError, /conv2d: input must be a Tensor/],
    [
      'pool window too large',
      () => A.maxPool2d(A.zeros([1, 1, 2, 5]), 3),
      A.ShapeError,
      /maxPool2d: window 3×3 is larger than the input 2×5/,
    ],
    ['pool kernel 0', () => A.avgPool2d(A.zeros([1, 1, 4, 4]), 0), A.ArgumentError, /avgPool2d: kernel size must be a positive integer/],
    ['pool 2-D input', () => A.maxPool2d(A.zeros([4, 4]), 2), A.ShapeError, /maxPool2d: input must be 4-D/],
    ['dropout p = 1', () => A.dropout(A.zeros([3]), 1), A.ArgumentError, /dropout: p must be a number in \[0, 1\), got 1/],
    ['dropout p < 0', () => A.dropout(A.zeros([3]), -0.1), A.ArgumentError, /dropout: p must be/],
    ['dropout p NaN', () => A.dropout(A.zeros([3]), NaN), A.ArgumentError, /dropout: p must be/],
  ];
  for (const [name, f, type, msg] of cases) {
    it(name, () => {
      A.tidy(() => {
        expect(f).toThrow(type);
        expect(f).toThrow(msg);
      });
    });
  }
  it('options may come third when there is no bias', () => {
    A.tidy(() => expect(A.conv2d(A.zeros([1, 1, 5, 5]), A.zeros([1, 1, 3, 3]), { stride: 2 }).shape).toEqual([1, 1, 2, 2]));
  });
});
