// No silent traps: view is differentiable, an options object where a boolean belongs is an
// error, extra positional arguments are errors, messages say what was wrong; memory without
// discipline: `using`, and the garbage collector reclaims unreachable tensors while saved
// activations stay intact.
import v8 from 'node:v8';
import vm from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const turn = () => new Promise((r) => setImmediate(r));
/**
 * Runs the garbage collector until the live tensor count stops falling. New handles are
 * registered at the next microtask and finalizers run between tasks, so yield first.
 */
async function collect(): Promise<void> {
  await turn();
  let before = -1;
  for (let i = 0; i < 8 && (i < 2 || A.memory().tensors !== before); i++) {
    before = A.memory().tensors;
    gc();
    await turn();
  }
}
const any = (v: unknown) => v as never;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- calls the API as plain JS would
const loose = (v: unknown) => v as any;

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

beforeAll(async () => {
  await A.init();
});

describe('Tensor.view', () => {
  it('is a differentiable reshape: gradients flow through it', () => {
    A.tidy(() => {
      const x = A.tensor(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        { requiresGrad: true },
      );
      const c = A.tensor([1, 10, 100, 1000, 1e4, 1e5]);
      const y = x.view([6]);
      expect(y.shape).toEqual([6]);
      expect(Array.from(y.toArray())).toEqual([1, 2, 3, 4, 5, 6]);
      A.sum(A.mul(y, c)).backward();
      expect(Array.from(x.grad!.toArray())).toEqual([1, 10, 100, 1000, 1e4, 1e5]);
      const g = A.grad((t: A.Tensor) => A.sum(A.square(t.view([3, 2]))))(x) as A.Tensor;
      expect(Array.from(g.toArray())).toEqual([2, 4, 6, 8, 10, 12]);
    });
  });

  it('refuses a shape that is not an array, or does not fit', () => {
    const x = A.ones([2, 3]);
    const e = thrown(() => x.view(any(6)));
    expect(e).toBeInstanceOf(A.ArgumentError);
    expect(e.message).toMatch(/view: shape must be an array of integers, got 6 \(a number\)/);
    expect(thrown(() => x.view([4]))).toBeInstanceOf(A.ShapeError);
    expect(thrown(() => x.view(any(undefined)))).toBeInstanceOf(A.ArgumentError);
    x.dispose();
  });
});

describe('no argument silently ignored', () => {
  it('an options object where keepdims belongs is an ArgumentError (it used to count as true)', () => {
    const x = A.ones([2, 3]);
    for (const op of ['sum', 'mean', 'max', 'logsumexp'] as const) {
      const e = thrown(() => x[op](1, any({ keepdim: false })));
      expect(e).toBeInstanceOf(A.ArgumentError);
      expect(e.message).toBe(`${op}: keepdims must be true or false, got an object`);
      expect(thrown(() => A[op](x, 1, any(1)))).toBeInstanceOf(A.ArgumentError);
    }
    A.tidy(() => {
      expect(x.sum(1).shape).toEqual([2]);
      expect(x.sum(1, true).shape).toEqual([2, 1]);
      expect(x.mean(0, false).shape).toEqual([3]);
    });
    x.dispose();
  });

  it('a Tensor method given more arguments than it takes throws instead of dropping them', () => {
    const x = A.ones([2, 3]);
    expect(thrown(() => loose(x).sum(0, false, 'extra')).message).toBe(
      'Tensor.sum: takes at most 2 arguments, got 3 (an extra argument would be ignored)',
    );
    expect(thrown(() => loose(x).relu(1))).toBeInstanceOf(A.ArgumentError);
    expect(thrown(() => loose(x).toArray('float64'))).toBeInstanceOf(A.ArgumentError);
    expect(x.disposed).toBe(false);
    x.dispose();
  });

  it('unknown option keys are named (a misspelt option is not ignored)', () => {
    const cases: [() => unknown, RegExp][] = [
      [() => A.zeros([2], any({ dtyp: 'float64' })), /zeros: unknown option "dtyp" \(known: dtype, requiresGrad\)/],
      [() => A.randn([2], any({ sed: 1 })), /randn: unknown option "sed"/],
      [() => A.tensor([1], any({ requires_grad: true })), /tensor: unknown option "requires_grad"/],
      [() => A.mseLoss(A.ones([2]), A.ones([2]), any({ reduce: 'sum' })), /mseLoss: unknown option "reduce"/],
      [() => A.dropout(A.ones([2]), 0.5, any({ train: false })), /dropout: unknown option "train"/],
      [() => new A.nn.Linear(2, 2, any({ bais: false })), /Linear: unknown option "bais"/],
      [() => A.data.digits(any({ seeds: 1 })), /digits: unknown option "seeds"/],
      [() => A.zeros([2], any({ requiresGrad: 'yes' })), /zeros: requiresGrad must be true or false, got "yes" \(a string\)/],
    ];
    A.tidy(() => {
      for (const [f, re] of cases) {
        const e = thrown(f);
        expect(e, String(re)).toBeInstanceOf(A.ArgumentError);
        expect(e.message).toMatch(re);
      }
    });
  });
});

