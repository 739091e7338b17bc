// matmul(transpose(a), b) runs the GEMM with its transpose flag on a, never copying it: a
// transpose of the last two axes is lazy (memory allocated and filled on first use of its
// pointer) and matmul reads an unfilled one through its source. Checked here: values against
// float64 references, gradients and forward mode against the copy path, every other use of a
// lazy tensor (other ops, views, reads, a second matmul, in-place writes to its source), tidy and
// dispose with no leak, OOM when it is finally filled, compile() bit-identical to eager.
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { lazyTranspose } from '../src/ops/shape.js';

const { matmul, transpose, tidy } = A;
type DT = 'float32' | 'float64';
const MAX = 48 * 1024 * 1024;

beforeAll(async () => {
  await A.init({ memory: { maximumBytes: MAX } });
  tidy(() => void matmul(A.ones([2, 2]), A.ones([2, 2]))); // the GEMM packing scratch, reserved once
});
afterEach(() => {
  lazyTranspose.minSize = 4096;
});
/** Small shapes take the lazy path too (the default threshold keeps transposes under 4096 elements eager). */
const allLazy = (): void => {
  lazyTranspose.minSize = 0;
};
const copyPath = <T>(f: () => T): T => {
  const keep = lazyTranspose.minSize;
  lazyTranspose.minSize = Infinity;
  try {
    return f();
  } finally {
    lazyTranspose.minSize = keep;
  }
};

/** Deterministic values in [-1, 1). */
function values(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  return Float64Array.from({ length: n }, () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 31 - 1);
}
const size = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);
const make = (shape: number[], seed: number, dtype: DT = 'float64'): Tensor => A.tensor(values(size(shape), seed), { shape, dtype });
const isLazy = (t: Tensor): boolean => t.storage.lazy !== null;

/** Float64 op(A)·op(B) for [batch?, r, c] operands of the same batch (or 2-D). */
function ref(a: ArrayLike<number>, as: number[], b: ArrayLike<number>, bs: number[], ta: boolean, tb: boolean): Float64Array {
  const [ar, ac] = as.slice(-2),
    [br, bc] = bs.slice(-2);
  const M = ta ? ac : ar,
    K = ta ? ar : ac,
    N = tb ? br : bc;
  const batch = as.length === 3 ? as[0] : 1;
  const out = new Float64Array(batch * M * N);
  for (let q = 0; q < batch; q++) {
    const oa = q * ar * ac,
      ob = bs.length === 3 ? q * br * bc : 0;
    for (let i = 0; i < M; i++)
      for (let j = 0; j < N; j++) {
        let acc = 0;
        for (let k = 0; k < K; k++) acc += a[oa + (ta ? k * ac + i : i * ac + k)] * b[ob + (tb ? j * bc + k : k * bc + j)];
        out[q * M * N + i * N + j] = acc;
      }
  }
  return out;
}
function maxRel(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let worst = 0,
    scale = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / scale);
  expect(got.length).toBe(want.length);
  return worst;
}
const tol = (dtype: DT): number => (dtype === 'float32' ? 1e-5 : 1e-13);
const T = (x: Tensor): Tensor => (x.shape.length === 2 ? transpose(x) : transpose(x, [0, 2, 1]));

