// Orders of composition that once threw or returned zeros: vmap of a compiled function (every call
// after the first threw), grad of vmap of a checkpointed function (threw, then zeros in a first
// fix), and forward mode through conv2d under vmap (jacfwd and hessian of any conv net threw).
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';

await A.init();
type F = (x: Tensor) => Tensor;
const X = () =>
  A.tensor(
    [
      [0.1, 0.2, 0.3],
      [0.4, -0.5, 0.6],
    ],
    f64,
  );

describe('vmap(compile(f))', () => {
  it('gives vmap(f) on every call, eagerly (nothing is traced under vmap)', () => {
    const f = (x: Tensor) => A.sum(A.sin(x));
    const cf = A.compile(f);
    const want = arr(A.vmap(f)(X()));
    for (let i = 0; i < 4; i++) expect(arr(A.vmap(cf)(X()))).toEqual(want);
    expect(cf.stats.traced).toBe(0);
    expect(cf.stats.eager).toBe(4);
  });

  it('compile(vmap(f)) still compiles and agrees', () => {
    const f = (x: Tensor) => A.sum(A.sin(x));
    const cv = A.compile(A.vmap(f));
    const want = arr(A.vmap(f)(X()));
    for (let i = 0; i < 4; i++) expect(arr(cv(X()))).toEqual(want);
    expect(cv.stats.replayed).toBeGreaterThan(0);
  });
});

describe('checkpoint under vmap', () => {
  const f = (x: Tensor) => A.sum(A.checkpoint((y: Tensor) => A.sin(y))(x));
  it('grad(X => sum(vmap(f)(X))) is cos X, as vmap(grad(f))', () => {
    const want = arr(A.cos(X()));
    close(arr(A.grad((x: Tensor) => A.sum(A.vmap(f)(x)))(X()) as Tensor), want, 1e-15);
    close(arr(A.vmap(A.grad(f) as F)(X())), want, 1e-15);
  });

  it('with a parameter read through the closure', () => {
    const w = A.tensor([1.5, -2, 0.5], f64);
    const g = (x: Tensor) => A.sum(A.checkpoint((y: Tensor) => A.tanh(A.mul(y, w)))(x));
    const gw = A.grad((v: Tensor) => A.sum(A.vmap((x: Tensor) => A.sum(A.checkpoint((y: Tensor) => A.tanh(A.mul(y, v)))(x)))(X())))(
      w,
    ) as Tensor;
    const plain = A.grad((v: Tensor) => A.sum(A.tanh(A.mul(X(), v))))(w) as Tensor;
    close(arr(gw), arr(plain), 1e-15);
    expect(arr(A.vmap(g)(X())).length).toBe(2);
  });
});

describe('forward mode through conv2d under vmap', () => {
  const x = () =>
    A.tensor(
      [
        [
          [
            [1, 2],
            [3, 4],
          ],
        ],
      ],
      f64,
    );
  const w = A.tensor(
    [
      [
        [
          [0.5, -1],
          [2, 0.25],
        ],
      ],
    ],
    f64,
  );
  it('jacfwd(conv2d) is the filter, as jacrev', () => {
    const f = (z: Tensor) => A.conv2d(z, w);
    expect(arr(A.jacfwd(f)(x()))).toEqual([0.5, -1, 2, 0.25]);
    expect(arr(A.jacrev(f)(x()))).toEqual([0.5, -1, 2, 0.25]);
    expect(arr(A.vmap((t: Tensor) => A.jvp(f, [x()], [t])[1])(A.ones([3, 1, 1, 2, 2], f64)))).toEqual([1.75, 1.75, 1.75]);
  });

  it('Hessians of a strided, padded conv net agree both ways, in the input and in the filter', () => {
    const x2 = A.randn([2, 2, 5, 5], { seed: 1, dtype: 'float64' }),
      w2 = A.randn([3, 2, 3, 3], { seed: 2, dtype: 'float64' });
    const inW = (v: Tensor) => A.sum(A.tanh(A.conv2d(x2, v, { stride: 2, padding: 1 })));
    const inX = (v: Tensor) => A.sum(A.tanh(A.conv2d(v, w2, { stride: 2, padding: 1 })));
    for (const [f, at] of [
      [inW, w2],
      [inX, x2],
    ] as const) {
      const fwd = arr(A.hessian(f)(at)),
        rev = arr(A.jacrev(A.grad(f) as F)(at));
      expect(fwd.length).toBe(at.size * at.size);
      close(fwd, rev, 1e-12);
    }
  });
});

