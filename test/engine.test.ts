// The engine around the ops (issue "foundation"): memory returning to its baseline, bad input
// giving clear errors that leave the engine working, the function transforms, and the arena.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { sizeClass } from '../src/wasm/arena.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' } as const;
const arr = (t: Tensor): number[] => Array.from(t.toArray());

/**
 * One SGD step of least squares, loss = mean((Xw − y)²), checked against the same step in JS
 * Math. Run after every error below: the engine must still give the right numbers.
 */
function trainStep(): void {
  const X = [
      [1, 2],
      [0.5, -1],
      [3, 0.25],
      [-2, 1],
    ],
    y = [1, -0.5, 2, 0.75],
    w0 = [0.3, -0.7],
    lr = 0.1;
  const r = X.map((row, i) => row[0] * w0[0] + row[1] * w0[1] - y[i]);
  const loss = r.reduce((s, v) => s + v * v, 0) / 4;
  const w1 = w0.map((wj, j) => wj - lr * (2 / 4) * r.reduce((s, ri, i) => s + ri * X[i][j], 0));
  A.tidy(() => {
    const w = A.tensor(w0, { ...f64, requiresGrad: true });
    const l = A.mseLoss(A.matmul(A.tensor(X, f64), w), A.tensor(y, f64));
    l.backward();
    expect(l.item()).toBeCloseTo(loss, 14);
    const next = A.sub(w.detach(), A.mul(w.grad!, lr)).toArray();
    expect(Math.abs(next[0] - w1[0]) + Math.abs(next[1] - w1[1])).toBeLessThan(1e-14);
  });
}

function expectBaseline(fn: () => void): void {
  const before = A.memory();
  fn();
  const after = A.memory();
  expect({ tensors: after.tensors, bytes: after.bytesInUse }).toEqual({ tensors: before.tensors, bytes: before.bytesInUse });
}

describe('memory returns to its baseline after tidy', () => {
  it('around forward + backward of a small network', () => {
    expectBaseline(() =>
      A.tidy(() => {
        const x = A.randn([8, 5], { seed: 1 }),
          w1 = A.randn([5, 6], { seed: 2, requiresGrad: true });
        const w2 = A.randn([6, 3], { seed: 3, requiresGrad: true }),
          g = A.ones([6], { requiresGrad: true });
        const h = A.layerNorm(A.gelu(A.matmul(x, w1)), g);
        const loss = A.add(A.crossEntropy(A.matmul(A.tanh(h), w2), [0, 1, 2, 0, 1, 2, 0, 1]), A.mean(A.gather(h, [1, 3], 1)));
        loss.backward();
        expect(w1.grad!.shape).toEqual([5, 6]);
        expect(arr(g.grad!).some((v) => v !== 0)).toBe(true);
      }),
    );
  });

  it('around grad, valueAndGrad and a released vjp', () => {
    expectBaseline(() =>
      A.tidy(() => {
        const x = A.tensor([0.1, 0.5, -0.3], f64);
        const f = (a: Tensor) => A.logsumexp(A.mul(A.softmax(a), a));
        A.grad(f)(x);
        A.valueAndGrad(f)(x);
        const [, back] = A.vjp((a: Tensor) => A.exp(A.sin(a)), x);
        back(x);
        back.release();
      }),
    );
  });

  it('around ops that throw halfway', () => {
    const x = A.tensor([1, 2, 3]);
    expectBaseline(() => {
      expect(() => A.tidy(() => A.add(A.exp(x), A.zeros([2])))).toThrow(A.ShapeError);
      expect(() => A.tidy(() => A.grad((a: Tensor) => A.mul(A.exp(a), 2))(x))).toThrow(A.GradError);
    });
  });
});

