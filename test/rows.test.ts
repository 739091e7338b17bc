// One row per op: every primitive of the rule table (src/ops/table.ts) is run — forward, VJP and
// JVP — by some row of the spec table (test/specs.ts, where each row is value-checked against a
// float64 reference and gradchecked), or by a row of the tables that cover the rest (OTHER
// below). A primitive added without a test row fails here, naming it. The companion check,
// every kernel export has a pointer layout, is in compile.test.ts.
import { readFileSync } from 'node:fs';
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { primitivesRun, rules } from '../src/testing.js';
import { SPECS, values, tensors, weights } from './specs.js';

beforeAll(() => A.init());

/** Primitives whose rows live in another table: the file, and the name it runs them by. */
const OTHER: Record<string, readonly [file: string, name: string]> = {
  gt: ['dispatch.test.ts', 'gt'], // a 0/1 mask with no gradient: gradcheck rows do not apply
  cast: ['diagnostics.test.ts', 'astype'], // float32 rounding: finite differences cannot check it
  linearFA: ['feedback.test.ts', 'linearFA'],
  custom: ['engine.test.ts', 'customVjp'],
  checkpoint: ['checkpoint.test.ts', 'checkpoint'],
  conv2d: ['conv.test.ts', 'conv2d'],
  conv2dInputGrad: ['conv.test.ts', 'conv2dInputGrad'],
  conv2dFilterGrad: ['conv.test.ts', 'conv2dFilterGrad'],
  maxPool2d: ['conv.test.ts', 'maxPool2d'],
  maxPool2dGrad: ['conv.test.ts', 'maxPool2dGrad'],
  maxPool2dGather: ['conv.test.ts', 'maxPool2dGather'],
  avgPool2d: ['conv.test.ts', 'avgPool2d'],
  avgPool2dGrad: ['conv.test.ts', 'avgPool2dGrad'],
  take: ['vmap-indices.test.ts', 'take: the VJP'], // needs mapped int32 indices: gradchecked there, with takeAdd
  takeAdd: ['vmap-indices.test.ts', 'takeAdd: its VJP'],
  argmax: ['int32.test.ts', 'argmax'], // int32 indices: no gradient; checked against a JS reference (ties, NaN, tails)
};

describe('the rule table', () => {
  it('has a spec-table row running every primitive', () => {
    const run = new Set<string>();
    for (const spec of SPECS) {
      A.tidy(() => {
        const xs = tensors(values(spec), spec.shapes, 'float64');
        const loss = (...ys: Tensor[]) => A.sum(A.mul(spec.f(...ys), A.keep(weights(spec.f(...ys).shape, 'float64'))));
        for (const p of primitivesRun(() => {
          A.grad(loss, { argnums: xs.map((_, i) => i) })(...xs);
          A.jvp(
            (...ys: Tensor[]) => spec.f(...ys),
            xs,
            xs.map((x) => A.ones(x.shape, { dtype: 'float64' })),
          );
        }))
          run.add(p);
      });
    }
    const missing = Object.keys(rules).filter((p) => !run.has(p) && !(p in OTHER));
    expect(missing, 'primitives no row of test/specs.ts runs: add a row').toEqual([]);
  });

  it.each(Object.entries(OTHER).map(([p, [f, n]]) => [p, f, n]))('%s: its row is in test/%s', (prim, file, name) => {
    expect(Object.keys(rules)).toContain(prim);
    expect(readFileSync(new URL(file, import.meta.url), 'utf8')).toContain(name);
  });
});
