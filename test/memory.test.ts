// Memory accounting a test can rely on (issue 5): memory() counts logical bytes of live blocks,
// tracks its peak on allocation, counts gradients apart, and after resetPeak() reports a
// training step's activation peak exactly — linear in depth without checkpointing, O(√L) with.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { planSegments, type CheckpointPlan } from '../src/autodiff/segments.js';
import { sequentialForward, type Layer } from '../src/nn/sequential.js';

beforeAll(() => A.init());

describe('memory()', () => {
  it('counts the logical bytes of live blocks: views are free, dispose returns them', () => {
    const m0 = A.memory();
    A.tidy(() => {
      const t = A.zeros([10]); // 40 bytes, though the block is a 64-byte size class
      expect(A.memory().bytesInUse - m0.bytesInUse).toBe(40);
      const v = A.detach(t);
      expect(A.memory().bytesInUse - m0.bytesInUse).toBe(40);
      expect(A.memory().tensors - m0.tensors).toBe(2);
      t.dispose();
      expect(A.memory().bytesInUse - m0.bytesInUse).toBe(40); // v still views the block
      v.dispose();
      expect(A.memory().bytesInUse).toBe(m0.bytesInUse);
    });
  });

  it('peakBytes is the most in use since resetPeak(); activationPeakBytes starts at zero', () => {
    A.resetPeak();
    const m0 = A.memory();
    expect(m0.peakBytes).toBe(m0.bytesInUse);
    expect(m0.activationPeakBytes).toBe(0);
    A.tidy(() => {
      A.zeros([1000], { dtype: 'float64' });
      A.zeros([10]);
    });
    const m1 = A.memory();
    expect(m1.bytesInUse).toBe(m0.bytesInUse);
    expect(m1.peakBytes - m0.bytesInUse).toBe(8040);
    expect(m1.activationPeakBytes).toBe(8040);
    A.resetPeak();
    expect(A.memory().peakBytes).toBe(m0.bytesInUse);
  });

  it('gradBytes counts every .grad buffer until it is freed; gradients do not count as activations', () => {
    const w = A.keep(A.ones([50, 20], { requiresGrad: true }));
    const x = A.keep(A.ones([8, 50]));
    const g0 = A.memory().gradBytes;
    A.resetPeak();
    A.tidy(() => A.sum(A.matmul(x, w)).backward());
    const m = A.memory();
    expect(m.gradBytes - g0).toBe(4000);
    // The peak of everything else: the matmul output and its cotangent (8·20·4 bytes each) and
    // a few scalars — not the 4000-byte weight gradient, a gradient from its allocation.
    expect(m.activationPeakBytes).toBeLessThan(4000);
    expect(m.peakBytes - m.bytesInUse).toBeGreaterThanOrEqual(m.activationPeakBytes - 4000 + 640);
    w.grad!.dispose();
    w.grad = null;
    expect(A.memory().gradBytes).toBe(g0);
    w.dispose();
    x.dispose();
  });
});

// ------------------------------------------------------------------ a training step

const B = 16,
  D = 32,
  ACT = B * D * 4; // one layer's activation: batch × width × float32

interface Setup {
  layers: Layer[];
  params: Tensor[];
  sgd: InstanceType<typeof A.optim.SGD>;
  x: Tensor;
  target: Tensor;
  dispose(): void;
}

function setup(L: number): Setup {
  const params: Tensor[] = [];
  const layers = Array.from({ length: L }, (_, i) => {
    const W = A.keep(A.tidy(() => A.randn([D, D], { seed: i }).mul(1 / Math.sqrt(D))));
    const b = A.keep(A.zeros([D]));
    W.requiresGrad = b.requiresGrad = true;
    params.push(W, b);
    return { forward: (h: Tensor) => A.tidy(() => A.tanh(A.add(A.matmul(h, W), b))) };
  });
  const sgd = new A.optim.SGD(params, { lr: 1e-3, momentum: 0.9 }); // momentum: optimizer state to subtract
  const x = A.keep(A.randn([B, D], { seed: 100 })),
    target = A.keep(A.randn([B, D], { seed: 101 }));
  const dispose = () => {
    for (const t of [...params, x, target]) t.dispose();
    sgd.dispose();
  };
  return { layers, params, sgd, x, target, dispose };
}

