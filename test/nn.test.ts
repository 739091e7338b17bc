// nn modules: PyTorch's names, layouts and initialisation bounds, each layer's forward against
// a float64 closed form, gradients by gradcheck, stateDict round trips and loadStateDict's
// errors, train/eval, and parameters that outlive tidy().
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { f64, arr, close } from './helpers.js';
import * as R from './ref.js';

const { nn } = A;

beforeAll(async () => {
  await A.init();
});

const names = (m: A.nn.Module) => m.namedParameters().map(([n, t]) => `${n}:[${t.shape}]`);

describe('Linear', () => {
  it('has PyTorch layout, names and init bounds U(−1/√in, 1/√in)', () => {
    const l = new nn.Linear(100, 30, { seed: 3 });
    expect(names(l)).toEqual(['weight:[30,100]', 'bias:[30]']);
    const bound = 1 / Math.sqrt(100);
    for (const p of l.parameters()) {
      const v = arr(p);
      expect(Math.max(...v.map(Math.abs))).toBeLessThanOrEqual(Math.fround(bound));
      // The draw covers the range: the extremes are near ±bound and the mean near 0.
      expect(Math.max(...v)).toBeGreaterThan(0.8 * bound);
      expect(Math.min(...v)).toBeLessThan(-0.8 * bound);
    }
    const w = arr(l.weight);
    expect(Math.abs(w.reduce((a, b) => a + b, 0) / w.length)).toBeLessThan(0.01);
    expect(l.weight.requiresGrad && l.bias!.requiresGrad).toBe(true);
  });

  it('is deterministic per seed; seeds, weight and bias differ', () => {
    const a = new nn.Linear(8, 4, { seed: 7 }),
      b = new nn.Linear(8, 4, { seed: 7 }),
      c = new nn.Linear(8, 4, { seed: 8 });
    expect(arr(a.weight)).toEqual(arr(b.weight));
    expect(arr(a.bias!)).toEqual(arr(b.bias!));
    expect(arr(a.weight)).not.toEqual(arr(c.weight));
    expect(arr(a.bias!)).not.toEqual(arr(a.weight).slice(0, 4));
    // Unseeded layers differ from each other but are reproducible (a fixed sequence of seeds).
    expect(arr(new nn.Linear(8, 4).weight)).not.toEqual(arr(new nn.Linear(8, 4).weight));
  });

  it('y = x·Wᵀ + b for 1-D, 2-D and 3-D inputs (float64 closed form)', () => {
    const l = new nn.Linear(3, 2, { seed: 1, ...f64 });
    const W = arr(l.weight),
      b = arr(l.bias!);
    const ref = (x: number[]) => [0, 1].map((o) => b[o] + x.reduce((s, v, i) => s + v * W[o * 3 + i], 0));
    const rows = [
      [1, 2, 3],
      [-1, 0.5, 2],
      [0, 0, 1],
      [4, -2, 1],
    ];
    close(arr(l.forward(A.tensor(rows[0], f64))), ref(rows[0]));
    expect(l.forward(A.tensor(rows[0], f64)).shape).toEqual([2]);
    close(arr(l.forward(A.tensor(rows, f64))), rows.flatMap(ref));
    const y3 = l.forward(A.tensor(rows, { ...f64, shape: [2, 2, 3] }));
    expect(y3.shape).toEqual([2, 2, 2]);
    close(arr(y3), rows.flatMap(ref));
    const nb = new nn.Linear(3, 2, { seed: 1, bias: false, ...f64 });
    expect(names(nb)).toEqual(['weight:[2,3]']);
    close(
      arr(nb.forward(A.tensor(rows, f64))),
      rows.flatMap((x) => ref(x).map((v, o) => v - b[o])),
    );
  });

  it('gradients pass gradcheck (weight, bias and input)', () => {
    const l = new nn.Linear(4, 3, { seed: 2, ...f64 });
    const x = A.randn([5, 4], { seed: 9, ...f64 });
    const f = (xx: Tensor, w: Tensor, b: Tensor) => A.matmul(xx, A.transpose(w)).add(b).tanh().sum();
    expect(A.gradcheck(f, [x, l.weight, l.bias!]).ok).toBe(true);
    // The module's own forward gives the same gradients as the formula.
    A.tanh(l.forward(x)).sum().backward();
    const [, gw] = A.grad(f, { argnums: [0, 1] })(x, l.weight, l.bias!) as Tensor[];
    close(arr(l.weight.grad!), arr(gw), 1e-14);
  });

  it.each([
    [
      'wrong input width',
      () => new nn.Linear(3, 2).forward(A.zeros([4, 5])),
      A.ShapeError,
      /Linear: expected input with last axis \(in_features\) = 3, got shape \[4,5\]/,
    ],
    [
      'wrong dtype',
      () => new nn.Linear(3, 2).forward(A.zeros([4, 3], f64)),
      A.DtypeError,
      /input is float64 but the layer's parameters are float32/,
    ],
    ['zero features', () => new nn.Linear(0, 2), A.ArgumentError, /inFeatures must be a positive integer, got 0/],
    [
      'unknown feedback mode',
      () => new nn.Linear(3, 2, { feedback: 'dfa' as 'bp' }),
      A.ArgumentError,
      /Linear: feedback must be one of 'bp', 'alignment', 'sign', got "dfa"/,
    ],
  ])('%s gives a clear error', (_n, f, Err, msg) => {
    expect(f).toThrow(Err);
    expect(f).toThrow(msg);
  });
});

