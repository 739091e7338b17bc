// Transforms nested to any order and in any mix, against closed forms: the examples that used
// to return zeros, third derivatives, perturbation confusion, nested forward mode, vjp of vjp,
// Hessians both ways, PyTorch's createGraph / autograd.grad, and the hint for backward() on a
// constant gradient.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';

await A.init();
const t = (v: number | number[] | number[][]) => A.tensor(v, f64);
const cube = (x: Tensor) => A.sum(A.mul(A.mul(x, x), x));
type F = (x: Tensor) => Tensor;

describe('nested reverse mode', () => {
  it('grad(x => sum(grad(f)(x))) with f = Σx³ at x = 2 gives 12', () => {
    A.tidy(() => {
      const g = A.grad((x: Tensor) => A.sum(A.grad(cube)(x) as Tensor)) as F;
      expect(arr(g(t([2])))).toEqual([12]);
      expect(arr(g(t([2, -1, 0.5])))).toEqual([12, -6, 3]);
    });
  });

  it('jacrev(grad(f)) and jacfwd(grad(f)) give the Hessian diag(6x)', () => {
    A.tidy(() => {
      const x = t([1, 2, -3]);
      const want = [6, 0, 0, 0, 12, 0, 0, 0, -18];
      close(A.jacrev(A.grad(cube) as F)(x).toArray(), want, 0);
      close(A.jacfwd(A.grad(cube) as F)(x).toArray(), want, 0);
      close(A.hessian(cube)(x).toArray(), want, 0);
    });
  });

  it('third derivatives of smooth compositions match closed forms, by every mix', () => {
    A.tidy(() => {
      const xs = [-1.3, -0.4, 0.2, 0.9, 1.7];
      const cases: [string, F, (v: number) => number][] = [
        ['sin', (x) => A.sum(A.sin(x)), (v) => -Math.cos(v)],
        ['exp(2x)', (x) => A.sum(A.exp(A.mul(x, 2))), (v) => 8 * Math.exp(2 * v)],
        ['log(1 + x²)', (x) => A.sum(A.log(A.add(A.square(x), 1))), (v) => (4 * v * (v * v - 3)) / (1 + v * v) ** 3],
        [
          'tanh',
          (x) => A.sum(A.tanh(x)),
          (v) => {
            const y = Math.tanh(v);
            return -2 * (1 - y * y) * (1 - 3 * y * y);
          },
        ],
        [
          'sigmoid',
          (x) => A.sum(A.sigmoid(x)),
          (v) => {
            const s = 1 / (1 + Math.exp(-v));
            return s * (1 - s) * (1 - 6 * s + 6 * s * s);
          },
        ],
      ];
      for (const [name, f, d3] of cases) {
        const x = t(xs),
          want = xs.map(d3);
        const g1 = A.grad(f) as F;
        const g2 = A.grad((y: Tensor) => A.sum(g1(y))) as F;
        const g3 = A.grad((y: Tensor) => A.sum(g2(y))) as F;
        close(g3(x).toArray(), want, 1e-12);
        // jvp of grad∘grad, and the diagonal of jacfwd(jacrev(grad)) summed over one axis
        close(A.jvp(g2, [x], [A.ones([5], f64)])[1].toArray(), want, 1e-12);
        const T = A.jacfwd(A.jacrev(g1))(x); // [5, 5, 5], diagonal
        close(
          Array.from({ length: 5 }, (_, i) => T.toArray()[i * 31]),
          want,
          1e-12,
        );
        expect(name).toBeTruthy();
      }
    });
  });

  it('no perturbation confusion: d/dx [x · d/dy (x·y)] = 2x and d/dx [x · d/dy (x + y)] = 1', () => {
    A.tidy(() => {
      const c = t(3);
      const g1 = A.grad((x: Tensor) => A.mul(x, A.grad((y: Tensor) => A.mul(x, y))(c) as Tensor)) as F;
      expect(g1(t(2.5)).item()).toBe(5);
      const g2 = A.grad((x: Tensor) => A.mul(x, A.grad((y: Tensor) => A.add(x, y))(c) as Tensor)) as F;
      expect(g2(t(2.5)).item()).toBe(1);
      // the forward-mode form of the classic test (Siskind and Pearlmutter): jvp inside jvp
      const d = A.jvp((x: Tensor) => A.mul(x, A.jvp((y: Tensor) => A.add(x, y), [c], [t(1)])[1]), [t(2.5)], [t(1)])[1];
      expect(d.item()).toBe(1);
    });
  });

  it('hessian agrees forward-over-reverse vs reverse-over-reverse (matmul, tanh, softmax, logsumexp)', () => {
    A.tidy(() => {
      const W = t([
        [0.3, -0.2, 0.5],
        [0.1, 0.4, -0.6],
      ]);
      const f = (x: Tensor) => A.add(A.logsumexp(A.matmul(W, A.tanh(x))), A.sum(A.mul(A.softmax(x), x)));
      const x = t([0.2, -0.7, 1.1]);
      const fwd = A.hessian(f)(x).toArray();
      const rev = A.jacrev(A.grad(f) as F)(x).toArray();
      close(fwd, rev, 1e-13);
      close(
        fwd,
        Array.from(fwd).map((_, k) => fwd[(k % 3) * 3 + Math.floor(k / 3)]),
        1e-13,
      ); // symmetric
    });
  });

  it('grad of a function that calls jvp (reverse over forward), also through tangents', () => {
    A.tidy(() => {
      const x = t([0.5, -1]),
        v = t([1, 2]);
      // d/dx Σ exp(x)·v = exp(x)·v
      const gx = A.grad((y: Tensor) => A.sum(A.jvp((z: Tensor) => A.exp(z), [y], [v])[1]))(x) as Tensor;
      close(gx.toArray(), [Math.exp(0.5), 2 * Math.exp(-1)]);
      // d/dv Σ (J v) = Σ_i J_i· = exp(x)
      const gv = A.grad((u: Tensor) => A.sum(A.jvp((z: Tensor) => A.exp(z), [x], [u])[1]))(v) as Tensor;
      close(gv.toArray(), [Math.exp(0.5), Math.exp(-1)]);
    });
  });

  it('nested forward mode: jvp of jvp and jacfwd of jacfwd are right', () => {
    A.tidy(() => {
      const d2 = A.jvp((x: Tensor) => A.jvp((z: Tensor) => A.sin(z), [x], [t([1])])[1], [t([0.3])], [t([1])])[1];
      close(d2.toArray(), [-Math.sin(0.3)]);
      close(A.jacfwd(A.jacfwd(cube))(t([1, 2])).toArray(), [6, 0, 0, 12], 0);
      const d3 = A.jvp(
        (x: Tensor) => A.jvp((y: Tensor) => A.jvp((z: Tensor) => A.exp(A.mul(z, 2)), [y], [t([1])])[1], [x], [t([1])])[1],
        [t([0.1])],
        [t([1])],
      )[1];
      close(d3.toArray(), [8 * Math.exp(0.2)]);
    });
  });

  it('vjp of vjp: the cotangent map differentiated again', () => {
    A.tidy(() => {
      const x = t([0.4, -0.9]),
        ct = t([1.5, -2]),
        u = t([0.3, 0.7]);
      const f = (z: Tensor) => A.mul(A.sin(z), A.sum(A.square(z)));
      // vjp wrt the cotangent: ct ↦ Jᵀct is linear, its transpose applied to u is J·u
      const [, back2] = A.vjp((c: Tensor) => A.vjp(f, x)[1](c)[0], ct);
      const Ju = back2(u)[0];
      close(Ju.toArray(), A.jvp(f, [x], [u])[1].toArray(), 1e-14);
      // vjp wrt x of x ↦ Jᵀ(x)·ct, applied to u: the Hessian-of-⟨f, ct⟩ product H·u
      const [, backX] = A.vjp((z: Tensor) => A.vjp(f, z)[1](ct)[0], x);
      const Hu = backX(u)[0];
      close(Hu.toArray(), A.hvp((z: Tensor) => A.sum(A.mul(f(z), ct)), x, u).toArray(), 1e-13);
      back2.release();
      backX.release();
    });
  });

  it('fused gradient primitives differentiate again (dense, cross-entropy, layerNorm, sigmoid)', () => {
    A.tidy(() => {
      const lin = new A.nn.Linear(3, 4, { seed: 1, dtype: 'float64' });
      const x = t([
        [0.2, -0.5, 1],
        [0.7, 0.1, -0.3],
      ]);
      const loss = (z: Tensor) => A.crossEntropy(A.layerNorm(A.sigmoid(lin.forwardAct(z, 'tanh'))), [1, 3]);
      const H = A.hessian(loss)(x).toArray();
      const H2 = A.jacrev(A.grad(loss) as F)(x).toArray();
      close(H, H2, 1e-12);
      expect(Math.max(...Array.from(H).map(Math.abs))).toBeGreaterThan(1e-3);
      for (const p of lin.parameters()) expect(p.grad).toBe(null);
      lin.dispose();
    });
  });
});

