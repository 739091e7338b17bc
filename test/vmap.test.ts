// vmap against the loop. Every row of the op spec table (test/specs.ts) runs mapped over a batch
// of 3 examples and is compared with the row run on each example and stacked, in float32 and
// float64; then composed with grad (per-example gradients) and jvp (per-example tangents). The
// primitives with rows elsewhere (conv, pooling, linearFA, custom, checkpoint, gt, cast) get
// their own rows below. Elementwise rows are bit-identical to the loop; rows whose kernels sum
// (reductions, matmul, dense, softmax, layerNorm) may differ in the last bits, since a batched
// launch can split a sum differently: those are held to a few units of rounding.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor, DType } from '../src/index.js';
import { SPECS, values, tensors, weights, relErr, type OpSpec } from './specs.js';
import { primitivesRun, rules } from '../src/testing.js';
import { observingInputs } from '../src/ops/apply.js';
import { linearFA, gt } from '../src/ops/api.js';

beforeAll(() => A.init());

const B = 3;
const TOL: Record<string, number> = { float32: 2e-6, float64: 1e-14 };
const exact = (spec: OpSpec) => spec.kind !== undefined;

/** Per-example inputs of a row: example b draws its values with salt b. */
function examples(spec: OpSpec, dtype: DType): Tensor[][] {
  return Array.from({ length: B }, (_, b) => tensors(values(spec, spec.shapes, b), spec.shapes, dtype));
}
/** The examples' i-th inputs stacked along `axis`. */
const stack = (ts: readonly Tensor[], axis = 0): Tensor =>
  A.concat(
    ts.map((t) => A.reshape(t, [...t.shape.slice(0, axis), 1, ...t.shape.slice(axis)])),
    axis,
  );
const column = (exs: Tensor[][], i: number, axis = 0) =>
  stack(
    exs.map((e) => e[i]),
    axis,
  );

function expectMatch(got: Tensor, want: Tensor, dtype: DType, bitwise: boolean): void {
  expect(got.shape).toEqual(want.shape);
  const err = relErr(got.toArray(), want.toArray());
  if (bitwise) expect(err).toBe(0);
  else expect(err).toBeLessThanOrEqual(TOL[dtype]);
}

describe.each(SPECS.map((s) => [s.name, s] as const))('vmap %s', (_name, spec) => {
  it.each(['float32', 'float64'] as const)('matches the loop (%s)', (dtype) => {
    A.tidy(() => {
      const exs = examples(spec, dtype);
      const got = A.vmap(spec.f)(...spec.shapes.map((_, i) => column(exs, i)));
      expectMatch(got, stack(exs.map((e) => spec.f(...e))), dtype, exact(spec));
    });
  });

  it('maps the last axis of the first input and shares the rest (inAxes [-1, null, ...])', () => {
    A.tidy(() => {
      const exs = examples(spec, 'float64');
      const last = spec.shapes[0].length;
      const args = spec.shapes.map((_, i) => (i === 0 ? column(exs, 0, last) : exs[0][i]));
      const got = A.vmap(spec.f, { inAxes: spec.shapes.map((_, i) => (i === 0 ? -1 : null)) })(...args);
      const want = stack(exs.map((e) => spec.f(e[0], ...exs[0].slice(1))));
      expectMatch(got, want, 'float64', exact(spec));
    });
  });

  it.each(['float32', 'float64'] as const)('vmap(grad) gives the per-example gradients (%s)', (dtype) => {
    A.tidy(() => {
      const exs = examples(spec, dtype);
      const w = weights(spec.f(...exs[0]).shape, dtype);
      const loss = (...xs: Tensor[]) => A.sum(A.mul(spec.f(...xs), w));
      const argnums = spec.shapes.map((_, i) => i);
      const g = A.grad(loss, { argnums }) as (...xs: Tensor[]) => Tensor[];
      const got = A.vmap(g)(...spec.shapes.map((_, i) => column(exs, i)));
      const loop = exs.map((e) => g(...e));
      got.forEach((gi, i) => expectMatch(gi, stack(loop.map((l) => l[i])), dtype, false));
    });
  });

  it.each(['float32', 'float64'] as const)('vmap(jvp) gives the per-example tangents (%s)', (dtype) => {
    A.tidy(() => {
      const exs = examples(spec, dtype),
        ts = Array.from({ length: B }, (_, b) => tensors(values(spec, spec.shapes, 10 + b), spec.shapes, dtype));
      const n = spec.shapes.length;
      const tangent = (...args: Tensor[]) => A.jvp(spec.f, args.slice(0, n), args.slice(n))[1];
      const got = A.vmap(tangent)(...spec.shapes.map((_, i) => column(exs, i)), ...spec.shapes.map((_, i) => column(ts, i)));
      const want = stack(exs.map((e, b) => tangent(...e, ...ts[b])));
      expectMatch(got, want, dtype, false);
    });
  });
});