describe('Sequential and naming', () => {
  it('names parameters 0.weight, 0.bias, 2.weight, ... and nests like PyTorch', () => {
    const m = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 2));
    expect(names(m)).toEqual(['0.weight:[8,4]', '0.bias:[8]', '2.weight:[2,8]', '2.bias:[2]']);
    const outer = new nn.Sequential(new nn.LayerNorm(4), new nn.Residual(new nn.Sequential(new nn.Linear(4, 4), new nn.GELU())), m);
    expect(names(outer)).toEqual([
      '0.weight:[4]',
      '0.bias:[4]',
      '1.module.0.weight:[4,4]',
      '1.module.0.bias:[4]',
      '2.0.weight:[8,4]',
      '2.0.bias:[8]',
      '2.2.weight:[2,8]',
      '2.2.bias:[2]',
    ]);
    expect(outer.parameters().length).toBe(8);
    expect(Object.keys(outer.stateDict())).toEqual(outer.namedParameters().map(([n]) => n));
  });

  it('lists a shared module once', () => {
    const l = new nn.Linear(2, 2);
    expect(names(new nn.Sequential(l, l))).toEqual(['0.weight:[2,2]', '0.bias:[2]']);
  });

  it('chains forward; accepts a trailing options object and stores it', () => {
    const m = new nn.Sequential(new nn.Linear(3, 3, { seed: 1, ...f64 }), new nn.Tanh(), { checkpoint: 'sqrt' });
    expect(m.length).toBe(2);
    expect(m.options).toEqual({ checkpoint: 'sqrt' });
    const x = A.tensor([[1, 2, 3]], f64);
    close(arr(m.forward(x)), arr(A.tanh(m.layers[0].forward(x))));
    expect(() => new nn.Sequential({ checkpoint: 2 } as never, new nn.ReLU())).toThrow(/argument 0 must be a Module/);
  });

  it('train() and eval() reach every submodule', () => {
    const d = new nn.Dropout(0.5);
    const m = new nn.Sequential(new nn.Linear(2, 2), new nn.Residual(new nn.Sequential(d)));
    expect(m.eval()).toBe(m);
    expect(d.training).toBe(false);
    m.train();
    expect(d.training).toBe(true);
  });

  it('parameters outlive tidy(); dispose() frees them', () => {
    const before = A.memory().tensors;
    const m = A.tidy(() => new nn.Sequential(new nn.Linear(3, 4), new nn.ReLU(), new nn.Linear(4, 1)));
    expect(A.memory().tensors).toBe(before + 4);
    expect(() =>
      A.tidy(() =>
        m
          .forward(A.ones([2, 3]))
          .sum()
          .item(),
      ),
    ).not.toThrow();
    m.dispose();
    expect(A.memory().tensors).toBe(before);
  });
});

