// Property tests with a seeded generator: broadcasting against an explicit JS broadcast,
// round trips of reshape / transpose / slice / concat / gather, and linearity of the
// derivative (grad of a·f + b·g = a·grad f + b·grad g, and VJPs linear in the cotangent).
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { Rng } from './fuzz-files.js';

beforeAll(async () => {
  await A.init();
});

const CASES = 150;
const sizeOf = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
const stridesOf = (s: readonly number[]) => s.map((_, i) => sizeOf(s.slice(i + 1)));

function randomShape(rng: Rng, maxRank = 4, maxDim = 4): number[] {
  return Array.from({ length: rng.int(maxRank + 1) }, () => 1 + rng.int(maxDim));
}

/** Two shapes that broadcast: b is a's suffix with some axes set to 1, and either may be the longer. */
function broadcastPair(rng: Rng): [number[], number[]] {
  const full = randomShape(rng);
  const mask = (s: number[]) => s.map((d) => (rng.chance(0.35) ? 1 : d));
  const a = mask(full.slice(rng.int(full.length + 1)));
  const b = mask(full.slice(rng.int(full.length + 1)));
  return rng.chance(0.5) ? [a, b] : [b, a];
}

function values(rng: Rng, n: number): Float64Array {
  return Float64Array.from({ length: n }, () => Math.round((rng.next() * 8 - 4) * 64) / 64);
}

/** NumPy broadcasting written out: out[i] = f(a[idx_a(i)], b[idx_b(i)]). */
function jsBroadcast(a: Float64Array, sa: number[], b: Float64Array, sb: number[], f: (x: number, y: number) => number) {
  const n = Math.max(sa.length, sb.length);
  const pa = [...Array(n - sa.length).fill(1), ...sa],
    pb = [...Array(n - sb.length).fill(1), ...sb];
  const shape = pa.map((d, i) => Math.max(d, pb[i]));
  const out = new Float64Array(sizeOf(shape));
  const so = stridesOf(shape),
    ta = stridesOf(pa),
    tb = stridesOf(pb);
  for (let i = 0; i < out.length; i++) {
    let ia = 0,
      ib = 0;
    for (let d = 0; d < n; d++) {
      const k = Math.floor(i / so[d]) % shape[d];
      if (pa[d] !== 1) ia += k * ta[d];
      if (pb[d] !== 1) ib += k * tb[d];
    }
    out[i] = f(a[ia], b[ib]);
  }
  return { shape, out };
}

describe('broadcasting', () => {
  const ops: [string, (a: A.Tensor, b: A.Tensor) => A.Tensor, (x: number, y: number) => number][] = [
    ['add', A.add, (x, y) => x + y],
    ['sub', A.sub, (x, y) => x - y],
    ['mul', A.mul, (x, y) => x * y],
    ['maximum', A.maximum, (x, y) => Math.max(x, y)],
    ['minimum', A.minimum, (x, y) => Math.min(x, y)],
  ];
  it.each(ops)('%s equals an explicit JS broadcast on random compatible shapes (float64 and float32)', (_name, op, f) => {
    const rng = new Rng(101);
    for (let c = 0; c < CASES; c++) {
      const [sa, sb] = broadcastPair(rng);
      const a = values(rng, sizeOf(sa)),
        b = values(rng, sizeOf(sb));
      const want = jsBroadcast(a, sa, b, sb, f);
      for (const dtype of ['float64', 'float32'] as const) {
        const [shape, got] = A.tidy(() => {
          const y = op(A.tensor(a, { shape: sa, dtype }), A.tensor(b, { shape: sb, dtype }));
          return [y.shape, Array.from(y.toArray())];
        });
        expect(shape, `[${sa}] ∘ [${sb}]`).toEqual(want.shape);
        // The inputs are exact in float32 (multiples of 1/64), so float32 results round the exact value once.
        expect(got).toEqual(Array.from(want.out, (v) => (dtype === 'float32' ? Math.fround(v) : v)));
      }
    }
  });

  it('broadcastTo equals the explicit broadcast, and its VJP sums back (fitTo) to the input shape', () => {
    const rng = new Rng(102);
    for (let c = 0; c < CASES; c++) {
      const [small, big] = (() => {
        const [a, b] = broadcastPair(rng);
        const { shape } = jsBroadcast(new Float64Array(sizeOf(a)), a, new Float64Array(sizeOf(b)), b, () => 0);
        return [a, shape];
      })();
      const a = values(rng, sizeOf(small));
      A.tidy(() => {
        const x = A.tensor(a, { shape: small, dtype: 'float64' });
        const y = A.broadcastTo(x, big);
        const { out } = jsBroadcast(a, small, new Float64Array(sizeOf(big)), big, (u) => u);
        expect(Array.from(y.toArray())).toEqual(Array.from(out));
        // d/dx Σ broadcastTo(x) = the number of copies of each element.
        const g = A.grad((t: A.Tensor) => A.sum(A.broadcastTo(t, big)))(x) as A.Tensor;
        expect(g.shape).toEqual(small);
        expect(Array.from(g.toArray())).toEqual(Array(g.size).fill(sizeOf(big) / Math.max(1, sizeOf(small))));
      });
    }
  });
});

