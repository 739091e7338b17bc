// vmap over int32 index tensors: gather, nn.Embedding and crossEntropy take mapped indices and
// labels (the take primitive). Data movement is compared bit for bit with the loop over
// examples; gradients with the loop, with closed forms (index counts, softmax − onehot) and with
// eager backward; errors name the op, the index and its position.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr, close, f64 } from './helpers.js';

beforeAll(() => A.init());

const ints = (v: number[] | number[][] | number[][][]): Tensor => A.tensor(v, { dtype: 'int32' });
/** Example b of t along axis 0 (shape without that axis). */
const at = (t: Tensor, b: number): Tensor =>
  A.reshape(A.slice(t, [b, ...t.shape.slice(1).map(() => 0)], [1, ...t.shape.slice(1)]), t.shape.slice(1));
const stack = (ts: Tensor[]): Tensor =>
  A.concat(
    ts.map((t) => A.reshape(t, [1, ...t.shape])),
    0,
  );

describe('gather with mapped indices', () => {
  it('shared x, indices of any shape, along axis 0 and 1: the loop, bit for bit', () => {
    const x = A.randn([6, 6], { seed: 1 });
    const idx = ints([
      [
        [1, 2],
        [5, 5],
      ],
      [
        [0, 4],
        [3, 1],
      ],
      [
        [2, 2],
        [2, 0],
      ],
    ]);
    for (const axis of [0, 1]) {
      const got = A.vmap((i: Tensor) => A.gather(x, i, axis))(idx);
      const want = stack([0, 1, 2].map((b) => A.gather(x, at(idx, b), axis)));
      expect(got.shape).toEqual(want.shape);
      expect(arr(got)).toEqual(arr(want));
    }
  });

  it('mapped x and mapped indices (examples along other axes too), and the Tensor method', () => {
    const x = A.randn([4, 3, 7], { seed: 2 }); // examples along axis 1
    const idx = ints([
      [6, 0, 6],
      [1, 1, 5],
    ]); // examples along axis 1: per example [2] indices
    const got = A.vmap((t: Tensor, i: Tensor) => t.gather(i, 1), { inAxes: [1, 1] })(x, idx);
    const want = stack(
      [0, 1, 2].map((b) => A.gather(A.reshape(A.slice(x, [0, b, 0], [4, 1, 7]), [4, 7]), A.reshape(A.slice(idx, [0, b], [2, 1]), [2]), 1)),
    );
    expect(got.shape).toEqual([3, 4, 2]);
    expect(arr(got)).toEqual(arr(want));
  });

  it('nested vmap: indices mapped at both levels, or at the outer level only', () => {
    const x = A.randn([2, 3, 5, 4], { seed: 3 });
    const idx = ints([
      [
        [0, 4],
        [1, 1],
        [2, 3],
      ],
      [
        [4, 4],
        [0, 1],
        [3, 2],
      ],
    ]);
    const both = A.vmap(A.vmap((t: Tensor, i: Tensor) => A.gather(t, i, 0)))(x, idx);
    const outer = A.vmap((i: Tensor) => A.vmap((t: Tensor) => A.gather(t, i, 0))(at(x, 0)))(at(idx, 0));
    for (let a = 0; a < 2; a++)
      for (let b = 0; b < 3; b++) {
        const want = A.gather(at(at(x, a), b), at(at(idx, a), b), 0);
        expect(arr(at(at(both, a), b))).toEqual(arr(want));
      }
    for (let a = 0; a < 3; a++)
      for (let b = 0; b < 3; b++) expect(arr(at(at(outer, a), b))).toEqual(arr(A.gather(at(at(x, 0), b), at(at(idx, 0), a), 0)));
  });

  it("grad through a mapped gather of a shared x counts each row's uses (closed form); jvp is the gather of the tangent", () => {
    const x = A.randn([5, 2], { seed: 4 });
    const idx = ints([
      [1, 4, 4],
      [0, 4, 1],
    ]);
    const g = A.grad((t: Tensor) => A.sum(A.vmap((i: Tensor) => A.gather(t, i))(idx)))(x);
    expect(arr(g)).toEqual([1, 1, 2, 2, 0, 0, 0, 0, 3, 3]);
    const v = A.randn([5, 2], { seed: 5 });
    const [y, t] = A.jvp((z: Tensor) => A.vmap((i: Tensor) => A.gather(z, i))(idx), [x], [v]);
    expect(arr(y)).toEqual(arr(A.gather(x, [1, 4, 4, 0, 4, 1])));
    expect(arr(t)).toEqual(arr(A.gather(v, [1, 4, 4, 0, 4, 1])));
  });

  it('an index out of range names gather, the index and its position; an empty index list is fine', () => {
    const x = A.randn([6, 3], { seed: 6 });
    expect(() => A.vmap((i: Tensor) => A.gather(x, i))(ints([[1], [9]]))).toThrow(
      /gather: index 9 at position 1 of the mapped indices \(every example's, examples first: \[2,1\]\) is out of range \[0, 6\)/,
    );
    expect(() => A.vmap((i: Tensor) => A.gather(x, i))(ints([[1], [-1]]))).toThrow(A.ShapeError);
    const empty = A.vmap((i: Tensor) => A.gather(x, i))(A.zeros([2, 0], { dtype: 'int32' }));
    expect(empty.shape).toEqual([2, 0, 3]);
  });
});

describe('nn.Embedding with mapped token ids', () => {
  it('looks up each example as the unmapped call does, and per-example gradients equal the loop', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      const emb = new A.nn.Embedding(7, 3, { seed: 1, dtype });
      const head = new A.nn.Linear(12, 4, { seed: 2, dtype });
      const tok = ints([
        [1, 2, 2, 6],
        [6, 0, 1, 1],
        [3, 3, 3, 3],
      ]);
      expect(arr(A.vmap((t: Tensor) => emb.forward(t))(tok))).toEqual(arr(emb.forward(tok)));
      const labels = ints([[2], [0], [3]]);
      const params = { e: emb.weight, w: head.weight, b: head.bias! };
      const loss = (p: typeof params, t: Tensor, y: Tensor): Tensor =>
        A.crossEntropy(A.add(A.matmul(A.reshape(A.functionalCall(emb, { weight: p.e }, t) as Tensor, [1, 12]), A.transpose(p.w)), p.b), y);
      const per = A.vmap(A.grad(loss), { inAxes: [null, 0, 0] })(params, tok, labels) as unknown as Record<string, Tensor>;
      const tol = dtype === 'float32' ? 2e-6 : 1e-14;
      for (let b = 0; b < 3; b++) {
        const want = A.grad(loss)(params, at(tok, b), at(labels, b)) as unknown as Record<string, Tensor>;
        for (const k of ['e', 'w', 'b']) close(arr(at(per[k], b)), arr(want[k]), tol);
      }
      // the embedding gradient of example 2 (token 3 four times) is four rows' worth in row 3 only
      const e2 = arr(at(per.e, 2));
      expect(e2.slice(0, 9).every((v) => v === 0) && e2.slice(12).every((v) => v === 0)).toBe(true);
    }
  });

  it('refuses mapped float ids and ids out of range, naming Embedding', () => {
    const emb = new A.nn.Embedding(5, 2, { seed: 1 });
    expect(() => A.vmap((t: Tensor) => emb.forward(t))(A.tensor([[1], [2]]))).toThrow(
      /Embedding: indices mapped by vmap must be an int32 tensor, got float32/,
    );
    expect(() => A.vmap((t: Tensor) => emb.forward(t))(ints([[1], [5]]))).toThrow(
      /Embedding: index 5 at position 1 of the mapped indices \(every example's, examples first: \[2,1\]\) is out of range \[0, 5\)/,
    );
  });
});

