// scaledDotProductAttention (src/ops/attention.ts, assembly/attention.ts): the fused kernels
// against a float64 JS reference (forward) and against attention composed of matmul and softmax
// (gradients, JVPs), gradcheck of the attention primitive and of its fused backward primitive
// (whose own VJP and JVP are composed: second order), dropout replay, masks and their layouts,
// errors, and bit-identical results for 1, 2 and 3 threads.
import { createHash } from 'node:crypto';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';
import { apply } from '../src/ops/apply.js';
import { thresholds } from '../src/wasm/split.js';
import { kernel } from '../src/wasm/module.js';
import { threadCount } from '../src/wasm/threads.js';
import { busy, threadStats } from '../src/wasm/congestion.js';

// Shared memory from the start (the thread test resizes the pool), then one thread until that test.
beforeAll(async () => {
  await A.init({ threads: 3 });
  await A.init({ threads: 1 });
}, 60_000);

const rn = (shape: number[], seed: number, dtype: DType = 'float64') => A.randn(shape, { seed, dtype });
const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** max |a − b| / max(max |b|, 1e-300): one scale for the whole tensor, so tiny entries do not dominate. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-300): number {
  expect(a.length).toBe(b.length);
  let e = 0,
    m = 0;
  for (let i = 0; i < b.length; i++) {
    e = Math.max(e, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  return e / Math.max(m, floor);
}

/** Strides of `shape` read as broadcast to `out` (0 along broadcast axes). */
function bstrides(shape: readonly number[], out: readonly number[]): number[] {
  const off = out.length - shape.length,
    own: number[] = [];
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) (own[i] = acc), (acc *= shape[i]);
  return out.map((_, i) => (i < off || shape[i - off] === 1 ? 0 : own[i - off]));
}
const at = (data: ArrayLike<number>, strides: number[], idx: number[]) => data[idx.reduce((s, x, i) => s + x * strides[i], 0)];

/** softmax(scale·q kᵀ + mask, causal)·v in float64 JS, leading axes broadcast. */
function reference(q: Tensor, k: Tensor, v: Tensor, o: { causal?: boolean; mask?: Tensor; scale?: number } = {}): Float64Array {
  const [Tq, d] = q.shape.slice(-2),
    [Tk] = k.shape.slice(-2),
    dv = v.shape[v.shape.length - 1];
  const r = Math.max(q.shape.length, k.shape.length, v.shape.length) - 2;
  const pad = (s: readonly number[]) => [...new Array(r + 2 - s.length).fill(1), ...s];
  const lead = pad(q.shape)
    .slice(0, r)
    .map((_, i) => Math.max(pad(q.shape)[i], pad(k.shape)[i], pad(v.shape)[i]));
  const [qa, ka, va] = [q.toArray(), k.toArray(), v.toArray()],
    ma = o.mask?.toArray();
  const [sq, sk, sv] = [bstrides(q.shape, [...lead, Tq, d]), bstrides(k.shape, [...lead, Tk, d]), bstrides(v.shape, [...lead, Tk, dv])];
  const sm = o.mask ? bstrides(o.mask.shape, [...lead, Tq, Tk]) : [];
  const scale = o.scale ?? 1 / Math.sqrt(d),
    N = prod(lead),
    out = new Float64Array(N * Tq * dv);
  for (let n = 0; n < N; n++) {
    const li: number[] = [];
    for (let a = r - 1, rem = n; a >= 0; a--) (li[a] = rem % lead[a]), (rem = Math.floor(rem / lead[a]));
    for (let i = 0; i < Tq; i++) {
      const s = new Float64Array(Tk).fill(-Infinity);
      for (let j = 0; j < Tk; j++) {
        if (o.causal && j > i) continue;
        let dot = 0;
        for (let c = 0; c < d; c++) dot += at(qa, sq, [...li, i, c]) * at(ka, sk, [...li, j, c]);
        s[j] = dot * scale + (ma ? at(ma, sm, [...li, i, j]) : 0);
      }
      const m = Math.max(...s);
      const e = s.map((x) => (m === -Infinity ? 0 : Math.exp(x - m))),
        z = e.reduce((a, b) => a + b, 0);
      for (let c = 0; c < dv; c++) {
        let acc = 0;
        for (let j = 0; j < Tk; j++) if (e[j] !== 0) acc += (e[j] / z) * at(va, sv, [...li, j, c]);
        out[(n * Tq + i) * dv + c] = acc;
      }
    }
  }
  return out;
}

/** Attention composed of public ops (matmul, softmax), the baseline for gradients and JVPs. */
function composed(q: Tensor, k: Tensor, v: Tensor, o: { causal?: boolean; mask?: Tensor } = {}): Tensor {
  const [Tq, d] = q.shape.slice(-2),
    Tk = k.shape[k.shape.length - 2];
  const r = k.shape.length,
    perm = [...k.shape.map((_, i) => i).slice(0, -2), r - 1, r - 2];
  let s = A.mul(A.matmul(q, A.transpose(k, perm)), 1 / Math.sqrt(d));
  if (o.mask) s = A.add(s, o.mask);
  if (o.causal) {
    const a = new Float64Array(Tq * Tk);
    for (let i = 0; i < Tq; i++) for (let j = i + 1; j < Tk; j++) a[i * Tk + j] = -Infinity;
    s = A.add(s, A.tensor(a, { shape: [Tq, Tk], dtype: q.dtype }));
  }
  return A.matmul(A.softmax(s, -1), v);
}

interface Case {
  name: string;
  q: number[];
  k: number[];
  v: number[];
  causal?: boolean;
  mask?: number[];
}
const CASES: Case[] = [
  { name: 'one head, Tq ≠ Tk', q: [5, 3], k: [7, 3], v: [7, 4] },
  { name: 'batch × heads, odd sizes', q: [2, 3, 5, 7], k: [2, 3, 9, 7], v: [2, 3, 9, 5] },
  { name: 'causal, square', q: [2, 6, 4], k: [2, 6, 4], v: [2, 6, 3], causal: true },
  { name: 'causal, Tq < Tk (top-left aligned)', q: [2, 4, 5], k: [2, 9, 5], v: [2, 9, 2], causal: true },
  { name: 'causal, Tq > Tk (rows past Tk see every key)', q: [1, 9, 3], k: [1, 4, 3], v: [1, 4, 3], causal: true },
  { name: 'more keys than a tile (BK = 128), d = 17', q: [1, 3, 17], k: [1, 300, 17], v: [1, 300, 6], causal: false },
  { name: 'causal over several query blocks and key tiles', q: [1, 270, 8], k: [1, 270, 8], v: [1, 270, 8], causal: true },
  { name: 'k and v shared by every head (broadcast)', q: [2, 3, 4, 5], k: [2, 1, 6, 5], v: [1, 1, 6, 3] },
  { name: 'additive mask [Tq, Tk]', q: [2, 3, 4, 5], k: [2, 3, 6, 5], v: [2, 3, 6, 3], mask: [4, 6] },
  { name: 'mask per batch [B, 1, Tq, Tk]', q: [2, 3, 4, 5], k: [2, 3, 6, 5], v: [2, 3, 6, 3], mask: [2, 1, 4, 6] },
  { name: 'mask per head [1, H, 1, Tk] (one row)', q: [2, 3, 4, 5], k: [2, 3, 6, 5], v: [2, 3, 6, 3], mask: [3, 1, 6] },
  { name: 'full mask [B, H, Tq, Tk] with causal', q: [2, 3, 4, 5], k: [2, 3, 6, 5], v: [2, 3, 6, 3], mask: [2, 3, 4, 6], causal: true },
  { name: 'mask over B and T only [B, 1, Tq, 1]: expanded', q: [2, 3, 4, 5], k: [2, 3, 6, 5], v: [2, 3, 6, 3], mask: [2, 1, 4, 1] },
  { name: 'mask [B, H, 1, Tk]: one row per head', q: [2, 3, 4, 5], k: [2, 3, 6, 5], v: [2, 3, 6, 3], mask: [2, 3, 1, 6] },
  {
    name: 'mask over non-adjacent leading axes [B, 1, H2, Tq, Tk]',
    q: [2, 2, 3, 4, 5],
    k: [2, 2, 3, 6, 5],
    v: [2, 2, 3, 6, 3],
    mask: [2, 1, 3, 4, 6],
  },
];

const inputs = (c: Case, dtype: DType): Tensor[] => {
  const xs = [rn(c.q, 1, dtype), rn(c.k, 2, dtype), rn(c.v, 3, dtype)];
  return c.mask ? [...xs, A.mul(rn(c.mask, 4, dtype), 0.5)] : xs;
};
const sdpa = (c: Case) => (q: Tensor, k: Tensor, v: Tensor, mask?: Tensor) =>
  A.scaledDotProductAttention(q, k, v, { causal: c.causal, mask });

describe('scaledDotProductAttention: forward against a float64 reference', () => {
  it.each(CASES)('$name', (c) => {
    A.tidy(() => {
      for (const [dtype, tol] of [
        ['float64', 1e-12],
        ['float32', 1e-5],
      ] as const) {
        const [q, k, v, mask] = inputs(c, dtype);
        const y = sdpa(c)(q, k, v, mask);
        const lead = y.shape.slice(0, -2);
        expect(y.shape).toEqual([...lead, c.q[c.q.length - 2], c.v[c.v.length - 1]]);
        expect(relErr(y.toArray(), reference(q, k, v, { causal: c.causal, mask }))).toBeLessThan(tol);
      }
    });
  });

  it('scale, −∞ entries in the mask, and a fully masked row (zeros, no NaN, zero gradient)', () => {
    A.tidy(() => {
      const q = rn([3, 4], 1),
        k = rn([5, 4], 2),
        v = rn([5, 2], 3);
      expect(relErr(A.scaledDotProductAttention(q, k, v, { scale: 0.3 }).toArray(), reference(q, k, v, { scale: 0.3 }))).toBeLessThan(
        1e-12,
      );
      const m = A.tensor(
        [
          [0, 0, -Infinity, 0, 0],
          [-Infinity, -Infinity, -Infinity, -Infinity, -Infinity],
          [0, -Infinity, 0, -Infinity, 0],
        ],
        { dtype: 'float64' },
      );
      q.requiresGrad = true;
      const y = A.scaledDotProductAttention(q, k, v, { mask: m });
      expect(Array.from(y.toArray()).slice(2, 4)).toEqual([0, 0]);
      const want = reference(q, k, v, { mask: m });
      expect(relErr(y.toArray(), want)).toBeLessThan(1e-12);
      A.sum(A.mul(y, rn([3, 2], 5))).backward();
      const g = Array.from(q.grad!.toArray());
      expect(g.every(Number.isFinite)).toBe(true);
      expect(g.slice(4, 8)).toEqual([0, 0, 0, 0]);
    });
  });
});

describe('scaledDotProductAttention: gradients and JVPs against the composed ops', () => {
  it.each(CASES.filter((c) => prod(c.k) < 3000))('$name', (c) => {
    A.tidy(() => {
      const xs = inputs(c, 'float64'),
        [q, k, v, mask] = xs;
      const w = rn([...sdpa(c)(q, k, v, mask).shape], 9);
      const fused = (q: Tensor, k: Tensor, v: Tensor, m = mask) => A.sum(A.mul(sdpa(c)(q, k, v, m), w));
      const comp = (q: Tensor, k: Tensor, v: Tensor, m = mask) => A.sum(A.mul(composed(q, k, v, { causal: c.causal, mask: m }), w));
      const argnums = xs.map((_, i) => i); // a float mask is differentiated too (summed over its broadcast axes)
      const g1 = A.grad(fused, { argnums })(...xs) as Tensor[];
      const g2 = A.grad(comp, { argnums })(...xs) as Tensor[];
      g1.forEach((g, i) => {
        expect(g.shape).toEqual(xs[i].shape);
        // (a mask constant along the keys has gradient 0: rounding noise, hence the floor)
        expect(relErr(g.toArray(), g2[i].toArray(), 1e-2), `input ${i}`).toBeLessThan(1e-10);
      });
      const ts = [rn(c.q, 11), rn(c.k, 12), rn(c.v, 13)];
      const j1 = A.jvp((q: Tensor, k: Tensor, v: Tensor) => sdpa(c)(q, k, v, mask), [q, k, v], ts)[1];
      const j2 = A.jvp((q: Tensor, k: Tensor, v: Tensor) => composed(q, k, v, { causal: c.causal, mask }), [q, k, v], ts)[1];
      expect(relErr(j1.toArray(), j2.toArray())).toBeLessThan(1e-10);
      // Forward over reverse: the JVP rule of the fused backward primitive.
      const h1 = A.hvp((q: Tensor) => fused(q, k, v), q, ts[0]),
        h2 = A.hvp((q: Tensor) => comp(q, k, v), q, ts[0]);
      expect(relErr(h1.toArray(), h2.toArray())).toBeLessThan(1e-10);
    });
  });

  it('float32 gradients agree with float64 to 1e-5', () => {
    A.tidy(() => {
      const c = CASES[11];
      const grads = (dtype: DType) => {
        const [q, k, v, mask] = inputs(c, dtype);
        const w = rn([2, 3, 4, 3], 9, dtype);
        return (
          A.grad((q: Tensor, k: Tensor, v: Tensor) => A.sum(A.mul(sdpa(c)(q, k, v, mask), w)), { argnums: [0, 1, 2] })(q, k, v) as Tensor[]
        ).map((g) => g.toArray());
      };
      const [a, b] = [grads('float32'), grads('float64')];
      a.forEach((g, i) => expect(relErr(g, b[i])).toBeLessThan(1e-5));
    });
  });
});

/** Central differences of f (scalar) at xs along every element, against grad: errors relative to the largest gradient. */
function gradcheckScaled(f: (...xs: Tensor[]) => Tensor, xs: Tensor[], tol: number): void {
  const analytic = (A.grad(f, { argnums: xs.map((_, i) => i) })(...xs) as Tensor[]).map((g) => g.toArray());
  const eps = 1e-6;
  xs.forEach((x, i) => {
    const base = x.toArray() as Float64Array,
      num = new Float64Array(x.size);
    for (let j = 0; j < x.size; j++) {
      const at = (h: number) =>
        A.tidy(() => {
          const vals = base.slice();
          vals[j] += h;
          return f(...xs.map((y, m) => (m === i ? A.tensor(vals, { shape: [...x.shape], dtype: 'float64' }) : y))).item();
        });
      num[j] = (at(eps) - at(-eps)) / (2 * eps);
    }
    expect(relErr(analytic[i], num), `input ${i}`).toBeLessThan(tol);
  });
}

describe('attention primitives: gradcheck (float64), first and second order, with dropout', () => {
  const [N, T, S, d, dv] = [2, 5, 7, 3, 4];
  it.each([
    { causal: false, dropoutP: 0 },
    { causal: true, dropoutP: 0 },
    { causal: false, dropoutP: 0.3 },
    { causal: true, dropoutP: 0.4 },
  ])('causal $causal, dropout $dropoutP', ({ causal, dropoutP }) => {
    A.tidy(() => {
      const p = { scale: 0.7, causal, dropoutP, seed: { value: [5, 0] as const, draw: () => [5, 0] as const }, lead: [N], mask: null };
      const q = rn([N, T, d], 1),
        k = rn([N, S, d], 2),
        v = rn([N, S, dv], 3),
        gy = rn([N, T, dv + 1], 4);
      // attention's packed [output, lse] against differences (both columns have cotangents here).
      gradcheckScaled((q, k, v) => A.sum(A.mul(apply('attention', [q, k, v], p), gy)), [q, k, v], 1e-8);
      // The fused backward primitive: its composed VJP, in every input (second order).
      const G = rn([N * (T * d + S * d + S * dv)], 6);
      const f = (q: Tensor, k: Tensor, v: Tensor, g: Tensor) =>
        A.sum(A.mul(apply('attentionGrad', [q, k, v, apply('attention', [q, k, v], p), g], p), G));
      gradcheckScaled(f, [q, k, v, gy], 1e-8);
      // … and its composed JVP against a difference along one direction.
      const ts = [rn([N, T, d], 7), rn([N, S, d], 8), rn([N, S, dv], 9), rn([N, T, dv + 1], 10)];
      const jt = A.jvp(f, [q, k, v, gy], ts)[1].item();
      const along = (h: number) =>
        f(...([q, k, v, gy].map((x, i) => A.add(x, A.mul(ts[i], h))) as [Tensor, Tensor, Tensor, Tensor])).item();
      expect(Math.abs(jt - (along(1e-6) - along(-1e-6)) / 2e-6)).toBeLessThan(1e-7 * Math.max(1, Math.abs(jt)));
    });
  });
});

describe('scaledDotProductAttention: dropout', () => {
  it("is seeded, replayed by the backward pass, and matches P∘Z·v with the kernels' own factors", () => {
    A.tidy(() => {
      const [N, T, d] = [3, 40, 8],
        p = 0.25;
      const q = rn([N, T, d], 1),
        k = rn([N, T, d], 2),
        v = rn([N, T, d], 3);
      const run = (seed: number) => A.scaledDotProductAttention(q, k, v, { dropoutP: p, seed });
      expect(Array.from(run(7).toArray())).toEqual(Array.from(run(7).toArray()));
      expect(relErr(run(7).toArray(), run(8).toArray())).toBeGreaterThan(1e-3);
      // Against softmax(q kᵀ/√d)∘Z·v with Z the kernels' factors for seed 7 (element (n·T + i)·T + j).
      const z = A.zeros([N, T, T], { dtype: 'float64' });
      kernel('attention_dropout_f64')(z.ptr, 0, N, T, T, 7, 0, p);
      const zs = new Set(Array.from(z.toArray()));
      expect([...zs].sort()).toEqual([0, 1 / (1 - p)]);
      const want = A.matmul(A.mul(A.softmax(A.mul(A.matmul(q, A.transpose(k, [0, 2, 1])), 1 / Math.sqrt(d)), -1), z), v);
      expect(relErr(run(7).toArray(), want.toArray())).toBeLessThan(1e-12);
      // The composed JVP rule (same factors) against differences of the fused forward.
      const t = rn([N, T, d], 4);
      const f = (q: Tensor) => A.sum(A.square(A.scaledDotProductAttention(q, k, v, { dropoutP: p, seed: 7 })));
      const an = A.jvp(f, [q], [t])[1].item();
      const along = (h: number) => f(A.add(q, A.mul(t, h))).item();
      expect(Math.abs(an - (along(1e-6) - along(-1e-6)) / 2e-6)).toBeLessThan(1e-7 * Math.max(1, Math.abs(an)));
      gradcheckScaled((v: Tensor) => A.sum(A.square(A.scaledDotProductAttention(q, k, v, { dropoutP: p, seed: 7 }))), [v], 1e-8);
    });
  });

  it('drops about a fraction p of the weights', () => {
    A.tidy(() => {
      // With v = I and q = k = 0, every weight is 1/T: output column j is Z_ij / T.
      const [T, p] = [64, 0.3];
      const eye = A.tensor(
        Array.from({ length: T * T }, (_, i) => (i % (T + 1) === 0 ? 1 : 0)),
        { shape: [T, T], dtype: 'float64' },
      );
      const y = A.scaledDotProductAttention(A.zeros([T, 4], { dtype: 'float64' }), A.zeros([T, 4], { dtype: 'float64' }), eye, {
        dropoutP: p,
        seed: 3,
      }).toArray();
      const vals = new Set(Array.from(y, (x) => Math.round(x * T * (1 - p) * 1e9) / 1e9));
      expect([...vals].sort()).toEqual([0, 1]);
      const dropped = Array.from(y).filter((x) => x === 0).length / y.length;
      expect(Math.abs(dropped - p)).toBeLessThan(0.03);
    });
  });
});

describe('scaledDotProductAttention: bad input', () => {
  const q = () => rn([2, 4, 3], 1),
    k = () => rn([2, 5, 3], 2),
    v = () => rn([2, 5, 6], 3);
  it.each([
    [
      'a mask that does not broadcast',
      () => A.scaledDotProductAttention(q(), k(), v(), { mask: rn([3, 5], 4) }),
      /mask of shape \[3,5\] does not broadcast to the attention weights' shape \[2,4,5\]/,
    ],
    [
      'q and k with different d',
      () => A.scaledDotProductAttention(q(), rn([2, 5, 4], 2), v()),
      /q \[2,4,3\] and k \[2,5,4\] must share the last axis/,
    ],
    [
      'k and v with different key counts',
      () => A.scaledDotProductAttention(q(), k(), rn([2, 6, 6], 3)),
      /k \[2,5,3\] and v \[2,6,6\] must have the same number of keys/,
    ],
    [
      'leading axes that do not broadcast',
      () => A.scaledDotProductAttention(rn([3, 4, 3], 1), k(), v()),
      /leading axes of q \[3,4,3\], k \[2,5,3\] and v \[2,5,6\] do not broadcast/,
    ],
    ['a 1-D operand', () => A.scaledDotProductAttention(rn([3], 1), k(), v()), /q must be at least 2-D/],
    ['mixed dtypes', () => A.scaledDotProductAttention(q(), k(), A.randn([2, 5, 6], { seed: 3 })), /q is float64 but v is float32/],
    ['dropoutP = 1', () => A.scaledDotProductAttention(q(), k(), v(), { dropoutP: 1 }), /dropoutP must be a number in \[0, 1\)/],
  ])('%s', (_name, f, msg) => {
    A.tidy(() => expect(f).toThrow(msg));
  });
  it('causal with Tq ≠ Tk is allowed', () => {
    A.tidy(() => expect(A.scaledDotProductAttention(q(), k(), v(), { causal: true }).shape).toEqual([2, 4, 6]));
  });
});

describe('scaledDotProductAttention: threads', () => {
  const saved = { ...thresholds },
    pauseMs = busy.pauseMs;
  beforeAll(() => {
    thresholds.gemm = 0;
    busy.pauseMs = 0;
  });
  afterAll(async () => {
    Object.assign(thresholds, saved);
    busy.pauseMs = pauseMs;
    await A.init({ threads: 1 });
  });

  // 'float32 fast': no dropout and dv = 8, so float32 takes the register-blocked kernels (attention-f32.ts).
  const run = (kind: DType | 'float32 fast'): Tensor[] => {
    const dtype: DType = kind === 'float32 fast' ? 'float32' : kind,
      dv = kind === 'float32 fast' ? 8 : 6;
    const q = rn([2, 3, 140, 8], 1, dtype),
      k = rn([2, 3, 150, 8], 2, dtype),
      v = rn([2, 3, 150, dv], 3, dtype); // several blocks and tiles
    for (const x of [q, k, v]) x.requiresGrad = true;
    const dropoutP = kind === 'float32 fast' ? 0 : 0.2;
    const y = A.scaledDotProductAttention(q, k, v, { causal: true, mask: rn([2, 1, 140, 150], 4, dtype), dropoutP, seed: 9 });
    A.sum(A.mul(y, rn([2, 3, 140, dv], 5, dtype))).backward();
    return [y, q.grad!, k.grad!, v.grad!];
  };
  it.each(['float32', 'float64', 'float32 fast'] as const)(
    'forward and backward give the same bytes with 1, 2 and 3 threads (%s)',
    async (dtype) => {
      const digests: string[] = [];
      for (const t of [1, 2, 3]) {
        await A.init({ threads: t });
        expect(threadCount()).toBe(t);
        const d0 = threadStats.dispatches;
        digests.push(
          A.tidy(() => {
            const h = createHash('sha256');
            for (const x of run(dtype)) h.update(x.toArray());
            return h.digest('hex');
          }),
        );
        if (t > 1) expect(threadStats.dispatches).toBeGreaterThan(d0);
      }
      expect(digests[1]).toBe(digests[0]);
      expect(digests[2]).toBe(digests[0]);
    },
    60_000,
  );
});
