// The compiled-program peephole of src/compile/epilogues.ts that fuses a weight gradient's GEMM
// with its plain SGD step (gemm_sgd): the compiled step gives the same bytes as eager mode —
// losses and every parameter after several steps, f32 and f64, at shapes that end mid-tile,
// with K (the batch) past one 256-deep block, with weight decay and with transposed weights. A
// gradient that is read again (returned or summed after the step), or an SGD with momentum, is
// not fused, with the same bytes.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { compiledMatchesEager } from './helpers.js';
import { epilogues } from '../src/compile/epilogues.js';

type DT = 'float32' | 'float64';
beforeAll(async () => {
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

/** Six calls eager and compiled: the same loss and parameter bytes; `fused` gemm_sgd launches per replayed call. */
function compare(c: Case, fused: number) {
  const x = A.randn([c.batch, c.sizes[0]], { seed: 1, dtype: c.dtype }),
    t = A.rand([c.batch, c.sizes[c.sizes.length - 1]], { seed: 2, dtype: c.dtype });
  const eager = net(c),
    comp = net(c);
  expect(compiledMatchesEager(eager, comp, x, t, ['gemm_sgd_f32', 'gemm_sgd_f64'])).toBe(3 * fused);
  for (const p of [x, t, ...eager.ps, ...comp.ps]) p.dispose();
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
