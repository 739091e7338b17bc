// erf and GELU (exact and tanh) against PyTorch 1.13 (test/fixtures/torch: erf, gelu_none,
// gelu_tanh; 143 points over [−6, 6] plus tails to ±40): values and the VJP of a random
// cotangent, float64 against PyTorch's float64 and float32 against PyTorch's float32.
import { readFileSync } from 'node:fs';
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

beforeAll(() => A.init());

const load = (name: string, dtype: 'f32' | 'f64'): Record<string, Tensor> =>
  A.io.loadSafetensors(readFileSync(new URL(`fixtures/torch/${name}.${dtype}.safetensors`, import.meta.url)));

/** Largest |a − e| / (|e| + scale[i]) over the elements. */
function relErr(a: ArrayLike<number>, e: ArrayLike<number>, scale: (i: number) => number): number {
  let w = 0;
  for (let i = 0; i < e.length; i++) w = Math.max(w, Math.abs(a[i] - e[i]) / (Math.abs(e[i]) + scale(i) || 1));
  return w;
}

const CASES: [string, (x: Tensor) => Tensor][] = [
  ['erf', (x) => A.erf(x)],
  ['gelu_none', (x) => A.gelu(x, { approximate: 'none' })],
  ['gelu_tanh', (x) => A.gelu(x, { approximate: 'tanh' })],
];
// float64: a few ulp; float32: a few float32 ulp (PyTorch's float32 kernels round their own way).
const TOL = { f64: { value: 1e-15, grad: 1e-13 }, f32: { value: 3e-7, grad: 1e-5 } };

describe.each(CASES)('%s matches PyTorch', (name, f) => {
  it.each(['f64', 'f32'] as const)('%s: values and the VJP', (dtype) => {
    A.tidy(() => {
      const fx = load(name, dtype);
      const [y, back] = A.vjp(f, fx['in.x']);
      const [dx] = back(fx['cot.y']);
      // erf: relative to the value. GELU's left tail is ½x(1 + erf(x/√2)), where 1 + erf cancels
      // in any implementation (PyTorch's too): its error scales with |x|, not with the value.
      const x = fx['in.x'].toArray(),
        gelu = name !== 'erf';
      expect(relErr(y.toArray(), fx['out.y'].toArray(), (i) => (gelu ? Math.abs(x[i]) : 0))).toBeLessThan(TOL[dtype].value);
      // Gradients vanish in the tails (e^{−x²}); compare them against the largest gradient.
      const g = Float64Array.from(fx['grad.in.x'].toArray()),
        big = g.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      expect(relErr(dx.toArray(), g, () => big)).toBeLessThan(TOL[dtype].grad);
    });
  });
});
