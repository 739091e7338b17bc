// The dispatch fast paths (issue 6, speed): binary ops on same-shape, one-element and
// [rows, cols] + [cols] operands skip the broadcast bookkeeping, small launches skip the split
// machinery, and an unbatched matmul skips the batch loop. Each must give exactly what the
// general path gives: every row is checked bit for bit against a float64 reference (for +, −,
// ×, ÷, max and min the float32 result is the rounded exact one), and the fast layouts against
// the same computation forced through the general broadcast path.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { gt } from '../src/ops/api.js';
import { broadcastShape, broadcastTo, nd, sizeOf, zip, type Nd } from './ref.js';

beforeAll(() => A.init());

type DT = 'float32' | 'float64';
const DTYPES: DT[] = ['float32', 'float64'];
const round = (dt: DT) => (dt === 'float32' ? Math.fround : (v: number) => v);

/** Deterministic values away from 0 (so ÷ is safe), distinct per seed. */
function values(shape: readonly number[], seed: number, dt: DT): Nd {
  const n = sizeOf(shape);
  return nd(
    shape,
    Array.from({ length: n }, (_, i) => round(dt)(((((i + 1) * 7919 + seed * 104729) % 1999) / 1999 - 0.5) * 3 + (i % 2 ? 0.25 : -0.25))),
  );
}

const OPS = {
  add: [A.add, (u: number, v: number) => u + v],
  sub: [A.sub, (u: number, v: number) => u - v],
  mul: [A.mul, (u: number, v: number) => u * v],
  div: [A.div, (u: number, v: number) => u / v],
  maximum: [A.maximum, (u: number, v: number) => Math.max(u, v)],
  minimum: [A.minimum, (u: number, v: number) => Math.min(u, v)],
  gt: [gt, (u: number, v: number) => (u > v ? 1 : 0)],
} as const;

// [a shape, b shape]: each fast layout, its edge cases, and general layouts next to them.
const LAYOUTS: [number[], number[]][] = [
  [[], []],
  [[1], [1]],
  [[3], [3]],
  [[17], [17]],
  [[0], [0]],
  [
    [5, 7],
    [5, 7],
  ],
  [
    [2, 3, 4],
    [2, 3, 4],
  ],
  [[3, 5], []],
  [[3, 5], [1]],
  [
    [3, 5],
    [1, 1],
  ],
  [[], [4, 6]],
  [[1], [2, 9]],
  [[1], [1, 1]],
  [[1, 1], [1]],
  [[0, 3], []],
  [[4, 6], [6]],
  [[6], [4, 6]],
  [[33, 17], [17]],
  [[1, 4], [4]],
  [[4, 1], [1]],
  [[2, 1], [1]],
  [[2, 3, 4], [4]],
  [
    [3, 1, 4],
    [2, 1],
  ],
  [
    [4, 6],
    [4, 1],
  ],
  [
    [4, 1],
    [1, 6],
  ],
];

const data = (t: Tensor): number[] => Array.from(t.toArray());

describe('binary launches: every layout matches the float64 reference bit for bit', () => {
  for (const dt of DTYPES) {
    for (const [name, [op, f]] of Object.entries(OPS)) {
      it(`${name} ${dt}`, () => {
        for (const [as, bs] of LAYOUTS) {
          const ra = values(as, 1, dt),
            rb = values(bs, 2, dt);
          const shape = broadcastShape(as, bs);
          const want = zip(broadcastTo(ra, shape), broadcastTo(rb, shape), f).data;
          A.tidy(() => {
            const y = op(A.tensor(ra.data, { shape: as, dtype: dt }), A.tensor(rb.data, { shape: bs, dtype: dt }));
            expect(y.shape, `[${as}] ∘ [${bs}]`).toEqual(shape);
            expect(data(y), `[${as}] ∘ [${bs}]`).toEqual(Array.from(want, round(dt)));
          });
        }
      });
    }
  }
});