describe('values against float64 references', () => {
  // [stored A shape, stored B shape, ta, tb]
  const cases: [string, number[], number[], boolean, boolean][] = [
    ['Aᵀ·B', [70, 65], [70, 33], true, false],
    ['A·Bᵀ', [65, 70], [64, 70], false, true],
    ['Aᵀ·Bᵀ', [70, 65], [64, 70], true, true],
    ['batched Aᵀ·B', [3, 40, 37], [3, 40, 29], true, false],
    ['batched A·Bᵀ', [3, 37, 40], [3, 41, 40], false, true],
  ];
  for (const dtype of ['float32', 'float64'] as const) {
    it.each(cases)(`%s (${dtype}, at the default threshold)`, (_n, as, bs, ta, tb) => {
      tidy(() => {
        const a = make(as, 1, dtype),
          b = make(bs, 2, dtype);
        const oa = ta ? T(a) : a,
          ob = tb ? T(b) : b;
        const y = matmul(oa, ob);
        expect(maxRel(y.toArray(), ref(a.toArray(), as, b.toArray(), bs, ta, tb))).toBeLessThan(tol(dtype));
        if (ta) expect(isLazy(oa)).toBe(true); // matmul read the source: the transpose was never filled
        if (tb) expect(isLazy(ob)).toBe(true);
        // The GEMM packs op(A) into the same panels either way: bit-identical to the copy.
        expect(y.toArray()).toEqual(copyPath(() => matmul(ta ? T(a) : a, tb ? T(b) : b)).toArray());
      });
    });
  }

  it('broadcast batch and 1-D operands', () => {
    allLazy();
    tidy(() => {
      const a = make([4, 6], 3),
        b = make([2, 4, 5], 4),
        v = make([4], 5);
      const y = matmul(transpose(a), b); // [6, 4]ᵀ-read against a batch of 2
      const bv = b.toArray();
      for (let q = 0; q < 2; q++) {
        const want = ref(a.toArray(), [4, 6], bv.subarray(q * 20, (q + 1) * 20), [4, 5], true, false);
        expect(maxRel(y.toArray().subarray(q * 30, (q + 1) * 30), want)).toBeLessThan(1e-13);
      }
      const yv = matmul(transpose(a), v); // [6]
      expect(yv.shape).toEqual([6]);
      expect(maxRel(yv.toArray(), ref(a.toArray(), [4, 6], v.toArray(), [4, 1], true, false))).toBeLessThan(1e-13);
    });
  });

  it('a shape mismatch names the operands as the user wrote them', () => {
    allLazy();
    tidy(() => {
      const a = make([5, 3], 1),
        b = make([4, 2], 2);
      expect(() => matmul(transpose(a), b)).toThrow(/matmul: inner dimensions differ: \[3,5\] x \[4,2\] \(5 vs 4\)/);
    });
  });
});

