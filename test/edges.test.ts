// Edge cases an edge hunt against PyTorch 1.13 found wrong, one block each: shape [] through
// slice (and its transpose, pad), div's gradient in the denominator where b² leaves float32's
// range, and gather's message for indices that are not integers. Reference values in comments
// are torch's.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr } from './helpers.js';

await A.init();

describe('slice of a scalar', () => {
  for (const dtype of ['float32', 'float64', 'int32'] as const) {
    it(`slice(x, [], []) of a ${dtype} scalar is x (it read uninitialised memory)`, () => {
      const x = A.tensor(-3, { dtype });
      const y = A.slice(x, [], []);
      expect(y.shape).toEqual([]);
      expect(y.item()).toBe(-3);
    });
  }

  it('its gradient (pad of a scalar) is the seed, as x[()] in torch', () => {
    const x = A.tensor(-1.25, { requiresGrad: true });
    A.mul(A.slice(x, [], []), 3).backward();
    expect(x.grad?.item()).toBe(3);
    const g = A.grad((v: Tensor) => A.slice(v, [], []))(A.tensor(0.5, { dtype: 'float64' })) as Tensor;
    expect(g.item()).toBe(1);
  });

  it('under vmap and compile too', () => {
    const xs = A.tensor([1, 2, 3]);
    expect(arr(A.vmap((v: Tensor) => A.slice(v, [], []))(xs) as Tensor)).toEqual([1, 2, 3]);
    const f = A.compile((v: Tensor) => A.mul(A.slice(v, [], []), 2));
    expect((f(A.tensor(4)) as Tensor).item()).toBe(8);
    expect((f(A.tensor(5)) as Tensor).item()).toBe(10);
  });
});

describe("div's gradient in the denominator where b² leaves float32's range", () => {
  // torch: a / b, ∂/∂b = −(a/b)/b; b² is 1e40 → ∞, 1e-50 → 0 and 1e-80 → 0 in float32.
  const a = [1e20, 1e-30, 0, Number.POSITIVE_INFINITY, 1e30];
  const b = [1e20, 1e-25, 1e-40, 1e30, 1e25];
  const want = [-9.999999682655225e-21, -9.999999320799471e19, -0, Number.NEGATIVE_INFINITY, -1.000000129824236e-20];

  it('backward gives torch.autograd values (it gave 0, −∞ or NaN)', () => {
    const bb = A.tensor(b, { requiresGrad: true });
    A.sum(A.div(A.tensor(a), bb)).backward();
    expect(arr(bb.grad as Tensor)).toEqual(want);
  });

  it('jvp and the VJP agree', () => {
    const f = (v: Tensor) => A.div(A.tensor(a), v);
    const [, t] = A.jvp(f, [A.tensor(b)], [A.ones([5])]);
    expect(arr(t)).toEqual(want);
  });

  it('float64 too, where b² underflows (1e-170² → 0 gave −∞)', () => {
    const bb = A.tensor([1e150, 1e-170], { dtype: 'float64', requiresGrad: true });
    A.sum(A.div(A.tensor([1e150, 1e-170], { dtype: 'float64' }), bb)).backward();
    expect(arr(bb.grad as Tensor)).toEqual([-1e-150, -1e170]);
  });
});

describe('gather: indices that are not integers', () => {
  it('a nested array names the flat form and the int32 tensor for shaped indices', () => {
    const x = A.tensor([
      [1, 2],
      [3, 4],
    ]);
    const nested = [[1], [0]] as unknown as number[];
    expect(() => A.gather(x, nested)).toThrow(A.ArgumentError);
    expect(() => A.gather(x, nested)).toThrow(/indices\[0\] is \[1\].*not an integer.*int32 tensor/);
    expect(() => A.gather(x, [1, 0.5])).toThrow(/indices\[1\] is 0\.5 \(a number\), not an integer/);
    expect(() => A.gather(x, [Number.NaN])).toThrow(A.ArgumentError);
    // the shaped form it points to
    expect(arr(A.gather(x, A.tensor(nested, { dtype: 'int32' })))).toEqual([3, 4, 1, 2]);
  });
});