describe('fast layouts give the bits of the general broadcast path', () => {
  // A leading axis of 1 on one operand sends the same computation through collapse() and the
  // general launch; dropping it again must not change a bit (pow and tanh-like kernels are not
  // exactly rounded, so this is the check that matters for them).
  const CASES: [number[], number[]][] = [
    [
      [5, 7],
      [5, 7],
    ],
    [[33, 17], [17]],
    [[17], [33, 17]],
    [[3, 5], []],
    [[], [3, 5]],
  ];
  for (const dt of DTYPES) {
    it(`pow, sub and mul, ${dt}`, () => {
      for (const [as, bs] of CASES) {
        A.tidy(() => {
          const a = A.abs(A.tensor(values(as, 3, dt).data, { shape: as, dtype: dt }));
          const b = A.tensor(values(bs, 4, dt).data, { shape: bs, dtype: dt });
          const b1 = A.reshape(b, [1, 1, ...bs]); // rank 3+: never on a fast path
          for (const op of [A.pow, A.sub, A.mul]) {
            const fast = op(a, b),
              general = op(a, b1);
            expect(data(fast), `${op.name} [${as}] ∘ [${bs}]`).toEqual(data(general));
          }
        });
      }
    });
  }
});

describe('unary and fill launches', () => {
  for (const dt of DTYPES) {
    it(`tanh, exp, clamp on 0, 1, 3, 16 and 17 elements equal the same call on a larger tensor, ${dt}`, () => {
      A.tidy(() => {
        const big = A.tensor(values([40], 5, dt).data, { dtype: dt });
        for (const n of [0, 1, 3, 16, 17]) {
          const x = A.slice(big, [0], [n]);
          for (const f of [A.tanh, A.exp, (t: Tensor) => A.clamp(t, -0.5, 0.75)]) {
            // Elementwise kernels compute each element alone: a prefix of the big result.
            expect(data(f(x))).toEqual(data(f(big)).slice(0, n));
          }
        }
        expect(data(A.full([5], 2.5, { dtype: dt }))).toEqual([2.5, 2.5, 2.5, 2.5, 2.5]);
      });
    });
  }
});

describe('unbatched matmul', () => {
  for (const dt of DTYPES) {
    it(`equals the batched path bit for bit and the float64 product, every transpose, ${dt}`, () => {
      const [M, K, N] = [7, 13, 5];
      A.tidy(() => {
        const ra = values([M, K], 6, dt),
          rb = values([K, N], 7, dt);
        const a = A.tensor(ra.data, { shape: [M, K], dtype: dt }),
          b = A.tensor(rb.data, { shape: [K, N], dtype: dt });
        const y = A.matmul(a, b);
        const batched = A.reshape(A.matmul(A.reshape(a, [1, M, K]), b), [M, N]);
        expect(data(y)).toEqual(data(batched));
        const tr = A.matmul(A.transpose(A.transpose(a)), A.transpose(A.transpose(b)));
        expect(data(tr)).toEqual(data(y));
        const tol = dt === 'float32' ? 1e-5 : 1e-13;
        for (let i = 0; i < M; i++)
          for (let j = 0; j < N; j++) {
            let s = 0;
            for (let k = 0; k < K; k++) s += ra.data[i * K + k] * rb.data[k * N + j];
            expect(Math.abs(y.toArray()[i * N + j] - s)).toBeLessThan(tol * (1 + Math.abs(s)));
          }
      });
    });
  }

  it('gradients through the fast paths match finite differences (bias add, matmul, one-element scale)', () => {
    const x = A.tensor(values([4, 3], 8, 'float64').data, { shape: [4, 3], dtype: 'float64' });
    const w = A.tensor(values([3, 5], 9, 'float64').data, { shape: [3, 5], dtype: 'float64' });
    const b = A.tensor(values([5], 10, 'float64').data, { shape: [5], dtype: 'float64' });
    const f = (xi: Tensor, wi: Tensor, bi: Tensor) => A.sum(A.mul(A.tanh(A.add(A.matmul(xi, wi), bi)), 0.5));
    const r = A.gradcheck(f, [x, w, b]);
    expect(r.ok, JSON.stringify(r)).toBe(true);
    for (const t of [x, w, b]) t.dispose();
  });
});