describe('nn.GPT with mapped token ids', () => {
  it('per-example gradients by vmap(grad) equal the loop (float64)', () => {
    const gpt = new A.nn.GPT({ vocabSize: 7, layers: 1, heads: 2, width: 8, context: 6, seed: 1, dtype: 'float64' });
    const params = Object.fromEntries(gpt.namedParameters());
    const loss = (p: Record<string, Tensor>, x: Tensor, y: Tensor) =>
      A.crossEntropy(A.reshape(A.functionalCall(gpt, p, A.reshape(x, [1, 5])) as Tensor, [5, 7]), y);
    const X = ints([
      [1, 2, 3, 4, 5],
      [6, 5, 4, 3, 2],
      [0, 0, 1, 1, 2],
    ]);
    const Y = ints([
      [2, 3, 4, 5, 6],
      [5, 4, 3, 2, 1],
      [0, 1, 1, 2, 2],
    ]);
    const per = A.vmap(A.grad(loss), { inAxes: [null, 0, 0] })(params, X, Y) as unknown as Record<string, Tensor>;
    for (let b = 0; b < 3; b++) {
      const want = A.grad(loss)(params, at(X, b), at(Y, b)) as unknown as Record<string, Tensor>;
      for (const k of Object.keys(want)) close(arr(at(per[k], b)), arr(want[k]), 1e-13);
    }
    expect(() => A.vmap((x: Tensor) => gpt.forward(A.reshape(x, [1, 7])))(ints([[1, 2, 3, 4, 5, 6, 0]]))).toThrow(
      /GPT: sequence length 7 exceeds the context of 6/,
    );
  });
});