describe('gradients', () => {
  const loss =
    (ta: boolean, tb: boolean) =>
    (a: Tensor, b: Tensor): Tensor =>
      A.sum(A.mul(matmul(ta ? T(a) : a, tb ? T(b) : b), A.sin(matmul(ta ? T(a) : a, tb ? T(b) : b))));
  const flags: [boolean, boolean][] = [
    [true, false],
    [false, true],
    [true, true],
  ];

  it.each(flags)('grad equals the copy path and passes gradcheck (ta=%s, tb=%s)', (ta, tb) => {
    allLazy();
    tidy(() => {
      const a = ta ? make([6, 5], 1) : make([5, 6], 1),
        b = tb ? make([4, 6], 2) : make([6, 4], 2);
      const f = loss(ta, tb);
      const lazy = A.grad(f, { argnums: [0, 1] })(a, b) as Tensor[];
      const copied = copyPath(() => A.grad(f, { argnums: [0, 1] })(a, b) as Tensor[]);
      lazy.forEach((g, i) => expect(g.toArray()).toEqual(copied[i].toArray()));
      expect(A.gradcheck(f, [a, b], { rtol: 1e-5 }).ok).toBe(true); // loose: central differences on near-zero entries
    });
  });

  it('batched, through valueAndGrad, at the default threshold', () => {
    tidy(() => {
      const w = make([2, 64, 80], 7),
        x = make([2, 64, 3], 8);
      const f = (w: Tensor, x: Tensor) => A.sum(A.square(matmul(transpose(w, [0, 2, 1]), x)));
      const [v, [gw, gx]] = A.valueAndGrad(f, { argnums: [0, 1] })(w, x) as [Tensor, Tensor[]];
      const [v2, [gw2, gx2]] = copyPath(() => A.valueAndGrad(f, { argnums: [0, 1] })(w, x) as [Tensor, Tensor[]]);
      expect(v.item()).toBe(v2.item());
      expect(gw.toArray()).toEqual(gw2.toArray());
      expect(gx.toArray()).toEqual(gx2.toArray());
    });
  });

  it('inside valueAndGrad it is never filled, and nothing is left for an optimizer step to fill', () => {
    allLazy();
    tidy(() => {
      const w = make([6, 5], 1),
        x = make([6, 4], 2);
      let fills = 0;
      const f = (w: Tensor, x: Tensor) => {
        const wt = transpose(w);
        const p = wt.storage.lazy as unknown as { fill(ptr: number): void } | null; // null on the copy path
        if (p !== null) {
          const fill = p.fill.bind(p);
          p.fill = (ptr) => (fills++, fill(ptr));
        }
        return A.sum(A.tanh(matmul(wt, x)));
      };
      const [, g] = A.valueAndGrad(f)(w, x) as [Tensor, Tensor];
      expect(fills).toBe(0);
      expect(w.storage.readers).toBe(null);
      expect(g.toArray()).toEqual((copyPath(() => A.grad(f)(w, x)) as Tensor).toArray());
    });
  });

  it('the transpose of a leaf that requires grad, differentiated with backward()', () => {
    allLazy();
    tidy(() => {
      const w = make([5, 7], 1),
        x = make([5, 3], 2);
      w.requiresGrad = true;
      A.sum(matmul(transpose(w), x)).backward();
      // d/dW sum(Wᵀ X) = X·1ᵀ: row i of the gradient is (Σ_j X[i, j]) repeated.
      const xs = x.toArray(),
        g = w.grad!.toArray();
      for (let i = 0; i < 5; i++)
        for (let j = 0; j < 7; j++) expect(g[i * 7 + j]).toBeCloseTo(xs[i * 3] + xs[i * 3 + 1] + xs[i * 3 + 2], 13);
      w.dispose();
    });
  });

  it('jvp through matmul(transpose(a), b) equals the copy path', () => {
    allLazy();
    tidy(() => {
      const a = make([6, 5], 1),
        b = make([6, 4], 2),
        ua = make([6, 5], 3),
        ub = make([6, 4], 4);
      const f = (a: Tensor, b: Tensor) => A.tanh(matmul(transpose(a), b));
      const [y, t] = A.jvp(f, [a, b], [ua, ub]);
      const [y2, t2] = copyPath(() => A.jvp(f, [a, b], [ua, ub]));
      expect(y.toArray()).toEqual(y2.toArray());
      expect(t.toArray()).toEqual(t2.toArray());
    });
  });

  it('hvp (forward over reverse) through it equals the copy path', () => {
    allLazy();
    tidy(() => {
      const b = make([6, 4], 2),
        x = make([6, 5], 1),
        v = make([6, 5], 3);
      const f = (a: Tensor) => A.sum(A.tanh(matmul(transpose(a), b)));
      expect(A.hvp(f, x, v).toArray()).toEqual(copyPath(() => A.hvp(f, x, v)).toArray());
    });
  });

  it('checkpoint and anomaly mode see the same values', () => {
    allLazy();
    tidy(() => {
      const w = make([6, 5], 1),
        x = make([6, 4], 2);
      const f = (w: Tensor, x: Tensor) => A.sum(A.tanh(matmul(transpose(w), x)));
      const g = A.grad(f)(w, x) as Tensor;
      const gc = A.grad(A.checkpoint(f))(w, x) as Tensor;
      const ga = A.withAnomalyDetection(() => A.grad(f)(w, x) as Tensor);
      expect(gc.toArray()).toEqual(g.toArray());
      expect(ga.toArray()).toEqual(g.toArray());
    });
  });
});

