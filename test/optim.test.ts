// Optimizers and clipping against float64 closed forms of PyTorch's update rules: one step
// (and a second, for momentum buffers and bias corrections) per rule, every kernel size that
// exercises the SIMD body and the scalar tail, f32 against f64, and bad arguments.
import { describe, it, expect, beforeAll, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

const { optim } = A;

beforeAll(async () => {
  await A.init();
});

type DT = 'float32' | 'float64';
const p0 = (n: number) => Array.from({ length: n }, (_, i) => 0.5 - 0.13 * i + 0.01 * i * i);
const g0 = (n: number, step = 0) => Array.from({ length: n }, (_, i) => (i % 3 === 0 ? -1 : 1) * (0.2 + 0.07 * i) + 0.05 * step);

/** A parameter with values p and gradient g. */
function param(p: number[], g: number[], dtype: DT = 'float64'): Tensor {
  const t = A.tensor(p, { dtype, requiresGrad: true });
  t.grad = A.keep(A.tensor(g, { dtype }));
  return t;
}
function setGrad(t: Tensor, g: number[]): void {
  t.grad?.dispose();
  t.grad = A.keep(A.tensor(g, { dtype: t.dtype }));
}
const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol: number) => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want[i])));
};

/** torch.optim.SGD, float64, over several steps. */
function refSGD(
  p: number[],
  grads: number[][],
  o: { lr: number; momentum?: number; dampening?: number; weightDecay?: number; nesterov?: boolean },
): number[] {
  const { lr, momentum = 0, dampening = 0, weightDecay = 0, nesterov = false } = o;
  const x = [...p];
  let buf: number[] | null = null;
  for (const g of grads) {
    let d = g.map((gi, i) => gi + weightDecay * x[i]);
    if (momentum !== 0) {
      buf = buf === null ? [...d] : buf.map((b, i) => momentum * b + (1 - dampening) * d[i]);
      d = nesterov ? d.map((di, i) => di + momentum * buf![i]) : buf;
    }
    d.forEach((di, i) => (x[i] -= lr * di));
  }
  return x;
}