describe('crossEntropy with mapped labels', () => {
  const logits = () =>
    A.tensor(
      [
        [0.3, -1.2, 2.0, 0.5],
        [1.5, 1.5, -0.7, 0.0],
        [-2.0, 0.1, 0.4, 3.3],
      ],
      f64,
    );
  it('per-example gradient in the logits is softmax − onehot (closed form)', () => {
    const Z = logits(),
      Y = ints([[1], [3], [0]]);
    const g = A.vmap(A.grad((z: Tensor, l: Tensor) => A.crossEntropy(A.reshape(z, [1, 4]), l)))(Z, Y);
    const p = arr(A.softmax(Z, -1));
    close(
      arr(g),
      p.map((v, i) => v - ([1, 3, 0][Math.floor(i / 4)] === i % 4 ? 1 : 0)),
      1e-15,
    );
  });

  it('every reduction, ignoreIndex and label smoothing equal the loop (rows of 2 per example)', () => {
    const X = A.reshape(A.randn([3, 2, 5], { seed: 9 }), [3, 2, 5]).astype('float64');
    const L = ints([
      [4, -100],
      [0, 2],
      [-100, -100],
    ]);
    for (const opts of [
      {},
      { reduction: 'sum' as const },
      { reduction: 'none' as const },
      { ignoreIndex: -100 },
      { ignoreIndex: -100, labelSmoothing: 0.2 },
      { labelSmoothing: 0.1, reduction: 'none' as const },
    ]) {
      const labels =
        'ignoreIndex' in opts
          ? L
          : ints([
              [4, 1],
              [0, 2],
              [3, 3],
            ]);
      const got = A.vmap((x: Tensor, l: Tensor) => A.crossEntropy(x, l, opts))(X, labels);
      const want = arr(stack([0, 1, 2].map((b) => A.crossEntropy(at(X, b), at(labels, b), opts))));
      // the last example ignores both rows: its mean is 0/0 = NaN in both
      expect(arr(got).map(Number.isNaN)).toEqual(want.map(Number.isNaN));
      // bit for bit: both take −logSoftmax at the label in the same order (smoothing adds a term)
      close(
        arr(got).map((v) => (Number.isNaN(v) ? 0 : v)),
        want.map((v) => (Number.isNaN(v) ? 0 : v)),
        'labelSmoothing' in opts ? 1e-15 : 0,
      );
    }
  });

  it('a label out of range names crossEntropy and its position', () => {
    const Z = logits();
    expect(() => A.vmap((z: Tensor, l: Tensor) => A.crossEntropy(A.reshape(z, [1, 4]), l))(Z, ints([[1], [4], [0]]))).toThrow(
      /crossEntropy: label 4 at position 1 of the mapped labels .* is outside \[0, 4\)/,
    );
  });
});

