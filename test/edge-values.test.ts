// Values at the edges of ops' domains, each against PyTorch 1.13 (the value in the comment) or a
// closed form: NaN through relu, infinities through logsumexp, large logits through logSoftmax,
// pow's derivatives at 0 to several orders, max's gradient at a NaN, empty 'mean' losses, and
// the extra arguments of jacrev / jacfwd / hessian. Each of these once returned another number.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';

await A.init();
const t = (v: number | number[] | number[][]) => A.tensor(v, f64);
type F = (x: Tensor) => Tensor;
/** d^n/dx^n of a scalar function of one element, by nested grad. */
const nthGrad = (f: F, n: number): F => (n === 0 ? f : (A.grad((x: Tensor) => A.sum(nthGrad(f, n - 1)(x))) as F));

describe('relu keeps NaN', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`relu([NaN, -1, 2]) is [NaN, 0, 2] in ${dtype}, as torch.relu`, () => {
      expect(arr(A.relu(A.tensor([Number.NaN, -1, 2, -0, 0.5], { dtype })))).toEqual([Number.NaN, 0, 2, 0, 0.5]);
    });
  }

  it('the fused dense layer (gemm + bias + relu, as compile() builds it) keeps a NaN too', () => {
    const lin = new A.nn.Linear(2, 3, { seed: 0 });
    const f = A.compile((x: Tensor) => A.relu(lin.forward(x)));
    const x = A.tensor([
      [Number.NaN, 1],
      [1, 1],
    ]);
    const eager = arr(A.relu(lin.forward(x)));
    const compiled = arr(f(x) as Tensor);
    expect(compiled.slice(0, 3)).toEqual([Number.NaN, Number.NaN, Number.NaN]);
    expect(compiled).toEqual(eager);
    lin.dispose();
  });
});

describe('logsumexp and logSoftmax at infinities and large logits', () => {
  it('a row of −∞ gives −∞; a row with +∞ gives +∞ (torch.logsumexp)', () => {
    const inf = Number.POSITIVE_INFINITY;
    expect(
      arr(
        A.logsumexp(
          t([
            [-inf, -inf],
            [0, -inf],
          ]),
          1,
        ),
      ),
    ).toEqual([-inf, 0]);
    expect(
      arr(
        A.logsumexp(
          t([
            [inf, 1],
            [inf, inf],
            [inf, -inf],
          ]),
          1,
        ),
      ),
    ).toEqual([inf, inf, inf]);
    expect(arr(A.logsumexp(t([[Number.NaN, 1]]), 1))).toEqual([Number.NaN]);
  });

  it('an empty axis gives −∞, keeping the other axes', () => {
    const x = A.zeros([2, 0], f64);
    expect(A.logsumexp(x, 1).shape).toEqual([2]);
    expect(arr(A.logsumexp(x, 1))).toEqual([-Infinity, -Infinity]);
    expect(A.logsumexp(x, 1, true).shape).toEqual([2, 1]);
  });

  it('finite rows keep their value and gradient (softmax)', () => {
    const x = t([[1, 2, 3]]);
    close(arr(A.logsumexp(x, 1)), [Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3))], 1e-15);
    const g = A.grad((z: Tensor) => A.sum(A.logsumexp(z, 1)))(x) as Tensor;
    const s = Math.exp(1) + Math.exp(2) + Math.exp(3);
    close(arr(g), [Math.exp(1) / s, Math.exp(2) / s, Math.exp(3) / s], 1e-15);
  });

  it('logSoftmax of logits near 1e4 keeps their differences in float32 (torch.log_softmax)', () => {
    // PyTorch 1.13, float32: log_softmax([1e4, 1e4 - 1, -1e4]) = [-0.31326166, -1.3132616, -20000.312]
    const y = arr(A.logSoftmax(A.tensor([1e4, 1e4 - 1, -1e4])));
    close(y.slice(0, 2), [-0.31326166, -1.3132616], 1e-7);
    const z = arr(A.logSoftmax(A.tensor([300, 299, 0])));
    close(z.slice(0, 2), [-0.31326166, -1.3132616], 1e-7);
    // F.cross_entropy([[1e4, 1e4 - 1]], [0]) = 0.31326166 (the fused kernel, same order)
    close([A.crossEntropy(A.tensor([[1e4, 1e4 - 1]]), [0]).item()], [0.31326166], 1e-7);
  });
});

