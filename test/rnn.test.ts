// nn.LSTM, nn.GRU, nn.LSTMCell, nn.GRUCell: PyTorch parity (fixtures in test/fixtures/torch:
// outputs, input and parameter gradients, f64 to 1e-10, f32 to 1e-5), a float64 JS reference
// of the recurrences, gradcheck through time, PyTorch's names and init, and bad input.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { hasFixture, checkFixture, relErr } from './torch-fixtures.js';
import { apply } from '../src/ops/apply.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' as const };
const sig = (v: number) => 1 / (1 + Math.exp(-v));

/** One recurrent layer in plain float64 JS over x [T][B][in]; returns the outputs and the last h, c. */
function refLayer(
  kind: 'LSTM' | 'GRU',
  p: Record<string, ArrayLike<number>>,
  sfx: string,
  x: number[][][],
  H: number,
  h0: number[][],
  c0: number[][],
) {
  const wih = p[`weight_ih${sfx}`],
    whh = p[`weight_hh${sfx}`],
    bih = p[`bias_ih${sfx}`],
    bhh = p[`bias_hh${sfx}`];
  const G = kind === 'LSTM' ? 4 : 3,
    inF = x[0][0].length;
  let h = h0.map((r) => [...r]),
    c = c0.map((r) => [...r]);
  const ys: number[][][] = [];
  for (const xt of x) {
    const nh: number[][] = [],
      nc: number[][] = [];
    xt.forEach((xb, b) => {
      const gi = Array.from({ length: G * H }, (_, r) => bih[r] + xb.reduce((s, v, j) => s + v * wih[r * inF + j], 0));
      const gh = Array.from({ length: G * H }, (_, r) => bhh[r] + h[b].reduce((s, v, j) => s + v * whh[r * H + j], 0));
      nh.push([]), nc.push([]);
      for (let u = 0; u < H; u++) {
        if (kind === 'LSTM') {
          const g = (k: number) => gi[k * H + u] + gh[k * H + u];
          const cc = sig(g(1)) * c[b][u] + sig(g(0)) * Math.tanh(g(2));
          nc[b].push(cc);
          nh[b].push(sig(g(3)) * Math.tanh(cc));
        } else {
          const r = sig(gi[u] + gh[u]),
            z = sig(gi[H + u] + gh[H + u]);
          const n = Math.tanh(gi[2 * H + u] + r * gh[2 * H + u]);
          nh[b].push((1 - z) * n + z * h[b][u]);
        }
      }
    });
    h = nh;
    if (kind === 'LSTM') c = nc;
    ys.push(h);
  }
  return { ys, h, c };
}

const nest = (a: ArrayLike<number>, shape: number[]): number[][][] =>
  Array.from({ length: shape[0] }, (_, i) =>
    Array.from({ length: shape[1] }, (_, j) => Array.from({ length: shape[2] }, (_, k) => a[(i * shape[1] + j) * shape[2] + k])),
  );