describe('mapped indices under compile and DP-SGD', () => {
  it('compile(f) with vmap over an int32 argument reads each call’s indices (and range-checks them)', () => {
    const W = A.randn([10, 3], { seed: 7 });
    const f = (ids: Tensor) => A.sum(A.square(A.vmap((i: Tensor) => A.gather(W, i))(ids)));
    const cf = A.compile(f);
    for (const ids of [
      [
        [1, 2],
        [3, 3],
      ],
      [
        [0, 9],
        [5, 6],
      ],
      [
        [4, 4],
        [4, 4],
      ],
    ])
      expect(cf(ints(ids)).item()).toBe(f(ints(ids)).item());
    expect(() =>
      cf(
        ints([
          [1, 2],
          [3, 10],
        ]),
      ),
    ).toThrow(/gather: index 10 at position 3/);
  });

  it('compile() binds two index arguments that hold equal values while tracing to their own arguments', () => {
    const x = A.tensor([1, 2, 3, 4, 5, 6], { requiresGrad: true });
    const f = (a: number[], b: number[]) => {
      A.add(A.sum(A.gather(x, a)), A.sum(A.square(A.gather(x, b)))).backward();
      const g = x.grad!;
      x.grad = null;
      return g;
    };
    const cf = A.compile(f);
    for (let i = 0; i < 4; i++) cf([0, 1], [0, 1]).dispose();
    expect(arr(cf([2, 2], [0, 1]))).toEqual(arr(f([2, 2], [0, 1])));
  });

  it('compile(vmap(crossEntropy)) with ignoreIndex replays with each call’s labels', () => {
    const f = (z: Tensor, y: Tensor) => A.vmap((r: Tensor, l: Tensor) => A.crossEntropy(r, l, { ignoreIndex: -100 }))(z, y);
    const cf = A.compile(f);
    const z = A.randn([2, 3, 4], { seed: 5, dtype: 'float64' });
    for (const ls of [
      [
        [1, -100, 3],
        [0, 0, 2],
      ],
      [
        [-100, 2, 3],
        [1, -100, -100],
      ],
      [
        [3, 3, 3],
        [2, -100, 0],
      ],
      [
        [0, 1, 2],
        [3, 2, 1],
      ],
    ])
      expect(arr(cf(z, ints(ls)))).toEqual(arr(f(z, ints(ls))));
    expect(cf.stats.replayed).toBeGreaterThan(0);
  });

  it('compile(vmap(grad)) with mapped labels and tokens replays, bit for bit as eager, with each call’s values', () => {
    const emb = new A.nn.Embedding(6, 3, { seed: 3 });
    const loss = (w: Tensor, t: Tensor, y: Tensor) =>
      A.crossEntropy(A.reshape(A.functionalCall(emb, { weight: w }, t) as Tensor, [1, 6]), y);
    const f = (w: Tensor, t: Tensor, y: Tensor) => A.vmap(A.grad(loss), { inAxes: [null, 0, 0] })(w, t, y);
    const cf = A.compile(f);
    for (let i = 0; i < 6; i++) {
      const t = ints([
        [i % 6, (i + 1) % 6],
        [5, i % 3],
      ]);
      const y = ints([[i % 6], [(i * 5) % 6]]);
      expect(arr(cf(emb.weight, t, y))).toEqual(arr(f(emb.weight, t, y)));
    }
    expect(cf.stats.replayed).toBeGreaterThan(0);
    expect(cf.stats.fallback).toBeNull();
  });

  it("dpGradients' vmap method takes an Embedding model: without clipping or noise, the batch gradient", () => {
    const model = new A.nn.Sequential(new A.nn.Embedding(10, 4, { seed: 1 }), new A.nn.Flatten(), new A.nn.Linear(12, 3, { seed: 2 }));
    const ids = ints([
      [1, 2, 3],
      [4, 5, 6],
      [1, 1, 9],
    ]);
    const labels = new Int32Array([0, 2, 1]);
    const loss = A.optim.dpGradients(model, ids, labels, 3, { clip: 1e6, noise: 0, seed: 1, method: 'vmap' });
    const dp = model.parameters().map((p) => arr(p.grad!));
    for (const p of model.parameters()) p.grad = null;
    const eager = A.crossEntropy(A.reshape(model.forward(ids) as Tensor, [3, 3]), labels);
    eager.backward();
    expect(loss).toBeCloseTo(eager.item(), 6);
    model.parameters().forEach((p, i) => close(dp[i], arr(p.grad!), 1e-6));
  });

  it('leaves no tensors behind', () => {
    const x = A.randn([6, 3], { seed: 1 });
    x.requiresGrad = true;
    const idx = ints([
      [1, 2],
      [3, 3],
    ]);
    const before = A.memory().tensors;
    A.tidy(() => {
      A.vmap(
        A.grad((t: Tensor, i: Tensor) => A.sum(A.square(A.gather(t, i)))),
        { inAxes: [null, 0] },
      )(x, idx);
      A.vmap((z: Tensor, l: Tensor) => A.crossEntropy(A.reshape(z, [1, 3]), l))(A.randn([2, 3], { seed: 2 }), ints([[0], [2]]));
    });
    expect(A.memory().tensors).toBe(before);
  });
});

