// Strided copies and attention in a compiled step on the 2-thread pool (src/compile/copies.ts):
// a copy reads its shape and strides from the program's constants and is cut over its outermost
// axis, attention its geometry (its pieces, by heads, get footprints), so both join the parallel
// schedule's phases. Attention training steps (head split and merge, weight slices, causal,
// dropout with its per-call seed) and a transpose chain give the bytes of eager mode; the cut rule
// keeps pieces to disjoint writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { compiledMatchesEager, type StepNet } from './helpers.js';
import { busy } from '../src/testing.js';
import { runtime, ARGS_BYTES } from '../src/wasm/module.js';
import { copyPieces } from '../src/compile/copies.js';

// The pool's pause on a loaded machine would leave calls unsplit: off, so every launch is cut.
const pauseMs = busy.pauseMs;
beforeAll(async () => {
  await A.init({ threads: 2 });
  busy.pauseMs = 0;
});
afterAll(() => void (busy.pauseMs = pauseMs));

type DT = 'float32' | 'float64';

/** Self-attention (4 heads, optionally with dropout on the weights) with a residual and a Linear read-out, AdamW; inputs [B, T, E]. */
function attnNet(E: number, dtype: DT, dropout = 0): StepNet {
  const mha = new A.nn.MultiheadAttention(E, 4, { seed: 3, dtype, dropout });
  const out = new A.nn.Linear(E, 5, { seed: 4, dtype });
  const ps = [...mha.parameters(), ...out.parameters()];
  const opt = new A.optim.AdamW(ps, { lr: 0.01 });
  const step = (x: Tensor, t: Tensor) => {
    const h = A.add(x, mha.forward(x, { isCausal: true }));
    const loss = A.mseLoss(out.forward(h), t);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  };
  return { ps, step };
}

/**
 * Compiled against eager (compiledMatchesEager), with strided copies recorded on the calling
 * thread: [outermost extent, whether its shape was read outside the argument block].
 */
function run(make: () => StepNet, x: Tensor, t: Tensor, name: string): [number, boolean][] {
  const rt = runtime() as unknown as { exports: Record<string, unknown>; args: number };
  const saved = rt.exports,
    seen: [number, boolean][] = [];
  const f = saved[name] as (...a: number[]) => void;
  rt.exports = {
    ...saved,
    [name]: (...a: number[]) => {
      seen.push([new Int32Array(runtime().memory.buffer)[a[3] >> 2], a[3] < rt.args || a[3] >= rt.args + ARGS_BYTES]);
      return f(...a);
    },
  };
  try {
    const eager = make(),
      comp = make();
    compiledMatchesEager(eager, comp, x, t, []);
    for (const p of [...eager.ps, ...comp.ps]) p.dispose();
  } finally {
    rt.exports = saved;
  }
  return seen;
}

describe('compiled strided copies on the pool: constant arrays, cut over the outermost axis', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    it(`${dtype}: an attention training step [12, 64, 128]: eager bytes, copies halved over the batch`, () => {
      const x = A.randn([12, 64, 128], { seed: 1, dtype }),
        t = A.rand([12, 64, 5], { seed: 2, dtype });
      const seen = run(() => attnNet(128, dtype), x, t, `strided_copy_f${dtype === 'float32' ? 32 : 64}`);
      const replayed = seen.filter(([, c]) => c);
      expect(replayed.length).toBeGreaterThan(0);
      // The head split [B, T, H, D] → [B, H, T, D] on two threads: batches 0–5 on the caller.
      expect(replayed.some(([e]) => e === 6)).toBe(true);
      expect(seen.filter(([, c]) => !c).every(([e]) => e !== 6)).toBe(true);
      x.dispose(), t.dispose();
    });
  }
  it('float32 with dropout on the attention weights (a seed drawn per call, computed before the phases)', () => {
    const x = A.randn([8, 32, 64], { seed: 1 }),
      t = A.rand([8, 32, 5], { seed: 2 });
    const seen = run(() => attnNet(64, 'float32', 0.2), x, t, 'strided_copy_f32');
    expect(seen.some(([e, c]) => c && e === 4)).toBe(true);
    x.dispose(), t.dispose();
  });
  it('a transpose chain with an odd outermost extent, f32', () => {
    const w = A.randn([7, 40, 33], { seed: 5 });
    const make = (): StepNet => {
      const p = A.mul(w, 1);
      p.requiresGrad = true;
      const opt = new A.optim.SGD([p], { lr: 0.1 });
      const step = (x: Tensor, t: Tensor) => {
        const y = A.transpose(A.mul(A.transpose(A.mul(x, p), [2, 0, 1]), 2), [1, 2, 0]);
        const loss = A.mseLoss(y, t);
        loss.backward();
        opt.step();
        opt.zeroGrad();
        return loss;
      };
      return { ps: [p], step };
    };
    const x = A.randn([7, 40, 33], { seed: 6 }),
      t = A.rand([7, 40, 33], { seed: 7 });
    const seen = run(make, x, t, 'strided_copy_f32');
    expect(seen.some(([, c]) => c)).toBe(true);
    for (const p of [x, t, w]) p.dispose();
  });
});

describe('copyPieces: pieces only where they write disjoint bytes', () => {
  const args = (shape: number[], xs: number[], ys: number[]) => ({
    shape: Int32Array.from(shape),
    xs: Int32Array.from(xs),
    ys: Int32Array.from(ys),
  });
  it('a head split [12, 4, 64, 32] from [12, 64, 4, 32]: six batches each, offsets in elements', () => {
    expect(copyPieces(args([12, 4, 64, 32], [8192, 32, 128, 1], [8192, 2048, 32, 1]), 2, true)).toEqual([
      [0, 0, 6],
      [6 * 8192, 6 * 8192, 6],
    ]);
  });
  it('one piece when the outermost stride of y does not clear a slab, is negative elsewhere, or x is y', () => {
    expect(copyPieces(args([4, 8], [8, 1], [4, 1]), 2, true)).toEqual([[0, 0, 4]]);
    expect(copyPieces(args([4, 8], [8, 1], [0, 1]), 2, true)).toEqual([[0, 0, 4]]);
    expect(copyPieces(args([4, 8], [8, 1], [16, -1]), 2, true)).toEqual([[0, 0, 4]]);
    expect(copyPieces(args([4, 8], [8, 1], [8, 1]), 2, false)).toEqual([[0, 0, 4]]);
    expect(copyPieces(args([4, 8], [8, 1], [8, 1]), 1, true)).toEqual([[0, 0, 4]]);
  });
  it('a flat copy in pieces of whole 16-element groups', () => {
    expect(copyPieces(args([40], [1], [1]), 2, true)).toEqual([
      [0, 0, 32],
      [32, 32, 8],
    ]);
    expect(copyPieces(args([16], [1], [1]), 2, true)).toEqual([[0, 0, 16]]);
  });
});