describe('LSTM and GRU against a float64 JS reference', () => {
  it.each([
    { kind: 'LSTM' as const, numLayers: 1, batchFirst: false, h0: false },
    { kind: 'LSTM' as const, numLayers: 2, batchFirst: true, h0: true },
    { kind: 'GRU' as const, numLayers: 1, batchFirst: true, h0: false },
    { kind: 'GRU' as const, numLayers: 3, batchFirst: false, h0: true },
  ])('$kind, $numLayers layers, batchFirst $batchFirst, h0 $h0', ({ kind, numLayers, batchFirst, h0 }) => {
    A.tidy(() => {
      const [T, B, I, H] = [6, 3, 4, 5];
      const net =
        kind === 'LSTM'
          ? new A.nn.LSTM(I, H, { numLayers, batchFirst, seed: 3, ...f64 })
          : new A.nn.GRU(I, H, { numLayers, batchFirst, seed: 3, ...f64 });
      const x = A.randn(batchFirst ? [B, T, I] : [T, B, I], { seed: 1, ...f64 });
      const hs = h0 ? [A.randn([numLayers, B, H], { seed: 2, ...f64 }), A.randn([numLayers, B, H], { seed: 4, ...f64 })] : null;
      const [y, state] =
        kind === 'LSTM' ? (net as A.nn.LSTM).forward(x, hs as [Tensor, Tensor] | null) : (net as A.nn.GRU).forward(x, hs?.[0]);
      const [hN, cN] = kind === 'LSTM' ? (state as [Tensor, Tensor]) : [state as Tensor, null];
      // Reference, layer by layer, in [T][B][·].
      const p = Object.fromEntries(net.namedParameters().map(([n, t]) => [n, t.toArray()]));
      let seq = nest(batchFirst ? A.transpose(x, [1, 0, 2]).toArray() : x.toArray(), [T, B, I]);
      const zeros = Array.from({ length: B }, () => new Array(H).fill(0));
      const st = (i: number, l: number) => (hs ? nest(hs[i].toArray(), [numLayers, B, H])[l] : zeros);
      const lastH: number[][][] = [],
        lastC: number[][][] = [];
      for (let l = 0; l < numLayers; l++) {
        const r = refLayer(kind, p, `_l${l}`, seq, H, st(0, l), st(1, l));
        seq = r.ys;
        lastH.push(r.h), lastC.push(r.c);
      }
      const yRef = (batchFirst ? seq[0].map((_, b) => seq.map((s) => s[b])) : seq).flat(2);
      expect(relErr(y.toArray(), yRef)).toBeLessThan(1e-12);
      expect(relErr(hN.toArray(), lastH.flat(2))).toBeLessThan(1e-12);
      if (cN) expect(relErr(cN.toArray(), lastC.flat(2))).toBeLessThan(1e-12);
    });
  });

  it('unbatched input [T, in] and h0 [numLayers, H]', () => {
    A.tidy(() => {
      const net = new A.nn.GRU(3, 4, { numLayers: 2, seed: 1, ...f64 });
      const x = A.randn([5, 3], { seed: 2, ...f64 }),
        h0 = A.randn([2, 4], { seed: 3, ...f64 });
      const [y, hN] = net.forward(x, h0);
      const [yb, hb] = net.forward(A.reshape(x, [5, 1, 3]), A.reshape(h0, [2, 1, 4]));
      expect(y.shape).toEqual([5, 4]);
      expect(hN.shape).toEqual([2, 4]);
      expect(Array.from(y.toArray())).toEqual(Array.from(yb.toArray()));
      expect(Array.from(hN.toArray())).toEqual(Array.from(hb.toArray()));
    });
  });

  it('cells are one step of the layer', () => {
    A.tidy(() => {
      const lstm = new A.nn.LSTM(3, 4, { seed: 5, ...f64 }),
        cell = new A.nn.LSTMCell(3, 4, { seed: 6, ...f64 });
      cell.loadStateDict(Object.fromEntries(lstm.namedParameters().map(([n, t]) => [n.replace('_l0', ''), t])));
      const x = A.randn([1, 2, 3], { seed: 7, ...f64 }),
        h = A.randn([1, 2, 4], { seed: 8, ...f64 }),
        c = A.randn([1, 2, 4], { seed: 9, ...f64 });
      const [, [hN, cN]] = lstm.forward(x, [h, c]);
      const [h1, c1] = cell.forward(A.reshape(x, [2, 3]), [A.reshape(h, [2, 4]), A.reshape(c, [2, 4])]);
      expect(Array.from(h1.toArray())).toEqual(Array.from(hN.toArray()));
      expect(Array.from(c1.toArray())).toEqual(Array.from(cN.toArray()));
    });
  });
});