describe('stateDict / loadStateDict', () => {
  const make = (seed: number) => new nn.Sequential(new nn.Linear(3, 5, { seed }), new nn.ReLU(), new nn.Linear(5, 2, { seed: seed + 1 }));

  it('round trip: a second model gives identical outputs', () => {
    const a = make(1),
      b = make(50);
    const x = A.randn([4, 3], { seed: 4 });
    expect(arr(a.forward(x))).not.toEqual(arr(b.forward(x)));
    b.loadStateDict(a.stateDict());
    expect(arr(b.forward(x))).toEqual(arr(a.forward(x)));
    // Copies, not aliases: updating a leaves b alone.
    const w = a.parameters()[0];
    new A.optim.SGD([w], { lr: 1 });
    expect(b.parameters()[0]).not.toBe(w);
  });

  it('casts float64 records into float32 parameters', () => {
    const m = new nn.Linear(2, 1);
    m.loadStateDict({ weight: A.tensor([[0.5, 0.25]], f64), bias: A.tensor([1], f64) });
    expect(arr(m.weight)).toEqual([0.5, 0.25]);
    expect(m.weight.dtype).toBe('float32');
  });

  it('names every missing, unexpected and mis-shaped key, and changes nothing', () => {
    const m = make(1);
    const before = arr(m.parameters()[0]);
    const sd = { ...make(2).stateDict() } as Record<string, Tensor>;
    delete sd['2.bias'];
    sd['5.weight'] = A.zeros([1]);
    sd['0.weight'] = A.zeros([3, 5]);
    let err: unknown;
    try {
      m.loadStateDict(sd);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(A.ArgumentError);
    expect((err as Error).message).toBe(
      'loadStateDict: missing keys: 2.bias; unexpected keys: 5.weight; shape mismatch: 0.weight (expected [5,3], got [3,5])',
    );
    expect(arr(m.parameters()[0])).toEqual(before);
  });

  it('a shape mismatch alone is a ShapeError', () => {
    const m = new nn.Linear(2, 2);
    expect(() => m.loadStateDict({ weight: A.zeros([2, 3]), bias: A.zeros([2]) })).toThrow(A.ShapeError);
  });
});

describe('activation and normalisation layers', () => {
  const xs = [-2, -0.5, 0, 0.7, 3];
  it.each([
    ['ReLU', () => new nn.ReLU(), (v: number) => Math.max(v, 0)],
    ['Tanh', () => new nn.Tanh(), Math.tanh],
    [
      'GELU (tanh approximation)',
      () => new nn.GELU(),
      (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))),
    ],
    ['GELU exact', () => new nn.GELU({ approximate: 'none' }), (v: number) => 0.5 * v * (1 + R.erf(v * Math.SQRT1_2))],
  ])('%s matches the float64 formula', (_n, make, f) => {
    close(arr(make().forward(A.tensor(xs, f64))), xs.map(f), 1e-15);
  });

  it('LayerNorm: weight ones, bias zeros, eps 1e-5, last axis', () => {
    const ln = new nn.LayerNorm(4, f64);
    expect(names(ln)).toEqual(['weight:[4]', 'bias:[4]']);
    expect(arr(ln.weight!)).toEqual([1, 1, 1, 1]);
    expect(arr(ln.bias!)).toEqual([0, 0, 0, 0]);
    const rows = [
      [1, 2, 3, 4],
      [-1, 0, 5, 0.5],
    ];
    const ref = rows.flatMap((r) => {
      const mu = r.reduce((a, b) => a + b) / 4,
        v = r.reduce((a, b) => a + (b - mu) ** 2, 0) / 4;
      return r.map((x) => (x - mu) / Math.sqrt(v + 1e-5));
    });
    close(arr(ln.forward(A.tensor(rows, f64))), ref, 1e-14);
    // With a non-trivial affine part (at weight 1, bias 0 the bias gradient of this loss is ~0).
    const w = [0.5, -1, 2, 1.5],
      b = [0.1, 0.2, -0.3, 0.4];
    ln.loadStateDict({ weight: A.tensor(w, f64), bias: A.tensor(b, f64) });
    close(
      arr(ln.forward(A.tensor(rows, f64))),
      ref.map((v, i) => v * w[i % 4] + b[i % 4]),
      1e-14,
    );
    const x = A.tensor(rows, f64);
    expect(A.gradcheck((xx: Tensor, ww: Tensor, bb: Tensor) => A.layerNorm(xx, ww, bb).square().sum(), [x, ln.weight!, ln.bias!]).ok).toBe(
      true,
    );
    expect(() => ln.forward(A.zeros([2, 3], f64))).toThrow(/LayerNorm: expected input with last axis = 4/);
  });

  it('Flatten and Unflatten reshape around the batch axis', () => {
    const x = A.zeros([2, 3, 4, 5]);
    expect(new nn.Flatten().forward(x).shape).toEqual([2, 60]);
    expect(new nn.Flatten(0, 1).forward(x).shape).toEqual([6, 4, 5]);
    expect(new nn.Unflatten(1, [1, 6, 10]).forward(A.zeros([2, 60])).shape).toEqual([2, 1, 6, 10]);
  });

  it('Dropout: identity in eval mode; in training zeros ≈ p and scales the rest by 1/(1 − p)', () => {
    const d = new nn.Dropout(0.25, { seed: 5 });
    const x = A.ones([4000]);
    const y = arr(d.forward(x));
    const zeros = y.filter((v) => v === 0).length;
    expect(Math.abs(zeros / 4000 - 0.25)).toBeLessThan(0.03);
    expect(y.every((v) => v === 0 || Math.abs(v - 1 / 0.75) < 1e-6)).toBe(true);
    expect(arr(d.forward(x))).not.toEqual(y); // a fresh mask per call
    expect(arr(new nn.Dropout(0.25, { seed: 5 }).forward(x))).toEqual(y); // reproducible per seed
    d.eval();
    expect(d.forward(x)).toBe(x);
    expect(() => new nn.Dropout(1)).toThrow(/p must be in \[0, 1\)/);
  });

  it('Embedding: N(0, 1) init, row gather, index shape kept, gradient scattered', () => {
    const e = new nn.Embedding(1000, 20, { seed: 1 });
    const w = arr(e.weight);
    const mean = w.reduce((a, b) => a + b) / w.length,
      sd = Math.sqrt(w.reduce((a, b) => a + (b - mean) ** 2, 0) / w.length);
    expect(Math.abs(mean)).toBeLessThan(0.02);
    expect(Math.abs(sd - 1)).toBeLessThan(0.02);
    const y = e.forward([3, 3, 999]);
    expect(y.shape).toEqual([3, 20]);
    expect(arr(y).slice(0, 20)).toEqual(w.slice(60, 80));
    expect(
      e.forward(
        A.tensor([
          [1, 2],
          [3, 4],
        ]),
      ).shape,
    ).toEqual([2, 2, 20]);
    e.forward([3, 3, 7]).sum().backward();
    const g = arr(e.weight.grad!);
    expect(g.slice(60, 80).every((v) => v === 2)).toBe(true);
    expect(g.slice(140, 160).every((v) => v === 1)).toBe(true);
    expect(g.reduce((a, b) => a + b)).toBe(60);
    expect(() => e.forward([1000])).toThrow(/index 1000 at position 0 is out of range/);
  });

  it('Residual adds its input', () => {
    const l = new nn.Linear(3, 3, { seed: 2, ...f64 });
    const x = A.tensor([[1, -1, 2]], f64);
    close(
      arr(new nn.Residual(l).forward(x)),
      arr(l.forward(x)).map((v, i) => v + [1, -1, 2][i]),
    );
  });
});

