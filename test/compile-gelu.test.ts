// The compiled-program peephole of src/compile/gelu-grad.ts: a Linear → exact GELU → … training
// step computes erf once per element (gelu_erf_with_grad keeps gelu' for the backward, where
// gelu_erf_vjp and the Linear's bias gradient become one bias_act_vjp pass) and gives the same
// bytes as eager mode: losses and every parameter after several Adam steps, f32 and f64, with
// element counts that end mid-vector, 2-D and 3-D inputs, two GELU layers, and a Linear without
// bias (the VJP becomes a plain multiply). A pre-activation that is read again (returned into the
// loss) is left as it was, with the same bytes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { compiledMatchesEager, type StepNet } from './helpers.js';
import { epilogues } from '../src/compile/epilogues.js';
import { busy } from '../src/testing.js';
import { runtime } from '../src/wasm/module.js';

type DT = 'float32' | 'float64';
beforeAll(async () => {
  // Shared memory from the start (the first init decides), so the last tests can start a pool.
  await A.init({ threads: 2 });
  await A.init({ threads: 1 });
});

afterEach(() => {
  epilogues.gelu = true;
});

interface Case {
  /** Widths: Linear layers between them, exact GELU after each but the last. */
  sizes: number[];
  /** Input shape before the last axis ([rows] or [B, T]). */
  lead: number[];
  dtype: DT;
  /** The first pre-activation also enters the loss (its mean). */
  readPre?: boolean;
  /** The first Linear without a bias (no bias gradient pass to ride on: the product is a mul). */
  noBias?: boolean;
}

function net(c: Case): StepNet {
  const layers = c.sizes
    .slice(1)
    .map((out, i) => new A.nn.Linear(c.sizes[i], out, { seed: 10 + i, dtype: c.dtype, bias: !(c.noBias && i === 0) }));
  const ps = layers.flatMap((l) => l.parameters());
  const opt = new A.optim.Adam(ps, { lr: 0.01 });
  const step = (x: Tensor, t: Tensor) => {
    let h = x,
      pre: Tensor | null = null;
    layers.forEach((l, i) => {
      h = l.forward(h);
      if (i === 0) pre = h;
      if (i < layers.length - 1) h = A.gelu(h, { approximate: 'none' });
    });
    let loss = A.mseLoss(h, t);
    if (c.readPre) loss = A.add(loss, A.mean(pre!));
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return { ps, step };
}

/** Six calls eager and compiled: the same loss and parameter bytes; `fused` gelu_erf_with_grad launches per replayed call. */
function compare(c: Case, fused: number) {
  const x = A.randn([...c.lead, c.sizes[0]], { seed: 1, dtype: c.dtype }),
    t = A.rand([...c.lead, c.sizes[c.sizes.length - 1]], { seed: 2, dtype: c.dtype });
  const eager = net(c),
    comp = net(c);
  expect(compiledMatchesEager(eager, comp, x, t, ['gelu_erf_with_grad_f32', 'gelu_erf_with_grad_f64'])).toBe(3 * fused);
  for (const p of [x, t, ...eager.ps, ...comp.ps]) p.dispose();
}

describe('compiled Linear → exact GELU: erf once per element, gelu_erf_vjp and the bias gradient in one pass', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype}: one GELU layer, element count ending mid-vector`, () => {
      compare({ sizes: [13, 45, 7], lead: [37], dtype }, 1);
    });
    it(`${dtype}: two GELU layers on a [B, T, C] input`, () => {
      compare({ sizes: [16, 64, 33, 5], lead: [3, 11], dtype }, 2);
    });
  }
  it('a pre-activation read again keeps both erf passes, same bytes', () => {
    compare({ sizes: [13, 45, 7], lead: [37], dtype: 'float32', readPre: true }, 0);
  });
  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype}: a GELU after a Linear without bias (no bias gradient pass): g·gelu′ as a mul, same bytes`, () => {
      compare({ sizes: [13, 45, 7], lead: [37], dtype, noBias: true }, 1);
    });
  }
  it('switched off, the same bytes with no fused launch', () => {
    epilogues.gelu = false;
    compare({ sizes: [13, 45, 7], lead: [37], dtype: 'float32' }, 0);
  });
});