describe('messages', () => {
  it('say what was wrong, as an AdjointError, for each case that used to mislead or throw a TypeError', () => {
    const lin = new A.nn.Linear(2, 2, { seed: 1 });
    const emb = new A.nn.Embedding(3, 2, { seed: 1 });
    const x = A.ones([2, 3]);
    const cases: [string, () => unknown, typeof A.AdjointError, RegExp][] = [
      ['Embedding 0.5', () => emb.forward([0, 0.5]), A.ArgumentError, /Embedding: index 0\.5 \(a number\) at position 1 is not an integer/],
      [
        'lr string',
        () => new A.optim.SGD(lin.parameters(), any({ lr: '1e-3' })),
        A.ArgumentError,
        /SGD: lr must be a finite number ≥ 0, got "1e-3" \(a string\)/,
      ],
      [
        'concat non-array',
        () => A.concat(any(x)),
        A.ArgumentError,
        /concat: expected a non-empty array of tensors, got a float32 Tensor \[2,3\]/,
      ],
      [
        'Tensor.concat non-array',
        () => x.concat(any(x)),
        A.ArgumentError,
        /concat: others must be an array of Tensors, got a float32 Tensor/,
      ],
      [
        'reshape non-array',
        () => A.reshape(x, any('6')),
        A.ArgumentError,
        /reshape: shape must be an array of integers, got "6" \(a string\)/,
      ],
      ['hessian non-function', () => A.hessian(any(5)), A.ArgumentError, /hessian: f must be a function, got 5 \(a number\)/],
      ['jacfwd non-function', () => A.jacfwd(any(null)), A.ArgumentError, /jacfwd: f must be a function, got null/],
      ['jacrev non-function', () => A.jacrev(any('f')), A.ArgumentError, /jacrev: f must be a function/],
      ['zeros BigInt', () => A.zeros(any(3n)), A.ShapeError, /zeros: shape must be an array of non-negative integers, got 3n \(a BigInt\)/],
      ['zeros [BigInt]', () => A.zeros(any([2n])), A.ShapeError, /zeros: shape must be an array/],
      ['full Symbol', () => A.full([2], any(Symbol('v'))), A.ArgumentError, /full: value must be a number, got Symbol\(v\) \(a Symbol\)/],
      ['arange Symbol', () => A.arange(any(Symbol('n'))), A.ArgumentError, /arange: n must be a non-negative integer, got Symbol\(n\)/],
      ['arange BigInt', () => A.arange(any(4n)), A.ArgumentError, /arange: n must be a non-negative integer, got 4n \(a BigInt\)/],
      ['astype BigInt', () => A.astype(x, any(1n)), A.DtypeError, /astype: dtype must be/],
      ['astype Symbol', () => x.astype(any(Symbol('d'))), A.DtypeError, /astype: dtype must be .*got Symbol\(d\)/],
      ['dropout null', () => A.dropout(x, 0.5, any(null)), A.ArgumentError, /dropout: options must be an object, got null/],
      [
        'gradcheck null',
        () => A.gradcheck((t) => A.sum(t), [x], any(null)),
        A.ArgumentError,
        /gradcheck: options must be an object, got null/,
      ],
      ['gather Symbol axis', () => x.gather([0], any(Symbol('a'))), A.ArgumentError, /gather: axis must be an integer, got Symbol\(a\)/],
    ];
    const failures: string[] = [];
    A.tidy(() => {
      for (const [name, f, cls, re] of cases) {
        const e = thrown(f);
        if (!(e instanceof cls) || !re.test(e.message)) failures.push(`${name}: ${e.name}: ${e.message}`);
      }
    });
    expect(failures).toEqual([]);
    lin.dispose();
    emb.dispose();
    x.dispose();
  });
});

describe('using', () => {
  it('Tensor, nn.Module and optimizers implement Symbol.dispose', () => {
    const before = A.memory();
    let t: A.Tensor, m: A.nn.Linear;
    {
      using x = A.ones([4]);
      using lin = new A.nn.Linear(4, 2, { seed: 3 });
      using opt = new A.optim.Adam(lin.parameters(), { lr: 1e-3 });
      A.tidy(() => A.sum(lin.forward(x.reshape([1, 4]))).backward());
      opt.step();
      t = x;
      m = lin;
      expect(A.memory().tensors).toBeGreaterThan(before.tensors);
    }
    expect(t.disposed).toBe(true);
    expect(m.weight.disposed).toBe(true);
    expect(A.memory().tensors).toBe(before.tensors);
    expect(A.memory().bytesInUse).toBe(before.bytesInUse);
  });
});

describe('the garbage collector', () => {
  it('reclaims a tensor that becomes unreachable, and its bytes', async () => {
    await collect();
    const before = A.memory();
    (() => {
      for (let i = 0; i < 50; i++) A.ones([1000]).add(1);
    })();
    expect(A.memory().tensors).toBe(before.tensors + 100);
    await collect();
    expect(A.memory().tensors).toBe(before.tensors);
    expect(A.memory().bytesInUse).toBe(before.bytesInUse);
  });

  it('never frees what a saved activation or a pending backward still reads', async () => {
    await collect();
    const before = A.memory();
    const w = A.tensor([0.5, -1, 2], { requiresGrad: true });
    // Every intermediate handle is dropped at once; only the loss (and through its graph the saved tensors) stays.
    let loss: A.Tensor | null = (() => A.sum(A.tanh(A.mul(A.exp(A.mul(w, 3)), w))))();
    const expected = (() => {
      const v = [0.5, -1, 2];
      return v.map((a) => {
        const e = Math.exp(3 * a),
          u = e * a,
          t = Math.tanh(u);
        return (1 - t * t) * (3 * e * a + e);
      });
    })();
    // Other allocations reuse whatever the collector frees: nothing the graph saved may be among it.
    await collect();
    const noise = Array.from({ length: 20 }, () => A.full([3], 1234.5));
    loss.backward();
    const g = Array.from(w.grad!.toArray());
    g.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 3));
    for (const n of noise) n.dispose();
    w.dispose();
    loss = null; // not disposed: its graph's handles (the intermediates) go with it to the collector
    await collect();
    expect(A.memory().tensors).toBe(before.tensors);
    expect(A.memory().bytesInUse).toBe(before.bytesInUse);
  });
});