/** vmap(f) and vmap(grad(Σ f·w)) against the loop for a function of per-example inputs. */
function checkAgainstLoop(f: (...xs: Tensor[]) => Tensor, exs: Tensor[][], dtype: DType, inAxes?: (number | null)[]): void {
  const n = exs[0].length;
  const axes = inAxes ?? exs[0].map(() => 0);
  const args = exs[0].map((x, i) => (axes[i] === null ? x : column(exs, i)));
  const per = (b: number) => exs[b].map((x, i) => (axes[i] === null ? exs[0][i] : x));
  expectMatch(A.vmap(f, { inAxes: axes })(...args), stack(exs.map((_, b) => f(...per(b)))), dtype, false);
  const w = weights(f(...exs[0]).shape, dtype);
  const g = A.grad((...xs: Tensor[]) => A.sum(A.mul(f(...xs), w)), { argnums: exs[0].map((_, i) => i) }) as (...xs: Tensor[]) => Tensor[];
  const got = A.vmap(g, { inAxes: axes })(...args);
  const loop = exs.map((_, b) => g(...per(b)));
  for (let i = 0; i < n; i++) {
    if (axes[i] === null) continue;
    expectMatch(got[i], stack(loop.map((l) => l[i])), dtype, false);
  }
}

const rand = (shape: number[], dtype: DType, seed: number) => A.randn(shape, { dtype, seed });
const exs = (shapes: number[][], dtype: DType) =>
  Array.from({ length: B }, (_, b) => shapes.map((s, i) => rand(s, dtype, 100 * b + i + 1)));

