// The int32 dtype: creation, casts (truncation toward zero, saturation, exactness), data
// movement, comparisons and argmax at kernel-tail sizes against JS, the DtypeError on float
// arithmetic, gradients stopping at int32, and its uses (gather, Embedding, crossEntropy, compile).
import { describe, it, expect, beforeAll, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close } from './helpers.js';
import { rng } from './specs.js';

beforeAll(() => A.init());

const I32 = { dtype: 'int32' } as const;
const SIZES = [0, 1, 3, 4, 5, 16, 17];
const ints = (n: number, seed: number, lo = -50, hi = 50): number[] => {
  const r = rng(seed);
  return Array.from({ length: n }, () => lo + Math.floor(r() * (hi - lo)));
};
/** JS's truncation toward zero with wasm's saturation (NaN → 0). */
const trunc = (v: number): number => (Number.isNaN(v) ? 0 : Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, Math.trunc(v))) + 0); // + 0: no −0

describe('creation', () => {
  it('tensor, zeros, ones, full and arange make int32 tensors whose toArray() is an Int32Array', () => {
    A.tidy(() => {
      const t = A.tensor(
        [
          [1, -2],
          [2 ** 31 - 1, -(2 ** 31)],
        ],
        I32,
      );
      expect(t.dtype).toBe('int32');
      expect(t.toArray()).toBeInstanceOf(Int32Array);
      expect(arr(t)).toEqual([1, -2, 2 ** 31 - 1, -(2 ** 31)]);
      expect(A.tensor(7, I32).item()).toBe(7);
      expect(arr(A.tensor(Int32Array.of(4, 5), I32))).toEqual([4, 5]);
      expect(arr(A.zeros([5], I32))).toEqual([0, 0, 0, 0, 0]);
      expect(arr(A.ones([2, 2], I32))).toEqual([1, 1, 1, 1]);
      expect(arr(A.full([17], -3, I32))).toEqual(Array(17).fill(-3));
      expect(arr(A.arange(6, I32))).toEqual([0, 1, 2, 3, 4, 5]);
      expect(A.tensor([1], I32).requiresGrad).toBe(false);
    });
  });

  it('takes rows that are typed arrays (token ids from encode), as torch.tensor takes numpy rows', () => {
    A.tidy(() => {
      const rows = A.tensor([Int32Array.of(0, 1, 2), Int32Array.of(3, 4, 5)], I32);
      expect([rows.shape, rows.dtype]).toEqual([[2, 3], 'int32']);
      expect(arr(rows)).toEqual([0, 1, 2, 3, 4, 5]);
      const f = A.tensor([[Float32Array.of(1.5, 2)], [Float32Array.of(-3, 4)]]);
      expect([f.shape, Array.from(f.toArray())]).toEqual([
        [2, 1, 2],
        [1.5, 2, -3, 4],
      ]);
      expect(A.tensor([Int32Array.of(7), [8]], I32).shape).toEqual([2, 1]);
      expect(() => A.tensor([Int32Array.of(1, 2), Int32Array.of(3)], I32)).toThrow(
        /ragged nested array: data\[1\] has shape \[1\], data\[0\] has \[2\]/,
      );
      expect(() => A.tensor([Float64Array.of(0.5)], I32)).toThrow(/element 0 is 0.5, not an int32 integer/);
    });
  });

  it('refuses requiresGrad, before leaving a tensor behind', () => {
    const before = A.memory().tensors;
    expect(() => A.tensor([1, 2], { dtype: 'int32', requiresGrad: true })).toThrow(A.GradError);
    expect(() => A.zeros([2], { dtype: 'int32', requiresGrad: true })).toThrow(/cannot require gradients/);
    expect(() => {
      A.tidy(() => {
        A.zeros([2], I32).requiresGrad = true;
      });
    }).toThrow(/int32/);
    expect(A.memory().tensors).toBe(before);
  });
});

