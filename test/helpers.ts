// Small assertions shared by the nn, feedback, diagnostics and io tests.
import { expect } from 'vitest';
import type { Tensor } from '../src/index.js';

export const f64 = { dtype: 'float64' as const };
/** A tensor's values as a plain array (for toEqual). */
export const arr = (t: Tensor): number[] => Array.from(t.toArray());
/** Element-wise |got − want| ≤ tol·max(1, |want|), lengths equal. */
export const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-12): void => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want[i])));
};