describe('nested data that never ends', () => {
  const deep = (n: number, leaf: unknown): unknown => {
    let v = leaf;
    for (let k = 0; k < n; k++) v = [v];
    return v;
  };
  const cyclic: unknown[] = [];
  cyclic.push(cyclic, cyclic);

  it('tensor: 10,000 levels and an array that contains itself are ArgumentErrors (a RangeError escaped)', () => {
    expect(() => A.tensor(deep(10_000, 1) as number[])).toThrow(A.ArgumentError);
    expect(() => A.tensor(cyclic as number[])).toThrow(/nested more than 1024 arrays deep/);
    expect(A.tensor(deep(40, 2) as number[]).shape).toEqual(new Array(40).fill(1)); // high ranks still work
  });

  it('crossEntropy labels: a cyclic array is named as a bad label (it aborted the process)', () => {
    const x = A.zeros([2, 3]);
    expect(() => A.crossEntropy(x, cyclic as number[])).toThrow(A.AdjointError);
    expect(() => A.crossEntropy(x, [0, deep(10_000, 1)] as number[])).toThrow(
      /label \[\[…1\]\] \(an array\) at position 1 is not an integer/,
    );
    expect(A.crossEntropy(A.zeros([1, 2, 3]), [[0, 2]]).item()).toBeCloseTo(Math.log(3), 6);
  });

  it('vmap: a cyclic argument is an ArgumentError, as in grad (a RangeError escaped)', () => {
    const o: Record<string, unknown> = { x: A.ones([2]) };
    o.self = o;
    expect(() => A.vmap((t: unknown) => t)(o)).toThrow(/vmap: the arguments are nested deeper than 32 levels at args\[0\]\.self\.self/);
  });
});

describe('scaledDotProductAttention: NaN and +∞ scores give NaN, as PyTorch (they gave a masked row’s zeros)', () => {
  // Shapes for both kernels: d = dv = 4 in float32 is the register-blocked path, d = 2 and float64 the tiled one.
  for (const [dtype, d] of [
    ['float32', 4],
    ['float32', 2],
    ['float64', 4],
  ] as const) {
    const q = A.tensor(
      Array.from({ length: 2 * d }, (_, i) => 0.1 * i - 0.15),
      { dtype, shape: [1, 2, d] },
    );
    const k = A.tensor(
      Array.from({ length: 3 * d }, (_, i) => 0.05 * i),
      { dtype, shape: [1, 3, d] },
    );
    const v = A.tensor(
      Array.from({ length: 3 * d }, (_, i) => i),
      { dtype, shape: [1, 3, d] },
    );
    const clean = arr(A.scaledDotProductAttention(q, k, v));
    const withAt = (t: Tensor, i: number, x: number) => {
      const a = t.toArray();
      a[i] = x;
      return A.tensor(a, { dtype, shape: [...t.shape] });
    };

    it(`${dtype}, d = ${d}: a NaN in query row 0 makes row 0 NaN and leaves row 1`, () => {
      const y = arr(A.scaledDotProductAttention(withAt(q, 0, Number.NaN), k, v));
      expect(y.slice(0, d).every(Number.isNaN)).toBe(true);
      expect(y.slice(d)).toEqual(clean.slice(d));
    });

    it(`${dtype}, d = ${d}: a NaN or +∞ in a key, or +∞ in the mask, gives NaN rows`, () => {
      expect(arr(A.scaledDotProductAttention(q, withAt(k, 0, Number.NaN), v)).every(Number.isNaN)).toBe(true);
      const inf = arr(A.scaledDotProductAttention(q, withAt(k, 0, Number.POSITIVE_INFINITY), v));
      expect(inf.slice(d).every(Number.isNaN)).toBe(true); // row 1's score with that key is +∞ (q[1, 0] > 0)
      const mask = A.tensor([Number.POSITIVE_INFINITY, 0, 0, 0, 0, 0], { dtype, shape: [2, 3] });
      const ym = arr(A.scaledDotProductAttention(q, k, v, { mask }));
      expect(ym.slice(0, d).every(Number.isNaN)).toBe(true);
      expect(ym.slice(d)).toEqual(clean.slice(d));
    });

    it(`${dtype}, d = ${d}: a row with every key masked still gives zeros (documented)`, () => {
      const mask = A.tensor([Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, 0, 0], {
        dtype,
        shape: [2, 3],
      });
      const y = arr(A.scaledDotProductAttention(q, k, v, { mask }));
      expect(y.slice(0, d)).toEqual(new Array(d).fill(0));
      expect(y.slice(d)).toEqual(clean.slice(d));
    });
  }
});