describe('vmap: the primitives with rows in other tables', () => {
  it.each(['float32', 'float64'] as const)('conv2d with a shared filter (folded into N) and a mapped one (%s)', (dtype) => {
    A.tidy(() => {
      const f = (x: Tensor, w: Tensor) => A.conv2d(x, w, null, { stride: 1, padding: 1 });
      checkAgainstLoop(
        f,
        exs(
          [
            [2, 2, 5, 5],
            [3, 2, 3, 3],
          ],
          dtype,
        ),
        dtype,
        [0, null],
      );
      checkAgainstLoop(
        f,
        exs(
          [
            [2, 2, 5, 5],
            [3, 2, 3, 3],
          ],
          dtype,
        ),
        dtype,
        [0, 0],
      );
      // Mapped filters (one batched GEMM over patches, no loop) with stride 2 and no padding, and with the images shared.
      const g = (x: Tensor, w: Tensor) => A.conv2d(x, w, null, { stride: 2, padding: 0 });
      checkAgainstLoop(
        g,
        exs(
          [
            [2, 2, 7, 6],
            [3, 2, 3, 2],
          ],
          dtype,
        ),
        dtype,
        [0, 0],
      );
      checkAgainstLoop(
        g,
        exs(
          [
            [2, 2, 7, 6],
            [3, 2, 3, 2],
          ],
          dtype,
        ),
        dtype,
        [null, 0],
      );
      checkAgainstLoop(
        (x: Tensor, w: Tensor) => A.conv2d(x, w, null, { stride: [1, 2], padding: [2, 1] }),
        exs(
          [
            [1, 3, 5, 6],
            [2, 3, 2, 3],
          ],
          dtype,
        ),
        dtype,
        [0, 0],
      );
    });
  });
  it('a mapped filter runs no per-example loop: the primitives launched do not grow with the batch', () => {
    A.tidy(() => {
      const f = A.grad((x: Tensor, w: Tensor) => A.sum(A.square(A.conv2d(x, w, null, { stride: 1, padding: 1 }))), { argnums: [0, 1] }) as (
        x: Tensor,
        w: Tensor,
      ) => Tensor[];
      const count = (B: number) => {
        const x = A.randn([B, 2, 2, 5, 5], { seed: 1 }),
          w = A.randn([B, 3, 2, 3, 3], { seed: 2 });
        let n = 0;
        observingInputs(
          () => n++,
          () => A.vmap(f)(x, w),
        );
        return n;
      };
      expect(count(6)).toBe(count(2));
    });
  });
  it('nn.LSTM and nn.GRU with shared weights fold the examples into the sequence batch: launches do not grow with it, results equal the loop', () => {
    A.tidy(() => {
      for (const layer of [new A.nn.LSTM(3, 4, { seed: 1 }), new A.nn.GRU(3, 4, { seed: 2 })]) {
        const f = (x: Tensor) => layer.forward(x)[0];
        const count = (n: number) => {
          const x = A.randn([n, 5, 2, 3], { seed: 3 });
          let k = 0;
          observingInputs(
            () => k++,
            () => A.vmap(f)(x),
          );
          return k;
        };
        expect(count(6)).toBe(count(2));
        checkAgainstLoop(f, exs([[5, 2, 3]], 'float32'), 'float32');
      }
    });
  });
  it.each(['float32', 'float64'] as const)('max and average pooling (%s)', (dtype) => {
    A.tidy(() => {
      checkAgainstLoop((x) => A.maxPool2d(x, 2), exs([[2, 3, 4, 4]], dtype), dtype);
      checkAgainstLoop((x) => A.avgPool2d(x, 2), exs([[2, 3, 4, 4]], dtype), dtype);
      // maxPool2dGather / maxPool2dGrad run in the JVP of max pooling and in its gradient's JVP
      const [x, t] = [rand([B, 1, 3, 4, 4], dtype, 5), rand([B, 1, 3, 4, 4], dtype, 6)];
      const jv = (a: Tensor, b: Tensor) => A.jvp((u: Tensor) => A.maxPool2d(u, 2), [a], [b])[1];
      const gj = (a: Tensor, b: Tensor) =>
        A.jvp(A.grad((u: Tensor) => A.sum(A.square(A.maxPool2d(u, 2)))) as (u: Tensor) => Tensor, [a], [b])[1];
      for (const h of [jv, gj]) {
        const loop = stack(
          Array.from({ length: B }, (_, b) =>
            h(
              A.reshape(A.slice(x, [b, 0, 0, 0, 0], [1, 1, 3, 4, 4]), [1, 3, 4, 4]),
              A.reshape(A.slice(t, [b, 0, 0, 0, 0], [1, 1, 3, 4, 4]), [1, 3, 4, 4]),
            ),
          ),
        );
        expectMatch(A.vmap(h)(x, t), loop, dtype, false);
      }
    });
  });
  it.each(['float32', 'float64'] as const)('linearFA, customVjp, checkpoint, gt and astype (%s)', (dtype) => {
    A.tidy(() => {
      const w = rand([4, 3], dtype, 7),
        fb = rand([4, 3], dtype, 8);
      checkAgainstLoop((x) => linearFA(x, w, fb), exs([[2, 3]], dtype), dtype);
      // Mapped weights (one batched GEMM): W and B mapped, W mapped with a shared B, a shared x.
      const fa = (x: Tensor, wi: Tensor, bi: Tensor) => linearFA(x, wi, bi);
      checkAgainstLoop(
        fa,
        exs(
          [
            [2, 3],
            [4, 3],
            [4, 3],
          ],
          dtype,
        ),
        dtype,
      );
      checkAgainstLoop(
        fa,
        exs(
          [
            [2, 3],
            [4, 3],
            [4, 3],
          ],
          dtype,
        ),
        dtype,
        [0, 0, null],
      );
      checkAgainstLoop(
        fa,
        exs(
          [
            [5, 3],
            [4, 3],
            [4, 3],
          ],
          dtype,
        ),
        dtype,
        [null, 0, 0],
      );
      // The batched VJP keeps feedback alignment: x's per-example gradient goes through B, not W.
      const [x1, w1, b1] = exs(
        [
          [2, 3],
          [4, 3],
          [4, 3],
        ],
        dtype,
      )[0];
      const gx = A.vmap(A.grad((xi: Tensor, wi: Tensor) => A.sum(fa(xi, wi, b1))) as (a: Tensor, b: Tensor) => Tensor)(
        stack([x1, x1]),
        stack([w1, A.mul(w1, 2)]),
      );
      const viaB = A.matmul(A.ones([2, 4], { dtype }), b1);
      expectMatch(gx, stack([viaB, viaB]), dtype, false);
    });
    A.tidy(() => {
      const ste = A.customVjp(
        (a: Tensor) => A.relu(a),
        (g) => [A.mul(g, 2)],
      );
      checkAgainstLoop((x) => ste(x), exs([[2, 3]], dtype), dtype);
    });
    A.tidy(() => {
      checkAgainstLoop(
        A.checkpoint((x: Tensor) => A.tanh(A.mul(x, x))),
        exs([[2, 3]], dtype),
        dtype,
      );
    });
    A.tidy(() => {
      checkAgainstLoop((x) => A.mul(gt(x, 0.1), x), exs([[2, 3]], dtype), dtype);
      checkAgainstLoop((x) => A.astype(A.astype(x, dtype === 'float32' ? 'float64' : 'float32'), dtype), exs([[2, 3]], dtype), dtype);
    });
  });
});

