// nn.GPT: PyTorch parity on the committed gpt_tiny fixture (state dict keys, logits, loss and
// every parameter gradient; f64 to 1e-10, f32 to 1e-5), GPT-2-style init, and the key/value
// cache against the full forward pass.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { FIXTURES, hasFixture, relErr } from './torch-fixtures.js';

beforeAll(async () => {
  await A.init();
});

interface GptCase {
  config: { vocabSize: number; width: number; layers: number; heads: number; context: number };
  layout: { key: string; shape: number[] }[];
}

describe('GPT against PyTorch (gpt_tiny fixture)', () => {
  const meta = JSON.parse(readFileSync(join(FIXTURES, 'gpt_tiny.json'), 'utf8')) as GptCase;

  it('has the PyTorch module layout: the same state dict keys and shapes, head tied', () => {
    const m = new A.nn.GPT({ ...meta.config, dtype: 'float64' });
    const sd = m.stateDict();
    const expected = meta.layout.flatMap((r) =>
      r.key.includes('{i}') ? [0, 1].map((i) => ({ ...r, key: r.key.replace('{i}', String(i)) })) : [r],
    );
    expect(Object.keys(sd).sort()).toEqual(expected.map((r) => r.key).sort());
    for (const r of expected) expect(sd[r.key].shape).toEqual(r.shape);
    expect(sd['head.weight']).toBe(sd['tokEmb.weight']);
    expect(m.parameters().length).toBe(Object.keys(sd).length - 1);
    m.dispose();
  });

  for (const dtype of ['float64', 'float32'] as const) {
    const tol = dtype === 'float64' ? 1e-10 : 1e-5;
    it.runIf(hasFixture('gpt_tiny'))(`${dtype}: logits, loss and parameter gradients match to ${tol}`, () => {
      const bytes = readFileSync(join(FIXTURES, `gpt_tiny.${dtype === 'float64' ? 'f64' : 'f32'}.safetensors`));
      const t = A.io.loadSafetensors(new Uint8Array(bytes));
      const m = new A.nn.GPT({ ...meta.config, dtype });
      const params = Object.fromEntries(
        Object.entries(t)
          .filter(([k]) => k.startsWith('param.'))
          .map(([k, v]) => [k.slice(6), v]),
      );
      m.loadStateDict(params);
      const logits = m.forward(t['in.ids']);
      const loss = A.crossEntropy(logits, t['in.targets']);
      expect(relErr(logits.toArray(), t['out.logits'].toArray())).toBeLessThan(tol);
      expect(relErr([loss.item()], [t['out.loss'].item()])).toBeLessThan(tol);
      A.add(A.sum(A.mul(logits, t['cot.logits'])), A.mul(loss, t['cot.loss'])).backward();
      const grads = Object.keys(t).filter((k) => k.startsWith('grad.param.'));
      expect(grads.length).toBe(m.parameters().length);
      for (const [name, p] of m.namedParameters())
        expect(relErr(p.grad!.toArray(), t[`grad.param.${name}`].toArray()), name).toBeLessThan(tol);
      m.dispose();
      for (const v of Object.values(t)) v.dispose();
    });
  }
});

