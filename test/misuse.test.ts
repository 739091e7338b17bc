// Mistakes a user makes that used to pass silently or with the wrong error: a misspelt attention
// option (which attended everywhere), a non-leaf tensor handed to an optimizer (never updated),
// item() of a disposed tensor, and customVjp's message for a cotangent of the wrong shape.
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { close } from './helpers.js';

await A.init();

describe('attention modules refuse unknown forward options', () => {
  const x = A.randn([1, 3, 4], { seed: 1 });
  it('MultiheadAttention: causal (for isCausal) and attn_mask (for attnMask) are errors', () => {
    const mha = new A.nn.MultiheadAttention(4, 2, { seed: 0 });
    expect(() => mha.forward(x, x, x, { causal: true } as never)).toThrow(/MultiheadAttention.forward: unknown option "causal".*isCausal/);
    expect(() => mha.forward(x, { attn_mask: A.zeros([3, 3]) } as never)).toThrow(/unknown option "attn_mask"/);
    const open = arr(mha.forward(x, x, x));
    const causal = arr(mha.forward(x, x, x, { isCausal: true }));
    expect(causal).not.toEqual(open); // the right name still masks
    mha.dispose();
  });

  it('TransformerEncoderLayer: causal is an error, isCausal masks', () => {
    const layer = new A.nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8, dropout: 0, seed: 0 });
    expect(() => layer.forward(x, { causal: true } as never)).toThrow(/TransformerEncoderLayer.forward: unknown option "causal"/);
    expect(arr(layer.forward(x, { isCausal: true }))).not.toEqual(arr(layer.forward(x)));
    layer.dispose();
  });

  // `isCausal: 1` (or 'true') was read as `=== true`, so it silently attended to later positions.
  it('a non-boolean isCausal or causal is an ArgumentError, not an unmasked attention', () => {
    const mha = new A.nn.MultiheadAttention(4, 2, { seed: 0 });
    const layer = new A.nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8, dropout: 0, seed: 0 });
    for (const v of [1, 'true'])
      expect(() => mha.forward(x, { isCausal: v } as never)).toThrow(/MultiheadAttention.forward: isCausal must be true or false/);
    expect(() => layer.forward(x, { isCausal: 1 } as never)).toThrow(/isCausal must be true or false, got 1/);
    const q = A.randn([2, 3, 4], { seed: 2 });
    expect(() => A.scaledDotProductAttention(q, q, q, { causal: 1 } as never)).toThrow(
      /scaledDotProductAttention: causal must be true or false, got 1/,
    );
    expect(arr(mha.forward(x, { isCausal: false }))).toEqual(arr(mha.forward(x)));
    mha.dispose();
    layer.dispose();
  });
});

describe('optimizers take leaf tensors only', () => {
  it('a computed tensor is an ArgumentError naming it, as PyTorch refuses a non-leaf', () => {
    const w = A.ones([2], { requiresGrad: true });
    const twice = w.mul(2);
    expect(() => new A.optim.Adam([twice])).toThrow(/Adam: params\[0\] \[2\] is not a leaf tensor/);
    expect(() => new A.optim.SGD([{ params: [w] }, { params: [twice] }], { lr: 0.1 })).toThrow(
      /paramGroups\[1\]\.params\[0\] \[2\] is not a leaf|params\[0\] \[2\] is not a leaf/,
    );
    const leaf = twice.detach();
    leaf.requiresGrad = true;
    const opt = new A.optim.SGD([leaf], { lr: 0.5 });
    A.sum(leaf).backward();
    opt.step();
    expect(arr(leaf)).toEqual([1.5, 1.5]);
  });
});

describe('errors name the real problem', () => {
  it('item() of a disposed tensor is a DisposedError whatever its size', () => {
    const v = A.tensor([1, 2, 3]);
    v.dispose();
    expect(() => v.item()).toThrow(A.DisposedError);
  });

  it('customVjp: a cotangent of the wrong shape is described as a tensor, not as a string', () => {
    const bad = A.customVjp(
      (a: Tensor) => A.mul(a, 2),
      (g: Tensor) => [A.sum(g)],
    );
    expect(() => A.grad((x: Tensor) => A.sum(bad(x)))(A.tensor([1, 2, 3], { dtype: 'float64' }))).toThrow(
      /must be null or a float64 Tensor of shape \[3\], got a float64 Tensor of shape \[\]/,
    );
  });
});