describe('bad input gives a clear error and leaves the engine working', () => {
  const a34 = () => A.zeros([3, 4]);
  const cases: [string, () => unknown, typeof A.AdjointError, RegExp | string][] = [
    ['matmul inner dims', () => A.matmul(a34(), A.zeros([5, 2])), A.ShapeError, 'matmul: inner dimensions differ: [3,4] x [5,2]'],
    ['matmul vector', () => A.matmul(A.zeros([3]), A.zeros([4])), A.ShapeError, /matmul: inner dimensions differ: \[1,3\] x \[4,1\]/],
    ['matmul batch dims', () => A.matmul(A.zeros([2, 3, 4]), A.zeros([3, 4, 2])), A.ShapeError, /matmul: shapes \[2\] and \[3\]/],
    ['add broadcast', () => A.add(a34(), A.zeros([5])), A.ShapeError, /add: shapes \[3,4\] and \[5\] cannot be broadcast/],
    ['maximum broadcast', () => A.maximum(A.zeros([2, 3]), a34()), A.ShapeError, /maximum: shapes \[2,3\] and \[3,4\]/],
    ['reshape size', () => A.reshape(a34(), [5, -1]), A.ShapeError, 'reshape: cannot reshape [3,4] (12 elements) to [5,-1]'],
    ['broadcastTo', () => A.broadcastTo(a34(), [4, 4]), A.ShapeError, /broadcastTo: .*\[3,4\].*\[4,4\]/],
    ['concat', () => A.concat([a34(), A.zeros([3, 5])]), A.ShapeError, /concat: tensor 1 has shape \[3,5\], incompatible with \[3,4\]/],
    ['slice', () => A.slice(a34(), [2, 0], [2, 4]), A.ShapeError, /slice: .*\[3,4\]/],
    ['gather', () => A.gather(a34(), [0, 3]), A.ShapeError, /gather: index 3 at position 1 is out of range/],
    ['sum axis', () => A.sum(a34(), 2), A.ShapeError, /sum: axis 2 is out of range for shape \[3,4\]/],
    ['mseLoss', () => A.mseLoss(a34(), A.zeros([4, 3])), A.ShapeError, /mseLoss: pred \[3,4\] and target \[4,3\]/],
    ['layerNorm weight', () => A.layerNorm(a34(), A.ones([3])), A.ShapeError, /layerNorm: weight must be \[4\]/],
    ['crossEntropy labels', () => A.crossEntropy(a34(), [0, 1]), A.ShapeError, /crossEntropy: 2 labels for 3 rows/],
    ['add dtypes', () => A.add(a34(), A.zeros([3, 4], f64)), A.DtypeError, /add: dtypes differ: float32 \[3,4\] and float64 \[3,4\]/],
    ['matmul dtypes', () => A.matmul(a34(), A.zeros([4, 2], f64)), A.DtypeError, /matmul: dtypes differ/],
    ['concat dtypes', () => A.concat([a34(), A.zeros([3, 4], f64)]), A.DtypeError, /concat: tensor 1 is float64/],
    [
      'backward non-scalar',
      () => A.exp(A.zeros([3], { requiresGrad: true })).backward(),
      A.GradError,
      /non-scalar output needs an explicit seed/,
    ],
    ['backward no grad', () => A.sum(A.ones([3])).backward(), A.GradError, /does not require grad/],
    [
      'backward under noGrad',
      () => A.noGrad(() => A.sum(A.ones([3], { requiresGrad: true }))).backward(),
      A.GradError,
      /does not require grad/,
    ],
    ['grad argnums', () => A.grad((a: Tensor) => A.sum(a), { argnums: 1 })(a34()), A.ArgumentError, /grad: argnums 1 is out of range/],
  ];

  it.each(cases)('%s', (_n, fn, kind, message) => {
    A.tidy(() => {
      expect(fn).toThrow(kind);
      expect(fn).toThrow(message);
      expect(fn).toThrow(A.AdjointError);
    });
    trainStep();
  });

  it('backward twice on a released graph', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2], { ...f64, requiresGrad: true });
      const y = A.sum(A.mul(A.exp(x), x));
      y.backward();
      expect(() => y.backward()).toThrow(A.GradError);
      expect(() => y.backward()).toThrow(/already released/);
      expect(arr(x.grad!)).toEqual([2 * Math.E, 3 * Math.exp(2)]);
    });
    trainStep();
  });

  it('a second output through a released shared subgraph: the same clear GradError, .grad untouched', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2], { ...f64, requiresGrad: true });
      const h = A.mul(A.exp(x), x); // shared by both outputs; its nodes saved their inputs
      A.sum(A.tanh(h)).backward();
      const before = arr(x.grad!);
      for (const run of [() => A.sum(A.sin(h)).backward(), () => A.autograd.grad([A.sum(A.sin(h))], [x])]) {
        expect(run).toThrow(A.GradError);
        expect(run).toThrow(/node #\d+ \(mul of inputs \[2\], \[2\]\).*already released; pass \{ retainGraph: true \}/);
      }
      expect(arr(x.grad!)).toEqual(before);
      // With the graph retained the second output runs through it.
      const k = A.mul(A.exp(x), x);
      A.sum(A.tanh(k)).backward(undefined, { retainGraph: true });
      A.sum(A.sin(k)).backward();
    });
    trainStep();
  });

  it('a non-scalar backward with a seed of its shape works; a wrong seed does not', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2, 3], { ...f64, requiresGrad: true });
      expect(() => A.square(x).backward(A.ones([2], f64))).toThrow(/seed has shape \[2\], expected the output's shape \[3\]/);
      expect(() => A.square(x).backward(A.ones([3]))).toThrow(A.DtypeError);
      A.square(x).backward(A.tensor([1, 0, -1], f64));
      expect(arr(x.grad!)).toEqual([2, 0, -6]);
    });
    trainStep();
  });

  it('using a disposed tensor', () => {
    const x = A.tensor([1, 2, 3]);
    x.dispose();
    x.dispose(); // a second dispose does nothing
    const s = A.tensor(4);
    s.dispose();
    for (const use of [() => A.exp(x), () => x.toArray(), () => s.item(), () => A.add(1, x), () => A.concat([x]), () => x.backward()]) {
      expect(use).toThrow(A.DisposedError);
    }
    expect(() => A.exp(x)).toThrow(/exp: tensor #\d+ \(shape \[3\]\) was disposed/);
    trainStep();
  });

  it('backward through a disposed intermediate still works (the graph keeps what it saved)', () => {
    A.tidy(() => {
      const x = A.tensor([0.5, 1], { ...f64, requiresGrad: true });
      const h = A.exp(x);
      const y = A.sum(A.mul(h, h));
      h.dispose();
      y.backward();
      const g = arr(x.grad!);
      expect(g[0]).toBeCloseTo(2 * Math.exp(1), 14);
      expect(g[1]).toBeCloseTo(2 * Math.exp(2), 13);
    });
  });
});