describe("pow's derivatives where the plain formula gives 0·∞", () => {
  it('d/dx x⁰ = 0 at x = 0 (PyTorch 0), and elsewhere', () => {
    const g = A.grad((x: Tensor) => A.sum(A.pow(x, 0)))(t([0, 2])) as Tensor;
    expect(arr(g)).toEqual([0, 0]);
  });

  it('d/db 0ᵇ = 0 for b ≥ 0 (PyTorch 0), ln a · aᵇ elsewhere', () => {
    const g = A.grad((b: Tensor) => A.sum(A.pow(t([0, 0, 2]), b)))(t([2, 0.5, 3])) as Tensor;
    close(arr(g), [0, 0, 8 * Math.log(2)], 1e-15);
  });

  it('higher derivatives of xⁿ at 0 follow n!/(n−k)!·x^(n−k), 0 past the n-th', () => {
    const z = t([0]);
    for (const [n, k, want] of [
      [1, 2, 0],
      [2, 2, 2],
      [2, 3, 0],
      [3, 3, 6],
      [3, 4, 0],
    ] as const) {
      expect(arr(nthGrad((x: Tensor) => A.pow(x, n), k)(z)), `d^${k}/dx^${k} x^${n}`).toEqual([want]);
    }
    expect(arr(A.hessian((x: Tensor) => A.sum(A.pow(x, 1)))(z))).toEqual([0]);
  });

  it('forward mode agrees: jvp of x⁰ and of 0ᵇ are 0', () => {
    expect(arr(A.jvp((x: Tensor) => A.pow(x, 0), [t([0])], [t([1])])[1])).toEqual([0]);
    expect(arr(A.jvp((b: Tensor) => A.pow(t([0]), b), [t([2])], [t([1])])[1])).toEqual([0]);
  });
});

describe("max's gradient at a NaN", () => {
  it('goes to the NaN, as PyTorch gives [0, 1, 0] for x.max() of [1, NaN, 3]', () => {
    const g = A.grad((x: Tensor) => A.max(x))(t([1, Number.NaN, 3])) as Tensor;
    expect(arr(g)).toEqual([0, 1, 0]);
  });

  it('ties without NaN still share it evenly, row by row', () => {
    const g = A.grad((x: Tensor) => A.sum(A.max(x, 1)))(
      t([
        [2, 2, 1],
        [0, Number.NaN, Number.NaN],
      ]),
    ) as Tensor;
    expect(arr(g)).toEqual([0.5, 0.5, 0, 0, 0.5, 0.5]);
  });
});

describe("'mean' losses of an empty batch", () => {
  it('are NaN (0/0), as PyTorch 1.13 gives', () => {
    expect(A.crossEntropy(A.zeros([0, 3]), []).item()).toBeNaN();
    expect(A.crossEntropy(A.zeros([0, 3]), [], { labelSmoothing: 0.1 }).item()).toBeNaN();
    expect(A.mseLoss(A.zeros([0]), A.zeros([0])).item()).toBeNaN();
    expect(A.crossEntropy(A.zeros([0, 3]), [], { reduction: 'sum' }).item()).toBe(0);
  });
});

describe('jacrev, jacfwd and hessian pass the arguments after x to f', () => {
  const f = (x: Tensor, c: Tensor) => A.mul(c, A.mul(x, x));
  it('differentiating in x only, as JAX does with argnums = 0', () => {
    const x = t([1, 2]),
      c = t(3);
    expect(arr(A.jacrev(f)(x, c))).toEqual([6, 0, 0, 12]);
    expect(arr(A.jacfwd(f)(x, c))).toEqual([6, 0, 0, 12]);
    expect(arr(A.hessian((z: Tensor, k: Tensor) => A.sum(f(z, k)))(x, c))).toEqual([6, 0, 0, 6]);
  });

  it('at a pytree x too', () => {
    const g = (p: { a: Tensor }, c: Tensor) => A.mul(c, A.mul(p.a, p.a));
    const j = A.jacrev(g)({ a: t([1, 2]) }, t(3)) as { a: Tensor };
    expect(arr(j.a)).toEqual([6, 0, 0, 12]);
  });
});