describe('other uses of a lazy transpose', () => {
  it('add, sum, reshape, slice, concat, a second matmul, a second transpose, a view: the values of the copy', () => {
    allLazy();
    tidy(() => {
      const a = make([5, 7], 1),
        b = make([5, 3], 2);
      const want = copyPath(() => transpose(a)).toArray();
      const at = transpose(a);
      expect(isLazy(at)).toBe(true);
      const y1 = matmul(at, b),
        y2 = matmul(at, b); // used twice, still unfilled
      expect(y2.toArray()).toEqual(y1.toArray());
      expect(isLazy(at)).toBe(true);
      expect(A.reshape(at, [35]).toArray()).toEqual(want); // a view: reading it fills the shared block
      expect(isLazy(at)).toBe(false);
      expect(at.toArray()).toEqual(want);
      expect(matmul(at, b).toArray()).toEqual(copyPath(() => matmul(transpose(a), b)).toArray());
      for (const use of [
        (t: Tensor) => A.add(t, 1),
        (t: Tensor) => A.sum(t, 1),
        (t: Tensor) => A.slice(t, [1, 2], [3, 2]), // a strided copy whose argument block the fill must not clobber
        (t: Tensor) => A.concat([t, t], 0),
        (t: Tensor) => transpose(t),
        (t: Tensor) => t.detach(),
      ]) {
        const lazy = use(transpose(a)).toArray(),
          copied = copyPath(() => use(transpose(a)).toArray());
        expect(lazy).toEqual(copied);
      }
    });
  });

  it('matmul of a reshaped or detached lazy transpose, and of a lazy transpose of a lazy transpose', () => {
    allLazy();
    tidy(() => {
      const a = make([4, 6], 1),
        b = make([4, 3], 2),
        c = make([6, 3], 3);
      const want = ref(a.toArray(), [4, 6], b.toArray(), [4, 3], true, false);
      expect(maxRel(matmul(A.reshape(transpose(a), [6, 4]), b).toArray(), want)).toBeLessThan(1e-13);
      expect(maxRel(matmul(transpose(a).detach(), b).toArray(), want)).toBeLessThan(1e-13);
      const tt = transpose(transpose(a)); // lazy of lazy: A itself
      expect(maxRel(matmul(tt, c).toArray(), ref(a.toArray(), [4, 6], c.toArray(), [6, 3], false, false))).toBeLessThan(1e-13);
      expect(tt.toArray()).toEqual(a.toArray());
    });
  });

  it('keeps the values its source had when it was taken, when an optimizer then writes the source in place', () => {
    allLazy();
    const w = make([4, 6], 1);
    w.requiresGrad = true;
    const before = copyPath(() => transpose(w)).toArray();
    const wt = transpose(w.detach());
    tidy(() => A.sum(A.square(w)).backward()); // grad 2w
    new A.optim.SGD([w], { lr: 0.25 }).step(); // w ← w − 0.25·2w = w / 2, in place
    expect(isLazy(wt)).toBe(false); // filled just before the write
    expect(wt.toArray()).toEqual(before);
    expect(copyPath(() => transpose(w)).toArray()).toEqual(before.map((v) => v / 2));
    wt.dispose();
    w.dispose();
  });

  it('loadStateDict from a lazy transpose copies its values into the parameter', () => {
    const lin = new A.nn.Linear(64, 96, { seed: 1, dtype: 'float32' }); // weight [96, 64]
    const src = make([64, 96], 3, 'float32');
    const wt = transpose(src);
    expect(isLazy(wt)).toBe(true);
    lin.loadStateDict({ weight: wt, bias: A.zeros([96]) });
    expect(lin.weight.toArray()).toEqual(copyPath(() => transpose(src)).toArray());
    for (const t of [wt, src]) t.dispose();
    lin.dispose();
  });

  it('a disposed source still fills it (the lazy tensor holds the memory), and matmul falls back to the copy', () => {
    allLazy();
    tidy(() => {
      const a = make([4, 6], 1),
        b = make([4, 3], 2);
      const want = ref(a.toArray(), [4, 6], b.toArray(), [4, 3], true, false);
      const at = transpose(a);
      a.dispose();
      expect(maxRel(matmul(at, b).toArray(), want)).toBeLessThan(1e-13);
      expect(isLazy(at)).toBe(false);
    });
  });
});

