// The sequence-model ops with real values: comparisons (NaN, broadcasting, tails), where and
// maskedFill (a causal attention mask), tril/triu (offsets beyond the matrix), PyTorch's
// split/chunk/squeeze rules, and crossEntropy against closed forms (uniform logits, label
// smoothing, ignoreIndex, probabilities) and their gradients.
import { describe, it, expect, beforeAll, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';
import { rng } from './specs.js';

beforeAll(() => A.init());

const SIZES = [0, 1, 3, 4, 5, 16, 17];
const randoms = (n: number, seed: number, lo = -2, hi = 2): number[] => {
  const r = rng(seed);
  return Array.from({ length: n }, () => lo + (hi - lo) * r());
};

describe('comparisons (0/1 in the input dtype, no gradient)', () => {
  const fns = {
    eq: (a: number, b: number) => a === b,
    ne: (a: number, b: number) => a !== b,
    lt: (a: number, b: number) => a < b,
    le: (a: number, b: number) => a <= b,
    gt: (a: number, b: number) => a > b,
    ge: (a: number, b: number) => a >= b,
  } as const;
  for (const [name, js] of Object.entries(fns) as [keyof typeof fns, (a: number, b: number) => boolean][]) {
    it(`${name}: NaN, ties and broadcasting at every tail size, float32 and float64`, () => {
      A.tidy(() => {
        for (const dtype of ['float32', 'float64'] as const) {
          for (const n of SIZES) {
            const a = randoms(3 * n, n).map((v, i) => (i % 7 === 3 ? NaN : Math.round(v))); // rounded: many ties
            const b = randoms(n, n + 50).map((v, i) => (i % 5 === 1 ? NaN : Math.round(v)));
            const ta = A.tensor(a, { shape: [3, n], dtype }),
              tb = A.tensor(b, { shape: [n], dtype });
            const y = A[name](ta, tb);
            expect(y.dtype).toBe(dtype);
            expect(arr(y)).toEqual(a.map((v, i) => Number(js(v, b[i % n]))));
            expect(arr(ta[name](0))).toEqual(a.map((v) => Number(js(v, 0))));
          }
        }
      });
    });
  }
  it('gives no gradient: d/dx sum(x · (x > 0)) is the mask itself', () => {
    A.tidy(() => {
      const x = A.tensor([-1, 2, 0.5, -3], f64);
      const g = A.grad((v: Tensor) => A.sum(A.mul(v, A.gt(v, 0))))(x) as Tensor;
      expect(arr(g)).toEqual([0, 1, 1, 0]);
    });
  });
});

describe('where and maskedFill', () => {
  it('picks a where cond ≠ 0 (NaN counts as true, as bool(NaN) in PyTorch), at every tail size', () => {
    A.tidy(() => {
      for (const n of SIZES) {
        const c = randoms(n, n).map((v, i) => (i % 4 === 0 ? 0 : i % 4 === 1 ? NaN : v));
        const a = randoms(n, n + 1),
          b = randoms(n, n + 2);
        const y = A.where(A.tensor(c, f64), A.tensor(a, f64), A.tensor(b, f64));
        expect(arr(y)).toEqual(c.map((v, i) => (v !== 0 ? a[i] : b[i])));
      }
    });
  });

  it('broadcasts cond, a and b; gradients are the mask summed back to each shape (closed form)', () => {
    A.tidy(() => {
      const cond = A.tensor([[1], [0], [1]], f64); // [3, 1]
      const a = A.tensor(randoms(4, 1), { ...f64, shape: [4] });
      const b = A.tensor(randoms(12, 2), { ...f64, shape: [3, 4] });
      const [ga, gb] = A.grad((u: Tensor, v: Tensor) => A.sum(A.mul(A.where(cond, u, v), 2)), { argnums: [0, 1] })(a, b) as Tensor[];
      expect(arr(ga)).toEqual([4, 4, 4, 4]); // two rows pick a, each with weight 2
      expect(arr(gb)).toEqual([0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0]);
      expect(A.where(A.tensor([1, 0]), 1, 0).dtype).toBe('float32');
      expect(arr(A.where(A.tensor([1, 0], f64), 5, -5))).toEqual([5, -5]);
    });
  });

  it('a causal mask: softmax(maskedFill(scores, triu(ones, 1), −∞)) puts no weight on the future', () => {
    A.tidy(() => {
      const T = 5,
        d = 3;
      const q = A.randn([2, T, d], { seed: 1, dtype: 'float64' }),
        k = A.randn([2, T, d], { seed: 2, dtype: 'float64' });
      const scores = A.matmul(q, A.permute(k, 0, 2, 1));
      const future = A.triu(A.ones([T, T], f64), 1);
      const p = A.softmax(A.maskedFill(scores, future, -Infinity), -1);
      const s = scores.toArray(),
        got = p.toArray();
      for (let bi = 0; bi < 2; bi++)
        for (let i = 0; i < T; i++) {
          const row = Array.from({ length: i + 1 }, (_, j) => s[(bi * T + i) * T + j]);
          const m = Math.max(...row),
            z = row.reduce((acc, v) => acc + Math.exp(v - m), 0);
          for (let j = 0; j < T; j++) {
            const want = j <= i ? Math.exp(row[j] - m) / z : 0;
            expect(Math.abs(got[(bi * T + i) * T + j] - want)).toBeLessThan(1e-14);
          }
        }
      // The same mask built from comparisons of index tensors (int32).
      const i = A.unsqueeze(A.arange(T, { dtype: 'int32' }), 1),
        j = A.unsqueeze(A.arange(T, { dtype: 'int32' }), 0);
      expect(arr(A.astype(A.gt(j, i), 'float64'))).toEqual(arr(future));
    });
  });
});

describe('tril and triu', () => {
  it('match the definition for every offset, including offsets beyond the matrix, at tail widths', () => {
    A.tidy(() => {
      for (const cols of [1, 3, 4, 5, 17]) {
        const rows = 4,
          x = A.tensor(randoms(2 * rows * cols, cols), { shape: [2, rows, cols], dtype: 'float64' });
        const xs = x.toArray();
        for (const k of [-100, -4, -1, 0, 1, 3, 17, 100]) {
          const lo = A.tril(x, k).toArray(),
            up = A.triu(x, k).toArray();
          for (let idx = 0; idx < xs.length; idx++) {
            const j = idx % cols,
              i = Math.floor(idx / cols) % rows;
            expect(lo[idx]).toBe(j - i <= k ? xs[idx] : 0);
            expect(up[idx]).toBe(j - i >= k ? xs[idx] : 0);
          }
          // tril(x, k) + triu(x, k + 1) = x exactly (the two halves partition the matrix).
          expect(Array.from(A.add(A.tril(x, k), A.triu(x, k + 1)).toArray())).toEqual(Array.from(xs));
        }
      }
    });
  });
  it('gradients are the same mask (tril is linear and self-adjoint)', () => {
    A.tidy(() => {
      const x = A.randn([3, 3], { seed: 4, dtype: 'float64' });
      expect(arr(A.grad((v: Tensor) => A.sum(A.tril(v)))(x) as Tensor)).toEqual([1, 0, 0, 1, 1, 0, 1, 1, 1]);
      expect(arr(A.grad((v: Tensor) => A.sum(v.triu(1)))(x) as Tensor)).toEqual([0, 1, 1, 0, 0, 1, 0, 0, 0]);
    });
  });
});

describe('shape ops follow PyTorch', () => {
  it('chunk sizes ⌈n/k⌉ (possibly fewer pieces), split by size or sizes', () => {
    A.tidy(() => {
      const sizes = (ts: Tensor[], axis = 0) => ts.map((t) => t.shape[axis]);
      expect(sizes(A.chunk(A.arange(5), 3))).toEqual([2, 2, 1]);
      expect(sizes(A.chunk(A.arange(6), 4))).toEqual([2, 2, 2]); // torch.arange(6).chunk(4): three pieces
      expect(sizes(A.chunk(A.zeros([2, 7]), 2, -1), 1)).toEqual([4, 3]);
      expect(sizes(A.split(A.arange(7), 3))).toEqual([3, 3, 1]);
      expect(sizes(A.split(A.zeros([2, 6]), [1, 0, 5], 1), 1)).toEqual([1, 0, 5]);
      expect(A.split(A.arange(6), [2, 4]).map(arr)).toEqual([
        [0, 1],
        [2, 3, 4, 5],
      ]);
      expect(A.arange(4).split(2).map(arr)).toEqual([
        [0, 1],
        [2, 3],
      ]);
    });
  });
  it('an empty axis: split gives one empty piece, chunk n of them; reshape refuses a -1 beside a 0 (torch 1.13)', () => {
    A.tidy(() => {
      const shapes = (ts: Tensor[]) => ts.map((t) => t.shape);
      const e = A.zeros([0, 3]);
      // torch.zeros(0, 3).split(2), .split(0), .chunk(2), .chunk(5), and along an axis of [3, 0]
      expect(shapes(A.split(e, 2))).toEqual([[0, 3]]);
      expect(shapes(A.split(e, 0))).toEqual([[0, 3]]);
      expect(shapes(A.chunk(e, 2))).toEqual([
        [0, 3],
        [0, 3],
      ]);
      expect(shapes(A.chunk(e, 5))).toEqual(Array(5).fill([0, 3]));
      expect(shapes(A.chunk(A.zeros([3, 0]), 2, 1))).toEqual([
        [3, 0],
        [3, 0],
      ]);
      expect(shapes(A.chunk(e, 2, 1))).toEqual([
        [0, 2],
        [0, 1],
      ]);
      expect(() => A.split(A.arange(3), 0)).toThrow(/split: size must be positive, got 0/);
      // torch: "the unspecified dimension size -1 can be any value and is ambiguous"
      expect(() => e.reshape([0, -1])).toThrow(/reshape: .*\[0,-1\]: the -1 is ambiguous/);
      expect(() => e.reshape([-1, 0])).toThrow(A.ShapeError);
      expect([e.reshape([-1]).shape, e.reshape([3, -1]).shape]).toEqual([[0], [3, 0]]);
    });
  });
  it('a reduction refuses an axis named twice, as torch ("dim 0 appears multiple times")', () => {
    A.tidy(() => {
      const x = A.ones([2, 3]);
      for (const op of ['sum', 'mean', 'max', 'logsumexp'] as const) {
        expect(() => A[op](x, [0, 0])).toThrow(A.ArgumentError);
        expect(() => x[op]([1, -1])).toThrow(new RegExp(`^${op}: axis \\[1,-1\\] names axis 1 of shape \\[2,3\\] more than once`));
      }
      expect(arr(A.sum(x, [1, 0]))).toEqual([6]);
    });
  });
  it('squeeze keeps a listed axis of another length; flatten and unsqueeze handle the ends; .T and permute', () => {
    A.tidy(() => {
      expect(A.squeeze(A.zeros([2, 1, 3]), 0).shape).toEqual([2, 1, 3]);
      expect(A.squeeze(A.zeros([1, 1, 3]), [0, 1]).shape).toEqual([3]);
      expect(A.zeros([1, 2, 1]).squeeze().shape).toEqual([2]);
      expect(A.flatten(A.ones([])).shape).toEqual([1]);
      expect(A.flatten(A.zeros([2, 3, 4, 5]), 1, 2).shape).toEqual([2, 12, 5]);
      expect(A.zeros([2, 3, 4]).flatten(-2).shape).toEqual([2, 12]);
      expect(A.unsqueeze(A.zeros([2, 3]), -1).shape).toEqual([2, 3, 1]);
      expect(A.unsqueeze(A.zeros([2, 3]), 0).shape).toEqual([1, 2, 3]);
      const x = A.reshape(A.arange(6), [2, 3]);
      expect(arr(x.T)).toEqual([0, 3, 1, 4, 2, 5]);
      expect(A.permute(A.zeros([2, 3, 4]), -1, 0, 1).shape).toEqual([4, 2, 3]);
    });
  });
});

describe('crossEntropy closed forms', () => {
  const lse = (row: number[]) => Math.log(row.reduce((s, v) => s + Math.exp(v), 0));
  it('lse − x[label]: [1, 2, 3] with label 2 gives log(e + e² + e³) − 3', () => {
    A.tidy(() => {
      const want = Math.log(Math.E + Math.E ** 2 + Math.E ** 3) - 3;
      expect(A.crossEntropy(A.tensor([[1, 2, 3]], f64), [2]).item()).toBeCloseTo(want, 14);
      expect(A.crossEntropy(A.tensor([1, 2, 3], f64), [2]).item()).toBeCloseTo(want, 14); // unbatched [C]
    });
  });
  it('uniform logits give log C for any label and any smoothing', () => {
    A.tidy(() => {
      for (const eps of [0, 0.1, 0.7, 1]) {
        const x = A.full([2, 3, 6], 0.37, f64);
        close(
          [
            A.crossEntropy(
              x,
              [
                [0, 5, 2],
                [1, 1, 3],
              ],
              { labelSmoothing: eps },
            ).item(),
          ],
          [Math.log(6)],
          1e-14,
        );
      }
    });
  });
  it('label smoothing: (1 − ε)(lse − x_y) + ε(lse − mean x), and its gradient softmax − ((1 − ε)·onehot + ε/C), over N', () => {
    A.tidy(() => {
      const rows = [
          [0.3, -1.2, 2.0, 0.5],
          [1.1, 0.4, -0.6, 0.0],
        ],
        labels = [2, 3],
        eps = 0.15,
        C = 4;
      const want = rows.map((r, i) => (1 - eps) * (lse(r) - r[labels[i]]) + eps * (lse(r) - r.reduce((s, v) => s + v, 0) / C));
      const x = A.tensor(rows, f64);
      close([A.crossEntropy(x, labels, { labelSmoothing: eps }).item()], [(want[0] + want[1]) / 2], 1e-14);
      close(arr(A.crossEntropy(x, labels, { labelSmoothing: eps, reduction: 'none' })), want, 1e-14);
      const g = A.grad((v: Tensor) => A.crossEntropy(v, labels, { labelSmoothing: eps }))(x) as Tensor;
      const wantG = rows.flatMap((r, i) => r.map((v, j) => (Math.exp(v - lse(r)) - ((1 - eps) * Number(j === labels[i]) + eps / C)) / 2));
      close(arr(g), wantG, 1e-13);
    });
  });
  it('ignoreIndex: ignored rows add 0 and get zero gradient; the mean counts the others; all ignored gives NaN', () => {
    A.tidy(() => {
      const rows = [
          [0.3, -1.2, 2.0],
          [5, 5, 5],
          [1.1, 0.4, -0.6],
        ],
        labels = [2, -100, 0];
      const x = A.tensor(rows, f64);
      const per = [lse(rows[0]) - 2.0, 0, lse(rows[2]) - 1.1];
      close([A.crossEntropy(x, labels, { ignoreIndex: -100 }).item()], [(per[0] + per[2]) / 2], 1e-14);
      close([A.crossEntropy(x, labels, { ignoreIndex: -100, reduction: 'sum' }).item()], [per[0] + per[2]], 1e-14);
      close(arr(A.crossEntropy(x, labels, { ignoreIndex: -100, reduction: 'none' })), per, 1e-14);
      const g = arr(A.grad((v: Tensor) => A.crossEntropy(v, labels, { ignoreIndex: -100 }))(x) as Tensor);
      expect(g.slice(3, 6).map((v) => v + 0)).toEqual([0, 0, 0]); // + 0: the kernel gives (p − onehot)·0, a −0 where p − onehot < 0
      close(
        g.slice(0, 3),
        rows[0].map((v, j) => (Math.exp(v - lse(rows[0])) - Number(j === 2)) / 2),
        1e-14,
      );
      // A label equal to ignoreIndex may also be a valid class: that class is then ignored.
      close([A.crossEntropy(x, [2, 1, 1], { ignoreIndex: 1 }).item()], [per[0]], 1e-14);
      expect(A.crossEntropy(x, [-1, -1, -1], { ignoreIndex: -1 }).item()).toBeNaN();
      expect(A.crossEntropy(x, [-1, -1, -1], { ignoreIndex: -1, reduction: 'sum' }).item()).toBe(0);
    });
  });
  it('NaN logits in an ignored row do not reach the loss', () => {
    A.tidy(() => {
      const x = A.tensor(
        [
          [NaN, 1, 2],
          [0.5, 0.1, -0.3],
        ],
        f64,
      );
      expect(Number.isFinite(A.crossEntropy(x, [-100, 0], { ignoreIndex: -100 }).item())).toBe(true);
    });
  });
  it('one-hot probabilities equal class indices; smoothed probabilities equal smoothed indices', () => {
    A.tidy(() => {
      const x = A.randn([2, 3, 4], { seed: 5, dtype: 'float64' });
      const labels = [3, 0, 1, 2, 2, 0];
      const onehot = A.tensor(
        labels.flatMap((l) => [0, 1, 2, 3].map((c) => Number(c === l))),
        { shape: [2, 3, 4], dtype: 'float64' },
      );
      for (const eps of [0, 0.2]) {
        for (const reduction of ['mean', 'sum', 'none'] as const) {
          close(
            arr(A.crossEntropy(x, onehot, { labelSmoothing: eps, reduction })),
            arr(A.crossEntropy(x, labels, { labelSmoothing: eps, reduction })),
            1e-14,
          );
        }
      }
    });
  });
  it('[B, T, C] logits and [B, T] labels equal the flattened [B·T, C] loss; reduction none keeps [B, T]', () => {
    A.tidy(() => {
      const x = A.randn([2, 3, 5], { seed: 6, dtype: 'float64' });
      const labels = [
        [4, 0, 1],
        [2, 2, 3],
      ];
      expect(A.crossEntropy(x, labels).item()).toBe(A.crossEntropy(A.reshape(x, [6, 5]), labels.flat()).item());
      expect(A.crossEntropy(x, labels, { reduction: 'none' }).shape).toEqual([2, 3]);
    });
  });
  it("compile() rebinds each call's labels, their ignored rows and the mean's count (bit for bit with eager)", () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const opts = { ignoreIndex: -1, labelSmoothing: 0.1 };
      const step = A.compile((x: Tensor, y: Int32Array) => A.crossEntropy(x, y, opts));
      A.tidy(() => {
        const x = A.randn([4, 3], { seed: 9 });
        for (const y of [
          Int32Array.of(0, 1, -1, 2),
          Int32Array.of(-1, -1, 2, 0),
          Int32Array.of(-1, -1, -1, 1),
          Int32Array.of(2, 2, 2, 2),
        ]) {
          expect(step(x, y).item()).toBe(A.crossEntropy(x, y, opts).item());
        }
        expect(() => step(x, Int32Array.of(0, 3, 0, 0))).toThrow(/label 3 at position 1 is outside \[0, 3\)/);
      });
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});