describe('astype', () => {
  const special = [0.5, -0.5, 1.9999, -1.9999, 2.5, -2.5, 1e10, -1e10, NaN, Infinity, -Infinity, 2 ** 31 - 1, -(2 ** 31), 16777217];
  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype} → int32 truncates toward zero and saturates (NaN → 0), at every tail size`, () => {
      A.tidy(() => {
        for (const n of [...SIZES, special.length]) {
          const r = rng(n + 1);
          const vals = n === special.length ? special : Array.from({ length: n }, () => (r() - 0.5) * 200);
          const x = A.tensor(vals, { dtype });
          const stored = Array.from(x.toArray()); // what float32 rounding made of the values
          const y = x.astype('int32');
          expect(y.dtype).toBe('int32');
          expect(arr(y)).toEqual(stored.map(trunc));
        }
      });
    });
    it(`int32 → ${dtype} is exact for float64 and rounds to nearest for float32`, () => {
      A.tidy(() => {
        for (const n of SIZES) {
          const vals = ints(n, n + 7, -(2 ** 31), 2 ** 31 - 1);
          const y = A.tensor(vals, I32).astype(dtype);
          expect(y.dtype).toBe(dtype);
          expect(arr(y)).toEqual(dtype === 'float64' ? vals : vals.map(Math.fround));
        }
      });
    });
  }
});

describe('data movement on int32', () => {
  it('reshape, transpose, permute, slice, concat, gather, broadcastTo, squeeze, unsqueeze, split, chunk, tril, triu', () => {
    A.tidy(() => {
      const x = A.tensor(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        I32,
      );
      const is32 = (t: Tensor) => expect(t.dtype).toBe('int32');
      const checks: [Tensor, number[], number[]][] = [
        [A.reshape(x, [3, 2]), [3, 2], [1, 2, 3, 4, 5, 6]],
        [A.transpose(x), [3, 2], [1, 4, 2, 5, 3, 6]],
        [A.permute(A.reshape(x, [1, 2, 3]), 2, 0, 1), [3, 1, 2], [1, 4, 2, 5, 3, 6]],
        [x.T, [3, 2], [1, 4, 2, 5, 3, 6]],
        [A.slice(x, [0, 1], [2, 2]), [2, 2], [2, 3, 5, 6]],
        [A.concat([x, x], 1), [2, 6], [1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6]],
        [A.gather(x, [1, 1, 0]), [3, 3], [4, 5, 6, 4, 5, 6, 1, 2, 3]],
        [A.broadcastTo(A.tensor([7, 8], I32), [2, 2]), [2, 2], [7, 8, 7, 8]],
        [A.squeeze(A.unsqueeze(x, 0)), [2, 3], [1, 2, 3, 4, 5, 6]],
        [A.flatten(x), [6], [1, 2, 3, 4, 5, 6]],
        [A.split(x, [1, 2], 1)[1], [2, 2], [2, 3, 5, 6]],
        [A.chunk(x, 2)[1], [1, 3], [4, 5, 6]],
        [A.tril(x), [2, 3], [1, 0, 0, 4, 5, 0]],
        [A.triu(x, 1), [2, 3], [0, 2, 3, 0, 0, 6]],
        [A.where(A.tensor([1, 0, 1]), x, A.tensor(-1, I32)), [2, 3], [1, -1, 3, 4, -1, 6]],
        [A.maskedFill(x, A.tensor([[0], [1]], I32), 9), [2, 3], [1, 2, 3, 9, 9, 9]],
      ];
      for (const [t, shape, vals] of checks) {
        is32(t);
        expect(t.shape).toEqual(shape);
        expect(arr(t)).toEqual(vals);
      }
    });
  });

  it('a large transpose (the lazy path) of int32 reads back exactly', () => {
    A.tidy(() => {
      const vals = ints(80 * 70, 3, -(2 ** 31), 2 ** 31 - 1);
      const t = A.transpose(A.tensor(vals, { shape: [80, 70], dtype: 'int32' }));
      const got = t.toArray();
      for (const [i, j] of [
        [0, 0],
        [5, 79],
        [69, 1],
        [33, 44],
      ])
        expect(got[i * 80 + j]).toBe(vals[j * 70 + i]);
    });
  });

  it('gather takes an int32 index tensor of any shape', () => {
    A.tidy(() => {
      const x = A.reshape(A.arange(12), [4, 3]);
      const g = A.gather(
        x,
        A.tensor(
          [
            [3, 0],
            [1, 1],
          ],
          I32,
        ),
      );
      expect(g.shape).toEqual([2, 2, 3]);
      expect(arr(g)).toEqual([9, 10, 11, 0, 1, 2, 3, 4, 5, 3, 4, 5]);
      const h = x.gather(A.tensor([2, 0], I32), 1);
      expect(arr(h)).toEqual([2, 0, 5, 3, 8, 6, 11, 9]);
    });
  });
});

describe('comparisons on int32 (0/1 in int32, broadcasting)', () => {
  const fns = {
    eq: (a: number, b: number) => a === b,
    ne: (a: number, b: number) => a !== b,
    lt: (a: number, b: number) => a < b,
    le: (a: number, b: number) => a <= b,
    gt: (a: number, b: number) => a > b,
    ge: (a: number, b: number) => a >= b,
  } as const;
  for (const [name, js] of Object.entries(fns) as [keyof typeof fns, (a: number, b: number) => boolean][]) {
    it(`${name} at every tail size, against a number and against a row`, () => {
      A.tidy(() => {
        for (const n of SIZES) {
          const a = ints(2 * n, n, -3, 3),
            b = ints(n, n + 100, -3, 3);
          const ta = A.tensor(a, { shape: [2, n], dtype: 'int32' }),
            tb = A.tensor(b, { shape: [n], dtype: 'int32' });
          const y = A[name](ta, tb);
          expect(y.dtype).toBe('int32');
          expect(arr(y)).toEqual(a.map((v, i) => Number(js(v, b[i % n]))));
          expect(arr(A[name](ta, 1))).toEqual(a.map((v) => Number(js(v, 1))));
          expect(arr(A[name](1, ta))).toEqual(a.map((v) => Number(js(1, v))));
        }
      });
    });
  }
});

describe('argmax', () => {
  /** First index of the maximum along axis of [outer, len, inner], NaN largest (PyTorch). */
  function refArgmax(v: ArrayLike<number>, outer: number, len: number, inner: number): number[] {
    const out: number[] = [];
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < inner; i++) {
        let best = 0;
        for (let k = 1; k < len; k++) {
          const a = v[(o * len + k) * inner + i],
            b = v[(o * len + best) * inner + i];
          if (a > b || (Number.isNaN(a) && !Number.isNaN(b))) best = k;
        }
        out.push(best);
      }
    return out;
  }
  for (const dtype of ['float32', 'float64', 'int32'] as const) {
    it(`${dtype}: last axis and inner axes at tail sizes, ties to the first, int32 result`, () => {
      A.tidy(() => {
        for (const [outer, len, inner] of [
          [3, 1, 1],
          [2, 5, 1],
          [4, 17, 1],
          [2, 3, 4],
          [3, 6, 5],
          [1, 9, 17],
          [2, 4, 3],
        ]) {
          const vals = ints(outer * len * inner, outer * 100 + len * 10 + inner, -4, 4); // small range: many ties
          const x = A.tensor(vals, { shape: [outer, len, inner], dtype });
          const y = A.argmax(x, 1);
          expect(y.dtype).toBe('int32');
          expect(y.shape).toEqual([outer, inner]);
          expect(arr(y)).toEqual(refArgmax(vals, outer, len, inner));
          expect(A.argmax(x, 1, true).shape).toEqual([outer, 1, inner]);
        }
      });
    });
  }
  it('NaN counts as the largest (first NaN wins), in both the row and the column paths', () => {
    A.tidy(() => {
      for (const dtype of ['float32', 'float64'] as const) {
        const row = [1, NaN, 5, NaN, 2, 9, 0, 1];
        expect(arr(A.argmax(A.tensor(row, { dtype })))).toEqual([1]);
        const cols = A.tensor(
          [
            [1, 2, NaN, 4, 5],
            [NaN, 7, NaN, 0, 9],
            [3, NaN, 1, 1, 9],
          ],
          { dtype },
        );
        expect(arr(A.argmax(cols, 0))).toEqual(refArgmax([1, 2, NaN, 4, 5, NaN, 7, NaN, 0, 9, 3, NaN, 1, 1, 9], 1, 3, 5));
      }
    });
  });
  it('without an axis it indexes the flattened tensor; a method too', () => {
    A.tidy(() => {
      const x = A.tensor([
        [1, 8, 3],
        [8, 2, 0],
      ]);
      const y = A.argmax(x);
      expect(y.shape).toEqual([]);
      expect(y.item()).toBe(1);
      expect(A.argmax(x, undefined, true).shape).toEqual([1, 1]);
      expect(arr(x.argmax(-1))).toEqual([1, 0]);
    });
  });
});

describe('int32 takes no arithmetic and no gradient', () => {
  it('float arithmetic is a DtypeError that says how to cast', () => {
    A.tidy(() => {
      const i = A.tensor([1, 2, 3], I32);
      for (const f of [
        () => A.add(i, i),
        () => A.mul(i, 2),
        () => A.exp(i),
        () => A.matmul(i, i),
        () => A.sum(i),
        () => A.mean(i),
        () => A.relu(i),
        () => A.softmax(i),
        () => A.crossEntropy(A.reshape(i, [1, 3]), [0]),
        () => A.layerNorm(i),
      ]) {
        expect(f).toThrow(A.DtypeError);
        expect(f).toThrow(/int32.*astype\('float32'\)/);
      }
      expect(() => A.add(i, A.ones([3]))).toThrow(/dtypes differ: int32 \[3\] and float32 \[3\]/);
    });
  });

  it('grad of a function with an int32 value is a GradError, not zeros (as JAX and PyTorch refuse it)', () => {
    const x = A.tensor([0.5, 2, -1]);
    expect(() => A.grad((v: Tensor) => A.argmax(v, 0))(x)).toThrow(A.GradError);
    expect(() => A.valueAndGrad((v: Tensor) => A.argmax(v, 0))(x)).toThrow(
      /valueAndGrad: the function returns an int32 scalar, which has no gradient/,
    );
    x.dispose();
  });

  it('gradients stop at int32: a cast to int32 and back carries none; argmax-picked gather differentiates through gather only', () => {
    A.tidy(() => {
      const x = A.tensor([0.5, 2.7, -1.2, 2.1], { requiresGrad: true });
      const i = A.astype(x, 'int32');
      expect(i.requiresGrad).toBe(false);
      expect(i.node).toBeNull();
      const back = A.astype(i, 'float32');
      expect(back.requiresGrad).toBe(false);
      const g = A.grad((v: Tensor) => A.sum(A.mul(A.gather(v, A.argmax(v, 0, true)), 3)))(x) as Tensor;
      expect(arr(g)).toEqual([0, 3, 0, 0]);
      const [, t] = A.jvp((v: Tensor) => A.add(A.astype(A.astype(v, 'int32'), 'float32'), v), [x], [A.ones([4])]);
      expect(arr(t)).toEqual([1, 1, 1, 1]); // only the float path carries a tangent
    });
  });
});

describe('uses of int32', () => {
  it('nn.Embedding takes an int32 index tensor of any shape', () => {
    A.tidy(() => {
      const emb = new A.nn.Embedding(5, 3, { seed: 2 });
      const idx = A.tensor(
        [
          [4, 0],
          [2, 2],
        ],
        I32,
      );
      const y = emb.forward(idx);
      expect(y.shape).toEqual([2, 2, 3]);
      const w = Array.from(emb.weight.toArray());
      expect(arr(y)).toEqual([4, 0, 2, 2].flatMap((r) => w.slice(r * 3, r * 3 + 3)));
      expect(() => emb.forward(A.tensor([5], I32))).toThrow(/index 5 .*\[0, 5\)/);
    });
  });

  it('crossEntropy with an int32 label tensor equals crossEntropy with the same Int32Array', () => {
    A.tidy(() => {
      const x = A.randn([2, 3, 4], { seed: 3, dtype: 'float64' });
      const labels = Int32Array.of(3, 0, 1, 2, 2, 0);
      const a = A.crossEntropy(x, A.tensor(labels, { shape: [2, 3], dtype: 'int32' }));
      const b = A.crossEntropy(x, labels);
      expect(a.item()).toBe(b.item());
    });
  });

  it('compile() replays comparisons, where and argmax on int32 inputs bit for bit', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const f = A.compile((x: Tensor, m: Tensor) => A.sum(A.where(A.gt(m, 1), A.mul(x, 2), A.astype(A.argmax(x, 1, true), 'float32'))));
      A.tidy(() => {
        for (let s = 0; s < 3; s++) {
          const x = A.randn([4, 5], { seed: s }),
            m = A.tensor(ints(20, s, 0, 4), { shape: [4, 5], dtype: 'int32' });
          const eager = A.sum(A.where(A.gt(m, 1), A.mul(x, 2), A.astype(A.argmax(x, 1, true), 'float32')));
          expect(f(x, m).item()).toBe(eager.item());
        }
      });
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('safetensors stores int32 as I32 and loads it back as int32, beside float tensors', () => {
    A.tidy(() => {
      const ids = A.tensor(
          [
            [-(2 ** 31), 7],
            [2 ** 31 - 1, 0],
          ],
          I32,
        ),
        w = A.tensor([1.5, -2], { dtype: 'float64' });
      const bytes = A.io.saveSafetensors({ ids, w });
      expect(new TextDecoder().decode(bytes.subarray(8, 80))).toContain('"ids":{"dtype":"I32","shape":[2,2]');
      const back = A.io.loadSafetensors(bytes);
      expect(back.ids.dtype).toBe('int32');
      expect(back.ids.shape).toEqual([2, 2]);
      expect(arr(back.ids)).toEqual([-(2 ** 31), 7, 2 ** 31 - 1, 0]);
      expect(back.w.dtype).toBe('float64');
    });
  });

  it('int32 work leaves no tensors behind', () => {
    const before = A.memory().tensors;
    A.tidy(() => {
      const i = A.tensor(ints(40, 1, 0, 5), { shape: [8, 5], dtype: 'int32' });
      A.where(A.eq(i, 2), A.ones([8, 5]), 0);
      A.argmax(A.astype(i, 'float64'), 1);
      A.split(i, 3).map((p) => A.tril(p));
    });
    expect(A.memory().tensors).toBe(before);
  });
});

describe('tails of the cast kernels in f64 (close to JS)', () => {
  it('int32 → float64 → int32 round trips', () => {
    A.tidy(() => {
      const vals = ints(17, 9, -(2 ** 31), 2 ** 31 - 1);
      close(arr(A.tensor(vals, I32).astype('float64').astype('int32')), vals, 0);
    });
  });
});

describe('arange in wasm', () => {
  it('writes 0..n−1 in every dtype at tail sizes, and float32 rounds large values as a Float32Array store does', () => {
    A.tidy(() => {
      for (const dtype of ['float32', 'float64', 'int32'] as const) {
        for (const n of SIZES) expect(arr(A.arange(n, { dtype }))).toEqual(Array.from({ length: n }, (_, i) => i));
      }
      const big = A.arange(2 ** 24 + 9).toArray();
      for (const i of [2 ** 24 - 1, 2 ** 24, 2 ** 24 + 1, 2 ** 24 + 3, 2 ** 24 + 8]) expect(big[i]).toBe(Math.fround(i));
    });
  });
});