describe('gradcheck through time (float64)', () => {
  it.each(['LSTM', 'GRU'] as const)('%s: x, h0 and every parameter', (kind) => {
    A.tidy(() => {
      const net =
        kind === 'LSTM' ? new A.nn.LSTM(2, 3, { numLayers: 2, seed: 1, ...f64 }) : new A.nn.GRU(2, 3, { numLayers: 2, seed: 1, ...f64 });
      const x = A.randn([4, 2, 2], { seed: 2, ...f64 }),
        h0 = A.randn([2, 2, 3], { seed: 3, ...f64 }),
        c0 = A.randn([2, 2, 3], { seed: 4, ...f64 });
      const w = A.randn([4, 2, 3], { seed: 5, ...f64 });
      const loss = (x: Tensor, h0: Tensor) => {
        const out = kind === 'LSTM' ? (net as A.nn.LSTM).forward(x, [h0, c0]) : (net as A.nn.GRU).forward(x, h0);
        const last = kind === 'LSTM' ? (out[1] as [Tensor, Tensor])[1] : (out[1] as Tensor);
        return A.add(A.sum(A.mul(out[0], w)), A.sum(A.square(last)));
      };
      // backward's gradients against central differences of the loss, entry by entry (errors relative to each tensor's largest).
      x.requiresGrad = h0.requiresGrad = true;
      net.zeroGrad();
      loss(x, h0).backward();
      for (const [i, t] of [x, h0].entries()) {
        const base = t.toArray() as Float64Array,
          num = new Float64Array(t.size);
        for (let j = 0; j < t.size; j++) {
          const at = (h: number) =>
            A.tidy(() => {
              const v = base.slice();
              v[j] += h;
              const u = A.tensor(v, { shape: [...t.shape], ...f64 });
              return A.noGrad(() => (i === 0 ? loss(u, h0) : loss(x, u)).item());
            });
          num[j] = (at(1e-6) - at(-1e-6)) / 2e-6;
        }
        expect(relErr(t.grad!.toArray(), num), i === 0 ? 'x' : 'h0').toBeLessThan(1e-7);
      }
      const sd = net.stateDict();
      for (const [name, p] of net.namedParameters()) {
        const base = p.toArray() as Float64Array,
          g = p.grad!.toArray(),
          num = new Float64Array(p.size);
        for (let j = 0; j < p.size; j++) {
          const at = (h: number) =>
            A.tidy(() => {
              const v = base.slice();
              v[j] += h;
              net.loadStateDict({ ...sd, [name]: A.tensor(v, { shape: [...p.shape], ...f64 }) });
              return A.noGrad(() => loss(x, h0).item());
            });
          num[j] = (at(1e-6) - at(-1e-6)) / 2e-6;
        }
        net.loadStateDict({ ...sd, [name]: A.tensor(base, { shape: [...p.shape], ...f64 }) });
        expect(relErr(g, num), name).toBeLessThan(1e-7);
      }
    });
  });
});

describe('PyTorch parity (test/fixtures/torch)', () => {
  const cases = ['lstm', 'gru']
    .flatMap((k) => ['l1', 'l2'].flatMap((l) => ['seq', 'bf'].flatMap((b) => [`${k}_${l}_${b}`, `${k}_${l}_${b}_h0`])))
    .concat(['lstmcell', 'lstmcell_noh0', 'grucell', 'grucell_noh0']);
  for (const name of cases) {
    it(name, (ctx) => {
      if (!hasFixture(name)) return ctx.skip(); // fixtures not generated in this checkout
      for (const [dtype, tol] of [
        ['float64', 1e-10],
        ['float32', 1e-5],
      ] as const) {
        for (const [k, e] of Object.entries(checkFixture(name, dtype))) expect(e, `${dtype} ${k}`).toBeLessThan(tol);
      }
    });
  }
});