describe('Conv2d', () => {
  it('weight [out, in, kh, kw], bound 1/√(in·kh·kw), seeded', () => {
    const c = new nn.Conv2d(3, 8, 5, { seed: 1 });
    expect(names(c)).toEqual(['weight:[8,3,5,5]', 'bias:[8]']);
    const bound = Math.fround(1 / Math.sqrt(75));
    for (const p of c.parameters()) expect(Math.max(...arr(p).map(Math.abs))).toBeLessThanOrEqual(bound);
    expect(Math.max(...arr(c.weight))).toBeGreaterThan(0.9 * bound);
    expect(arr(new nn.Conv2d(3, 8, 5, { seed: 1 }).weight)).toEqual(arr(c.weight));
    expect(names(new nn.Conv2d(1, 2, [3, 2], { bias: false }))).toEqual(['weight:[2,1,3,2]']);
  });

  it('forward matches a direct float64 convolution (stride 2, padding 1)', () => {
    const c = new nn.Conv2d(2, 3, 3, { stride: 2, padding: 1, seed: 4, ...f64 });
    const x = A.randn([1, 2, 5, 5], { seed: 2, ...f64 });
    const X = arr(x),
      W = arr(c.weight),
      B = arr(c.bias!);
    const y = c.forward(x);
    expect(y.shape).toEqual([1, 3, 3, 3]);
    const ref: number[] = [];
    for (let o = 0; o < 3; o++)
      for (let i = 0; i < 3; i++)
        for (let j = 0; j < 3; j++) {
          let s = B[o];
          for (let ci = 0; ci < 2; ci++)
            for (let a = 0; a < 3; a++)
              for (let b = 0; b < 3; b++) {
                const h = 2 * i - 1 + a,
                  w = 2 * j - 1 + b;
                if (h >= 0 && h < 5 && w >= 0 && w < 5) s += W[((o * 2 + ci) * 3 + a) * 3 + b] * X[(ci * 5 + h) * 5 + w];
              }
          ref.push(s);
        }
    close(arr(y), ref, 1e-14);
    expect(() => c.forward(A.zeros([1, 3, 5, 5], f64))).toThrow(/Conv2d: expected input with channels \(axis 1 of NCHW\) = 2/);
    // An unbatched [C, H, W] image was reported as a wrong channel count on axis 1.
    expect(() => c.forward(A.zeros([3, 5, 5], f64))).toThrow(
      /Conv2d: input must be 4-D \[N, 2, H, W\], got \[3,5,5\] \(one image: x.unsqueeze\(0\)\)/,
    );
    expect(() => c.forward(A.zeros([2, 5, 5], f64))).toThrow(/Conv2d: input must be 4-D/);
  });

  it('a LeNet-style CNN: gradients of every parameter pass gradcheck in float64', () => {
    const model = new nn.Sequential(
      new nn.Conv2d(1, 2, 3, { padding: 1, seed: 1, ...f64 }),
      new nn.ReLU(),
      new nn.MaxPool2d(2),
      new nn.Conv2d(2, 3, 3, { padding: 1, seed: 2, ...f64 }),
      new nn.Tanh(),
      new nn.AvgPool2d(2),
      new nn.Flatten(),
      new nn.Linear(3 * 2 * 2, 3, { seed: 3, ...f64 }),
    );
    const x = A.randn([2, 1, 8, 8], { seed: 5, ...f64 });
    const params = model.parameters();
    // The same network written functionally, as a function of its parameters (in model order).
    const loss = (w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, w3: Tensor, b3: Tensor) => {
      const h1 = A.maxPool2d(A.conv2d(x, w1, b1, { padding: 1 }).relu(), 2);
      const h2 = A.avgPool2d(A.conv2d(h1, w2, b2, { padding: 1 }).tanh(), 2).reshape([2, 12]);
      return A.crossEntropy(A.matmul(h2, A.transpose(w3)).add(b3), [0, 2]);
    };
    // The functional form is the module's forward.
    close(arr(A.crossEntropy(model.forward(x), [0, 2])), arr(loss(...(params as [Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]))), 1e-14);
    // Central differences in float64 are good to ~1e-7 relative on the smallest gradients here.
    const r = A.gradcheck(loss as (...xs: Tensor[]) => Tensor, params, { rtol: 1e-5 });
    expect(r.ok).toBe(true);
  });
});