describe('functionalCall on recurrent modules', () => {
  // The layers held their weight tensors, so the params given were ignored: the module's own
  // weights ran and the gradient in the params was zero.
  type Fwd = (...a: unknown[]) => unknown;
  const x = A.randn([5, 2, 3], { seed: 11, dtype: 'float64' });
  const x1 = A.randn([2, 3], { seed: 13, dtype: 'float64' });
  const h0 = A.randn([2, 4], { seed: 12, dtype: 'float64' });
  const cases: [string, () => A.nn.Module<unknown>, (f: Fwd) => Tensor][] = [
    ['LSTM', () => new A.nn.LSTM(3, 4, { numLayers: 2, seed: 1, ...f64 }), (f) => (f(x) as [Tensor, unknown])[0]],
    ['GRU', () => new A.nn.GRU(3, 4, { numLayers: 2, seed: 1, ...f64 }), (f) => (f(x) as [Tensor, unknown])[0]],
    ['LSTMCell', () => new A.nn.LSTMCell(3, 4, { seed: 1, ...f64 }), (f) => (f(x1, [h0, h0]) as [Tensor, Tensor])[0]],
    ['GRUCell', () => new A.nn.GRUCell(3, 4, { seed: 1, ...f64 }), (f) => f(x1, h0) as Tensor],
  ];
  for (const [name, make, run] of cases) {
    it(`${name}: the given params run, and the gradient reaches them (as in a module holding them)`, () => {
      const m = make(),
        other = make();
      const params: Record<string, Tensor> = {};
      let seed = 20;
      for (const [k, p] of m.namedParameters()) params[k] = A.mul(A.randn(p.shape as number[], { seed: seed++, dtype: 'float64' }), 0.3);
      other.loadStateDict(params);
      const own: Fwd = (...a) => (other.forward as Fwd)(...a);
      const called =
        (p: Record<string, Tensor>): Fwd =>
        (...a) =>
          A.functionalCall(m, p, ...a);
      expect(arr(run(called(params)))).toEqual(arr(run(own)));
      expect(arr(run(called(params)))).not.toEqual(arr(run((...a) => (m.forward as Fwd)(...a))));
      const g = A.grad((p: Record<string, Tensor>) => A.sum(A.tanh(run(called(p)))))(params) as Record<string, Tensor>;
      A.sum(A.tanh(run(own))).backward();
      for (const [k, p] of other.namedParameters()) close(arr(g[k]), arr(p.grad!), 1e-13);
      m.dispose();
      other.dispose();
    });
  }
});

describe('compile() and requiresGrad changed between calls', () => {
  // Which parameters get a gradient is fixed in a traced schedule; freezing a layer after the
  // trace was ignored (it kept training), and unfreezing one never took effect.
  function train(compiled: boolean, change: (ws: Tensor[]) => void, at: number, start?: (ws: Tensor[]) => void): number[][] {
    const model = new A.nn.Sequential(new A.nn.Linear(16, 32, { seed: 1 }), new A.nn.ReLU(), new A.nn.Linear(32, 4, { seed: 2 }));
    start?.(model.parameters());
    const opt = new A.optim.SGD(model.parameters(), { lr: 0.1 });
    const f = (x: Tensor, y: Int32Array) => {
      const l = A.crossEntropy(model.forward(x) as Tensor, y);
      l.backward();
      opt.step();
      opt.zeroGrad();
      return l;
    };
    const g = compiled ? A.compile(f) : (x: Tensor, y: Int32Array) => A.tidy(() => f(x, y));
    for (let i = 0; i < 8; i++) {
      if (i === at) change(model.parameters());
      g(
        A.randn([8, 16], { seed: 300 + i }),
        Int32Array.from({ length: 8 }, (_, j) => (i + j) % 4),
      ).dispose();
    }
    const ws = model.parameters().map((p) => arr(p));
    model.dispose();
    return ws;
  }

  it('freezing a layer after the trace stops its updates, bit for bit as eager', () => {
    const freeze = (ws: Tensor[]) => {
      ws[0].requiresGrad = false;
    };
    expect(train(true, freeze, 5)).toEqual(train(false, freeze, 5));
  });

  it('unfreezing one starts them, bit for bit as eager', () => {
    const frozen = (ws: Tensor[]) => {
      ws[0].requiresGrad = false;
    };
    const thaw = (ws: Tensor[]) => {
      ws[0].requiresGrad = true;
    };
    const eager = train(false, thaw, 5, frozen),
      compiled = train(true, thaw, 5, frozen);
    expect(compiled).toEqual(eager);
    const first = train(false, () => {}, 8, frozen)[0];
    expect(eager[0]).not.toEqual(first); // the thaw did change the layer
  });
});

