// Per-example gradient norms without per-example gradients (optim.perExampleGradNorms, and
// dpGradients' 'ghost' method) against the materialised path: each example's own gradient from
// vmap(grad(loss)) over functionalCall, its norm summed over every parameter. Rank-1 inputs use
// ‖δ‖²‖a‖²; inputs with a sequence axis use the Gram form. Held to float64 rounding (1e-12) and
// float32 rounding (1e-5); the DP-SGD gradients of both methods agree to the same bounds.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';

beforeAll(() => A.init());

const TOL: Record<string, number> = { float32: 1e-5, float64: 1e-12 };

/** max |a − b| / max |b| over the elements. */
function relDiff(a: Tensor, b: Tensor): number {
  const u = a.toArray(),
    v = b.toArray();
  expect(u.length).toBe(v.length);
  let d = 0,
    m = 0;
  for (let i = 0; i < u.length; i++) (d = Math.max(d, Math.abs(u[i] - v[i]))), (m = Math.max(m, Math.abs(v[i])));
  return d / m;
}

function oneHot(labels: Int32Array, classes: number, dtype: DType, mid: number[]): Tensor {
  const v = new Array<number>(labels.length * classes).fill(0);
  labels.forEach((l, i) => (v[i * classes + l] = 1));
  return A.tensor(v, { shape: [labels.length, ...mid.map(() => 1), classes], dtype });
}

/** Every example's gradient norm from materialised per-example gradients (vmap over examples kept with a batch axis of 1). */
function vmapNorms(m: A.nn.Module, x: Tensor, labels: Int32Array, classes: number): Tensor {
  const params = Object.fromEntries(m.namedParameters());
  const N = x.shape[0],
    mid = x.shape.slice(1, -1);
  const xs = A.reshape(x, [N, 1, ...x.shape.slice(1)]);
  const y = A.reshape(oneHot(labels, classes, x.dtype, mid), [N, 1, ...mid.map(() => 1), classes]);
  const loss = (p: Record<string, Tensor>, xi: Tensor, yi: Tensor) => A.neg(A.sum(A.mul(A.logSoftmax(A.functionalCall(m, p, xi)), yi)));
  const g = A.vmap(A.grad(loss), { inAxes: [null, 0, 0] })(params, xs, y) as unknown as Record<string, Tensor>;
  return A.sqrt(
    Object.values(g)
      .map((t) => A.sum(A.reshape(A.square(t), [N, t.size / N]), 1))
      .reduce((a, b) => A.add(a, b)),
  );
}

const mlp = (dtype: DType) =>
  new A.nn.Sequential(
    new A.nn.Linear(7, 6, { seed: 1, dtype }),
    new A.nn.ReLU(),
    new A.nn.Linear(6, 5, { seed: 2, dtype, bias: false }),
    new A.nn.Tanh(),
    new A.nn.Linear(5, 4, { seed: 3, dtype }),
  );
const labels = Int32Array.from([0, 3, 1, 2, 3, 0]);

describe('perExampleGradNorms', () => {
  it.each(['float64', 'float32'] as const)('one row per example (‖δ‖²‖a‖²) equals the vmap(grad) norms (%s)', (dtype) => {
    A.tidy(() => {
      const m = mlp(dtype),
        x = A.randn([6, 7], { seed: 4, dtype });
      const ghost = A.optim.perExampleGradNorms(m, x, labels, 4);
      expect(ghost.shape).toEqual([6]);
      expect(relDiff(ghost, vmapNorms(m, x, labels, 4))).toBeLessThanOrEqual(TOL[dtype]);
      // Different examples have different norms: the comparison is not of constants.
      const v = ghost.toArray();
      expect(Math.max(...v) - Math.min(...v)).toBeGreaterThan(1e-3);
    });
  });
  it.each(['float64', 'float32'] as const)('a sequence axis per example (the Gram form) equals the vmap(grad) norms (%s)', (dtype) => {
    A.tidy(() => {
      const m = mlp(dtype),
        x = A.randn([6, 3, 7], { seed: 5, dtype });
      expect(relDiff(A.optim.perExampleGradNorms(m, x, labels, 4), vmapNorms(m, x, labels, 4))).toBeLessThanOrEqual(TOL[dtype]);
    });
  });
  it('works under noGrad and leaves no tensor behind and no patched layer', () => {
    const m = mlp('float64'),
      x = A.keep(A.randn([6, 7], { seed: 4, dtype: 'float64' }));
    const want = A.tidy(() => A.optim.perExampleGradNorms(m, x, labels, 4).toArray());
    const before = A.memory().tensors;
    const got = A.tidy(() => A.noGrad(() => A.optim.perExampleGradNorms(m, x, labels, 4).toArray()));
    expect(Array.from(got)).toEqual(Array.from(want));
    expect(A.memory().tensors).toBe(before);
    for (const l of m.layers) expect(Object.hasOwn(l, 'forwardAct')).toBe(false);
  });
  it('refuses a model with a parameter outside an nn.Linear, and bad labels', () => {
    A.tidy(() => {
      const m = new A.nn.Sequential(new A.nn.Linear(7, 4, { seed: 1 }), new A.nn.LayerNorm(4));
      const x = A.randn([6, 7], { seed: 4 });
      expect(() => A.optim.perExampleGradNorms(m, x, labels, 4)).toThrow(A.ArgumentError);
      expect(() => A.optim.perExampleGradNorms(m, x, labels, 4)).toThrow(/1\.weight is not/);
      expect(() => A.optim.perExampleGradNorms(mlp('float32'), x, Int32Array.from([0, 1, 2, 3, 4, 0]), 4)).toThrow(/labels\[4\] = 4/);
      // A checkpoint plan re-runs the forward in the backward pass, where the layers cannot be tapped.
      const ck = new A.nn.Sequential(new A.nn.Linear(7, 6, { seed: 1 }), new A.nn.ReLU(), new A.nn.Linear(6, 4, { seed: 2 }), {
        checkpoint: 2,
      });
      expect(() => A.optim.perExampleGradNorms(ck, x, labels, 4)).toThrow(/runs under a checkpoint plan/);
      // A layer whose output never reaches the loss (detached): an error, not a norm of 0.
      class Cut extends A.nn.Module {
        readonly a = this.registerModule('a', new A.nn.Linear(7, 4, { seed: 1 }));
        forward(v: Tensor): Tensor {
          return A.detach(this.a.forward(v));
        }
      }
      expect(() => A.optim.perExampleGradNorms(new Cut(), x, labels, 4)).toThrow(/no gradient reaches the output of layer a/);
    });
  });
});