describe('names, init and bad input', () => {
  it("has PyTorch's parameter names, shapes and U(−1/√H, 1/√H) init, fixed by the seed", () => {
    A.tidy(() => {
      const net = new A.nn.LSTM(3, 16, { numLayers: 2, seed: 4 });
      expect(net.namedParameters().map(([n, t]) => `${n}:${t.shape}`)).toEqual([
        'weight_ih_l0:64,3',
        'weight_hh_l0:64,16',
        'bias_ih_l0:64',
        'bias_hh_l0:64',
        'weight_ih_l1:64,16',
        'weight_hh_l1:64,16',
        'bias_ih_l1:64',
        'bias_hh_l1:64',
      ]);
      const all = net.parameters().flatMap((t) => Array.from(t.toArray()));
      expect(Math.max(...all.map(Math.abs))).toBeLessThanOrEqual(0.25);
      expect(Math.max(...all.map(Math.abs))).toBeGreaterThan(0.24);
      const again = new A.nn.LSTM(3, 16, { numLayers: 2, seed: 4 });
      expect(Array.from(again.parameters()[5].toArray())).toEqual(Array.from(net.parameters()[5].toArray()));
      expect(new A.nn.GRU(3, 8, { bias: false }).namedParameters().map(([n]) => n)).toEqual(['weight_ih_l0', 'weight_hh_l0']);
      expect(new A.nn.GRUCell(3, 8).namedParameters().map(([n, t]) => `${n}:${t.shape}`)).toEqual([
        'weight_ih:24,3',
        'weight_hh:24,8',
        'bias_ih:24',
        'bias_hh:24',
      ]);
    });
  });

  it('round-trips its state dict through safetensors', () => {
    A.tidy(() => {
      const a = new A.nn.GRU(3, 4, { numLayers: 2, seed: 1 }),
        b = new A.nn.GRU(3, 4, { numLayers: 2, seed: 2 });
      b.loadStateDict(A.io.loadSafetensors(A.io.saveSafetensors(a.stateDict())));
      const x = A.randn([3, 2, 3], { seed: 3 });
      expect(Array.from(b.forward(x)[0].toArray())).toEqual(Array.from(a.forward(x)[0].toArray()));
    });
  });

  it.each([
    [
      'a state dict from a different layer count',
      () => new A.nn.LSTM(3, 4).loadStateDict(new A.nn.LSTM(3, 4, { numLayers: 2 }).stateDict()),
      /LSTM.loadStateDict: the state dict has 2 layers \(keys up to _l1\) but this LSTM has numLayers = 1/,
    ],
    [
      'an input of the wrong size',
      () => new A.nn.GRU(3, 4).forward(A.zeros([5, 2, 4])),
      /GRU: input must be 2-D or 3-D with last axis 3, got \[5,2,4\]/,
    ],
    [
      'h0 of the wrong shape',
      () => new A.nn.GRU(3, 4, { numLayers: 2 }).forward(A.zeros([5, 2, 3]), A.zeros([1, 2, 4])),
      /GRU: h0 must have shape \[2,2,4\], got \[1,2,4\]/,
    ],
    [
      'an LSTM state that is not a pair',
      () => new A.nn.LSTM(3, 4).forward(A.zeros([5, 2, 3]), A.zeros([1, 2, 4]) as never),
      /LSTM: the initial state must be an array \[h0, c0\]/,
    ],
    // [h0] alone used to run with c0 = 0 (PyTorch refuses a state that is not an (h, c) pair).
    [
      'an LSTM state with one tensor',
      () => new A.nn.LSTM(3, 4).forward(A.zeros([5, 2, 3]), [A.zeros([1, 2, 4])] as never),
      /LSTM: the state must be an array \[h0, c0\] of two tensors \(or omitted for zeros\), got an array of 1/,
    ],
    [
      'an LSTM state with a null c0',
      () => new A.nn.LSTM(3, 4).forward(A.zeros([5, 2, 3]), [A.zeros([1, 2, 4]), null] as never),
      /LSTM: the state must be an array \[h0, c0\] of two tensors \(or omitted for zeros\), got \[Tensor, null\]/,
    ],
    [
      'an LSTMCell state with one tensor',
      () => new A.nn.LSTMCell(3, 4).forward(A.zeros([2, 3]), [A.zeros([2, 4])] as never),
      /LSTMCell: the state must be an array \[h, c\] of two tensors/,
    ],
    [
      'a cell input of the wrong size',
      () => new A.nn.LSTMCell(3, 4).forward(A.zeros([2, 5])),
      /LSTMCell: input must be 1-D or 2-D with last axis 3/,
    ],
    ['zero hidden units', () => new A.nn.LSTM(3, 0), /LSTM: hiddenSize must be a positive integer, got 0/],
  ])('%s', (_n, f, msg) => {
    A.tidy(() => expect(f).toThrow(msg));
  });
});