/** Checkpointed segments of `size` layers each, all recomputed, intermediates freed as they are consumed. */
const fixedSegments =
  (layers: readonly Layer[], size: number) =>
  (x: Tensor): Tensor => {
    let h = x;
    for (let i = 0; i < layers.length; i += size) {
      const next = A.checkpoint((z: Tensor) => sequentialForward(layers.slice(i, i + size), z))(h);
      if (h !== x) h.dispose();
      h = next;
    }
    return h;
  };

/** One step (zeroGrad, forward, loss, backward, update) after resetPeak(); returns memory() after it. */
function measuredStep(s: Setup, plan?: CheckpointPlan | ((x: Tensor) => Tensor)): A.MemoryInfo {
  const model = typeof plan === 'function' ? plan : (x: Tensor) => sequentialForward(s.layers, x, plan);
  const step = () => {
    s.sgd.zeroGrad();
    A.tidy(() => A.mseLoss(model(s.x), s.target).backward());
    s.sgd.step();
  };
  step(); // optimizer state, plans
  A.resetPeak();
  step();
  return A.memory();
}

describe('a training step’s activation peak', () => {
  it('adds up with parameters, gradients and optimizer state', () => {
    const m0 = A.memory();
    const s = setup(8);
    const m = measuredStep(s);
    const P = s.params.reduce((a, p) => a + p.size * 4, 0),
      G = P,
      O = P,
      data = 2 * ACT; // SGD momentum: one buffer per parameter
    expect(m.gradBytes - m0.gradBytes).toBe(G);
    expect(m.bytesInUse - m0.bytesInUse).toBe(P + G + O + data);
    // zeroGrad() frees the gradients and backward builds them again while it frees activations,
    // so peakBytes − (P + G + O) bounds the activation peak from below, peakBytes − (P + O) from above.
    const persistent = m0.bytesInUse + P + O + data;
    expect(m.peakBytes - persistent - G).toBeLessThanOrEqual(m.activationPeakBytes);
    expect(m.activationPeakBytes).toBeLessThanOrEqual(m.peakBytes - persistent);
    expect(m.activationPeakBytes).toBeGreaterThanOrEqual(8 * ACT);
    s.dispose();
    expect(A.memory().bytesInUse).toBe(m0.bytesInUse);
  });

  it('is deterministic, and grows by exactly one layer’s activations per layer without checkpointing', () => {
    const peaks = [6, 10, 14].map((L) => {
      const s = setup(L);
      const a = measuredStep(s).activationPeakBytes;
      expect(measuredStep(s).activationPeakBytes).toBe(a);
      s.dispose();
      return a;
    });
    expect(peaks[1] - peaks[0]).toBe(4 * ACT);
    expect(peaks[2] - peaks[1]).toBe(4 * ACT);
    // Against B·Σd·bytes: the L saved layer outputs plus the backward's few transient cotangents.
    expect(peaks[0]).toBeGreaterThanOrEqual(6 * ACT);
    expect(peaks[0]).toBeLessThanOrEqual(6 * ACT + 6 * ACT);
  });

  it('with checkpointed segments of fixed length, each extra segment adds exactly one kept input', () => {
    const peaks = [2, 3, 4].map((segments) => {
      const s = setup(4 * segments);
      const a = measuredStep(s, fixedSegments(s.layers, 4)).activationPeakBytes;
      s.dispose();
      return a;
    });
    expect(peaks[1] - peaks[0]).toBe(ACT);
    expect(peaks[2] - peaks[1]).toBe(ACT);
  });

  it("'sqrt' and a budget: the measured peak is the planned one plus the same transients as an uncheckpointed step", () => {
    const L = 36;
    const s = setup(L);
    const plain = measuredStep(s).activationPeakBytes;
    const transient = plain - L * ACT; // the model output kept for the loss, a cotangent, the tanh VJP's temporaries
    expect(transient).toBeGreaterThanOrEqual(0);
    for (const plan of ['sqrt', { maxBytes: 10 * ACT }] as CheckpointPlan[]) {
      const planned = planSegments(new Array(L).fill(ACT), plan).peakBytes;
      const got = measuredStep({ ...s, layers: [...s.layers] }, plan).activationPeakBytes;
      expect(got).toBeLessThanOrEqual(planned + transient);
      expect(plain / got).toBeGreaterThan(2.5);
    }
    s.dispose();
  });
});