describe('vmap: int32 results', () => {
  it('argmax along an axis of each example equals the loop (int32 indices)', () => {
    A.tidy(() => {
      const x = A.randn([3, 4, 5], { seed: 9 });
      for (const axis of [0, -1]) {
        const got = A.vmap((v: Tensor) => A.argmax(v, axis))(x);
        const want = stack(Array.from({ length: 3 }, (_, b) => A.argmax(A.reshape(A.slice(x, [b, 0, 0], [1, 4, 5]), [4, 5]), axis)));
        expect(got.dtype).toBe('int32');
        expect(Array.from(got.toArray())).toEqual(Array.from(want.toArray()));
      }
    });
  });
});

describe('vmap: every primitive has a batching rule that runs', () => {
  it('the spec rows and the rows above reach every primitive of the table inside vmap', () => {
    const run = new Set<string>();
    for (const spec of SPECS) {
      A.tidy(() => {
        const ex = examples(spec, 'float64');
        const w = weights(spec.f(...ex[0]).shape, 'float64');
        const g = A.grad((...xs: Tensor[]) => A.sum(A.mul(spec.f(...xs), w)), { argnums: spec.shapes.map((_, i) => i) }) as (
          ...xs: Tensor[]
        ) => Tensor[];
        const cols = spec.shapes.map((_, i) => column(ex, i));
        for (const p of primitivesRun(() => {
          A.vmap(g)(...cols);
          A.vmap((...xs: Tensor[]) => A.jvp(spec.f, xs, xs)[1])(...cols);
        }))
          run.add(p);
      });
    }
    A.tidy(() => void primitivesRun(() => void A.vmap((v: Tensor) => A.argmax(v, 0))(A.randn([2, 3]))).forEach((p) => run.add(p)));
    const ids = A.tensor([[1], [0]], { dtype: 'int32' }); // mapped indices: take, and takeAdd under grad
    const pick = (t: Tensor, i: Tensor) => A.sum(A.gather(t, i));
    A.tidy(
      () => void primitivesRun(() => void A.vmap(A.grad(pick), { inAxes: [null, 0] })(A.randn([2, 3]), ids)).forEach((p) => run.add(p)),
    );
    const elsewhere = [
      'gt',
      'cast',
      'linearFA',
      'custom',
      'checkpoint',
      'conv2d',
      'conv2dInputGrad',
      'conv2dFilterGrad',
      'maxPool2d',
      'maxPool2dGrad',
      'maxPool2dGather',
      'avgPool2d',
      'avgPool2dGrad',
    ];
    expect(Object.keys(rules).filter((p) => !run.has(p) && !elsewhere.includes(p))).toEqual([]);
  });
});

