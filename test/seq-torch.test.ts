// crossEntropy and nn.Embedding against PyTorch fixtures (test/fixtures/torch/, made by
// scripts/fixtures/losses.py with Debian's PyTorch): loss and the logits' gradient (the VJP at
// the fixture's cotangent), float64 to 1e-10 relative and float32 to 1e-5.
import { describe, it, expect, beforeAll } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { relErr } from './specs.js';

const dir = new URL('./fixtures/torch/', import.meta.url);
const CE = ['ce_index', 'ce_ignore_smooth', 'ce_ignore_sum', 'ce_ignore_none', 'ce_probs', 'ce_probs_smooth'];
const present = existsSync(new URL('ce_index.json', dir));

beforeAll(() => A.init());

function load(name: string, dtype: 'f32' | 'f64'): Record<string, Tensor> {
  return A.io.loadSafetensors(new Uint8Array(readFileSync(new URL(`${name}.${dtype}.safetensors`, dir))));
}
const config = (name: string) => JSON.parse(readFileSync(new URL(`${name}.json`, dir), 'utf8'));
const TOL = { f64: 1e-10, f32: 1e-5 } as const;

describe.skipIf(!present)('PyTorch fixtures', () => {
  for (const name of CE) {
    for (const dt of ['f64', 'f32'] as const) {
      it(`${name} (${dt}): loss and ∂loss/∂logits`, () => {
        A.tidy(() => {
          const f = load(name, dt),
            opts = config(name).options;
          const labels = f['in.labels'];
          expect(labels.dtype).toBe(name.startsWith('ce_probs') ? (dt === 'f64' ? 'float64' : 'float32') : 'int32');
          const [loss, back] = A.vjp((x: Tensor) => A.crossEntropy(x, labels, opts), f['in.logits']);
          expect(loss.shape).toEqual(f['out.loss'].shape);
          expect(relErr(loss.toArray(), f['out.loss'].toArray())).toBeLessThan(TOL[dt]);
          const [g] = back(f['cot.loss']);
          expect(relErr(g.toArray(), f['grad.in.logits'].toArray())).toBeLessThan(TOL[dt]);
        });
      });
    }
  }
  for (const dt of ['f64', 'f32'] as const) {
    it(`nn.Embedding on int32 ids (${dt}): output and the weight's accumulated gradient`, () => {
      A.tidy(() => {
        const f = load('embedding', dt);
        const emb = new A.nn.Embedding(11, 6, { dtype: dt === 'f64' ? 'float64' : 'float32' });
        emb.loadStateDict({ weight: f['param.weight'] });
        const y = emb.forward(f['in.ids']);
        expect(relErr(y.toArray(), f['out.y'].toArray())).toBeLessThan(TOL[dt]);
        A.sum(A.mul(y, f['cot.y'])).backward();
        expect(relErr(emb.weight.grad!.toArray(), f['grad.param.weight'].toArray())).toBeLessThan(TOL[dt]);
      });
    });
  }
});