describe('options that cannot take effect are errors, not ignored', () => {
  it('a later init() asking for another memory or kernel build is an ArgumentError; threads may change', async () => {
    await expect(A.init({ memory: { maximumBytes: 4 << 20 } })).rejects.toThrow(
      /init: memory was fixed by the first init\(\) call \(undefined\) and cannot change to \{"maximumBytes":4194304\}/,
    );
    await expect(A.init({ relaxedSimd: true })).rejects.toThrow(/init: relaxedSimd was fixed by the first init\(\) call/);
    await A.init({ threads: 1 });
    await A.init();
    expect(A.tensor([1, 2, 3]).sum().item()).toBe(6);
  });

  it('nn.LayerNorm checks eps when it is built; eps = 0 is allowed, as in PyTorch', () => {
    expect(() => new A.nn.LayerNorm(3, { eps: -1 })).toThrow(/LayerNorm: eps must be a finite number ≥ 0, got -1/);
    expect(() => A.layerNorm(A.tensor([[1, 2, 3]]), null, null, Number.NaN)).toThrow(/layerNorm: eps must be a finite number ≥ 0/);
    const y = arr(new A.nn.LayerNorm(3, { eps: 0, dtype: 'float64' }).forward(A.tensor([[1, 2, 3]], { dtype: 'float64' })));
    const s = Math.sqrt(2 / 3); // torch.nn.LayerNorm(3, eps=0)([[1, 2, 3]]) = [-1.2247, 0, 1.2247]
    expect(y[1]).toBe(0);
    expect(Math.abs(y[0] + 1 / s)).toBeLessThan(1e-15);
    expect(Math.abs(y[2] - 1 / s)).toBeLessThan(1e-15);
  });
});

describe('errors of the right class, naming the op called', () => {
  it('a float32 input to a float64 LSTM or GRU is a DtypeError, as for Linear', () => {
    for (const M of [A.nn.LSTM, A.nn.GRU]) {
      const m = new M(3, 4, { dtype: 'float64' });
      expect(() => m.forward(A.zeros([4, 2, 3]))).toThrow(A.DtypeError);
      expect(() => m.forward(A.zeros([4, 2, 3]))).toThrow(/input is float32 but the layer is float64/);
      m.dispose();
    }
  });

  it('data: lmBatches of a long number[] says so briefly; batches of an int32 tensor asks for an Int32Array', () => {
    const ids = Array.from({ length: 100_000 }, (_, i) => i % 65);
    let message = '';
    try {
      A.data.lmBatches(ids as never, { batchSize: 2, blockSize: 8 }).next();
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/lmBatches: ids must be an Int32Array .*100000 elements\] \(an array\)/);
    expect(message.length).toBeLessThan(200);
    const y = A.tensor([0, 1, 2, 3], { dtype: 'int32' });
    expect(() => A.data.batches(A.zeros([4, 2]), y as never, { batchSize: 2 }).next()).toThrow(
      /batches: labels must be an Int32Array, got an? int32 Tensor \[4\]/,
    );
  });

  it('lt and le name themselves and the operands in the order given (they run gt and ge swapped)', () => {
    expect(() => A.lt(A.zeros([2, 3]), A.zeros([4]))).toThrow(/^lt: shapes \[2,3\] and \[4\] cannot be broadcast/);
    expect(() => A.le(A.zeros([2, 3]), A.zeros([4]))).toThrow(/^le: shapes \[2,3\] and \[4\] cannot be broadcast/);
    expect(arr(A.lt(A.tensor([1, 2, 3]), 2))).toEqual([1, 0, 0]);
  });
});

function arr(t: Tensor): number[] {
  return Array.from(t.toArray());
}