describe('vmap semantics', () => {
  it('pytrees in and out, out-axes, and a broadcast unmapped output', () => {
    A.tidy(() => {
      const x = rand([4, 3], 'float64', 1),
        y = rand([3, 4], 'float64', 2);
      const f = (p: { a: Tensor; b: Tensor }, c: Tensor) => ({ s: A.add(p.a, c), k: [p.b] });
      const out = A.vmap(f, { inAxes: [{ a: 0, b: null }, 1], outAxes: { s: 1, k: [null] } })({ a: x, b: y }, y) as {
        s: Tensor;
        k: Tensor[];
      };
      expect(out.s.shape).toEqual([3, 4]);
      expectMatch(out.s, A.transpose(A.add(x, A.transpose(y))), 'float64', true);
      expect(() => A.vmap((a: Tensor) => A.mul(a, 2), { outAxes: null })(x)).toThrow(/outAxes is null/);
      const bcast = A.vmap((_a: Tensor) => y)(x);
      expect(bcast.shape).toEqual([4, 3, 4]);
      expect(A.vmap((a: Tensor) => A.sum(a), { outAxes: -1 })(x).shape).toEqual([4]);
    });
  });
  it('a pytree key named "__proto__" (a loaded state dict may have one) stays an own key, in and out', () => {
    A.tidy(() => {
      const x = rand([4, 3], 'float64', 1);
      const PROTO = '__proto__';
      const tree = JSON.parse('{"__proto__": 0, "b": 0}') as Record<string, Tensor>;
      tree[PROTO] = x; // an own data property now: assignment no longer reaches the setter
      tree.b = x;
      const spec = JSON.parse('{"__proto__": 0, "b": null}') as Record<string, number | null>;
      const out = A.vmap((p: Record<string, Tensor>) => ({ ...p }), { inAxes: [spec] })(tree) as Record<string, Tensor>;
      expect([Object.keys(out), Object.getPrototypeOf(out)]).toEqual([['__proto__', 'b'], Object.prototype]);
      expect([out[PROTO].shape, out.b.shape]).toEqual([
        [4, 3],
        [4, 4, 3],
      ]);
      // A spec without the key names it, rather than reading Object.prototype as an axis spec.
      expect(() => A.vmap((p: unknown) => p, { inAxes: [{ b: 0 }] })(tree)).toThrow(/inAxes has no entry for .*\.__proto__/);
    });
  });

  it('an outAxes given for a result that does not depend on the mapped arguments is an error; left out, it broadcasts', () => {
    A.tidy(() => {
      const x = rand([4, 3], 'float64', 1),
        c = rand([2], 'float64', 2);
      const f = (a: Tensor) => [A.mul(a, 2), c] as const;
      // Default outAxes: the constant is broadcast along axis 0, as in JAX.
      const [y, k] = A.vmap(f)(x) as unknown as [Tensor, Tensor];
      expect(y.shape).toEqual([4, 3]);
      expect(k.shape).toEqual([4, 2]);
      for (let i = 0; i < 4; i++) expect(Array.from(A.reshape(A.slice(k, [i, 0], [1, 2]), [2]).toArray())).toEqual(Array.from(c.toArray()));
      // Explicit: an axis for it names its position and suggests null; null returns it once.
      for (const outAxes of [0, [0, 0], [0, 1]]) expect(() => A.vmap(f, { outAxes })(x)).toThrow(A.ArgumentError);
      expect(() => A.vmap(f, { outAxes: [0, 0] })(x)).toThrow(
        /outAxes gives output\[1\] axis 0, but output\[1\] does not depend on the mapped arguments.*outAxes: null/,
      );
      const [y2, k2] = A.vmap(f, { outAxes: [1, null] })(x) as unknown as [Tensor, Tensor];
      expect(y2.shape).toEqual([3, 4]);
      expect(Array.from(k2.toArray())).toEqual(Array.from(c.toArray()));
      // jacfwd keeps broadcasting internally: a function constant in x has a zero Jacobian.
      expect(Array.from(A.jacfwd((_v: Tensor) => c)(A.zeros([3], { dtype: 'float64' })).toArray())).toEqual(new Array(6).fill(0));
    });
  });
  it('nests: vmap(vmap(f)) is f on every element pair', () => {
    A.tidy(() => {
      const a = rand([3, 5], 'float64', 1),
        b = rand([4, 5], 'float64', 2);
      const dot = (u: Tensor, v: Tensor) => A.sum(A.mul(u, v));
      const all = A.vmap(A.vmap(dot, { inAxes: [null, 0] }), { inAxes: [0, null] })(a, b);
      expectMatch(all, A.matmul(a, A.transpose(b)), 'float64', false);
    });
  });
  it('grad of vmap and jvp of vmap run through the batched kernels', () => {
    A.tidy(() => {
      const w = rand([4, 5], 'float64', 3),
        x = rand([6, 5], 'float64', 4);
      const f = (W: Tensor) => A.sum(A.square(A.vmap((xi: Tensor) => A.tanh(A.matmul(W, xi)))(x)));
      const direct = (W: Tensor) => A.sum(A.square(A.tanh(A.matmul(x, A.transpose(W)))));
      expectMatch(A.grad(f)(w) as Tensor, A.grad(direct)(w) as Tensor, 'float64', false);
      const t = rand([4, 5], 'float64', 5);
      expectMatch(A.jvp(f, [w], [t])[1], A.jvp(direct, [w], [t])[1], 'float64', false);
    });
  });
  it('bad input: different sizes name the arguments, axes out of range, nothing mapped', () => {
    A.tidy(() => {
      const a = A.zeros([3, 2]),
        b = A.zeros([4, 2]);
      const f = (u: Tensor, v: Tensor) => A.add(u, v);
      expect(() => A.vmap(f)(a, b)).toThrow(A.ArgumentError);
      expect(() => A.vmap(f)(a, b)).toThrow(/args\[0\] has 3 along axis 0, args\[1\] has 4 along axis 0/);
      expect(() => A.vmap(f, { inAxes: [2, 0] })(a, a)).toThrow(/inAxes 2 is out of range for args\[0\]/);
      expect(() => A.vmap(f, { inAxes: [null, null] })(a, a)).toThrow(/no argument is mapped/);
      expect(() => A.vmap(f, { outAxes: 3 })(a, a)).toThrow(/outAxes 3 is out of range/);
      expect(() => A.vmap((u: Tensor) => A.tensor([A.sum(u).item()]))(a)).toThrow(/cannot be read inside the mapped function/);
    });
  });
  it('leaves no tensor behind', () => {
    const before = A.memory().tensors;
    A.tidy(() => {
      const x = rand([5, 3], 'float32', 1);
      A.vmap(A.grad((u: Tensor) => A.sum(A.square(u))) as (u: Tensor) => Tensor)(x);
    });
    expect(A.memory().tensors).toBe(before);
  });
});