describe('lifetimes', () => {
  it('disposed unread, inside tidy, or after use: memory back to its baseline', () => {
    allLazy();
    const base = A.memory();
    const a = make([64, 80], 1),
      b = make([64, 3], 2);
    const mid = A.memory();
    const at = transpose(a);
    expect(A.memory().bytesInUse).toBe(mid.bytesInUse); // nothing allocated yet
    a.dispose(); // the lazy tensor keeps a's block
    expect(A.memory().bytesInUse).toBe(mid.bytesInUse);
    at.dispose();
    expect(A.memory().bytesInUse).toBe(mid.bytesInUse - 64 * 80 * 8);
    tidy(() => {
      const c = transpose(b);
      matmul(c, b);
      transpose(b).toArray();
    });
    b.dispose();
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
    expect(A.memory().tensors).toBe(base.tensors);
  });

  it('a tidy returns a lazy transpose; reading it after the source is gone gives its values', () => {
    allLazy();
    const a = make([3, 4], 1);
    const at = tidy(() => transpose(A.mul(a, 2)));
    expect(isLazy(at)).toBe(true);
    expect(Array.from(at.toArray())).toEqual(Array.from(copyPath(() => transpose(A.mul(a, 2))).toArray()));
    at.dispose();
    a.dispose();
  });

  it('out of memory when it is finally filled: an OutOfMemoryError, the tensor stays lazy and fills later', () => {
    const n = 1024 * 1024; // 4 MiB in float32
    const x = make([1024, 1024], 1, 'float32');
    const xt = transpose(x);
    const filler: Tensor[] = [];
    try {
      for (;;) filler.push(A.zeros([n], { dtype: 'float32' }));
    } catch (e) {
      expect(e).toBeInstanceOf(A.OutOfMemoryError);
    }
    expect(() => xt.toArray()).toThrow(A.OutOfMemoryError);
    expect(() => xt.toArray()).toThrow(/^transpose \(filled on first use\): /);
    expect(() => A.sum(xt)).toThrow(/^sum: transpose \(filled on first use\): /); // inside an op: both named
    expect(isLazy(xt)).toBe(true);
    filler.pop()!.dispose();
    const got = xt.toArray(),
      xs = x.toArray();
    expect(got[1 * 1024 + 2]).toBe(xs[2 * 1024 + 1]);
    for (const f of filler) f.dispose();
    xt.dispose();
    x.dispose();
  });
});

describe('compile', () => {
  it('a training step using matmul(transpose(w), x) replays bit-identically to eager', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const run = (compiled: boolean): Uint8Array[] => {
      const w = A.keep(make([72, 64], 1, 'float32')),
        x0 = make([72, 5], 2, 'float32');
      w.requiresGrad = true;
      const opt = new A.optim.Adam([w], { lr: 0.01 });
      const step = (x: Tensor) => {
        const loss = A.mean(A.square(A.tanh(matmul(transpose(w), x))));
        loss.backward();
        opt.step();
        opt.zeroGrad();
        return loss.detach();
      };
      const f = compiled ? A.compile(step) : (x: Tensor) => tidy(() => step(x));
      const out: Uint8Array[] = [];
      for (let i = 0; i < 6; i++) {
        const l = f(A.add(x0, i));
        out.push(new Uint8Array(l.toArray().buffer));
        l.dispose();
      }
      if (compiled) expect((f as A.Compiled<[Tensor], Tensor>).stats.replayed).toBeGreaterThan(0);
      out.push(new Uint8Array(w.toArray().buffer));
      opt.dispose();
      w.dispose();
      x0.dispose();
      return out;
    };
    const eager = run(false),
      compiled = run(true);
    expect(compiled).toEqual(eager);
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
  });

  it('a lazy transpose of a parameter, taken before a replayed step that updates it, keeps its values', () => {
    allLazy();
    const w = A.keep(make([8, 6], 1, 'float32')),
      x = make([6, 3], 2, 'float32');
    w.requiresGrad = true;
    const opt = new A.optim.SGD([w], { lr: 0.1 });
    const step = A.compile((x: Tensor) => {
      const loss = A.sum(A.square(matmul(w, x)));
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss.detach();
    });
    for (let i = 0; i < 4; i++) step(x).dispose(); // eager, traced twice, replayed
    expect(step.stats.replayed).toBe(1);
    const before = copyPath(() => transpose(w)).toArray();
    const wt = transpose(w);
    step(x).dispose(); // replayed: the schedule writes w in place
    expect(step.stats.replayed).toBe(2);
    expect(wt.toArray()).toEqual(before);
    expect(copyPath(() => transpose(w)).toArray()).not.toEqual(before);
    for (const t of [wt, w, x]) t.dispose();
    opt.dispose();
  });

  it('lazy arguments and a lazy result: compiled calls give the eager values', () => {
    allLazy();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const fn = (at: Tensor, b: Tensor) => ({ y: matmul(at, b), bt: transpose(b) });
    const f = A.compile(fn);
    for (let i = 0; i < 6; i++) {
      tidy(() => {
        const a = make([5, 4], i),
          b = make([5, 3], 10 + i);
        const want = tidy(() => {
          const r = fn(transpose(a), b);
          return [r.y.toArray(), r.bt.toArray()];
        });
        const r = f(transpose(a), b);
        expect([r.y.toArray(), r.bt.toArray()]).toEqual(want);
      });
    }
    expect(f.stats.replayed).toBe(3);
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
  });
});