describe("dpGradients' ghost method", () => {
  it.each([
    ['float64', [8, 7]],
    ['float64', [8, 2, 7]],
    ['float32', [8, 7]],
  ] as const)('gives the same DP-SGD gradients as the vmap method (%s, x %j)', (dtype, shape) => {
    A.tidy(() => {
      const m = mlp(dtype),
        x = A.randn([...shape], { seed: 9, dtype }),
        lab = Int32Array.from([0, 3, 1, 2, 3, 0, 1, 1]);
      // The clip between the smallest and largest norm clips some examples but not all; noise on: both methods draw the same noise.
      const norms = Array.from(A.optim.perExampleGradNorms(m, x, lab, 4).toArray()).sort((a, b) => a - b);
      const clip = (norms[3] + norms[4]) / 2;
      expect(norms[0]).toBeLessThan(0.9 * norms[7]);
      const run = (method: 'ghost' | 'vmap') => {
        const loss = A.optim.dpGradients(m, x, lab, 4, { clip, noise: 0.3, seed: 2, method });
        return [loss, m.parameters().map((p) => A.tensor(p.grad!.toArray(), { shape: p.shape, dtype }))] as const;
      };
      const [lg, gg] = run('ghost'),
        [lv, gv] = run('vmap');
      expect(Math.abs(lg - lv)).toBeLessThanOrEqual(TOL[dtype] * Math.abs(lv));
      gg.forEach((g, i) => expect(relDiff(g, gv[i])).toBeLessThanOrEqual(TOL[dtype]));
      expect(() => A.optim.dpGradients(m, x, lab, 4, { clip: 1, noise: 0, seed: 1, method: 'fast' as 'ghost' })).toThrow(
        /method must be one of/,
      );
      for (const p of m.parameters()) p.grad?.dispose(), (p.grad = null);
    });
  });
  it("'auto' falls back to vmap for a model the ghost method cannot take, and trains the same as before there", () => {
    A.tidy(() => {
      const m = new A.nn.Sequential(new A.nn.Linear(7, 4, { seed: 1, dtype: 'float64' }), new A.nn.LayerNorm(4, { dtype: 'float64' }));
      const x = A.randn([6, 7], { seed: 4, dtype: 'float64' });
      A.optim.dpGradients(m, x, labels, 4, { clip: 0.5, noise: 0, seed: 1 });
      const auto = m.parameters().map((p) => Array.from(p.grad!.toArray()));
      A.optim.dpGradients(m, x, labels, 4, { clip: 0.5, noise: 0, seed: 1, method: 'vmap' });
      m.parameters().forEach((p, i) => expect(Array.from(p.grad!.toArray())).toEqual(auto[i]));
      expect(() => A.optim.dpGradients(m, x, labels, 4, { clip: 0.5, noise: 0, seed: 1, method: 'ghost' })).toThrow(/1\.weight is not/);
    });
  });
});

describe('frozen parameters (requiresGrad false)', () => {
  // They get no gradient from backward(), so they add nothing to a per-example norm and DP-SGD
  // leaves their .grad alone (they counted in the norms and got a noisy .grad that SGD applied).
  it('count in neither the ghost nor the vmap norms, and get no .grad', () => {
    const x = A.randn([3, 4], { seed: 1, dtype: 'float64' });
    const y = new Int32Array([0, 1, 2]);
    const model = new A.nn.Sequential(
      new A.nn.Linear(4, 5, { seed: 1, dtype: 'float64' }),
      new A.nn.ReLU(),
      new A.nn.Linear(5, 3, { seed: 2, dtype: 'float64' }),
    );
    const frozen = (model.layers[0] as A.nn.Linear).weight;
    frozen.requiresGrad = false;
    const named = model.namedParameters();
    const want = [0, 1, 2].map((i) => {
      const train = Object.fromEntries(named.filter(([k]) => k !== '0.weight'));
      const g = A.grad((p: Record<string, A.Tensor>) =>
        A.crossEntropy(A.functionalCall(model, p, A.slice(x, [i, 0], [1, 4])) as A.Tensor, [y[i]]),
      )(train) as Record<string, A.Tensor>;
      return Math.sqrt(Object.values(g).reduce((s, t) => s + A.sum(A.square(t)).item(), 0));
    });
    const norms = Array.from(A.optim.perExampleGradNorms(model, x, y, 3).toArray());
    norms.forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThan(1e-14));
    for (const method of ['ghost', 'vmap'] as const) {
      for (const p of model.parameters()) p.grad = null;
      A.optim.dpGradients(model, x, y, 3, { clip: 1, noise: 0.5, seed: 1, method });
      expect(frozen.grad, method).toBeNull();
      expect((model.layers[2] as A.nn.Linear).weight.grad, method).not.toBeNull();
    }
  });
});