describe('round trips', () => {
  it('reshape to a random factorisation and back is the identity', () => {
    const rng = new Rng(201);
    for (let c = 0; c < CASES; c++) {
      const shape = randomShape(rng, 4, 5);
      const n = sizeOf(shape);
      // Another shape of n elements: split n into random factors, maybe with a -1.
      const other: number[] = [];
      let rest = n;
      while (rest > 1 && other.length < 4) {
        const divisors = Array.from({ length: rest }, (_, i) => i + 1).filter((d) => rest % d === 0);
        const d = rng.pick(divisors);
        other.push(d);
        rest /= d;
      }
      if (rest > 1) other.push(rest);
      const spec = other.length > 0 && rng.chance(0.3) ? other.map((d, i) => (i === 0 ? -1 : d)) : other;
      A.tidy(() => {
        const x = A.tensor(values(rng, n), { shape, dtype: 'float64' });
        const y = A.reshape(x, spec);
        expect(y.shape).toEqual(other);
        const back = A.reshape(y, shape);
        expect(back.shape).toEqual(shape);
        expect(Array.from(back.toArray())).toEqual(Array.from(x.toArray()));
      });
    }
  });

  it('transpose matches the explicit index permutation, and the inverse permutation undoes it', () => {
    const rng = new Rng(202);
    for (let c = 0; c < CASES; c++) {
      const shape = randomShape(rng);
      const perm = shape.map((_, i) => i);
      for (let i = perm.length - 1; i > 0; i--) {
        const j = rng.int(i + 1);
        [perm[i], perm[j]] = [perm[j], perm[i]];
      }
      const inv = perm.map((_, i) => perm.indexOf(i));
      A.tidy(() => {
        const data = values(rng, sizeOf(shape));
        const x = A.tensor(data, { shape, dtype: 'float32' });
        const y = A.transpose(x, perm);
        const out = perm.map((p) => shape[p]);
        expect(y.shape).toEqual(out);
        const xs = stridesOf(shape),
          ys = stridesOf(out),
          got = y.toArray();
        for (let i = 0; i < got.length; i++) {
          let src = 0;
          for (let d = 0; d < out.length; d++) src += (Math.floor(i / ys[d]) % out[d]) * xs[perm[d]];
          expect(got[i]).toBe(Math.fround(data[src]));
        }
        expect(Array.from(A.transpose(y, inv).toArray())).toEqual(Array.from(x.toArray()));
        if (shape.length > 0) expect(A.transpose(A.transpose(x)).shape).toEqual(shape);
      });
    }
  });

  it('slicing along an axis into random pieces and concatenating them gives the tensor back', () => {
    const rng = new Rng(203);
    for (let c = 0; c < CASES; c++) {
      const shape = randomShape(rng, 4, 6).concat(1 + rng.int(6));
      const axis = rng.int(shape.length);
      A.tidy(() => {
        const x = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const pieces: A.Tensor[] = [];
        for (let at = 0; at < shape[axis]; ) {
          const len = 1 + rng.int(shape[axis] - at);
          pieces.push(
            A.slice(
              x,
              shape.map((_, d) => (d === axis ? at : 0)),
              shape.map((s, d) => (d === axis ? len : s)),
            ),
          );
          at += len;
        }
        const back = A.concat(pieces, axis - (rng.chance(0.5) ? shape.length : 0)); // negative axes too
        expect(back.shape).toEqual(shape);
        expect(Array.from(back.toArray())).toEqual(Array.from(x.toArray()));
      });
    }
  });

  it('gather by a permutation, then by its inverse, is the identity', () => {
    const rng = new Rng(204);
    for (let c = 0; c < CASES; c++) {
      const shape = randomShape(rng, 3, 5).concat(1 + rng.int(5));
      const axis = rng.int(shape.length);
      const perm = A.data.permutation(shape[axis], c);
      const inv = Int32Array.from(perm.keys()).map((i) => perm.indexOf(i));
      A.tidy(() => {
        const x = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float32' });
        const back = A.gather(A.gather(x, perm, axis), inv, axis);
        expect(Array.from(back.toArray())).toEqual(Array.from(x.toArray()));
      });
    }
  });
});