describe('take and takeAdd (the primitives behind mapped indices)', () => {
  const idx = () =>
    ints([
      [1, 4, 4],
      [0, 2, 1],
    ]);
  it('take: the VJP and the gradient of cross-entropy with mapped labels against central differences', () => {
    const w = A.randn([2, 3, 2], { ...f64, seed: 3 });
    const shared = (x: Tensor) => A.sum(A.mul(A.vmap((i: Tensor) => A.gather(x, i))(idx()), w));
    const mapped = (x: Tensor) =>
      A.sum(A.mul(A.vmap((t: Tensor, i: Tensor) => A.gather(t, i, 1), { inAxes: [1, 0] })(x, idx()), A.transpose(w, [0, 2, 1])));
    expect(A.gradcheck(shared, [A.randn([5, 2], { ...f64, seed: 1 })]).ok).toBe(true);
    expect(A.gradcheck(mapped, [A.randn([2, 2, 5], { ...f64, seed: 2 })]).ok).toBe(true);
    const xent = (z: Tensor) =>
      A.sum(
        A.vmap((r: Tensor, l: Tensor) => A.crossEntropy(r, l, { labelSmoothing: 0.1 }))(
          z,
          ints([
            [1, 3],
            [0, 0],
          ]),
        ),
      );
    expect(A.gradcheck(xent, [A.randn([2, 2, 4], { ...f64, seed: 4 })]).ok).toBe(true);
  });

  it('takeAdd: its VJP (grad of a gradient) against central differences, its JVP against the closed form H·v = 2·takeAdd(take(v))', () => {
    const f = (x: Tensor) => A.sum(A.square(A.vmap((i: Tensor) => A.gather(x, i))(idx())));
    const w = A.randn([5, 2], { ...f64, seed: 5 });
    const x = A.randn([5, 2], { ...f64, seed: 6 });
    expect(A.gradcheck((z: Tensor) => A.sum(A.mul(A.grad(f)(z), A.mul(z, w))), [x]).ok).toBe(true);
    const v = A.randn([5, 2], { ...f64, seed: 7 });
    const [, hv] = A.jvp(A.grad(f), [x], [v]);
    const counts = [1, 2, 1, 0, 2]; // how often each row is picked
    close(
      arr(hv),
      arr(v).map((q, k) => 2 * counts[Math.floor(k / 2)] * q),
      1e-15,
    );
  });
});