/** torch.optim.Adam / AdamW, float64, over several steps. */
function refAdam(
  p: number[],
  grads: number[][],
  o: { lr: number; betas: [number, number]; eps: number; weightDecay: number; decoupled: boolean },
): number[] {
  const x = [...p],
    m = p.map(() => 0),
    v = p.map(() => 0);
  const [b1, b2] = o.betas;
  grads.forEach((g0_, k) => {
    const t = k + 1;
    const g = [...g0_];
    for (let i = 0; i < x.length; i++) {
      if (o.decoupled) x[i] *= 1 - o.lr * o.weightDecay;
      else g[i] += o.weightDecay * x[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const mhat = m[i] / (1 - b1 ** t),
        vhat = v[i] / (1 - b2 ** t);
      x[i] -= (o.lr * mhat) / (Math.sqrt(vhat) + o.eps);
    }
  });
  return x;
}

// Sizes around the SIMD width (4 f32 / 2 f64 lanes): body only, tail only, both.
const SIZES = [0, 1, 3, 4, 5, 16, 17];

interface Row {
  name: string;
  make: (ps: Tensor[]) => A.optim.Optimizer;
  ref: (p: number[], gs: number[][]) => number[];
}
const ROWS: Row[] = [
  { name: 'SGD plain', make: (ps) => new optim.SGD(ps, { lr: 0.1 }), ref: (p, gs) => refSGD(p, gs, { lr: 0.1 }) },
  {
    name: 'SGD momentum + dampening + weight decay',
    make: (ps) => new optim.SGD(ps, { lr: 0.05, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 }),
    ref: (p, gs) => refSGD(p, gs, { lr: 0.05, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 }),
  },
  {
    name: 'SGD nesterov + weight decay',
    make: (ps) => new optim.SGD(ps, { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 0.02 }),
    ref: (p, gs) => refSGD(p, gs, { lr: 0.05, momentum: 0.9, nesterov: true, weightDecay: 0.02 }),
  },
  {
    name: 'Adam defaults',
    make: (ps) => new optim.Adam(ps),
    ref: (p, gs) => refAdam(p, gs, { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0, decoupled: false }),
  },
  {
    name: 'Adam L2 weight decay, betas ≥ 0.5 and < 0.5',
    make: (ps) => new optim.Adam(ps, { lr: 0.01, betas: [0.3, 0.99], eps: 1e-6, weightDecay: 0.1 }),
    ref: (p, gs) => refAdam(p, gs, { lr: 0.01, betas: [0.3, 0.99], eps: 1e-6, weightDecay: 0.1, decoupled: false }),
  },
  {
    name: 'AdamW defaults (weightDecay 0.01)',
    make: (ps) => new optim.AdamW(ps, { lr: 0.01 }),
    ref: (p, gs) => refAdam(p, gs, { lr: 0.01, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0.01, decoupled: true }),
  },
];

describe.each(ROWS)('$name', (row) => {
  it.each(SIZES)('float64, n = %i: three steps match the float64 closed form', (n) => {
    const grads = [g0(n, 0), g0(n, 1), g0(n, 2)];
    const t = param(p0(n), grads[0]);
    const opt = row.make([t]);
    for (let s = 0; s < grads.length; s++) {
      setGrad(t, grads[s]);
      opt.step();
      close(t.toArray(), row.ref(p0(n), grads.slice(0, s + 1)), 1e-14);
    }
    opt.dispose();
    t.dispose();
  });

  it.each(SIZES)('float32, n = %i: agrees with float64', (n) => {
    const grads = [g0(n, 0), g0(n, 1)];
    const t = param(p0(n), grads[0], 'float32');
    const opt = row.make([t]);
    for (const g of grads) {
      setGrad(t, g);
      opt.step();
    }
    close(t.toArray(), row.ref(p0(n), grads), 2e-6);
    opt.dispose();
    t.dispose();
  });
});

describe('hand-computed single steps', () => {
  it('Adam, first step: p − lr·g/(|g| + eps)', () => {
    // m̂ = g and v̂ = g² after one step, so the update is lr·sign(g) up to eps.
    const t = param([1, -2, 3], [0.5, -4, 1e-3]);
    new optim.Adam([t], { lr: 0.1 }).step();
    close(t.toArray(), [1 - 0.05 / (0.5 + 1e-8), -2 + 0.4 / (4 + 1e-8), 3 - 1e-4 / (1e-3 + 1e-8)], 1e-15);
  });

  it('AdamW, first step: p·(1 − lr·wd) − lr·sign(g)', () => {
    const t = param([2, -1], [3, -0.25]);
    new optim.AdamW([t], { lr: 0.1, weightDecay: 0.5, eps: 0 }).step();
    close(t.toArray(), [2 * 0.95 - 0.1, -1 * 0.95 + 0.1], 1e-15);
  });

  it('SGD momentum 0.9, two steps: buffer starts at g, then 0.9·b + g', () => {
    const t = param([1], [2]);
    const opt = new optim.SGD([t], { lr: 0.1, momentum: 0.9 });
    opt.step(); // b = 2, p = 1 − 0.2
    setGrad(t, [1]);
    opt.step(); // b = 2.8, p = 0.8 − 0.28
    close(t.toArray(), [0.52], 1e-15);
  });

  it('SGD nesterov, two steps: d = g + μ·b', () => {
    const t = param([1], [2]);
    const opt = new optim.SGD([t], { lr: 0.1, momentum: 0.5, nesterov: true });
    opt.step(); // b = 2, d = 3, p = 0.7
    setGrad(t, [1]);
    opt.step(); // b = 2, d = 2, p = 0.5
    close(t.toArray(), [0.5], 1e-15);
  });
});

describe('Optimizer bookkeeping', () => {
  it('skips parameters without a gradient; zeroGrad disposes gradients', () => {
    const a = param([1, 2], [1, 1]),
      b = A.tensor([5, 6], { dtype: 'float64', requiresGrad: true });
    const opt = new optim.SGD([a, b], { lr: 1 });
    opt.step();
    expect(Array.from(a.toArray())).toEqual([0, 1]);
    expect(Array.from(b.toArray())).toEqual([5, 6]);
    const g = a.grad!;
    opt.zeroGrad();
    expect(a.grad).toBeNull();
    expect(g.disposed).toBe(true);
  });

  it('refuses a .grad of another shape (even of the same size), a disposed one, or a non-Tensor, naming the optimizer', () => {
    // PyTorch refuses `p.grad = g` of another shape; a [3, 2] gradient on a [2, 3] parameter
    // used to update it silently in memory order.
    const p = A.tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3], dtype: 'float64', requiresGrad: true });
    for (const Opt of [optim.SGD, optim.Adam]) {
      const opt = new Opt([p], { lr: 1 });
      p.grad = A.keep(A.zeros([3, 2], { dtype: 'float64' }));
      expect(() => opt.step()).toThrow(A.ShapeError);
      expect(() => opt.step()).toThrow(new RegExp(`${Opt.name}\\.step: gradient has shape \\[3,2\\] but the parameter has \\[2,3\\]`));
      p.grad.dispose();
      expect(() => opt.step()).toThrow(new RegExp(`${Opt.name}\\.step \\(the \\.grad of a parameter \\[2,3\\]\\)`));
      p.grad = [1, 2, 3, 4, 5, 6] as never;
      expect(() => opt.step()).toThrow(/\.grad must be a Tensor or null, got/);
      p.grad = null;
    }
    expect(Array.from(p.toArray())).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('checks every gradient before moving any parameter (a bad one used to leave the earlier ones updated)', () => {
    const a = param([1, 2], [1, 1]),
      b = param([3, 4], [1, 1]);
    for (const opt of [new optim.SGD([a, b], { lr: 1, momentum: 0.9 }), new optim.Adam([{ params: [a] }, { params: [b] }])]) {
      b.grad = A.keep(A.ones([2]));
      expect(() => opt.step()).toThrow(A.DtypeError);
      expect([...a.toArray(), ...b.toArray()]).toEqual([1, 2, 3, 4]);
      expect(Object.keys(opt.stateDict()).filter((k) => k.startsWith('state.'))).toEqual([]);
    }
  });

  it('a disposed parameter or gradient is a DisposedError naming the step, not a silent skip', () => {
    for (const Opt of [optim.SGD, optim.Adam, optim.AdamW]) {
      const a = param([1, 2], [1, 1]),
        b = param([3, 4], [1, 1]);
      const opt = new Opt([a, b], { lr: 0.1 });
      b.dispose(); // drops its .grad too
      expect(() => opt.step()).toThrow(A.DisposedError);
      expect(() => opt.step()).toThrow(new RegExp(`^${Opt.name}\\.step: tensor #\\d+ \\(shape \\[2\\]\\) was disposed`));
      const c = param([1, 2], [1, 1]);
      const opt2 = new Opt([c], { lr: 0.1 });
      c.grad!.dispose();
      expect(() => opt2.step()).toThrow(/step \(the \.grad of a parameter \[2\]\): tensor #\d+ \(shape \[2\]\) was disposed/);
      for (const t of [a, c]) t.dispose();
      opt.dispose();
      opt2.dispose();
    }
  });

  it('the up-front checks build no message and run no closure per parameter (hundreds of them every step)', () => {
    // step() checks every parameter and gradient before moving any; building each check's
    // message (p.check(`${name}.step`), the .grad's shape) and a shape.some() closure per
    // parameter made an eager step of 400 small parameters three times slower than the updates.
    const ps = Array.from({ length: 300 }, (_, i) => param([i, 1, 2, 3], [1, 1, 1, 1]));
    const frozen = Array.from({ length: 100 }, () => A.tensor([1, 2], { dtype: 'float64', requiresGrad: true }));
    const shapes = new Set<unknown>([...ps, ...frozen].map((t) => t.shape));
    for (const opt of [new optim.SGD([...ps, ...frozen], { lr: 0.5 }), new optim.Adam([{ params: ps }, { params: frozen }])]) {
      opt.step(); // the first step allocates the optimizer's state
      const check = vi.spyOn(A.Tensor.prototype, 'check');
      const some = vi.spyOn(Array.prototype, 'some');
      try {
        opt.step();
        expect(check).not.toHaveBeenCalled();
        expect(some.mock.contexts.filter((c) => shapes.has(c))).toEqual([]);
      } finally {
        check.mockRestore();
        some.mockRestore();
      }
      opt.dispose();
    }
    expect(Array.from(ps[7].toArray())).not.toEqual([7, 1, 2, 3]);
    expect(Array.from(frozen[0].toArray())).toEqual([1, 2]);
    for (const t of [...ps, ...frozen]) t.dispose();
  });

  it('lr can be changed between steps; Adam counts steps per parameter', () => {
    const a = param([0], [1]),
      b = param([0], [1]);
    const opt = new optim.Adam([a, b], { lr: 0.1 });
    opt.step();
    b.grad!.dispose();
    b.grad = null;
    opt.lr = 0.2;
    opt.step();
    expect(opt.stepCount(a)).toBe(2);
    expect(opt.stepCount(b)).toBe(1);
  });

  it('state buffers survive tidy and are freed by dispose()', () => {
    const t = param([1, 2, 3], [1, 1, 1]);
    const opt = new optim.Adam([t]);
    const before = A.memory().tensors;
    A.tidy(() => opt.step());
    expect(A.memory().tensors).toBe(before + 2);
    A.tidy(() => opt.step());
    expect(A.memory().tensors).toBe(before + 2);
    opt.dispose();
    expect(A.memory().tensors).toBe(before);
  });

  it('20 steps of a training loop follow the float64 reference trajectory', () => {
    // Linear regression y = x·wᵀ + b under MSE; the reference computes the gradient by hand.
    const X = [
        [1, 2, 3],
        [0, 1, 0],
        [2, 0, 1],
        [1, 1, 1],
      ],
      Y = [1, 2, 3, 4];
    const model = new A.nn.Linear(3, 1, { seed: 1, dtype: 'float64' });
    const x = A.tensor(X, { dtype: 'float64' }),
      y = A.tensor(
        Y.map((v) => [v]),
        { dtype: 'float64' },
      );
    const opt = new optim.AdamW(model.parameters(), { lr: 0.05, weightDecay: 0.1 });
    const w = [...model.weight.toArray(), model.bias!.toArray()[0]];
    const o = { lr: 0.05, betas: [0.9, 0.999] as [number, number], eps: 1e-8, weightDecay: 0.1, decoupled: true };
    const grads: number[][] = [];
    for (let step = 0; step < 20; step++) {
      A.tidy(() => {
        A.mseLoss(model.forward(x), y).backward();
        opt.step();
        opt.zeroGrad();
      });
      // The reference replays all steps from the start with the gradients at its own iterates.
      const cur = step === 0 ? w : refAdam(w, grads, o);
      const r = X.map((row, i) => row.reduce((s, v, j) => s + v * cur[j], cur[3]) - Y[i]);
      grads.push([0, 1, 2, 3].map((j) => (2 / X.length) * r.reduce((s, ri, i) => s + ri * (j < 3 ? X[i][j] : 1), 0)));
    }
    close([...model.weight.toArray(), model.bias!.toArray()[0]], refAdam(w, grads, o), 1e-12);
  });

  it.each([
    ['empty params', () => new optim.SGD([], { lr: 0.1 }), /empty parameter list/],
    ['missing lr', () => new optim.SGD([A.zeros([1])], {} as { lr: number }), /lr is required/],
    ['negative lr', () => new optim.Adam([A.zeros([1])], { lr: -1 }), /lr must be a finite number ≥ 0, got -1/],
    ['beta out of range', () => new optim.Adam([A.zeros([1])], { betas: [0.9, 1] }), /betas\[1\] must be a finite number in \[0, 1\)/],
    ['nesterov without momentum', () => new optim.SGD([A.zeros([1])], { lr: 0.1, nesterov: true }), /nesterov requires momentum > 0/],
    [
      'nesterov with a group that dampens',
      () =>
        new optim.SGD([{ params: [A.zeros([1])] }, { params: [A.zeros([1])], dampening: 0.1 }], { lr: 0.1, momentum: 0.9, nesterov: true }),
      /SGD: params\[1\]\.nesterov requires momentum > 0 and dampening = 0, got momentum 0\.9 and dampening 0\.1/,
    ],
    [
      'duplicate parameter',
      () => {
        const t = A.zeros([1]);
        return new optim.SGD([t, t], { lr: 1 });
      },
      /more than once/,
    ],
    ['not a tensor', () => new optim.SGD([1 as unknown as Tensor], { lr: 1 }), /params\[0\] must be a Tensor/],
  ])('%s is refused with a clear ArgumentError', (_name, f, message) => {
    expect(f).toThrow(A.ArgumentError);
    expect(f).toThrow(message);
  });
});

describe('clipping', () => {
  it('clipGradNorm returns the total norm before clipping and scales to maxNorm', () => {
    const a = param([0, 0], [3, 0]),
      b = param([0, 0, 0], [0, 4, 0], 'float32');
    const norm = A.clipGradNorm([a, b], 1);
    expect(norm).toBe(5);
    close(a.grad!.toArray(), [3 / (5 + 1e-6), 0], 1e-15);
    close(b.grad!.toArray(), [0, 4 / (5 + 1e-6), 0], 1e-7);
    expect(A.optim.clipGradNorm).toBe(A.clipGradNorm);
  });

  it.each(SIZES)('clipGradNorm over %i elements matches the float64 norm; no scaling below maxNorm', (n) => {
    const g = g0(n);
    const t = param(p0(n), g, 'float32');
    const want = Math.sqrt(g.reduce((s, v) => s + Math.fround(v) ** 2, 0));
    expect(Math.abs(A.clipGradNorm([t], 1e9) - want)).toBeLessThan(1e-12);
    close(t.grad!.toArray(), g, 1e-7);
  });

  /** a and b with one gradient buffer between them ([3, 4]): backward of sum((a + b)·[3, 4]). */
  const sharedGradPair = () => {
    const a = A.tensor([1, 1], { requiresGrad: true, dtype: 'float64' }),
      b = A.tensor([2, 2], { requiresGrad: true, dtype: 'float64' });
    A.add(a, b)
      .mul(A.tensor([3, 4], { dtype: 'float64' }))
      .sum()
      .backward();
    return [a, b];
  };

  it('scales a gradient buffer shared by two parameters once', () => {
    const [a, b] = sharedGradPair();
    const norm = A.clipGradNorm([a, b], 1);
    expect(norm).toBeCloseTo(Math.sqrt(2 * 25), 12);
    const c = 1 / (norm + 1e-6);
    close(a.grad!.toArray(), [3 * c, 4 * c], 1e-14);
    close(b.grad!.toArray(), [3 * c, 4 * c], 1e-14);
  });

  it('leaves alone what shares a gradient buffer but is not clipped: another parameter, the seed', () => {
    // Backward hands a and b one buffer; clipping a used to scale b's gradient (and a seed given
    // to backward) in place. PyTorch's .grad tensors own their memory.
    const [a, b] = sharedGradPair();
    expect(A.clipGradNorm([a], 1)).toBe(5);
    close(a.grad!.toArray(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)], 1e-15);
    expect(Array.from(b.grad!.toArray())).toEqual([3, 4]);
    A.clipGradValue([b], 3.5);
    expect(Array.from(b.grad!.toArray())).toEqual([3, 3.5]);
    close(a.grad!.toArray(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)], 1e-15);
    const h = A.tensor([1, 2], { requiresGrad: true, dtype: 'float64' });
    const seed = A.tensor([3, 4], { dtype: 'float64' });
    h.reshape([2]).backward(seed);
    A.clipGradNorm([h], 1);
    expect(Array.from(seed.toArray())).toEqual([3, 4]);
    close(h.grad!.toArray(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)], 1e-15);
  });

  it('gradients that own their buffers are not counted per buffer (every step, hundreds of parameters)', () => {
    // Only a buffer with more than one handle can be shared with something outside params; a
    // Map of Sets over every gradient on every step made clipGradNorm of 400 small parameters
    // 2.3× slower.
    const ps = Array.from({ length: 300 }, (_, i) => param([0, 0], [i, 1]));
    const grads = new Set<unknown>(ps.map((p) => p.grad));
    const add = vi.spyOn(Set.prototype, 'add');
    try {
      A.clipGradNorm(ps, 1e9);
      A.clipGradValue(ps, 1e9);
      expect(add.mock.calls.filter(([v]) => grads.has(v))).toEqual([]);
    } finally {
      add.mockRestore();
    }
    expect(ps.every((p) => grads.has(p.grad))).toBe(true);
    for (const p of ps) p.dispose();
  });

  it('clipGradValue clamps every element', () => {
    const t = param([0, 0, 0, 0, 0], [-3, -0.5, 0, 0.5, 3]);
    A.clipGradValue([t], 1);
    expect(Array.from(t.grad!.toArray())).toEqual([-1, -0.5, 0, 0.5, 1]);
  });

  it('refuses a negative bound', () => {
    expect(() => A.clipGradNorm([A.zeros([1])], -1)).toThrow(/maxNorm must be a number ≥ 0/);
    expect(() => A.clipGradValue([A.zeros([1])], -1)).toThrow(/clipValue must be a number ≥ 0/);
  });
});