describe('a non-integer axis is named as such', () => {
  it('sum, argmax, softmax, concat, gather: 1.5, NaN and ∞ are ArgumentErrors, not "out of range"', () => {
    const x = A.ones([2, 3]);
    const calls: [() => unknown, string][] = [
      [() => A.sum(x, 1.5), 'sum: axis must be an integer, got 1.5 (a number)'],
      [() => A.sum(x, [0, Number.NaN]), 'sum: axis must be an integer, got NaN (a number)'],
      [() => A.argmax(x, 0.5), 'argmax: axis must be an integer, got 0.5 (a number)'],
      [() => A.softmax(x, Number.POSITIVE_INFINITY), 'softmax: axis must be an integer, got Infinity (a number)'],
      [() => A.concat([x, x], 0.5), 'concat: axis must be an integer'],
      [() => A.gather(x, [0], 0.5), 'gather: axis must be an integer'],
    ];
    for (const [call, says] of calls) {
      expect(call).toThrow(A.ArgumentError);
      expect(call).toThrow(says);
    }
    expect(() => A.sum(x, 2)).toThrow(A.ShapeError); // a whole number past the rank stays a ShapeError
  });
});

describe('a BigInt where a string or a plan goes', () => {
  it('gelu, crossEntropy and the checkpoint plan say what they got (JSON.stringify threw a TypeError)', () => {
    const x = A.ones([2, 3]);
    const bad = 3n as unknown;
    expect(() => A.gelu(x, { approximate: bad as 'none' })).toThrow("gelu: approximate must be 'tanh' or 'none', got 3n (a BigInt)");
    expect(() => A.crossEntropy(x, [0, 1], { reduction: bad as 'sum' })).toThrow(/reduction must be .* got 3n \(a BigInt\)/);
    expect(() => new A.nn.Sequential(new A.nn.ReLU(), { checkpoint: bad as number })).toThrow(A.ArgumentError);
    expect(() => new A.nn.Sequential(new A.nn.ReLU(), { checkpoint: { maxBytes: bad as number } })).toThrow(/got an object/);
  });
});

describe('Symbols and BigInts inside array arguments and options', () => {
  it('are ArgumentErrors that describe them (a TypeError escaped while printing or multiplying them)', () => {
    const x = A.ones([2, 3]);
    const s = Symbol('s') as unknown as number;
    const b = 3n as unknown as number;
    const calls: (() => unknown)[] = [
      () => A.reshape(x, [b]),
      () => A.reshape(x, [s]),
      () => A.slice(x, [s], [1, 1]),
      () => A.broadcastTo(x, [s]),
      () => A.transpose(x, [0, s]),
      () => A.tril(x, [s] as unknown as number),
      () => A.crossEntropy(x, [0, 1], { ignoreIndex: s }),
      () => A.crossEntropy(x, [0, 1], { labelSmoothing: s }),
      () => A.scaledDotProductAttention(x, x, x, { scale: [s] as unknown as number }),
      () => A.scaledDotProductAttention(x, x, x, { dropoutP: [s] as unknown as number }),
      () => A.grad((a: Tensor) => A.sum(a), { argnums: [s] })(x),
      () => new A.optim.Adam([A.ones([2], { requiresGrad: true })], { betas: [s, 0.9] as [number, number] }),
      () => new A.nn.TransformerEncoderLayer(8, 2, { activation: b as unknown as 'relu' }),
      () =>
        new A.optim.lrScheduler.OneCycleLR(new A.optim.SGD([A.ones([1], { requiresGrad: true })], { lr: 0.1 }), {
          maxLr: 1,
          totalSteps: 10,
          pctStart: s,
        }),
      () =>
        new A.optim.lrScheduler.StepLR(new A.optim.SGD([A.ones([1], { requiresGrad: true })], { lr: 0.1 }), {
          stepSize: [s] as unknown as number,
        }),
    ];
    for (const call of calls) expect(call).toThrow(A.ArgumentError);
    expect(() => A.reshape(x, [s])).toThrow('reshape: shape must be an array of integers, got [Symbol(s) (a Symbol)] (an array)');
    expect(() => A.crossEntropy(x, [0, 1], { ignoreIndex: s })).toThrow('ignoreIndex must be an integer, got Symbol(s) (a Symbol)');
  });

  it('a scheduler state with a BigInt in a list', () => {
    const opt = new A.optim.SGD([A.ones([2], { requiresGrad: true })], { lr: 0.1 });
    const sched = new A.optim.lrScheduler.StepLR(opt, { stepSize: 1 });
    const state = { ...sched.stateDict(), baseLrs: [3n] } as unknown as ReturnType<typeof sched.stateDict>;
    expect(() => sched.loadStateDict(state)).toThrow(
      /baseLrs must hold one number per parameter group \(1\), got \[3n \(a BigInt\)\] \(an array\)/,
    );
  });

  it('init: threads', async () => {
    await expect(A.init({ threads: [Symbol('t')] as unknown as number })).rejects.toThrow(A.ArgumentError);
  });
});
