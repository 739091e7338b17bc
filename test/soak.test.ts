// Soak: 10,000 training steps written the documented way (a tidy() around each step) must
// keep memory flat: after warm-up the live tensor count and bytesInUse return to the same
// values after every step. Also a soak through the function transforms (valueAndGrad) with
// an in-place-free update, and one that evaluates without backward (no tape is kept).
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';

beforeAll(async () => {
  await A.init();
});

/** A small classification problem: 64 points in 8-D, 4 classes from a fixed random projection. */
function problem() {
  const x = A.randn([64, 8], { seed: 1 });
  const labels = A.tidy(() => {
    const scores = A.matmul(x, A.randn([8, 4], { seed: 2 })).toArray();
    return Int32Array.from({ length: 64 }, (_, i) => {
      let best = 0;
      for (let c = 1; c < 4; c++) if (scores[i * 4 + c] > scores[i * 4 + best]) best = c;
      return best;
    });
  });
  return { x, labels };
}

interface Track {
  tensors: number;
  bytes: number;
}

/** Runs `steps` steps; from `warmup` on, memory after each step must equal memory after the warm-up. */
function soak(steps: number, warmup: number, step: (i: number) => void): { drift: string[]; flat: Track } {
  let flat: Track | null = null;
  const drift: string[] = [];
  for (let i = 0; i < steps; i++) {
    step(i);
    const m = A.memory();
    if (i === warmup) flat = { tensors: m.tensors, bytes: m.bytesInUse };
    else if (flat !== null && (m.tensors !== flat.tensors || m.bytesInUse !== flat.bytes) && drift.length < 5) {
      drift.push(`step ${i}: ${m.tensors} tensors, ${m.bytesInUse} bytes (after warm-up: ${flat.tensors}, ${flat.bytes})`);
    }
  }
  return { drift, flat: flat! };
}

describe('soak', () => {
  it('10,000 steps of nn.Sequential + optim.Adam keep memory flat, and the model learns', () => {
    const { x, labels } = problem();
    const model = new A.nn.Sequential(new A.nn.Linear(8, 32, { seed: 3 }), new A.nn.Tanh(), new A.nn.Linear(32, 4, { seed: 4 }));
    const opt = new A.optim.Adam(model.parameters(), { lr: 3e-3 });
    const losses: number[] = [];
    const { drift } = soak(10_000, 50, (i) =>
      A.tidy(() => {
        opt.zeroGrad();
        const rows = Int32Array.from({ length: 16 }, (_, j) => (i * 16 + j) % 64);
        const loss = A.crossEntropy(
          model.forward(A.gather(x, rows)),
          Array.from(rows, (r) => labels[r]),
        );
        loss.backward();
        opt.step();
        if (i % 1000 === 0 || i === 9999) losses.push(loss.item());
      }),
    );
    expect(drift).toEqual([]);
    expect(losses[losses.length - 1]).toBeLessThan(losses[0] * 0.25);
    const accuracy = A.tidy(() => {
      const pred = A.noGrad(() => model.forward(x)).toArray();
      let ok = 0;
      for (let i = 0; i < 64; i++) {
        let best = 0;
        for (let c = 1; c < 4; c++) if (pred[i * 4 + c] > pred[i * 4 + best]) best = c;
        if (best === labels[i]) ok++;
      }
      return ok / 64;
    });
    expect(accuracy).toBeGreaterThan(0.9);
    opt.dispose();
    model.dispose();
    x.dispose();
  }, 60_000);

  it('10,000 compiled steps (compile(fn) replaying one schedule) keep memory flat, and the model learns', () => {
    const { x, labels } = problem();
    const model = new A.nn.Sequential(new A.nn.Linear(8, 32, { seed: 3 }), new A.nn.Tanh(), new A.nn.Linear(32, 4, { seed: 4 }));
    const opt = new A.optim.Adam(model.parameters(), { lr: 3e-3 });
    const step = A.compile((xb: A.Tensor, yb: Int32Array) => {
      const loss = A.crossEntropy(model.forward(xb), yb);
      loss.backward();
      opt.step();
      opt.zeroGrad(); // at the end of the step, as compile's contract asks
      return loss;
    });
    const batches = Array.from({ length: 4 }, (_, b) => {
      const rows = Int32Array.from({ length: 16 }, (_, j) => b * 16 + j);
      return { xb: A.keep(A.gather(x, rows)), yb: Int32Array.from(rows, (r) => labels[r]) };
    });
    const losses: number[] = [];
    const { drift } = soak(10_000, 50, (i) => {
      const { xb, yb } = batches[i % 4];
      const loss = step(xb, yb);
      if (i % 1000 === 0 || i === 9999) losses.push(loss.item());
      loss.dispose();
    });
    expect(drift).toEqual([]);
    expect(step.stats).toMatchObject({ fallback: null, signatures: 1 });
    expect(step.stats.replayed).toBeGreaterThan(9_990);
    expect(losses[losses.length - 1]).toBeLessThan(losses[0] * 0.25);
    for (const b of batches) b.xb.dispose();
    step.reset();
    opt.dispose();
    model.dispose();
    x.dispose();
  }, 60_000);

  it('2,000 steps of valueAndGrad with new parameter tensors each step keep memory flat', () => {
    const { x, labels } = problem();
    let w = [A.randn([8, 16], { seed: 5 }), A.randn([16, 4], { seed: 6 })];
    const loss = (w1: A.Tensor, w2: A.Tensor) => A.crossEntropy(A.matmul(A.relu(A.matmul(x, w1)), w2), labels);
    const vg = A.valueAndGrad(loss, { argnums: [0, 1] });
    const { drift } = soak(2_000, 20, () => {
      w = A.tidy(() => {
        const [, grads] = vg(w[0], w[1]) as [A.Tensor, A.Tensor[]];
        const next = w.map((p, j) => A.sub(p, A.mul(grads[j], 0.05)));
        for (const p of w) p.dispose();
        return next;
      });
    });
    expect(drift).toEqual([]);
    for (const t of [...w, x]) t.dispose();
  }, 60_000);

  it('evaluating parameters that require grad, without backward, keeps no tape alive', () => {
    const { x, labels } = problem();
    const model = new A.nn.Sequential(new A.nn.Linear(8, 16, { seed: 7 }), new A.nn.ReLU(), new A.nn.Linear(16, 4, { seed: 8 }));
    const { drift } = soak(1_000, 5, () => A.tidy(() => void A.crossEntropy(model.forward(x), labels).item()));
    expect(drift).toEqual([]);
    model.dispose();
    x.dispose();
  });
});
