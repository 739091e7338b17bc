// Every row of the op spec table through the same checks: forward against the float64 JS
// reference, gradcheck in float64, float32 against float64 (value and gradient), kernel tails
// at sizes 0, 1, 3, 4, 5, 16, 17, broadcasting in every binary op; then fan-out.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';
import * as R from './ref.js';
import { SPECS, values, tensors, nds, weights, relErr, type OpSpec } from './specs.js';

beforeAll(() => A.init());

const FWD_RTOL = 1e-12;
const GRAD_RTOL = 1e-7;
const F32_RTOL = 1e-4;
const TAILS = [0, 1, 3, 4, 5, 16, 17];
const worst = { rel: 0, name: '' };

afterAll(() => {
  console.log(
    `ops covered by the table: ${new Set(SPECS.map((s) => s.name.split(' ')[0].replace(/\(.*/, ''))).size}, rows: ${SPECS.length}`,
  );
  console.log(`worst gradcheck rel error over the table: ${worst.rel.toExponential(3)} (${worst.name})`);
});

/** The scalar L(xs) = Σ f(xs)·W (W fixed ±[0.5, 1.5)): every output element weighs on the gradient. */
function projected(f: (...xs: Tensor[]) => Tensor, dtype: DType): (...xs: Tensor[]) => Tensor {
  let w: Tensor | null = null;
  return (...xs) => {
    const y = f(...xs);
    w ??= A.keep(weights(y.shape, dtype));
    return A.sum(A.mul(y, w));
  };
}

function gradsOf(f: (...xs: Tensor[]) => Tensor, xs: Tensor[]): Float64Array[] {
  const gs = A.grad(f, { argnums: xs.map((_, i) => i) })(...xs) as Tensor[];
  return gs.map((g) => Float64Array.from(g.toArray()));
}

/** gradcheck of one row at given shapes; returns the max rel error and folds it into `worst`. */
function check(spec: OpSpec, shapes: number[][], label: string, salt = 0): number {
  return A.tidy(() => {
    const xs = tensors(values(spec, shapes, salt), shapes, 'float64');
    const r = A.gradcheck(projected(spec.f, 'float64'), xs);
    if (r.maxRelError > worst.rel) Object.assign(worst, { rel: r.maxRelError, name: label });
    return r.maxRelError;
  });
}

describe.each(SPECS.map((s) => [s.name, s] as const))('%s', (_name, spec) => {
  it('forward (float64) matches the JS reference', () => {
    A.tidy(() => {
      const vals = values(spec);
      const y = spec.f(...tensors(vals, spec.shapes, 'float64'));
      const e = spec.ref(...nds(vals, spec.shapes));
      expect(y.shape).toEqual(e.shape);
      expect(y.dtype).toBe('float64');
      expect(relErr(y.toArray(), e.data)).toBeLessThan(FWD_RTOL);
    });
  });

  it('gradcheck (float64)', () => {
    expect(check(spec, spec.shapes, spec.name)).toBeLessThan(GRAD_RTOL);
  });

  it('float32 forward and gradient match float64', () => {
    A.tidy(() => {
      const vals = values(spec);
      const [x32, x64] = [tensors(vals, spec.shapes, 'float32'), tensors(vals, spec.shapes, 'float64')];
      const y32 = spec.f(...x32),
        y64 = spec.f(...x64);
      expect(y32.dtype).toBe('float32');
      expect(relErr(y32.toArray(), y64.toArray())).toBeLessThan(F32_RTOL);
      const g32 = gradsOf(projected(spec.f, 'float32'), x32),
        g64 = gradsOf(projected(spec.f, 'float64'), x64);
      g64.forEach((g, i) => expect(relErr(g32[i], g)).toBeLessThan(F32_RTOL));
    });
  });

  if (spec.kind !== undefined) {
    it.each(TAILS)('kernel tail at size %i (forward f32/f64, gradcheck)', (n) => {
      const shapes = spec.shapes.map(() => [n]);
      const vals = values(spec, shapes, n);
      const e = spec.ref(...nds(vals, shapes));
      A.tidy(() => {
        for (const dtype of ['float64', 'float32'] as const) {
          const y = spec.f(...tensors(vals, shapes, dtype));
          expect(y.shape).toEqual([n]);
          expect(relErr(y.toArray(), e.data)).toBeLessThan(dtype === 'float64' ? FWD_RTOL : 1e-6);
        }
      });
      expect(check(spec, shapes, `${spec.name} [${n}]`, n)).toBeLessThan(GRAD_RTOL);
    });
  }

  if (spec.kind === 'binary') {
    it.each([
      [
        [3, 1],
        [1, 4],
      ],
      [[4], [2, 3, 4]],
      [
        [2, 3, 4],
        [3, 1],
      ],
      [[], [3, 4]],
      [[3, 4], []],
    ])('broadcasts [%s] with [%s]', (sa, sb) => {
      const shapes = [sa, sb];
      const vals = values(spec, shapes, 1);
      A.tidy(() => {
        const y = spec.f(...tensors(vals, shapes, 'float64'));
        const e = spec.ref(...nds(vals, shapes));
        expect(y.shape).toEqual(R.broadcastShape(sa, sb));
        expect(relErr(y.toArray(), e.data)).toBeLessThan(FWD_RTOL);
      });
      expect(check(spec, shapes, `${spec.name} [${sa}]x[${sb}]`, 1)).toBeLessThan(GRAD_RTOL);
    });

    it('takes a number operand on either side', () => {
      const [[u], [v]] = values(spec, [[1], [1]], 2); // in each operand's domain
      const vals = values(
        spec,
        [
          [2, 3],
          [2, 3],
        ],
        3,
      );
      A.tidy(() => {
        const a = A.tensor(vals[0], { shape: [2, 3], dtype: 'float64' });
        const b = A.tensor(vals[1], { shape: [2, 3], dtype: 'float64' });
        const left = spec.f(a, v as unknown as Tensor),
          right = spec.f(u as unknown as Tensor, b);
        expect(left.dtype).toBe('float64');
        expect(relErr(left.toArray(), spec.ref(R.nd([2, 3], vals[0]), R.scalar(v)).data)).toBeLessThan(FWD_RTOL);
        expect(relErr(right.toArray(), spec.ref(R.scalar(u), R.nd([2, 3], vals[1])).data)).toBeLessThan(FWD_RTOL);
        const ga = (A.grad((x: Tensor) => A.sum(spec.f(x, v as unknown as Tensor)))(a) as Tensor).toArray();
        const gb = (A.grad((x: Tensor) => A.sum(spec.f(u as unknown as Tensor, x)))(b) as Tensor).toArray();
        const ta = A.gradcheck((x) => A.sum(spec.f(x, v as unknown as Tensor)), [a]);
        const tb = A.gradcheck((x) => A.sum(spec.f(u as unknown as Tensor, x)), [b]);
        expect(ta.maxRelError).toBeLessThan(GRAD_RTOL);
        expect(tb.maxRelError).toBeLessThan(GRAD_RTOL);
        expect(ga.length + gb.length).toBe(12);
      });
    });
  }
});