describe('through checkpoint and customVjp', () => {
  it('second derivatives through a checkpointed segment equal the plain ones (both orders)', () => {
    A.tidy(() => {
      const W = A.tensor(
        [
          [0.4, -0.2],
          [0.3, 0.9],
        ],
        { ...f64, requiresGrad: true },
      );
      const seg = (h: Tensor) => A.tanh(A.matmul(A.sin(h), W));
      const plain = (x: Tensor) => A.sum(A.exp(seg(A.mul(x, 0.7))));
      const ck = (x: Tensor) => A.sum(A.exp(A.checkpoint(seg)(A.mul(x, 0.7))));
      const x = t([
        [0.3, -0.5],
        [1.1, 0.2],
      ]);
      close(A.hessian(ck)(x).toArray(), A.hessian(plain)(x).toArray(), 1e-14);
      close(A.jacrev(A.grad(ck) as F)(x).toArray(), A.jacrev(A.grad(plain) as F)(x).toArray(), 1e-14);
      // the parameters' gradient of a gradient norm, through the checkpoint
      const once = (f: F) => {
        const g = A.grad(f)(x) as Tensor;
        A.sum(A.square(g)).backward();
        const r = arr(W.grad!);
        W.grad!.dispose();
        W.grad = null;
        return r;
      };
      close(once(ck), once(plain), 1e-14);
    });
  });

  it('a customVjp whose backward is written with ops differentiates again', () => {
    A.tidy(() => {
      const mySin = A.customVjp(
        (x: Tensor) => A.sin(x),
        (g, [x]) => [A.mul(g, A.cos(x))],
      );
      const x = t([0.2, 1.3]);
      close(A.jacrev(A.grad((z: Tensor) => A.sum(mySin(z))) as F)(x).toArray(), [-Math.sin(0.2), 0, 0, -Math.sin(1.3)], 1e-15);
      expect(() => A.hessian((z: Tensor) => A.sum(mySin(z)))(x)).toThrow(/forward mode \(jvp\) is not defined/); // no JVP given: a clear error
      close(
        (A.grad((z: Tensor) => A.sum(A.grad((u: Tensor) => A.sum(mySin(u)))(z) as Tensor))(x) as Tensor).toArray(),
        [-Math.sin(0.2), -Math.sin(1.3)],
        1e-15,
      );
    });
  });
});

