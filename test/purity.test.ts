// Transforms are pure: they never read or write any .grad, and tensors a function captures are
// constants for them, yet stay differentiable by an outer backward() that owns them. The
// WGAN-GP gradient penalty checks the last point against a closed form and finite differences.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';

await A.init();
const t = (v: number | number[] | number[][]) => A.tensor(v, f64);

describe('purity', () => {
  it('no transform reads or writes .grad of its arguments or of captured tensors', () => {
    A.tidy(() => {
      const w = A.tensor([0.5, -1.5], { ...f64, requiresGrad: true });
      const x = A.tensor([0.3, 0.8], { ...f64, requiresGrad: true });
      const junkW = A.keep(t([111, 222])),
        junkX = A.keep(t([333, 444]));
      w.grad = junkW;
      x.grad = junkX;
      const f = (z: Tensor) => A.sum(A.mul(A.sin(z), w));
      const checks: [string, () => number[]][] = [
        ['grad', () => arr(A.grad(f)(x) as Tensor)],
        ['valueAndGrad', () => arr(A.valueAndGrad(f)(x)[1] as Tensor)],
        [
          'vjp',
          () => {
            const [, b] = A.vjp(f, x);
            const r = arr(b(t(1))[0]);
            b.release();
            return r;
          },
        ],
        ['jacrev', () => arr(A.jacrev(f)(x))],
        ['jacfwd', () => arr(A.jacfwd(f)(x))],
        ['hvp', () => arr(A.hvp(f, x, t([1, 0])))],
        ['hessian', () => arr(A.hessian(f)(x))],
      ];
      const want: Record<string, number[]> = {
        grad: [0.5 * Math.cos(0.3), -1.5 * Math.cos(0.8)],
        hvp: [-0.5 * Math.sin(0.3), 0],
        hessian: [-0.5 * Math.sin(0.3), 0, 0, 1.5 * Math.sin(0.8)],
      };
      want.valueAndGrad = want.grad;
      want.vjp = want.grad;
      want.jacrev = want.grad;
      want.jacfwd = want.grad;
      for (const [name, run] of checks) {
        close(run(), want[name], 1e-15);
        expect(w.grad, name).toBe(junkW);
        expect(x.grad, name).toBe(junkX);
        expect(arr(junkW), name).toEqual([111, 222]);
        expect(arr(junkX), name).toEqual([333, 444]);
      }
      w.grad = null;
      x.grad = null;
      junkW.dispose();
      junkX.dispose();
    });
  });

  it('a model parameter passed as the argument: no .grad, no tape left behind', () => {
    A.tidy(() => {
      const lin = new A.nn.Linear(3, 2, { seed: 3, dtype: 'float64' });
      const x = t([[1, 2, 3]]);
      const before = A.memory().tensors;
      const g = A.grad((W: Tensor) => A.sum(A.matmul(x, A.transpose(W))))(lin.weight) as Tensor;
      expect(arr(g)).toEqual([1, 2, 3, 1, 2, 3]);
      expect(g.requiresGrad).toBe(false);
      expect(lin.weight.grad).toBe(null);
      g.dispose();
      expect(A.memory().tensors).toBe(before);
      lin.dispose();
    });
  });

  it('captured parameters: the gradient is recorded for an outer backward, except under noGrad', () => {
    A.tidy(() => {
      const w = A.tensor([0.5, -1.5], { ...f64, requiresGrad: true });
      const f = (z: Tensor) => A.sum(A.mul(A.square(z), w));
      const x = t([1, 2]);
      const g = A.grad(f)(x) as Tensor; // 2xw, a function of w
      expect(g.requiresGrad).toBe(true);
      A.sum(g).backward();
      expect(arr(w.grad!)).toEqual([2, 4]);
      const c = A.noGrad(() => A.grad(f)(x) as Tensor);
      expect(c.requiresGrad).toBe(false);
      expect(arr(c)).toEqual([1, -6]);
    });
  });

  it('the graph of a transform is freed with its results (no leak over repeated calls)', () => {
    const x = A.keep(t([0.1, 0.2, 0.3]));
    const run = () =>
      A.tidy(() => {
        const h = A.hessian((z: Tensor) => A.sum(A.exp(A.mul(z, z))))(x);
        const g3 = A.grad((z: Tensor) =>
          A.sum(A.grad((u: Tensor) => A.sum(A.grad((v: Tensor) => A.sum(A.tanh(v)))(u) as Tensor))(z) as Tensor),
        )(x);
        return [arr(h), arr(g3 as Tensor)];
      });
    run();
    const m0 = A.memory();
    for (let i = 0; i < 5; i++) run();
    const m1 = A.memory();
    expect(m1.tensors).toBe(m0.tensors);
    expect(m1.bytesInUse).toBe(m0.bytesInUse);
    x.dispose();
  });
});