/** A random smooth scalar function of x built from a chain of ops (no domain restrictions). */
function randomFunction(rng: Rng, shape: readonly number[]): (x: A.Tensor) => A.Tensor {
  const steps = Array.from({ length: 2 + rng.int(4) }, () => rng.int(9));
  const consts = steps.map(() => values(rng, sizeOf(shape)));
  return (x) => {
    let h = x;
    steps.forEach((s, i) => {
      const c = A.tensor(consts[i], { shape, dtype: 'float64' });
      h = [
        () => A.sin(h),
        () => A.tanh(h),
        () => A.sigmoid(h),
        () => A.mul(h, c),
        () => A.add(A.square(h), c),
        () => A.softplus(h),
        () => A.cos(A.mul(h, 0.5)),
        () => A.maximum(h, c),
        () => A.mul(A.exp(A.mul(h, 0.1)), h),
      ][s]();
    });
    return A.sum(A.mul(h, x));
  };
}

function close(got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-12): string | null {
  for (let i = 0; i < want.length; i++) {
    if (Math.abs(got[i] - want[i]) > tol * Math.max(1, Math.abs(want[i]))) return `element ${i}: ${got[i]} vs ${want[i]}`;
  }
  return null;
}

describe('linearity of the derivative', () => {
  it('grad(a·f + b·g) = a·grad f + b·grad g for random f, g, a, b', () => {
    const rng = new Rng(301);
    for (let c = 0; c < CASES; c++) {
      const shape = randomShape(rng, 3, 4);
      const f = randomFunction(rng, shape),
        g = randomFunction(rng, shape);
      const a = values(rng, 1)[0],
        b = values(rng, 1)[0];
      A.tidy(() => {
        const x = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const lhs = (A.grad((t: A.Tensor) => A.add(A.mul(f(t), a), A.mul(g(t), b)))(x) as A.Tensor).toArray();
        const gf = (A.grad(f)(x) as A.Tensor).toArray(),
          gg = (A.grad(g)(x) as A.Tensor).toArray();
        const rhs = gf.map((v, i) => a * v + b * gg[i]);
        expect(close(lhs, rhs), `case ${c}`).toBe(null);
      });
    }
  });

  it('a VJP is linear in the cotangent: vjp(a·u + b·v) = a·vjp(u) + b·vjp(v)', () => {
    const rng = new Rng(302);
    for (let c = 0; c < CASES / 3; c++) {
      const shape = randomShape(rng, 3, 4);
      const f = randomFunction(rng, shape);
      const vecF = (t: A.Tensor) => A.mul(A.tanh(t), A.reshape(f(t), [])); // non-scalar output of x's shape
      const a = values(rng, 1)[0],
        b = values(rng, 1)[0];
      A.tidy(() => {
        const x = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const u = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const v = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const [, back] = A.vjp(vecF, x);
        try {
          const lhs = back(A.add(A.mul(u, a), A.mul(v, b)))[0].toArray();
          const bu = back(u)[0].toArray(),
            bv = back(v)[0].toArray();
          expect(
            close(
              lhs,
              bu.map((w, i) => a * w + b * bv[i]),
            ),
            `case ${c}`,
          ).toBe(null);
        } finally {
          back.release();
        }
      });
    }
  });

  it('the gradient of a sum of independent terms splits: grad(f(x) + g(y)) w.r.t. (x, y)', () => {
    const rng = new Rng(303);
    for (let c = 0; c < CASES / 3; c++) {
      const shape = randomShape(rng, 3, 4);
      const f = randomFunction(rng, shape),
        g = randomFunction(rng, shape);
      A.tidy(() => {
        const x = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const y = A.tensor(values(rng, sizeOf(shape)), { shape, dtype: 'float64' });
        const [gx, gy] = A.grad((p: A.Tensor, q: A.Tensor) => A.add(f(p), g(q)), { argnums: [0, 1] })(x, y) as A.Tensor[];
        expect(Array.from(gx.toArray())).toEqual(Array.from((A.grad(f)(x) as A.Tensor).toArray()));
        expect(Array.from(gy.toArray())).toEqual(Array.from((A.grad(g)(y) as A.Tensor).toArray()));
      });
    }
  });
});