describe('PyTorch style', () => {
  it('backward with createGraph: the .grad is differentiable again', () => {
    A.tidy(() => {
      const x = A.tensor([2, -1], { ...f64, requiresGrad: true });
      cube(x).backward(undefined, { createGraph: true });
      const g = x.grad!;
      expect(arr(g)).toEqual([12, 3]);
      expect(g.requiresGrad).toBe(true);
      x.grad = null;
      A.sum(g).backward();
      expect(arr(x.grad!)).toEqual([12, -6]);
      g.dispose();
    });
  });

  it('backward with inputs writes only those leaves', () => {
    A.tidy(() => {
      const a = A.tensor([1, 2], { ...f64, requiresGrad: true }),
        b = A.tensor([3, 4], { ...f64, requiresGrad: true });
      A.sum(A.mul(a, b)).backward(undefined, { inputs: [a] });
      expect(arr(a.grad!)).toEqual([3, 4]);
      expect(b.grad).toBe(null);
      expect(() => A.sum(a).backward(undefined, { inputs: [A.mul(a, 2)] })).toThrow(A.GradError);
      expect(() => A.sum(a).backward(undefined, { createGraph: 1 as never })).toThrow(A.ArgumentError);
      expect(() => A.sum(a).backward(undefined, { retain: true } as never)).toThrow(/unknown option "retain"/);
    });
  });

  it('autograd.grad: gradients handed back, .grad untouched; createGraph, gradOutputs, intermediate inputs, allowUnused', () => {
    A.tidy(() => {
      const x = A.tensor([2, -1], { ...f64, requiresGrad: true });
      const w = A.tensor([0.5], { ...f64, requiresGrad: true });
      const h = A.square(x);
      const y = A.sum(A.mul(h, x));
      const [gx] = A.autograd.grad(y, x, { createGraph: true });
      expect(arr(gx!)).toEqual([12, 3]);
      expect(x.grad).toBe(null);
      const [hxx] = A.autograd.grad(A.sum(gx!), [x], { retainGraph: true });
      expect(arr(hxx!)).toEqual([12, -6]);
      const [gh] = A.autograd.grad(y, [h], { retainGraph: true });
      expect(arr(gh!)).toEqual([2, -1]);
      const [gs] = A.autograd.grad([h], [x], { gradOutputs: [t([1, 10])], retainGraph: true });
      expect(arr(gs!)).toEqual([4, -20]);
      expect(() => A.autograd.grad(y, [x, w], { retainGraph: true })).toThrow(/allowUnused/);
      const r = A.autograd.grad(y, [x, w], { allowUnused: true });
      expect(r[1]).toBe(null);
      expect(() => A.autograd.grad(y, [x])).toThrow(/already released/);
    });
  });

  it('autograd.grad and backward() inside an outer transform are differentiated through, without createGraph', () => {
    A.tidy(() => {
      // d/dx Σ ∂(Σx³)/∂x = Σ 6x: the inner call records because grad differentiates through it.
      const viaAutograd = (x: Tensor) => A.sum(A.autograd.grad(cube(x), x)[0]!);
      const viaBackward = (x: Tensor) => {
        cube(x).backward();
        return A.sum(x.grad!);
      };
      for (const inner of [viaAutograd, viaBackward]) {
        expect(arr(A.grad(inner)(t([2, -1])) as Tensor)).toEqual([12, -6]);
        expect(arr(A.jacrev(inner)(t([2, -1])))).toEqual([12, -6]);
        const [, vjpFn] = A.vjp(inner, t([0.5]));
        expect(arr(vjpFn(t(1))[0])).toEqual([3]);
        vjpFn.release();
      }
      // Forward over it: the tangent flows through the inner sweep.
      const xr = A.tensor([2], { ...f64, requiresGrad: true });
      expect(arr(A.jvp(viaAutograd, [xr], [t([1])])[1])).toEqual([12]);
      // Top level is unchanged: the first-order gradient is a constant and the graph is released.
      const x = A.tensor([2, -1], { ...f64, requiresGrad: true });
      const y = cube(x);
      const [g] = A.autograd.grad(y, x);
      expect(arr(g!)).toEqual([12, 3]);
      expect(g!.requiresGrad).toBe(false);
      expect(() => A.autograd.grad(y, x)).toThrow(/already released/);
      const z = cube(x);
      z.backward();
      expect(arr(x.grad!)).toEqual([12, 3]);
      expect(x.grad!.requiresGrad).toBe(false);
      expect(() => z.backward()).toThrow(/already released/);
    });
  });

  it('backward() on a gradient computed without createGraph names the way out', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2], { ...f64, requiresGrad: true });
      const g = A.grad(cube)(x) as Tensor;
      expect(() => A.sum(g).backward()).toThrow(/does not require grad/);
      expect(() => g.backward(t([1, 1]))).toThrow(/createGraph/);
      const [g2] = A.autograd.grad(cube(x), [x]);
      expect(() => g2!.backward(t([1, 1]))).toThrow(/nest the transforms/);
    });
  });
});
