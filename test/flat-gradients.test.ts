// Where relu, clamp, maximum and minimum are flat, their gradient is 0 even when the incoming
// cotangent (or tangent) is infinite or NaN, as PyTorch's backward selects: sqrt(clamp(d, 0)),
// the usual guarded distance, has gradient 0 at d < 0. A multiply by the 0/1 derivative mask
// gave NaN there. Values from PyTorch 1.13 (in the comments).
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr } from './helpers.js';

await A.init();
const inf = Number.POSITIVE_INFINITY;
const gradOf = (f: (x: Tensor) => Tensor, v: number[], dtype: 'float32' | 'float64') =>
  arr(A.grad((x: Tensor) => A.sum(f(x)))(A.tensor(v, { dtype })) as Tensor);

describe('flat ops stop an infinite or NaN gradient', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`sqrt of relu, clamp and maximum at and below 0 (${dtype})`, () => {
      // torch: [0, 0, 0.25]; [0, inf, 0.25, 0]; [0, inf, 0.25] (a tie passes half of ∞)
      expect(gradOf((x) => A.sqrt(A.relu(x)), [-1, 0, 4], dtype)).toEqual([0, 0, 0.25]);
      expect(gradOf((x) => A.sqrt(A.clamp(x, 0, 10)), [-1, 0, 4, 12], dtype)).toEqual([0, inf, 0.25, 0]);
      expect(gradOf((x) => A.sqrt(A.maximum(x, A.zeros([3], { dtype }))), [-1, 0, 4], dtype)).toEqual([0, inf, 0.25]);
    });

    it(`relu's fused VJP kernel, SIMD lanes and tail, with NaN and ∞ cotangents (${dtype})`, () => {
      const n = 11; // two or three vectors and a tail
      const x = A.tensor(
        Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 1 + i : -1 - i)),
        { dtype },
      );
      const g = A.tensor(
        Array.from({ length: n }, (_, i) => [Number.NaN, inf, -inf, 2][i % 4]!),
        { dtype },
      );
      const [dx] = A.vjp((v: Tensor) => A.relu(v), x)[1](g) as Tensor[];
      // torch: g where x > 0, else 0
      expect(arr(dx!)).toEqual(Array.from({ length: n }, (_, i) => (i % 3 === 0 ? [Number.NaN, inf, -inf, 2][i % 4] : 0)));
    });
  }

  it('minimum: the larger argument gets 0 of an infinite gradient (torch: a [∞, 0.1443], b [0, 0.1443])', () => {
    const a = A.tensor([0, 3], { dtype: 'float64' }),
      b = A.tensor([5, 3], { dtype: 'float64' });
    const [ga, gb] = A.grad((p: Tensor, q: Tensor) => A.sum(A.sqrt(A.minimum(p, q))), { argnums: [0, 1] })(a, b) as Tensor[];
    expect(arr(ga!)[0]).toBe(inf);
    expect(arr(gb!)[0]).toBe(0);
    expect(arr(ga!)[1]).toBeCloseTo(0.5 / Math.sqrt(3) / 2, 15);
  });

  it('forward mode: an infinite tangent through a flat point gives 0, as JAX', () => {
    const t = (f: (x: Tensor) => Tensor) =>
      arr(A.jvp(f, [A.tensor([-2, 3], { dtype: 'float64' })], [A.tensor([inf, 1], { dtype: 'float64' })])[1] as Tensor);
    expect(t((x) => A.relu(x))).toEqual([0, 1]);
    expect(t((x) => A.clamp(x, -1, 5))).toEqual([0, 1]);
    expect(t((x) => A.maximum(x, A.zeros([2], { dtype: 'float64' })))).toEqual([0, 1]);
  });

  it('the compiled dense layer (gemm + bias + relu fused) agrees with eager: 0, not NaN, at dead units', () => {
    const lin = new A.nn.Linear(3, 8, { seed: 1 });
    const [w, b] = [lin.weight.detach(), lin.bias!.detach()];
    const x = A.tensor([
      [1, -2, 0.5],
      [-1, 0.25, 2],
    ]);
    const loss = (w: Tensor, b: Tensor) => A.sum(A.sqrt(A.relu(A.add(A.matmul(x, A.transpose(w)), b))));
    const g = A.grad(loss, { argnums: [0, 1] });
    const eager = (g(w, b) as Tensor[]).map(arr);
    const compiled = A.compile(g);
    compiled(w, b);
    const replay = (compiled(w, b) as Tensor[]).map(arr);
    expect(eager.flat().every(Number.isFinite)).toBe(true);
    expect(replay).toEqual(eager);
    lin.dispose();
  });
});