describe('per-example gradients', () => {
  const model = () => new A.nn.Sequential(new A.nn.Linear(6, 5, { seed: 1 }), new A.nn.Tanh(), new A.nn.Linear(5, 3, { seed: 2 }));
  const lossOf =
    (m: A.nn.Sequential) =>
    (p: Record<string, Tensor>, x: Tensor, y: Tensor): Tensor =>
      A.neg(A.sum(A.mul(A.logSoftmax(A.functionalCall(m, p, x)), y)));

  it("vmap(grad(loss), { inAxes: [null, 0, 0] }) over functionalCall equals each example's own gradient", () => {
    A.tidy(() => {
      const m = model(),
        loss = lossOf(m),
        params = Object.fromEntries(m.namedParameters());
      const x = A.randn([4, 1, 6], { seed: 3 }),
        y = A.tensor([1, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0], { shape: [4, 1, 3] });
      const per = A.vmap(A.grad(loss), { inAxes: [null, 0, 0] })(params, x, y) as unknown as Record<string, Tensor>;
      for (let i = 0; i < 4; i++) {
        const xi = A.reshape(A.slice(x, [i, 0, 0], [1, 1, 6]), [1, 6]),
          yi = A.reshape(A.slice(y, [i, 0, 0], [1, 1, 3]), [1, 3]);
        const own = A.grad(loss)(params, xi, yi) as unknown as Record<string, Tensor>;
        for (const [name, g] of Object.entries(own)) {
          const row = A.reshape(A.slice(per[name], [i, ...g.shape.map(() => 0)], [1, ...g.shape]), g.shape);
          expectMatch(row, g, 'float32', false);
        }
      }
      // Their mean is the batch gradient.
      const batch = A.grad((p: Record<string, Tensor>) => A.div(loss(p, A.reshape(x, [4, 6]), A.reshape(y, [4, 3])), 4))(
        params,
      ) as unknown as Record<string, Tensor>;
      for (const [name, g] of Object.entries(batch)) expectMatch(A.mean(per[name], 0), g, 'float32', false);
    });
  });

  it('dpGradients: with noise 0 and a large clip it is the mean gradient; with a small clip each example counts at most C', () => {
    A.tidy(() => {
      const m = model(),
        params = Object.fromEntries(m.namedParameters());
      const x = A.randn([4, 6], { seed: 3 }),
        labels = Int32Array.from([0, 2, 1, 0]);
      const mean = A.grad((p: Record<string, Tensor>) => A.crossEntropy(A.functionalCall(m, p, x), labels))(params) as unknown as Record<
        string,
        Tensor
      >;
      const loss = A.optim.dpGradients(m, x, labels, 3, { clip: 1e6, noise: 0, seed: 1 });
      expect(loss).toBeCloseTo(A.crossEntropy(m.forward(x), labels).item(), 5);
      for (const [name, p] of m.namedParameters()) expectMatch(p.grad!, mean[name], 'float32', false);
      // A tiny clip: every example is scaled to norm C, so the mean has norm at most C.
      A.optim.dpGradients(m, x, labels, 3, { clip: 1e-3, noise: 0, seed: 1 });
      const norm = Math.sqrt(m.parameters().reduce((s, p) => s + A.sum(A.square(p.grad!)).item(), 0));
      expect(norm).toBeLessThanOrEqual(1e-3 * (1 + 1e-5));
      expect(norm).toBeGreaterThan(1e-4);
      // Seeded noise: the same seed gives the same gradient.
      A.optim.dpGradients(m, x, labels, 3, { clip: 1, noise: 1, seed: 7 });
      const a = m.parameters()[0].grad!.toArray();
      A.optim.dpGradients(m, x, labels, 3, { clip: 1, noise: 1, seed: 7 });
      expect(Array.from(m.parameters()[0].grad!.toArray())).toEqual(Array.from(a));
      for (const p of m.parameters()) p.grad?.dispose(), (p.grad = null);
    });
  });

  it('jacfwd, jacrev and hessian run as one batched pass and agree with each other', () => {
    A.tidy(() => {
      const W = A.randn([4, 20], { seed: 1, dtype: 'float64' }),
        x = A.randn([20], { seed: 2, dtype: 'float64' });
      const f = (v: Tensor) => A.tanh(A.matmul(W, v));
      // One pass: f's forward runs once, its tangent map once (batched), not once per direction.
      let matmuls = 0;
      observingInputs(
        (_xs, prim) => void (prim === 'matmul' && matmuls++),
        () => void A.jacfwd(f)(x),
      );
      expect(matmuls).toBeLessThanOrEqual(3);
      expectMatch(A.jacfwd(f)(x), A.jacrev(f)(x), 'float64', false);
      const s = (v: Tensor) => A.sum(A.square(f(v)));
      const H = A.hessian(s)(x),
        Hr = A.jacrev(A.grad(s) as (v: Tensor) => Tensor)(x);
      expectMatch(H, Hr, 'float64', false);
    });
  });
});