describe('forward mode through where', () => {
  it('a select of constants has a zero tangent (once a TypeError)', () => {
    const x = t([0.3, -0.7, 1.1]);
    const [, tan] = A.jvp((z: Tensor) => A.where(A.gt(z, 0), t([1, 2, 3]), t([4, 5, 6])), [x], [x]);
    expect(arr(tan)).toEqual([0, 0, 0]);
  });

  it('the Hessian of Σ where(x > 0, x², sin x) is diag(2, −sin x, 2)', () => {
    const x = t([0.3, -0.7, 1.1]);
    const h = A.hessian((z: Tensor) => A.sum(A.where(A.gt(z, 0), A.mul(z, z), A.sin(z))))(x);
    close(arr(h), [2, 0, 0, 0, -Math.sin(-0.7), 0, 0, 0, 2], 1e-15);
  });
});

describe('long float32 sums', () => {
  // 0.1 summed n times, against n·fround(0.1) in float64: one running sum per lane was off by
  // 0.24 % at n = 10⁶ and 4.4 % at 2·10⁷; PyTorch's cascade sum is within about 1e-6.
  it('a row of 10⁶ values (a full sum, mean) is within 1e-5 relative', () => {
    for (const n of [1025, 100_000, 1_000_000]) {
      const want = n * Math.fround(0.1);
      const x = A.full([n], 0.1);
      expect(Math.abs(A.sum(x).item() - want) / want, `n = ${n}`).toBeLessThan(1e-5);
      expect(Math.abs(A.mean(x).item() - Math.fround(0.1)) / 0.1).toBeLessThan(1e-5);
      x.dispose();
    }
  });

  it('columns of 10⁵ rows (sum over axis 0) are within 3e-5 relative', () => {
    const n = 100_000,
      want = n * Math.fround(0.1);
    const s = arr(A.sum(A.full([n, 5], 0.1), 0));
    for (const v of s) expect(Math.abs(v - want) / want).toBeLessThan(3e-5);
  });

  it('up to 1024 rows a column is still one running sum, bit for bit (the blocking changes no shorter sum)', () => {
    const x = A.randn([1024], { seed: 3 });
    const y = A.randn([1024, 3], { seed: 4 });
    // Summed by the same kernel call as before the blocking: a float64 reference bounds it.
    const ref = arr(x).reduce((a, b) => a + b, 0);
    expect(Math.abs(A.sum(x).item() - ref)).toBeLessThan(1e-4);
    const cols = arr(A.sum(y, 0));
    const v = arr(y);
    for (let c = 0; c < 3; c++) {
      let s = 0;
      for (let r = 0; r < 1024; r++) s = Math.fround(s + v[r * 3 + c]); // one running f32 sum per column: the unblocked order
      expect(cols[c]).toBe(s);
    }
  });
});

describe('wide softmax rows', () => {
  it('softmax of 10⁵ equal logits sums to 1 within 2e-6 in float32 (PyTorch 1.0000001)', () => {
    expect(Math.abs(A.sum(A.softmax(A.zeros([100_000]))).item() - 1)).toBeLessThan(2e-6);
  });

  it('the fused cross-entropy equals −logSoftmax at the label, bit for bit, past the pairwise split (3000 classes)', () => {
    const x = A.randn([4, 3000], { seed: 5 });
    const labels = [0, 1234, 2999, 1024];
    const fused = arr(A.crossEntropy(x, labels, { reduction: 'none' }));
    const ls = arr(A.logSoftmax(x));
    expect(fused).toEqual(labels.map((l, r) => -ls[r * 3000 + l]));
  });
});

describe('vmap over a size-0 axis', () => {
  // Shapes as JAX gives them and as the unmapped ops give for N = 0 (once [0, 4, 0] and NaN shapes).
  it('a shared A times mapped Bs is [0, 4, 3]', () => {
    const y = A.vmap((a: Tensor, b: Tensor) => A.matmul(a, b), { inAxes: [null, 0] })(A.randn([4, 5], { seed: 1 }), A.zeros([0, 5, 3]));
    expect(y.shape).toEqual([0, 4, 3]);
    const z = A.vmap((b: Tensor) => A.matmul(b, A.randn([5, 3], { seed: 2 })))(A.zeros([0, 4, 5]));
    expect(z.shape).toEqual([0, 4, 3]);
  });

  it('conv2d, pooling and attention keep their per-example shapes', () => {
    const xs = A.zeros([0, 1, 2, 5, 5]);
    const w = A.randn([3, 2, 3, 3], { seed: 3 });
    expect(A.vmap((x: Tensor) => A.conv2d(x, w))(xs).shape).toEqual([0, 1, 3, 3, 3]);
    expect(A.vmap((x: Tensor) => A.maxPool2d(x, 2))(xs).shape).toEqual([0, 1, 2, 2, 2]);
    expect(A.vmap((x: Tensor) => A.avgPool2d(x, 2))(xs).shape).toEqual([0, 1, 2, 2, 2]);
    const q = A.zeros([0, 3, 4]);
    expect(A.vmap((t: Tensor) => A.scaledDotProductAttention(t, t, t))(q).shape).toEqual([0, 3, 4]);
  });
});