describe('forward mode leaves nothing behind', () => {
  // Under vmap a saved tangent's tape led back to the node that saved it, a cycle that counting
  // never freed: jacfwd and hessian of a requiresGrad input, and jacfwd of jacfwd, kept 5 tensors a call.
  it('jacfwd, hessian and jacfwd(jacfwd) inside tidy free every tensor', () => {
    const xr = A.tensor([0.1, 0.2, 0.3], { dtype: 'float64', requiresGrad: true });
    const xc = A.tensor([0.1, 0.2, 0.3], f64);
    for (const f of [
      () => A.jacfwd(A.tanh as F)(xr),
      () => A.hessian((v: Tensor) => A.sum(A.tanh(v)))(xr),
      () => A.jacfwd(A.jacfwd(A.tanh as F) as F)(xc),
    ]) {
      A.tidy(() => void f()); // warm (caches, the pool of argument blocks)
      const before = A.memory().tensors;
      for (let i = 0; i < 20; i++) A.tidy(() => void f());
      expect(A.memory().tensors).toBe(before);
    }
    // and the values are unchanged by freeing the saved tangents at jvp's end
    const h = arr(A.hessian((v: Tensor) => A.sum(A.tanh(v)))(xr));
    const t = [0.1, 0.2, 0.3].map((v) => -2 * Math.tanh(v) * (1 - Math.tanh(v) ** 2));
    close(h, [t[0], 0, 0, 0, t[1], 0, 0, 0, t[2]], 1e-15);
  });
});

describe('grad of a function that calls hvp (reverse over forward over reverse)', () => {
  const x = () => A.tensor([0.5, -0.3, 1.2], f64);
  const v = () => A.tensor([1, 1, 1], f64);
  // The VJPs of exp, tanh, logSoftmax (and every op that saves its output) read the output's
  // tangent; the outer grad saw it as a constant and gave zeros or wrong values.
  it('exp and tanh: the closed forms, through hvp and through jvp(grad(f))', () => {
    const e = arr(A.grad((z: Tensor) => A.sum(A.hvp((w: Tensor) => A.sum(A.exp(w)), z, v())))(x()));
    close(e, [0.5, -0.3, 1.2].map(Math.exp), 1e-15);
    const viaJvp = A.grad((z: Tensor) => A.sum(A.jvp(A.grad((w: Tensor) => A.sum(A.exp(w))) as F, [z], [v()])[1]))(x());
    close(arr(viaJvp), e, 0);
    const t3 = (t: number) => -2 * (1 - Math.tanh(t) ** 2) * (1 - 3 * Math.tanh(t) ** 2); // tanh'''
    close(arr(A.grad((z: Tensor) => A.sum(A.hvp((w: Tensor) => A.sum(A.tanh(w)), z, v())))(x())), [0.5, -0.3, 1.2].map(t3), 1e-14);
  });
  it('logSoftmax is shift-invariant, so H·1 = 0 and its gradient is 0; sigmoid and attention agree with grad(grad(grad))', () => {
    const ls = (z: Tensor) => A.sum(A.square(A.logSoftmax(z)));
    close(arr(A.grad((z: Tensor) => A.sum(A.hvp(ls, z, v())))(x())), [0, 0, 0], 1e-14);
    const w = A.tensor([0.3, -0.7, 0.2], f64);
    for (const f of [
      (z: Tensor) => A.sum(A.mul(A.sigmoid(z), w)),
      (z: Tensor) =>
        A.sum(
          A.mul(
            A.scaledDotProductAttention(A.reshape(z, [3, 1]), A.reshape(z, [3, 1]), A.reshape(A.exp(z), [3, 1]), { causal: true }),
            A.reshape(w, [3, 1]),
          ),
        ),
    ]) {
      const viaHvp = arr(A.grad((z: Tensor) => A.sum(A.hvp(f, z, v())))(x()));
      const viaGrads = arr(A.grad((z: Tensor) => A.sum(A.grad((y: Tensor) => A.sum(A.grad(f)(y)))(z)))(x()));
      close(viaHvp, viaGrads, 1e-13);
    }
  });
});