describe('transforms', () => {
  const f = (a: Tensor, b: Tensor) => A.sum(A.mul(A.sin(a), b));

  it("grad and valueAndGrad with argnums, leaving the caller's .grad alone", () => {
    A.tidy(() => {
      const a = A.tensor([0.5, -1], { ...f64, requiresGrad: true }),
        b = A.tensor([2, 3], f64);
      expect(arr(A.grad(f)(a, b) as Tensor)).toEqual([2 * Math.cos(0.5), 3 * Math.cos(-1)]);
      expect(arr(A.grad(f, { argnums: 1 })(a, b) as Tensor)).toEqual([Math.sin(0.5), Math.sin(-1)]);
      const [v, gs] = A.valueAndGrad(f, { argnums: [1, 0] })(a, b);
      expect(v.item()).toBe(2 * Math.sin(0.5) + 3 * Math.sin(-1));
      expect((gs as Tensor[]).map(arr)).toEqual([
        [Math.sin(0.5), Math.sin(-1)],
        [2 * Math.cos(0.5), 3 * Math.cos(-1)],
      ]);
      expect(a.grad).toBe(null);
      expect(arr(A.grad((x: Tensor) => A.sum(b), {})(a) as Tensor)).toEqual([0, 0]); // f does not depend on a
    });
  });

  it('vjp gives the same cotangents on repeated calls, and errors once released', () => {
    A.tidy(() => {
      const x = A.tensor([0.2, 0.4, 0.6], f64);
      const [y, back] = A.vjp((a: Tensor) => A.mul(A.exp(a), a), x);
      expect(arr(y)).toEqual([0.2, 0.4, 0.6].map((v) => Math.exp(v) * v));
      const ct = A.tensor([1, -1, 2], f64);
      const first = arr(back(ct)[0]);
      const e = [0.2, 0.4, 0.6].map((v, i) => [1, -1, 2][i] * Math.exp(v) * (1 + v));
      first.forEach((v, i) => expect(v).toBeCloseTo(e[i], 14));
      expect(arr(back(ct)[0])).toEqual(first);
      back.release();
      expect(() => back(ct)).toThrow(/vjp: this vjp function was released/);
    });
  });

  it('noGrad records nothing; stopGradient and detach cut one path', () => {
    A.tidy(() => {
      const x = A.tensor([1.5, -2], { ...f64, requiresGrad: true });
      expect(A.noGrad(() => A.mul(x, x)).requiresGrad).toBe(false);
      expect(arr(A.grad((a: Tensor) => A.sum(A.mul(a, A.stopGradient(a))))(x) as Tensor)).toEqual([1.5, -2]);
      expect(arr(A.grad((a: Tensor) => A.sum(A.mul(a.detach(), A.square(a))))(x) as Tensor)).toEqual([2 * 1.5 * 1.5, 2 * 2 * 2]);
    });
  });

  it("customVjp uses the user's gradient (a straight-through estimator) and checks its arity", () => {
    A.tidy(() => {
      const ste = A.customVjp(
        (a: Tensor) => A.relu(a),
        (g) => [A.mul(g, 2)],
      );
      const x = A.tensor([-1, 0.5], { ...f64, requiresGrad: true });
      const y = ste(x);
      expect(arr(y)).toEqual([0, 0.5]);
      A.sum(y).backward();
      expect(arr(x.grad!)).toEqual([2, 2]);
      const bad = A.customVjp(
        (a: Tensor, b: Tensor) => A.add(a, b),
        (g) => [g],
      );
      expect(() => A.sum(bad(x, x)).backward()).toThrow(A.GradError);
      expect(() => A.sum(bad(x, x)).backward()).toThrow(/customVjp\(.*\): backward .*2/);
    });
    trainStep();
  });
});