describe('fused cell primitives (src/ops/rnn.ts)', () => {
  const sg = (t: Tensor) => A.sigmoid(t);
  /** The cells written with public ops (the kernels keep this order: equal bits). */
  const composedLstm = (xg: Tensor, hg: Tensor, c: Tensor): Tensor => {
    const H = c.shape[1],
      a = A.add(xg, hg),
      p = (k: number) => A.slice(a, [0, k * H], [c.shape[0], H]);
    const c2 = A.add(A.mul(sg(p(1)), c), A.mul(sg(p(0)), A.tanh(p(2))));
    return A.concat([A.mul(sg(p(3)), A.tanh(c2)), c2], 1);
  };
  const composedGru = (xg: Tensor, hg: Tensor, h: Tensor): Tensor => {
    const H = h.shape[1],
      px = (k: number) => A.slice(xg, [0, k * H], [h.shape[0], H]),
      ph = (k: number) => A.slice(hg, [0, k * H], [h.shape[0], H]);
    const r = sg(A.add(px(0), ph(0))),
      z = sg(A.add(px(1), ph(1))),
      n = A.tanh(A.add(px(2), A.mul(r, ph(2))));
    return A.add(n, A.mul(z, A.sub(h, n)));
  };
  const ROWS = [
    { name: 'lstmCell', grad: 'lstmCellGrad', G: 4, out: 2, composed: composedLstm },
    { name: 'gruCell', grad: 'gruCellGrad', G: 3, out: 1, composed: composedGru },
  ] as const;
  const inputs = (G: number, B: number, H: number, dtype: 'float32' | 'float64') => [
    A.randn([B, G * H], { seed: 1, dtype }),
    A.randn([B, G * H], { seed: 2, dtype }),
    A.randn([B, H], { seed: 3, dtype }),
  ];

  it.each(ROWS)(
    '$name: the kernels equal the composed ops bit for bit (f32, f64; H at SIMD tails 1, 3, 4, 5, 17)',
    ({ name, G, composed }) => {
      A.tidy(() => {
        for (const dtype of ['float32', 'float64'] as const)
          for (const H of [1, 3, 4, 5, 17]) {
            const xs = inputs(G, 3, H, dtype);
            expect(Array.from(apply(name, xs, {}).toArray()), `${dtype} H=${H}`).toEqual(
              Array.from(composed(xs[0], xs[1], xs[2]).toArray()),
            );
          }
      });
    },
  );

  it.each(ROWS)('$name: gradients (f32, f64) against the composed ops', ({ name, G, out, composed }) => {
    A.tidy(() => {
      for (const [dtype, tol] of [
        ['float64', 1e-13],
        ['float32', 1e-6],
      ] as const) {
        const xs = inputs(G, 3, 6, dtype),
          w = A.randn([3, out * 6], { seed: 4, dtype });
        const g1 = A.grad((a: Tensor, b: Tensor, c: Tensor) => A.sum(A.mul(apply(name, [a, b, c], {}), w)), { argnums: [0, 1, 2] })(
          ...xs,
        ) as Tensor[];
        const g2 = A.grad((a: Tensor, b: Tensor, c: Tensor) => A.sum(A.mul(composed(a, b, c), w)), { argnums: [0, 1, 2] })(
          ...xs,
        ) as Tensor[];
        g1.forEach((g, i) => expect(relErr(g.toArray(), g2[i].toArray()), `${dtype} input ${i}`).toBeLessThan(tol));
      }
    });
  });

  it.each(ROWS)("$name: the backward primitive's VJP (second order) and both JVPs against differences (f64)", ({ name, grad, G, out }) => {
    A.tidy(() => {
      const [B, H] = [2, 3],
        xs = inputs(G, B, H, 'float64'),
        g = A.randn([B, out * H], { seed: 5, dtype: 'float64' });
      const n = { lstmCell: 5, gruCell: 7 }[name],
        W = A.randn([B, n * H], { seed: 6, dtype: 'float64' });
      const f = (a: Tensor, b: Tensor, c: Tensor, gg: Tensor) => A.sum(A.mul(apply(grad as never, [a, b, c, gg], {}), W));
      const all = [...xs, g];
      const an = (A.grad(f, { argnums: [0, 1, 2, 3] })(...all) as Tensor[]).map((t) => t.toArray());
      all.forEach((x, i) => {
        const base = x.toArray() as Float64Array,
          num = new Float64Array(x.size);
        for (let j = 0; j < x.size; j++) {
          const at = (h: number) =>
            A.tidy(() => {
              const v = base.slice();
              v[j] += h;
              return f(
                ...(all.map((y, m) => (m === i ? A.tensor(v, { shape: [...x.shape], ...f64 }) : y)) as [Tensor, Tensor, Tensor, Tensor]),
              ).item();
            });
          num[j] = (at(1e-6) - at(-1e-6)) / 2e-6;
        }
        expect(relErr(an[i], num), `input ${i}`).toBeLessThan(1e-8);
      });
      for (const [fn, args] of [
        [f, all],
        [(a: Tensor, b: Tensor, c: Tensor) => A.sum(A.mul(apply(name, [a, b, c], {}), g)), xs],
      ] as const) {
        const ts = args.map((x, i) => A.randn([...x.shape], { seed: 20 + i, dtype: 'float64' }));
        const jt = A.jvp(fn as (...a: Tensor[]) => Tensor, [...args], ts)[1].item();
        const along = (h: number) => (fn as (...a: Tensor[]) => Tensor)(...args.map((x, i) => A.add(x, A.mul(ts[i], h)))).item();
        expect(Math.abs(jt - (along(1e-6) - along(-1e-6)) / 2e-6)).toBeLessThan(1e-8 * Math.max(1, Math.abs(jt)));
      }
    });
  });
});