describe('GPT', () => {
  it('initialises as GPT-2: weights N(0, 0.02), residual projections N(0, 0.02/√(2L)), biases 0, LayerNorm 1/0', () => {
    const m = new A.nn.GPT({ vocabSize: 65, layers: 2, heads: 4, width: 64, context: 32, dtype: 'float64', seed: 3 });
    const std = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, v) => s + v * v, 0) / a.length);
    for (const [name, p] of m.namedParameters()) {
      const v = p.toArray();
      if (p.shape.length === 2) {
        const want = /out_proj\.weight|mlp\.2\.weight/.test(name) ? 0.02 / Math.sqrt(4) : 0.02;
        expect(Math.abs(std(v) / want - 1), name).toBeLessThan(0.1);
      } else if (/ln\d?\.weight|lnF\.weight/.test(name)) {
        expect(
          Array.from(v).every((x) => x === 1),
          name,
        ).toBe(true);
      } else {
        expect(
          Array.from(v).every((x) => x === 0),
          name,
        ).toBe(true);
      }
    }
    // A seed fixes every weight.
    const m2 = new A.nn.GPT({ vocabSize: 65, layers: 2, heads: 4, width: 64, context: 32, dtype: 'float64', seed: 3 });
    expect(m2.stateDict()['blocks.1.mlp.0.weight'].toArray()).toEqual(m.stateDict()['blocks.1.mlp.0.weight'].toArray());
    m.dispose();
    m2.dispose();
  });

  it('the key/value cache gives the full forward pass logits, token by token', () => {
    const m = new A.nn.GPT({ vocabSize: 13, layers: 2, heads: 2, width: 16, context: 10, dtype: 'float64', seed: 5 });
    const ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3];
    const full = A.noGrad(() => m.forward({ ids, shape: [1, ids.length] }).toArray());
    const cache = m.cache();
    A.noGrad(() => {
      const first = cache.append(ids.slice(0, 4));
      expect(relErr(first, full.slice(3 * 13, 4 * 13))).toBeLessThan(1e-12);
      for (let t = 4; t < ids.length; t++) {
        const row = cache.append([ids[t]]);
        expect(relErr(row, full.slice(t * 13, (t + 1) * 13)), `position ${t}`).toBeLessThan(1e-12);
      }
    });
    expect(cache.length).toBe(10);
    expect(() => cache.append([1])).toThrow(/exceed the context of 10/);
    const before = A.memory().tensors;
    cache.reset();
    expect(A.memory().tensors).toBe(before - 2 * 2 * 1);
    m.dispose();
  });

  it("bias: false is nanoGPT's bias=False: PyTorch's keys without the biases, 804,096 parameters, the same function as zero biases", () => {
    const meta = JSON.parse(readFileSync(join(FIXTURES, 'gpt_tiny.json'), 'utf8')) as GptCase;
    const nb = new A.nn.GPT({ ...meta.config, bias: false, dtype: 'float64', seed: 2 });
    const keys = meta.layout
      .flatMap((r) => (r.key.includes('{i}') ? [0, 1].map((i) => r.key.replace('{i}', String(i))) : [r.key]))
      .filter((k) => !/bias$/.test(k));
    expect(Object.keys(nb.stateDict()).sort()).toEqual(keys.sort());
    expect(nb.bias).toBe(false);
    // nanoGPT's published model (vocabulary 65, 4 layers, 4 heads, width 128, context 64): 0.80 M
    // without the position table (its get_num_params), 804,096 with it.
    const big = new A.nn.GPT({ vocabSize: 65, bias: false });
    expect(big.parameters().reduce((a, p) => a + p.size, 0)).toBe(804_096);
    big.dispose();
    // With biases that are zero (as initialised), the model with biases is the same function.
    const wb = new A.nn.GPT({ ...meta.config, dtype: 'float64', seed: 9 });
    wb.loadStateDict({ ...wb.stateDict(), ...nb.stateDict() });
    const ids = { ids: [1, 2, 3, 4, 5, 6, 0, 2], shape: [2, 4] as const };
    A.noGrad(() => expect(relErr(nb.forward(ids).toArray(), wb.forward(ids).toArray())).toBeLessThan(1e-14));
    expect(() => new A.nn.GPT({ vocabSize: 5, bias: 0 as unknown as boolean })).toThrow(/GPT: bias must be true or false/);
    nb.dispose();
    wb.dispose();
  });

  it('LayerNorm with bias: false has its weight only and is the affine LayerNorm with a zero bias', () => {
    const ln = new A.nn.LayerNorm(6, { bias: false, dtype: 'float64' });
    expect(ln.namedParameters().map(([n]) => n)).toEqual(['weight']);
    expect(ln.bias).toBeNull();
    const w = A.tensor([0.5, -1, 2, 1.5, 0.25, 3], { dtype: 'float64' });
    ln.loadStateDict({ weight: w });
    const x = A.tensor([[1, 2, 4, 8, 16, 32]], { dtype: 'float64' });
    const xs = [1, 2, 4, 8, 16, 32],
      mean = xs.reduce((a, b) => a + b) / 6,
      v = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / 6;
    const ref = xs.map((xi, i) => ((xi - mean) / Math.sqrt(v + 1e-5)) * [0.5, -1, 2, 1.5, 0.25, 3][i]);
    expect(relErr(ln.forward(x).toArray(), ref)).toBeLessThan(1e-12);
    w.dispose();
    x.dispose();
    ln.dispose();
  });

  it('rejects bad ids with clear errors', () => {
    const m = new A.nn.GPT({ vocabSize: 5, layers: 1, heads: 1, width: 4, context: 3 });
    expect(() => m.forward({ ids: [1, 2, 3, 4], shape: [1, 4] })).toThrow(/sequence length 4 exceeds the context of 3/);
    expect(() => m.forward({ ids: [1, 7], shape: [1, 2] })).toThrow(/Embedding: index 7/);
    expect(() => m.forward(A.tensor([[1, 2]]))).toThrow(/int32 tensor/);
    expect(() => new A.nn.GPT({ vocabSize: 5, width: 6, heads: 4 })).toThrow(/divisible by heads/);
    m.dispose();
  });
});