describe('arena', () => {
  it('rounds to size classes with at most 25 % slack', () => {
    for (let b = 1; b < 200000; b = Math.ceil(b * 1.37)) {
      const c = sizeClass(b);
      expect(c % 64).toBe(0);
      expect(c).toBeGreaterThanOrEqual(b);
      expect(c).toBeLessThanOrEqual(Math.max(256, b * 1.25 + 64));
    }
  });

  it('reuses a freed block for a request of the same size class', () => {
    const a = A.zeros([100]); // 400 bytes: the 448-byte class
    const p = a.ptr;
    a.dispose();
    const b = A.full([105], 3); // 420 bytes: the same class
    expect(b.ptr).toBe(p);
    expect(arr(b).every((v) => v === 3)).toBe(true);
    const c = A.zeros([100]);
    expect(c.ptr).not.toBe(p); // b still holds it
    b.dispose();
    c.dispose();
  });

  it("grows the memory beyond its initial size, keeping old tensors' values and rebuilding views", () => {
    const old = A.tensor([1.5, -2.25, 3], f64);
    const w0 = A.memory().wasmBytes;
    const big = A.full([(3 * w0) / 4], 2); // more float32s than the memory had bytes to spare
    expect(A.memory().wasmBytes).toBeGreaterThan(w0);
    expect(arr(old)).toEqual([1.5, -2.25, 3]);
    expect(arr(A.mul(old, 2))).toEqual([3, -4.5, 6]);
    expect(A.sum(big).item()).toBe(2 * big.size);
    expect(A.slice(big, [big.size - 3], [3]).toArray()).toEqual(new Float32Array([2, 2, 2]));
    big.dispose();
    old.dispose();
    trainStep();
  });
});