describe('fan-out: one value feeding several consumers', () => {
  it('x*x + sin(x) has gradient 2x + cos(x)', () => {
    A.tidy(() => {
      const xs = [0.3, -1.1, 2.0, 0.7, -0.2];
      const x = A.tensor(xs, { dtype: 'float64', requiresGrad: true });
      A.sum(A.add(A.mul(x, x), A.sin(x))).backward();
      expect(
        relErr(
          x.grad!.toArray(),
          xs.map((v) => 2 * v + Math.cos(v)),
        ),
      ).toBeLessThan(1e-15);
    });
  });

  it('a diamond (t = tanh x used by three ops) accumulates every path', () => {
    A.tidy(() => {
      const xs = [0.5, -0.4, 1.3];
      const x = A.tensor(xs, { dtype: 'float64', requiresGrad: true });
      const t = A.tanh(x);
      A.sum(A.add(A.add(A.mul(t, t), A.exp(t)), A.mul(t, x))).backward();
      const expected = xs.map((v) => {
        const th = Math.tanh(v),
          dt = 1 - th * th;
        return (2 * th + Math.exp(th) + v) * dt + th;
      });
      expect(relErr(x.grad!.toArray(), expected)).toBeLessThan(1e-14);
    });
  });

  it('the same tensor as both operands of add, mul, div and matmul', () => {
    A.tidy(() => {
      const x = A.tensor(
        [
          [1.5, -0.5],
          [0.25, 2],
        ],
        { dtype: 'float64', requiresGrad: true },
      );
      const y = A.add(A.add(A.sum(A.add(x, x)), A.sum(A.mul(x, x))), A.add(A.sum(A.div(x, x)), A.sum(A.matmul(x, x))));
      y.backward();
      // d/dx [Σ2x + Σx² + Σ1 + Σ(x·x)]: 2 + 2x + 0 + (1·xᵀ row sums + xᵀ·1 column sums)
      const v = [
        [1.5, -0.5],
        [0.25, 2],
      ];
      const mm = (i: number, j: number) => v[j][0] + v[j][1] + (v[0][i] + v[1][i]);
      const e = [0, 1].flatMap((i) => [0, 1].map((j) => 2 + 2 * v[i][j] + mm(i, j)));
      expect(relErr(x.grad!.toArray(), e)).toBeLessThan(1e-15);
      expect(A.gradcheck((a) => A.sum(A.mul(A.matmul(a, a), A.sin(a))), [x]).maxRelError).toBeLessThan(GRAD_RTOL);
    });
  });

  it('.grad accumulates over two backward passes', () => {
    A.tidy(() => {
      const x = A.tensor([1, 2, 3], { dtype: 'float64', requiresGrad: true });
      A.sum(A.square(x)).backward();
      A.sum(A.mul(x, 3)).backward();
      expect(Array.from(x.grad!.toArray())).toEqual([5, 7, 9]);
    });
  });
});