describe('data.permutation seeds', () => {
  it('distinct seeds give distinct orders, negative and large ones included (s and −(s + 1) collided)', () => {
    const P = (s: number) => Array.from(A.data.permutation(50, s)).join();
    for (const [a, b] of [
      [0, -1],
      [5, -6],
      [1, 2 ** 32],
      [0, 2 ** 32 + 1],
      [-1, -2],
    ]) {
      expect(P(a), `${a} against ${b}`).not.toBe(P(b));
    }
    expect(P(-7)).toBe(P(-7));
  });
});

describe('int32 attention masks are boolean: any nonzero entry is true, as a PyTorch bool mask', () => {
  // Entries other than 0/1 scaled the softmax weights (log of the entry) or zeroed whole rows.
  const q = () => t([[1, 0]]),
    k = () =>
      t([
        [1, 0],
        [0, 1],
      ]),
    v = () =>
      t([
        [10, 0],
        [0, 10],
      ]);
  const sdpa = (m: number[][]) => arr(A.scaledDotProductAttention(q(), k(), v(), { mask: A.tensor(m, { dtype: 'int32' }) }));
  it('scaledDotProductAttention: [2, 1], [−1, 1] and [1, 2] attend everywhere (6.6976, 3.3024 in PyTorch)', () => {
    const all = sdpa([[1, 1]]);
    close(all, [6.697615493266569, 3.302384506733431], 1e-12);
    for (const m of [[[2, 1]], [[-1, 1]], [[1, 2]], [[1, -7]]]) expect(sdpa(m)).toEqual(all);
    close(sdpa([[3, 0]]), [10, 0], 1e-12);
  });
  it('MultiheadAttention: an attnMask entry of 2 or −1 masks as 1 does', () => {
    const mha = new A.nn.MultiheadAttention(4, 2, { dtype: 'float64', seed: 3 } as never);
    const x = A.randn([1, 3, 4], { ...f64, seed: 4 });
    const run = (m: number[][]) => arr(mha.forward(x, x, x, { attnMask: A.tensor(m, { dtype: 'int32' }) }) as Tensor);
    const base = run([
      [0, 1, 1],
      [0, 0, 1],
      [0, 0, 0],
    ]);
    expect(
      run([
        [0, 2, -1],
        [0, 0, 5],
        [0, 0, 0],
      ]),
    ).toEqual(base);
  });
});

describe('maximum and minimum at ties and NaN; a +∞ logit', () => {
  it('a tie splits the gradient evenly, a NaN passes it to both (PyTorch 1.13 values), and jvp agrees', () => {
    const a = t([1, 2, Number.NaN, 0, 3]),
      b = t([1, 1, 0, Number.NaN, 5]);
    const g = (op: typeof A.maximum) =>
      (A.grad((x: Tensor, y: Tensor) => A.sum(op(x, y)), { argnums: [0, 1] }) as (x: Tensor, y: Tensor) => Tensor[])(a, b).map(arr);
    expect(g(A.maximum)).toEqual([
      [0.5, 1, 1, 1, 0],
      [0.5, 0, 1, 1, 1],
    ]);
    expect(g(A.minimum)).toEqual([
      [0.5, 0, 1, 1, 1],
      [0.5, 1, 1, 1, 0],
    ]);
    const jv = (op: typeof A.maximum) =>
      arr(A.jvp((x: Tensor, y: Tensor) => op(x, y), [a, b], [t([1, 1, 1, 1, 1]), t([10, 10, 10, 10, 10])])[1]);
    expect(jv(A.maximum)).toEqual([5.5, 1, 10, 10, 10]);
    expect(jv(A.minimum)).toEqual([5.5, 10, 10, 10, 1]);
  });
  it('logSoftmax and crossEntropy of a row with a +∞ logit are NaN, as softmax and PyTorch', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      const x = A.tensor(
        [
          [Number.POSITIVE_INFINITY, 0, 1],
          [1, 2, 3],
        ],
        { dtype },
      );
      expect(arr(A.logSoftmax(x)).slice(0, 3).every(Number.isNaN)).toBe(true);
      close(
        arr(A.logSoftmax(x)).slice(3),
        [-2.4076059644443806, -1.4076059644443804, -0.4076059644443804],
        dtype === 'float32' ? 1e-7 : 1e-15,
      );
      const ce = arr(A.crossEntropy(x, [1, 2], { reduction: 'none' }));
      expect(Number.isNaN(ce[0])).toBe(true);
      close([ce[1]], [0.4076059644443804], dtype === 'float32' ? 1e-7 : 1e-15);
      // a row of −∞ stays NaN too, and a −∞ entry beside finite ones is −∞
      expect(arr(A.logSoftmax(A.tensor([Number.NEGATIVE_INFINITY, 0], { dtype })))).toEqual([Number.NEGATIVE_INFINITY, 0]);
    }
  });
});

