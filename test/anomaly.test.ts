// Anomaly mode: off by default; when on, the first primitive (forward or backward) whose
// output holds a NaN or an infinity throws an AnomalyError naming the op, the pass, its place
// in the graph and the input shapes, and leaves the engine as it was.
import { beforeAll, afterEach, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';

beforeAll(async () => {
  await A.init();
});
afterEach(() => A.detectAnomaly(false));

function caught(f: () => unknown): Error {
  try {
    A.tidy(() => void f());
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('detectAnomaly', () => {
  it('is off by default: NaN flows through silently', () => {
    const v = A.tidy(() => A.log(A.full([3], -1)).toArray());
    expect(Number.isNaN(v[0])).toBe(true);
  });

  for (const dtype of ['float32', 'float64'] as const) {
    it(`names the forward op, its position and the input shapes (${dtype})`, () => {
      A.detectAnomaly(true);
      const e = caught(() => {
        const x = A.full([2, 3], 4, { dtype });
        const y = A.sqrt(A.sub(x, 1)); // op #2: sqrt, #1: sub
        return A.log(A.sub(y, 5)); // #4: log of negatives
      });
      expect(e).toBeInstanceOf(A.AnomalyError);
      expect(e).toBeInstanceOf(A.AdjointError);
      expect(e.name).toBe('AnomalyError');
      expect(e.message).toContain('forward pass');
      expect(e.message).toContain('op #4');
      expect(e.message).toMatch(/log produced 6 NaN\/Inf value\(s\)/);
      expect(e.message).toContain(`${dtype} output [2,3] from inputs [2,3]`);
    });
  }

  it('catches infinities as well as NaN, in any primitive (here a division by zero)', () => {
    A.detectAnomaly(true);
    const e = caught(() => A.div(A.ones([4]), A.tensor([1, 0, 2, 0])));
    expect(e.message).toMatch(/div produced 2 NaN\/Inf value\(s\) in its float32 output \[4\] from inputs \[4\], \[4\]/);
  });

  it('checks the backward pass: names the VJP op, the node it differentiates and the sweep step', () => {
    const x = A.tensor([0, 1, 4], { requiresGrad: true });
    A.detectAnomaly(true);
    // Forward is finite (sqrt(0) = 0), but d sqrt/dx = 0.5 / sqrt(x) is infinite at 0.
    const e = caught(() => A.sum(A.mul(A.sqrt(x), 3)).backward());
    expect(e).toBeInstanceOf(A.AnomalyError);
    expect(e.message).toContain('backward pass');
    expect(e.message).toMatch(/step 3 of 3, in the VJP of node #\d+ \(sqrt of inputs \[3\]\)/);
    expect(e.message).toMatch(/div produced 1 NaN\/Inf value\(s\) in its float32 output \[3\]/);
    expect(x.grad).toBe(null); // the failed sweep wrote no gradient
    x.dispose();
  });

  it('checks tangents in forward mode', () => {
    A.detectAnomaly(true);
    const e = caught(() => A.jvp((t) => A.sqrt(t), [A.tensor([0, 1])], [A.ones([2])]));
    expect(e).toBeInstanceOf(A.AnomalyError);
    expect(e.message).toMatch(/div produced 1 NaN\/Inf/);
  });

  it('checks the ops of a custom VJP', () => {
    const f = A.customVjp(
      function halve(t: A.Tensor) {
        return A.mul(t, 0.5);
      },
      (g) => [A.div(g, 0)],
    );
    const x = A.ones([2], { requiresGrad: true });
    A.detectAnomaly(true);
    const e = caught(() => A.sum(f(x)).backward());
    expect(e.message).toMatch(/VJP of node #\d+ \(custom of inputs \[2\]\): div produced 2/);
    x.dispose();
  });

  it('lets −∞ masks through: a value kind an input already held is carried, not produced', () => {
    A.detectAnomaly(true);
    const q = A.randn([1, 2, 7, 4], { seed: 1, requiresGrad: true });
    A.tidy(() => {
      // PyTorch's generate_square_subsequent_mask, built and used with the mode on.
      const mask = A.triu(A.full([7, 7], -Infinity), 1);
      A.sum(A.scaledDotProductAttention(q, q, q, { mask })).backward();
      const scores = () => A.matmul(q, A.transpose(q, [0, 1, 3, 2]));
      A.sum(A.square(A.softmax(A.add(scores(), mask)))).backward();
      const filled = A.maskedFill(scores(), A.triu(A.ones([7, 7]), 1), -Infinity);
      A.sum(A.square(A.softmax(filled))).backward();
      expect(A.logsumexp(A.tensor([-Infinity, 0])).item()).toBe(0);
    });
    expect(q.grad!.toArray().every(Number.isFinite)).toBe(true);
    q.grad!.dispose();
    q.dispose();
  });

  it('still names the op that makes a new kind of value from a masked input', () => {
    A.detectAnomaly(true);
    const masked = A.tensor([-Infinity, 100, 0]);
    // exp(100) overflows float32 to +∞: new, although the input held −∞.
    expect(caught(() => A.exp(masked)).message).toMatch(/exp produced 1 NaN\/Inf/);
    // A fully masked softmax row: −∞ − (−∞) is NaN.
    expect(caught(() => A.softmax(A.full([2, 3], -Infinity))).message).toMatch(/softmax produced 6 NaN\/Inf/);
    masked.dispose();
  });

  it('passes int32 outputs (argmax, a cast to int32, the basis jacrev builds): they hold no NaN or infinity', () => {
    // checkFinite ran its count kernel on every output, and there is no count_nonfinite_i32:
    // 'internal: no kernel named count_nonfinite_i32' for any int32-producing op.
    A.detectAnomaly(true);
    const s = A.tensor([
      [1, 3, 2],
      [0, -1, 5],
    ]);
    expect(A.tidy(() => Array.from(A.argmax(s, -1).toArray()))).toEqual([1, 2]);
    expect(A.tidy(() => Array.from(A.astype(s, 'int32').toArray()))).toEqual([1, 3, 2, 0, -1, 5]);
    expect(A.tidy(() => A.jacrev((q: A.Tensor) => A.softmax(q, -1))(s).shape)).toEqual([2, 3, 2, 3]);
  });

  it('rejects a non-boolean switch', () => {
    expect(() => A.detectAnomaly(1 as unknown as boolean)).toThrow(A.ArgumentError);
  });
});

describe('count_nonfinite kernel', () => {
  it('counts NaN and ±Inf at every position, SIMD body and scalar tail, for sizes 0..17 and both dtypes', async () => {
    const { kernel } = await import('../src/wasm/module.js');
    const specials = [NaN, Infinity, -Infinity];
    for (const dtype of ['float32', 'float64'] as const) {
      const f = kernel(dtype === 'float32' ? 'count_nonfinite_f32' : 'count_nonfinite_f64');
      for (const n of [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17]) {
        for (let bad = 0; bad <= n; bad++) {
          // `bad` non-finite values spread over the positions (a stride coprime to most n), the rest huge or tiny but finite.
          const v = Array.from({ length: n }, (_, i) => ((i * 5) % n < bad ? specials[i % 3] : i % 2 ? 3e38 : -1e-40));
          const t = A.tensor(v, { shape: [n], dtype });
          expect(f(t.ptr, n), `${dtype} n=${n} bad=${bad}`).toBe(v.filter((u) => !Number.isFinite(u)).length);
          t.dispose();
        }
      }
    }
  });
});

describe('after an anomaly', () => {
  /** Loss curve of 30 SGD steps on a tiny regression, with anomaly mode as given. */
  function fit(anomaly: boolean): number[] {
    A.detectAnomaly(anomaly);
    let w = A.randn([3, 1], { seed: 3, requiresGrad: true });
    const x = A.randn([8, 3], { seed: 4 }),
      t = A.randn([8, 1], { seed: 5 });
    const out: number[] = [];
    for (let i = 0; i < 30; i++) {
      w = A.tidy(() => {
        const loss = A.mseLoss(A.matmul(x, w), t);
        loss.backward();
        out.push(loss.item());
        const next = A.noGrad(() => A.sub(w, A.mul(w.grad!, 0.1)));
        w.dispose();
        next.requiresGrad = true;
        return next;
      });
    }
    for (const v of [w, x, t]) v.dispose();
    A.detectAnomaly(false);
    return out;
  }

  it('leaves no tensors, bytes or recorded graph behind, and training is unchanged', () => {
    const clean = fit(false);
    const base = A.memory();
    const w = A.tensor([0, 2], { requiresGrad: true });
    A.detectAnomaly(true);
    for (let i = 0; i < 20; i++) {
      expect(() => A.tidy(() => A.sum(A.log(A.sub(w, 1))).backward())).toThrow(A.AnomalyError); // forward
      expect(() => A.tidy(() => A.sum(A.sqrt(w)).backward())).toThrow(A.AnomalyError); // backward
    }
    A.detectAnomaly(false);
    expect(w.grad).toBe(null);
    w.dispose();
    expect(A.memory().tensors).toBe(base.tensors);
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
    expect(fit(true)).toEqual(clean);
    expect(fit(false)).toEqual(clean);
  });
});

describe('withAnomalyDetection', () => {
  it('turns detection on for fn only, restoring the setting even when fn throws', () => {
    const bad = () => A.tidy(() => void A.log(A.full([1], -1)));
    expect(() => A.withAnomalyDetection(bad)).toThrow(A.AnomalyError);
    expect(bad).not.toThrow();
    expect(
      A.withAnomalyDetection(() =>
        A.tidy(() =>
          A.exp(A.ones([2]))
            .sum()
            .item(),
        ),
      ),
    ).toBeCloseTo(2 * Math.E, 5);
    expect(bad).not.toThrow();
    A.detectAnomaly(true);
    expect(() => A.withAnomalyDetection(() => 1)).not.toThrow();
    expect(bad).toThrow(A.AnomalyError); // still on: the scope restored the outer setting
  });

  it('numbers forward ops from where the scope began', () => {
    const e = caught(() => A.withAnomalyDetection(() => A.log(A.neg(A.ones([2])))));
    expect(e.message).toContain('op #2');
  });
});
