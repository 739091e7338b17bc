// The compiled-program peephole of src/compile/epilogues.ts: matmul → bias add → tanh/sigmoid,
// written as ops, replays as one gemm_bias_act launch and gives the same bytes as eager mode —
// losses and every parameter after several SGD steps, f32 and f64, at shapes that end mid-tile,
// with K past one 256-deep block, and with transposed operands. A triple whose intermediate is
// used again (returned, or read by another op) is left as three launches, with the same results.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { compiledMatchesEager, type StepNet as Net } from './helpers.js';
import { epilogues } from '../src/compile/epilogues.js';

type DT = 'float32' | 'float64';
beforeAll(async () => {
  await A.init({ threads: 1 });
});

afterEach(() => {
  epilogues.enabled = true;
});

/** An MLP of `sizes` with act after every layer, MSE to t, SGD; weights [in, out] or [out, in] (transB). */
function net(sizes: number[], act: 'tanh' | 'sigmoid', dtype: DT, transB: boolean, extra?: (pre: Tensor) => Tensor): Net {
  const ps = sizes.slice(1).flatMap((out, i) => [
    A.randn(transB ? [out, sizes[i]] : [sizes[i], out], { seed: 10 + i, dtype, requiresGrad: true })
      .mul(0.2)
      .detach(),
    A.randn([out], { seed: 50 + i, dtype })
      .mul(0.1)
      .detach(),
  ]);
  for (const p of ps) p.requiresGrad = true;
  const opt = new A.optim.SGD(ps, { lr: 0.05 });
  const step = (x: Tensor, t: Tensor) => {
    let h = x,
      side: Tensor | null = null;
    for (let i = 0; i < ps.length; i += 2) {
      const pre = A.add(A.matmul(h, transB ? A.transpose(ps[i]) : ps[i]), ps[i + 1]);
      if (extra !== undefined && i === 0) side = extra(pre);
      h = act === 'tanh' ? A.tanh(pre) : A.sigmoid(pre);
    }
    let loss = A.mseLoss(h, t);
    if (side !== null) loss = A.add(loss, A.mean(side));
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return { ps, step };
}

function compare(
  sizes: number[],
  act: 'tanh' | 'sigmoid',
  dtype: DT,
  transB: boolean,
  expectFused: number,
  extra?: (pre: Tensor) => Tensor,
) {
  const B = 37;
  const x = A.randn([B, sizes[0]], { seed: 1, dtype }),
    t = A.rand([B, sizes[sizes.length - 1]], { seed: 2, dtype });
  const eager = net(sizes, act, dtype, transB, extra),
    comp = net(sizes, act, dtype, transB, extra);
  // Calls 4–6 replay: one fused launch per layer each (the eager and traced calls run none).
  expect(compiledMatchesEager(eager, comp, x, t, ['gemm_bias_act_f32', 'gemm_bias_act_f64'])).toBe(3 * expectFused);
  for (const p of [x, t, ...eager.ps, ...comp.ps]) p.dispose();
}

describe('compiled matmul → bias add → activation as one GEMM', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`tanh, ${dtype}: 3 layers ending mid-tile, K past one 256-deep block`, () => {
      compare([300, 45, 13, 7], 'tanh', dtype, false, 3);
    });
    it(`sigmoid with transposed weights, ${dtype}`, () => {
      compare([70, 33, 9], 'sigmoid', dtype, true, 2);
    });
  }
  it('switched off: three launches per layer, the same bytes', () => {
    epilogues.enabled = false;
    compare([40, 24, 8], 'tanh', 'float32', false, 0);
  });
  it('a pre-activation read again by another op stays three launches (same bytes)', () => {
    compare([20, 16, 8], 'tanh', 'float32', false, 1, (pre) => A.square(pre));
  });
});
