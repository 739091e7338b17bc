// gradcheck must not pass a gradient that is NaN (or an unmatched infinity) at some element: NaN
// fails every comparison, so such an element used to be skipped and the result was ok: true.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

beforeAll(() => A.init());

const f64 = { dtype: 'float64' } as const;

describe('gradcheck with non-finite gradients', () => {
  it('an analytic NaN after a correct first element fails, and is reported as the worst', () => {
    // The true gradient is 2a; the custom backward gives NaN where a > 0.15.
    const sq = A.customVjp(
      (a: Tensor) => A.square(a),
      (g: Tensor, [a]: readonly Tensor[]) => [A.where(A.gt(a, 0.15), Number.NaN, A.mul(g, A.mul(a, 2)))],
    );
    const r = A.gradcheck((v: Tensor) => A.sum(sq(v)), [A.tensor([0.1, 0.2, 0.3], f64)]);
    expect(r.ok).toBe(false);
    expect(r.maxRelError).toBe(Infinity);
    expect(r.worst.index).toBe(1);
    expect(r.worst.analytic).toBeNaN();
    expect(r.worst.numeric).toBeCloseTo(0.4, 8);
  });

  it('sqrt at 0 (analytic ∞, numeric NaN) fails, as torch.autograd.gradcheck does', () => {
    const r = A.gradcheck((v: Tensor) => A.sum(A.sqrt(v)), [A.tensor([1, 0], f64)]);
    expect(r.ok).toBe(false);
    expect(r.worst).toMatchObject({ input: 0, index: 1, analytic: Infinity });
  });

  it('finite gradients are unaffected: sin·x passes with a tiny error', () => {
    const r = A.gradcheck((v: Tensor) => A.sum(A.mul(A.sin(v), v)), [A.tensor([0.1, 0.2, 0.3], f64)]);
    expect(r.ok).toBe(true);
    expect(r.maxRelError).toBeLessThan(1e-8);
  });

  it('a non-scalar f is an error naming gradcheck', () => {
    expect(() => A.gradcheck((v: Tensor) => A.mul(v, 2), [A.tensor([1, 2], f64)])).toThrow(
      /^gradcheck: f must return a scalar, got shape \[2\]/,
    );
  });
});