describe('vmap of int32 indices', () => {
  it('read in JS is an error that names the mapped int32 tensor and the ops that take one', () => {
    const table = A.randn([10, 3], { seed: 1 });
    const idx = A.tensor(
      [
        [1, 2],
        [3, 4],
        [5, 6],
      ],
      { dtype: 'int32' },
    );
    expect(() => A.vmap((i: Tensor) => A.gather(table, Array.from(i.toArray())))(idx)).toThrow(
      /vmap: the values of a mapped int32 tensor \[3,2\] cannot be read .*gather, nn.Embedding and crossEntropy take mapped indices/,
    );
    expect(A.vmap((i: Tensor) => A.gather(table, i))(idx).shape).toEqual([3, 2, 3]); // what to do instead
    // unmapped indices work, as documented
    const y = A.vmap((t: Tensor) => A.gather(t, [0, 2]), { inAxes: 0 })(A.randn([4, 3], { seed: 2 }));
    expect(y.shape).toEqual([4, 2]);
  });
});

describe('DP-SGD and generate name what is wrong', () => {
  const model = () => new A.nn.Sequential(new A.nn.Linear(4, 5, { seed: 1 }), new A.nn.ReLU(), new A.nn.Linear(5, 3, { seed: 2 }));
  it('classes against the model, a missing seed, an empty batch', () => {
    const m = model();
    const x = A.randn([2, 4], { seed: 3 }),
      y = new Int32Array([0, 1]);
    expect(() => A.optim.dpGradients(m, x, y, 5, { clip: 1, noise: 0, seed: 1 })).toThrow(
      /dpGradients: the model's output \[2,3\] has 3 classes on its last axis, but classes is 5/,
    );
    expect(() => A.optim.dpGradients(m, x, y, 5, { clip: 1, noise: 0, seed: 1, method: 'vmap' })).toThrow(
      /has 3 classes on its last axis, but classes is 5/,
    );
    expect(() => A.optim.perExampleGradNorms(m, x, y, 2)).toThrow(/perExampleGradNorms: the model's output \[2,3\] has 3 classes/);
    expect(() => A.optim.dpGradients(m, x, y, 3, { clip: 1, noise: 1 } as never)).toThrow(/dpGradients: seed must be a safe integer/);
    expect(() => A.optim.dpGradients(m, A.zeros([0, 4]), new Int32Array(0), 3, { clip: 1, noise: 0, seed: 1 })).toThrow(
      /dpGradients: x \[0,4\] holds no examples/,
    );
  });

  it('GPT.generate refuses a misspelt option and a fractional seed', () => {
    const gpt = new A.nn.GPT({ vocabSize: 5, layers: 1, heads: 1, width: 8, context: 8, seed: 0 });
    expect(() => gpt.generate([1], { top_k: 2 } as never)).toThrow(/generate: unknown option "top_k"/);
    expect(() => gpt.generate([1], { seed: 1.5 })).toThrow(/generate: seed must be a safe integer, got 1.5/);
    expect(gpt.generate([1], { tokens: 3, seed: 2 })).toEqual(gpt.generate([1], { tokens: 3, seed: 2 }));
    gpt.dispose();
  });
});

describe('backward errors that say what happened', () => {
  it('a disposed .grad is named, and the fix given (it was "add: tensor #n was disposed")', () => {
    const w = A.tensor([1, 2], { requiresGrad: true });
    A.sum(A.mul(w, w)).backward();
    w.grad!.dispose();
    expect(() => A.sum(A.mul(w, w)).backward()).toThrow(/backward: the \.grad of a leaf \[2\] .* was disposed.*set leaf\.grad = null/);
    w.grad = null;
    A.sum(A.mul(w, w)).backward();
    expect(arr(w.grad!)).toEqual([2, 4]);
  });

  it('backward through a value derived from a gradient names gradients as a cause', () => {
    const x = A.tensor([1, -3, 2], { requiresGrad: true });
    const g = A.grad((v: Tensor) => A.sum(A.mul(A.mul(v, v), v)))(x) as Tensor;
    expect(() => A.sum(g).backward()).toThrow(/comes from a gradient .* nest the transforms/);
  });
});

describe('API.md details', () => {
  it('the neural ops are Tensor methods too, giving the functions’ results', () => {
    const x = A.randn([2, 3, 6, 6], { seed: 1 }),
      w = A.randn([4, 3, 3, 3], { seed: 2 });
    expect(arr(x.conv2d(w, null, { padding: 1 }))).toEqual(arr(A.conv2d(x, w, null, { padding: 1 })));
    expect(arr(x.maxPool2d(2))).toEqual(arr(A.maxPool2d(x, 2)));
    expect(arr(x.avgPool2d(2))).toEqual(arr(A.avgPool2d(x, 2)));
    expect(arr(x.layerNorm())).toEqual(arr(A.layerNorm(x)));
    expect(arr(x.dropout(0.5, { seed: 3 }))).toEqual(arr(A.dropout(x, 0.5, { seed: 3 })));
    const logits = A.randn([4, 5], { seed: 4 });
    expect(logits.crossEntropy([0, 1, 2, 3]).item()).toBe(A.crossEntropy(logits, [0, 1, 2, 3]).item());
    expect(logits.mseLoss(A.zeros([4, 5])).item()).toBe(A.mseLoss(logits, A.zeros([4, 5])).item());
    const q = A.randn([2, 5, 8], { seed: 5 });
    expect(arr(q.scaledDotProductAttention(q, q, { causal: true }))).toEqual(arr(A.scaledDotProductAttention(q, q, q, { causal: true })));
  });

  it('comparisons never require grad (no gradient, as API.md and PyTorch)', () => {
    const p = A.tensor([0.5, 2], { requiresGrad: true });
    for (const c of [A.gt(p, 1), A.ge(p, 1), A.lt(p, 1), A.le(p, 1), A.eq(p, 2), A.ne(p, 2), p.gt(1)]) expect(c.requiresGrad).toBe(false);
    expect(() => A.sum(A.gt(p, 1)).backward()).toThrow(A.GradError);
    expect(arr(A.grad((v: Tensor) => A.sum(A.mul(A.gt(v, 1), v)))(p) as Tensor)).toEqual([0, 1]);
  });

  it('float32 sin and cos are right at every magnitude (NativeMathf was wrong for |x| in [2^89, 2^90))', () => {
    const xs = [7e26, -1.086e27, 2 ** 89, 1.2e27, 3.14, 1e10, -(2 ** 90) + 2 ** 66];
    const f = A.tensor(xs);
    const exact = Array.from(f.toArray());
    const s = arr(A.sin(f)),
      c = arr(A.cos(f));
    exact.forEach((x, i) => {
      expect(Math.abs(s[i] - Math.sin(x))).toBeLessThan(1e-7);
      expect(Math.abs(c[i] - Math.cos(x))).toBeLessThan(1e-7);
    });
  });
});

describe('a .grad handle kept across backward calls', () => {
  it('stays valid and sees the accumulated sum (the same tensor, as PyTorch); with createGraph the sum is a new tensor', () => {
    const w = A.ones([2], { dtype: 'float64', requiresGrad: true });
    A.sum(A.mul(w, 3)).backward();
    const g = w.grad!;
    A.sum(A.mul(w, 3)).backward();
    expect(w.grad).toBe(g);
    expect(arr(g)).toEqual([6, 6]);
    A.optim.clipGradNorm([w], 1);
    close(arr(g), [Math.SQRT1_2, Math.SQRT1_2], 1e-6); // clipped in place (PyTorch divides by the norm + 1e-6)
    // a .grad that shares its memory with another handle is not written through
    const other = A.ones([2], { dtype: 'float64', requiresGrad: true });
    const shared = A.tensor([1, 1], { dtype: 'float64' });
    other.grad = shared;
    const view = A.reshape(shared, [2]);
    A.sum(other).backward();
    expect(arr(view)).toEqual([1, 1]);
    expect(arr(other.grad!)).toEqual([2, 2]);
    // createGraph: a new, differentiable sum
    const x = A.tensor([2], { dtype: 'float64', requiresGrad: true });
    A.sum(A.square(x)).backward(undefined, { createGraph: true });
    const g1 = x.grad!;
    A.sum(A.square(x)).backward(undefined, { createGraph: true });
    expect(x.grad).not.toBe(g1);
    expect(arr(x.grad!)).toEqual([8]);
    expect(arr(g1)).toEqual([4]); // the old handle stays usable, as in PyTorch
    // a tensor the user assigned as .grad (here another parameter) is never freed by backward
    const p = A.tensor([1, 2], { dtype: 'float64', requiresGrad: true }),
      q = A.tensor([10, 20], { dtype: 'float64', requiresGrad: true });
    p.grad = q;
    A.sum(A.mul(p, 3)).backward();
    expect(arr(q)).toEqual([10, 20]);
    expect(arr(p.grad!)).toEqual([13, 23]);
  });
});
