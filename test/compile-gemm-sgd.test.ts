// The compiled-program peephole of src/compile/epilogues.ts that fuses a weight gradient's GEMM
// with its plain SGD step (gemm_sgd): the compiled step gives the same bytes as eager mode —
// losses and every parameter after several steps, f32 and f64, at shapes that end mid-tile,
// with K (the batch) past one 256-deep block, with weight decay and with transposed weights. A
// gradient that is read again (returned or summed after the step), or an SGD with momentum, is
// not fused, with the same bytes. On two threads a gradient GEMM cut into pieces fuses piece by
// piece.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { compiledMatchesEager } from './helpers.js';
import { epilogues } from '../src/compile/epilogues.js';

type DT = 'float32' | 'float64';
beforeAll(async () => {
  await A.init({ threads: 2 }); // the first init asks for threads (shared memory), so the pool can come back below
  await A.init({ threads: 1 });
});

afterEach(() => {
  epilogues.sgd = true;
});

interface Case {
  sizes: number[];
  batch: number;
  dtype: DT;
  opts?: Omit<A.optim.SGDOptions, 'lr'>;
  transB?: boolean;
  /** After opt.step(), before zeroGrad: something that reads the first weight's gradient. */
  readGrad?: boolean;
}

/** A tanh MLP of `sizes`, MSE to t, SGD; weights [in, out] or [out, in] (transB). */
function net(c: Case) {
  const ps = c.sizes.slice(1).flatMap((out, i) => [
    A.randn(c.transB ? [out, c.sizes[i]] : [c.sizes[i], out], { seed: 10 + i, dtype: c.dtype })
      .mul(0.2)
      .detach(),
    A.randn([out], { seed: 50 + i, dtype: c.dtype })
      .mul(0.1)
      .detach(),
  ]);
  for (const p of ps) p.requiresGrad = true;
  const opt = new A.optim.SGD(ps, { lr: 0.05, ...c.opts });
  const step = (x: Tensor, t: Tensor) => {
    let h = x;
    for (let i = 0; i < ps.length; i += 2) h = A.tanh(A.add(A.matmul(h, c.transB ? A.transpose(ps[i]) : ps[i]), ps[i + 1]));
    let loss = A.mseLoss(h, t);
    loss.backward();
    opt.step();
    if (c.readGrad) {
      const [gs, l] = [A.sum(ps[0].grad!), loss];
      loss = A.noGrad(() => A.add(l, gs));
      gs.dispose(), l.dispose();
    }
    opt.zeroGrad();
    return loss;
  };
  return { ps, step };
}

/** Six calls eager and compiled: the same loss and parameter bytes; the calls of `kernels` on this thread over the three replays. */
function calls(c: Case, kernels = ['gemm_sgd_f32', 'gemm_sgd_f64']): number {
  const x = A.randn([c.batch, c.sizes[0]], { seed: 1, dtype: c.dtype }),
    t = A.rand([c.batch, c.sizes[c.sizes.length - 1]], { seed: 2, dtype: c.dtype });
  const eager = net(c),
    comp = net(c);
  const n = compiledMatchesEager(eager, comp, x, t, kernels);
  for (const p of [x, t, ...eager.ps, ...comp.ps]) p.dispose();
  return n;
}

/** As calls(), expecting `fused` gemm_sgd launches per replayed call. */
function compare(c: Case, fused: number) {
  expect(calls(c)).toBe(3 * fused);
}

describe('compiled weight-gradient GEMM → plain SGD step as one GEMM', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype}: 3 layers ending mid-tile (one gemm_sgd per weight)`, () => {
      compare({ sizes: [30, 45, 13, 7], batch: 37, dtype }, 3);
    });
    it(`${dtype}: K (the batch) past one 256-deep block, wide layers`, () => {
      compare({ sizes: [70, 130, 9], batch: 300, dtype }, 2);
    });
    it(`${dtype}: weight decay, odd sizes`, () => {
      compare({ sizes: [1, 17, 3], batch: 5, dtype, opts: { weightDecay: 0.01 } }, 2);
    });
  }
  it('transposed weights: the same bytes', () => {
    // The gradient of a transposed weight reaches sgd through a copy, not straight from the GEMM.
    compare({ sizes: [20, 33, 9], batch: 11, dtype: 'float32', transB: true }, 0);
  });
  it('switched off: no gemm_sgd, the same bytes', () => {
    epilogues.sgd = false;
    compare({ sizes: [20, 16, 8], batch: 9, dtype: 'float32' }, 0);
  });
  it('SGD with momentum (Nesterov) is not fused', () => {
    compare({ sizes: [20, 16, 8], batch: 9, dtype: 'float64', opts: { momentum: 0.9, nesterov: true } }, 0);
  });
  it('a gradient read after the step keeps its own sgd launch (the other weights fuse)', () => {
    compare({ sizes: [20, 16, 8], batch: 9, dtype: 'float32', readGrad: true }, 1);
  });
});

describe('on two threads', () => {
  beforeAll(async () => {
    await A.init({ threads: 2 });
    expect(A.backend().threads).toBe(2);
  });
  afterAll(async () => {
    await A.init({ threads: 1 });
  });
  /** The plan bytes of the compiled step of c after three calls. */
  function planBytes(c: Case): number {
    const x = A.randn([c.batch, c.sizes[0]], { seed: 1, dtype: c.dtype }),
      t = A.rand([c.batch, c.sizes[c.sizes.length - 1]], { seed: 2, dtype: c.dtype });
    const n = net(c),
      f = A.compile(n.step);
    for (let i = 0; i < 3; i++) f(x, t).dispose();
    const bytes = f.stats.planBytes;
    f.reset();
    for (const p of [x, t, ...n.ps]) p.dispose();
    return bytes;
  }

  // At these sizes (batch 128 of a 64-256-256-10 MLP) the two larger weights' gradient GEMMs are
  // cut into two pieces. Which thread runs a piece varies (a thread that is done takes the other's
  // waiting work), so the calls counted on this thread only show that gemm_sgd runs (before the
  // fusion took cut GEMMs, none ran here); and a fused gradient lives only during its launch, so
  // the plan shrinks.
  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype}: gradient GEMMs cut into pieces fuse piece by piece, the same bytes`, () => {
      const c: Case = { sizes: [64, 256, 256, 10], batch: 128, dtype };
      expect(calls(c)).toBeGreaterThan(0);
      const fused = planBytes(c);
      epilogues.sgd = false;
      expect(calls(c)).toBe(0);
      expect(planBytes(c)).toBeGreaterThan(fused);
    });
  }
  it('weight decay, a layer of 301 whose pieces end mid-tile', () => {
    expect(calls({ sizes: [37, 301, 13], batch: 203, dtype: 'float32', opts: { weightDecay: 0.01 } })).toBeGreaterThan(0);
  });
});