describe("gradient penalty (WGAN-GP): the parameters' gradient of mean((‖∂D/∂x‖ − 1)²)", () => {
  it('linear critic D(x) = x·w + b: closed form 2(‖w‖ − 1)·w/‖w‖, and b gets none', () => {
    A.tidy(() => {
      const wv = [0.6, -1.2, 0.9];
      const w = A.tensor(wv, { ...f64, requiresGrad: true }),
        b = A.tensor([0.3], { ...f64, requiresGrad: true });
      const xhat = t([
        [0.1, 0.2, 0.3],
        [-1, 0.5, 2],
        [0.7, -0.4, 0.0],
      ]);
      const D = (x: Tensor) => A.add(A.matmul(x, w), b);
      const g = A.grad((x: Tensor) => A.sum(D(x)))(xhat) as Tensor; // each row is w
      expect(w.grad).toBe(null);
      const penalty = A.mean(A.square(A.sub(A.sqrt(A.sum(A.square(g), 1)), 1)));
      penalty.backward();
      const n = Math.hypot(...wv);
      close(
        arr(w.grad!),
        wv.map((v) => (2 * (n - 1) * v) / n),
        1e-14,
      );
      expect(b.grad).toBe(null); // ∂D/∂x does not depend on b
    });
  });

  it('one hidden tanh layer: backward() through the penalty matches central differences in the parameters', () => {
    A.tidy(() => {
      const W1 = A.tensor(
        [
          [0.5, -0.3],
          [0.8, 0.2],
          [-0.4, 0.9],
        ],
        { ...f64, requiresGrad: true },
      );
      const v = A.tensor([0.7, -1.1, 0.6], { ...f64, requiresGrad: true });
      const xhat = t([
        [0.2, -0.5],
        [1.0, 0.3],
      ]);
      const penaltyOf = (W: Tensor, u: Tensor) => {
        const D = (x: Tensor) => A.sum(A.mul(A.tanh(A.matmul(x, A.transpose(W))), u));
        const g = A.grad(D)(xhat) as Tensor;
        return A.mean(A.square(A.sub(A.sqrt(A.sum(A.square(g), 1)), 1)));
      };
      penaltyOf(W1, v).backward();
      const fd = (p: Tensor, other: (q: Tensor) => Tensor) =>
        Array.from(p.toArray()).map((_, i) => {
          const e = new Float64Array(p.size);
          e[i] = 1e-6;
          const at = (s: number) => A.tidy(() => other(A.add(A.detach(p), A.mul(A.tensor(e, { shape: p.shape, ...f64 }), s))).item());
          return (at(1) - at(-1)) / 2e-6;
        });
      close(
        arr(W1.grad!),
        fd(W1, (q) => A.noGrad(() => penaltyOf(q, v))),
        1e-8,
      );
      close(
        arr(v.grad!),
        fd(v, (q) => A.noGrad(() => penaltyOf(W1, q))),
        1e-8,
      );
    });
  });
});