const bytesOf = (t: Tensor): string => Buffer.from(t.toArray().buffer).toString('base64');

describe('the same with the 2-thread pool: pieces of the traced launches rewritten piece by piece', () => {
  // The pool's pause on a loaded machine would leave a call unsplit: off, so every launch is cut.
  const pauseMs = busy.pauseMs;
  beforeAll(() => void (busy.pauseMs = 0));
  afterAll(async () => {
    busy.pauseMs = pauseMs;
    await A.init({ threads: 1 });
  });

  /** Parameter bytes after six eager steps on `threads` threads. */
  async function eagerParams(c: Case, threads: number): Promise<string[]> {
    await A.init({ threads });
    const x = A.randn([...c.lead, c.sizes[0]], { seed: 1, dtype: c.dtype }),
      t = A.rand([...c.lead, c.sizes[c.sizes.length - 1]], { seed: 2, dtype: c.dtype });
    const e = net(c);
    for (let s = 0; s < 6; s++) A.tidy(() => e.step(x, t)).dispose();
    const out = e.ps.map(bytesOf);
    for (const p of [x, t, ...e.ps]) p.dispose();
    return out;
  }

  /**
   * Compiled on 2 threads against eager (compare()), with gelu_erf_with_grad's element counts
   * recorded on the calling thread: every call a piece (fewer than all n elements), at least one
   * per fused launch and replay (the caller runs one piece of each, and any a worker has not taken).
   */
  function pooled(c: Case, fused: number): void {
    const n = c.lead.reduce((a, b) => a * b, 1) * c.sizes[1];
    const rt = runtime() as unknown as { exports: Record<string, unknown> };
    const saved = rt.exports,
      counts: number[] = [];
    const name = `gelu_erf_with_grad_f${c.dtype === 'float32' ? 32 : 64}`;
    const f = saved[name] as (...a: number[]) => void;
    rt.exports = { ...saved, [name]: (...a: number[]) => (counts.push(a[3]), f(...a)) };
    try {
      const x = A.randn([...c.lead, c.sizes[0]], { seed: 1, dtype: c.dtype }),
        t = A.rand([...c.lead, c.sizes[c.sizes.length - 1]], { seed: 2, dtype: c.dtype });
      const eager = net(c),
        comp = net(c);
      const calls = compiledMatchesEager(eager, comp, x, t, [name]);
      expect(calls).toBeGreaterThanOrEqual(3 * fused);
      expect(calls).toBeLessThanOrEqual(6 * fused);
      for (const p of [x, t, ...eager.ps, ...comp.ps]) p.dispose();
    } finally {
      rt.exports = saved;
    }
    expect(counts.length).toBeGreaterThan(0);
    for (const k of counts) expect(k).toBeLessThan(n);
  }

  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype}: one GELU layer of [512, 256], every launch cut; the bytes of the 1-thread eager step`, async () => {
      const c: Case = { sizes: [32, 256, 16], lead: [8, 64], dtype };
      const one = await eagerParams(c, 1);
      await A.init({ threads: 2 });
      pooled(c, 1);
      expect(await eagerParams(c, 2)).toEqual(one);
    });
  }
  it('float32: rows of 250 (column pieces end mid-vector), two GELU layers', async () => {
    await A.init({ threads: 2 });
    pooled({ sizes: [13, 250, 250, 7], lead: [600], dtype: 'float32' }, 2);
  });
  it("float32: a Linear without bias: the mul keeps the VJP's cut", async () => {
    await A.init({ threads: 2 });
    pooled({ sizes: [13, 250, 7], lead: [600], dtype: 'float32', noBias: true }, 1);
  });
});