describe('vmap inside compile', () => {
  it('a compiled per-example gradient step replays the batched kernels with the same bytes as eager', () => {
    const m = new A.nn.Sequential(new A.nn.Linear(6, 5, { seed: 1 }), new A.nn.ReLU(), new A.nn.Linear(5, 3, { seed: 2 }));
    const loss = (p: Record<string, Tensor>, x: Tensor, y: Tensor): Tensor => A.sum(A.square(A.sub(A.functionalCall(m, p, x), y)));
    const norms = (x: Tensor, y: Tensor) => {
      const g = A.vmap(A.grad(loss), { inAxes: [null, 0, 0] })(Object.fromEntries(m.namedParameters()), x, y) as unknown as Record<
        string,
        Tensor
      >;
      return Object.values(g)
        .map((t) => A.sum(A.square(A.reshape(t, [t.shape[0], -1])), 1))
        .reduce((a, b) => A.add(a, b));
    };
    const step = A.compile(norms);
    for (let i = 0; i < 3; i++) {
      A.tidy(() => {
        const x = A.randn([4, 6], { seed: 10 + i }),
          y = A.randn([4, 3], { seed: 20 + i });
        expect(Array.from(step(x, y).toArray())).toEqual(Array.from(norms(x, y).toArray()));
      });
    }
    step.reset();
  });
});

describe('adjoint train --dp-clip / --dp-noise', () => {
  it('parses the DP-SGD flags and refuses bad values', async () => {
    const { parseTrainArgs } = await import('../src/cli/args.js');
    expect(parseTrainArgs(['--dp-clip', '1.5', '--dp-noise', '0.5'])).toMatchObject({ dpClip: 1.5, dpNoise: 0.5 });
    expect(parseTrainArgs(['--dp-clip=2'])).toMatchObject({ dpClip: 2, dpNoise: 1 });
    expect(parseTrainArgs([])).toMatchObject({ dpClip: null });
    expect(() => parseTrainArgs(['--dp-clip', '0'])).toThrow(/--dp-clip must be a positive number/);
    expect(() => parseTrainArgs(['--dp-clip', '1', '--dp-noise', '-1'])).toThrow(/--dp-noise must be a number ≥ 0/);
    expect(() => parseTrainArgs(['--dp-noise', '1'])).toThrow(/--dp-noise needs --dp-clip/);
  });
});