describe('float64 sums are compensated', () => {
  // A plain lane-wise sum lost 250 ulp on [1, 1000 × 2⁻⁵³] and 13–60 ulp on harmonic series
  // (references: Python's math.fsum, correctly rounded).
  const harmonic = Array.from({ length: 999 }, (_, k) => 1 / (k + 1));
  const alternating = Array.from({ length: 1000 }, (_, k) => (k % 2 === 0 ? -1 : 1) / (k + 1));
  it('rows and columns are correctly rounded on cancellation-prone data; ±∞ and NaN pass through', () => {
    const tiny = [1, ...new Array<number>(1000).fill(2 ** -53)];
    expect(A.sum(t(tiny)).item()).toBe(1.000000000000111);
    expect(A.sum(t(harmonic)).item()).toBe(7.484470860550345);
    expect(A.sum(t(alternating)).item()).toBe(-0.6926474305598203);
    expect(A.mean(t(alternating)).item()).toBe(-0.6926474305598203 / 1000);
    // the same values down a column (strided sums), next to a second column
    const cols = A.tensor(
      alternating.map((v) => [v, 2 * v]),
      f64,
    );
    expect(arr(A.sum(cols, 0))).toEqual([-0.6926474305598203, -0.6926474305598203 * 2]);
    expect(A.sum(t([1, Number.POSITIVE_INFINITY, 3])).item()).toBe(Number.POSITIVE_INFINITY);
    expect(A.sum(t([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])).item()).toBeNaN();
    expect(A.sum(t([1e308, 1e308, 1])).item()).toBe(Number.POSITIVE_INFINITY);
    expect(
      arr(
        A.sum(
          A.tensor(
            [
              [1, Number.NaN],
              [Number.POSITIVE_INFINITY, 2],
            ],
            f64,
          ),
          0,
        ),
      ),
    ).toEqual([Number.POSITIVE_INFINITY, Number.NaN]);
  });
  it('over axes that are not adjacent, in one compensated pass (run by run gave 0 where the sum is 2)', () => {
    const x = A.tensor([1e16, 1, 0, 0, -1e16, 1, 0, 0], { shape: [2, 2, 2], dtype: 'float64' });
    expect(arr(A.sum(x, [0, 2]))).toEqual([2, 0]);
    expect(arr(A.mean(x, [0, 2]))).toEqual([0.5, 0]);
    expect(arr(A.sum(x, [0, 2], true))).toEqual([2, 0]);
    expect(A.sum(x, [0, 2], true).shape).toEqual([1, 2, 1]);
    const y = A.tensor([1e16, 1, -1e16, 1], { shape: [2, 1, 2], dtype: 'float64' });
    expect(arr(A.sum(y, [0, 2]))).toEqual([2]);
  });
  it('softmax, logSoftmax and layerNorm rows use the same compensated sums (the fused cross-entropy stays equal to −logSoftmax)', () => {
    const x = t(alternating.map((v, k) => v * 30 + (k % 7)));
    const ce = A.crossEntropy(A.reshape(x, [1, 1000]), [3], { reduction: 'none' }).item();
    expect(ce).toBe(-arr(A.logSoftmax(x))[3]);
    expect(A.sum(A.softmax(x)).item()).toBeCloseTo(1, 15);
  });
});
