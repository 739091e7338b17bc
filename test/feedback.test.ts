// Feedback alignment (nn.Linear { feedback }, the linearFA primitive, setFeedback): the
// backward pass against a float64 hand computation with the fixed B, what stays exactly
// backprop (W's and b's gradients given g, the forward, the JVP), the seeded B kept out of the
// parameters, and training: FA reaches ≥ 90 % on the digits while its updates align with the
// true gradient (angle below 90°). Also the `compare` command end to end.
import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { f64, arr, close } from './helpers.js';
import { linearFA } from '../src/ops/api.js';
import { parseTrainArgs } from '../src/cli/args.js';
import { train } from '../src/cli/train.js';
import { Monitor } from '../src/cli/compare.js';
import { main } from '../src/cli/main.js';

const { nn } = A;

beforeAll(async () => {
  await A.init();
});

/** Row-major [m, k] · [k, n], with either operand read transposed (stored [k, m] / [n, k]). */
function mm(a: number[], b: number[], m: number, k: number, n: number, ta = false, tb = false): number[] {
  const out = new Array<number>(m * n).fill(0);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++)
      for (let p = 0; p < k; p++) {
        out[i * n + j] += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      }
  return out;
}
const colSums = (a: number[], m: number, n: number) =>
  Array.from({ length: n }, (_, j) => a.filter((_, i) => i % n === j).reduce((s, v) => s + v, 0));
const addRow = (a: number[], b: number[], n: number) => a.map((v, i) => v + b[i % n]);

/** x [3, 4] → Linear(4, 5) → tanh → Linear(5, 2) → L = ½ Σ y²: every gradient by hand, with the given feedback matrices. */
function handBackward(x: number[], w1: number[], b1: number[], w2: number[], b2: number[], f1: number[], f2: number[]) {
  const h = addRow(mm(x, w1, 3, 4, 5, false, true), b1, 5).map(Math.tanh);
  const y = addRow(mm(h, w2, 3, 5, 2, false, true), b2, 2);
  const e = y; // dL/dy
  const dh = mm(e, f2, 3, 2, 5); // g·B₂ (backprop: g·W₂)
  const da = dh.map((v, i) => v * (1 - h[i] * h[i]));
  return { w2: mm(e, h, 2, 3, 5, true), b2: colSums(e, 3, 2), w1: mm(da, x, 5, 3, 4, true), b1: colSums(da, 3, 5), x: mm(da, f1, 3, 5, 4) };
}

function tinyNet(feedback: A.nn.Feedback) {
  const l1 = new nn.Linear(4, 5, { seed: 11, feedback, ...f64 }),
    l2 = new nn.Linear(5, 2, { seed: 12, feedback, ...f64 });
  return { l1, l2, model: new nn.Sequential(l1, new nn.Tanh(), l2) };
}
const X = Array.from({ length: 12 }, (_, i) => Math.sin(1.3 * i + 0.4));

function backwardOf(model: A.nn.Module) {
  const x = A.tensor(X, { shape: [3, 4], requiresGrad: true, ...f64 });
  A.tidy(() => A.mul(A.sum(A.square(model.forward(x))), 0.5).backward());
  return x;
}

describe('feedback alignment: the backward pass', () => {
  it('equals a float64 hand computation with the fixed B (dx = g·B, dW = gᵀx, db = Σg)', () => {
    const { l1, l2, model } = tinyNet('alignment');
    const x = backwardOf(model);
    const want = handBackward(
      X,
      arr(l1.weight),
      arr(l1.bias!),
      arr(l2.weight),
      arr(l2.bias!),
      arr(l1.feedbackMatrix!),
      arr(l2.feedbackMatrix!),
    );
    close(arr(l2.weight.grad!), want.w2);
    close(arr(l2.bias!.grad!), want.b2);
    close(arr(l1.weight.grad!), want.w1);
    close(arr(l1.bias!.grad!), want.b1);
    close(arr(x.grad!), want.x);
    // The same hand computation with Wᵀ is backprop, and the 'bp' layers give exactly that.
    const bp = tinyNet('bp');
    const xb = backwardOf(bp.model);
    const ref = handBackward(
      X,
      arr(bp.l1.weight),
      arr(bp.l1.bias!),
      arr(bp.l2.weight),
      arr(bp.l2.bias!),
      arr(bp.l1.weight),
      arr(bp.l2.weight),
    );
    close(arr(bp.l1.weight.grad!), ref.w1);
    close(arr(xb.grad!), ref.x);
    // Same seed, same W: the top layer's gradient is identical, the lower ones differ.
    close(arr(l2.weight.grad!), arr(bp.l2.weight.grad!));
    expect(arr(l1.weight.grad!)).not.toEqual(arr(bp.l1.weight.grad!));
    for (const m of [model, bp.model]) m.dispose();
  });

  it("'sign' sends g·sign(W)/√(3·in) back, recomputed from the current W", () => {
    const { l1, l2, model } = tinyNet('sign');
    // Flip some signs of W₂ after construction: B follows the current weights.
    model.loadStateDict({
      ...model.stateDict(),
      '2.weight': A.tensor(
        arr(l2.weight).map((v, i) => (i % 3 ? v : -v)),
        { shape: [2, 5], ...f64 },
      ),
    });
    const x = backwardOf(model);
    const s = (w: Tensor, fanIn: number) => arr(w).map((v) => Math.sign(v) / Math.sqrt(3 * fanIn));
    const want = handBackward(X, arr(l1.weight), arr(l1.bias!), arr(l2.weight), arr(l2.bias!), s(l1.weight, 4), s(l2.weight, 5));
    close(arr(l1.weight.grad!), want.w1);
    close(arr(x.grad!), want.x);
    expect(l1.feedbackMatrix).toBeNull();
    model.dispose();
  });

  it('keeps the forward and the JVP exact (the true derivative of x·Wᵀ)', () => {
    const fa = tinyNet('alignment'),
      bp = tinyNet('bp');
    const x = A.tensor(X, { shape: [3, 4], ...f64 }),
      t = A.tensor(
        X.map((v) => v * v - 0.3),
        { shape: [3, 4], ...f64 },
      );
    const [ya, ta] = A.jvp((z: Tensor) => fa.model.forward(z), [x], [t]);
    const [yb, tb] = A.jvp((z: Tensor) => bp.model.forward(z), [x], [t]);
    close(arr(ya), arr(yb), 0);
    close(arr(ta), arr(tb), 0);
    // The weights' tangents too: d(x·Wᵀ) = x·dWᵀ.
    const w = fa.l1.weight.detach(),
      dw = A.ones([5, 4], f64),
      B = fa.l1.feedbackMatrix!;
    const [, tw] = A.jvp((v: Tensor) => linearFA(x, v, B), [w], [dw]);
    close(arr(tw), mm(X, arr(dw), 3, 4, 5, false, true));
    for (const m of [fa.model, bp.model]) m.dispose();
  });
});

describe('the feedback matrix B', () => {
  it('is seeded, shaped and scaled like W (U(−1/√in, 1/√in)), and is no parameter', () => {
    const fa = new nn.Linear(64, 32, { seed: 5, feedback: 'alignment' }),
      bp = new nn.Linear(64, 32, { seed: 5 });
    const again = new nn.Linear(64, 32, { seed: 5, feedback: 'alignment' });
    const B = fa.feedbackMatrix!;
    expect(B.shape).toEqual([32, 64]);
    expect(B.requiresGrad).toBe(false);
    const b = arr(B),
      bound = 1 / Math.sqrt(64);
    expect(Math.max(...b.map(Math.abs))).toBeLessThanOrEqual(Math.fround(bound));
    expect(Math.max(...b)).toBeGreaterThan(0.8 * bound);
    expect(arr(again.feedbackMatrix!)).toEqual(b);
    // W and b are those of the backprop layer with the same seed; B continues the stream.
    expect(arr(fa.weight)).toEqual(arr(bp.weight));
    expect(arr(fa.bias!)).toEqual(arr(bp.bias!));
    expect(b).not.toEqual(arr(fa.weight));
    expect(Object.keys(fa.stateDict())).toEqual(['weight', 'bias']);
    expect(fa.parameters()).not.toContain(B);
    for (const l of [fa, bp, again]) l.dispose();
  });

  it('setFeedback switches a whole model, draws B per seed (never a weight of the same seed), and back to bp', () => {
    const model = new nn.Sequential(
      new nn.Linear(8, 8, { seed: 0 }),
      new nn.ReLU(),
      new nn.Sequential(new nn.Linear(8, 8, { seed: 1 }), new nn.Linear(8, 3, { seed: 2 })),
    );
    const layers = A.setFeedback(model, 'alignment', 0);
    expect(layers.map(([n]) => n)).toEqual(['0', '2.0', '2.1']);
    const Bs = layers.map(([, l]) => arr(l.feedbackMatrix!));
    expect(Bs[0]).not.toEqual(arr(layers[0][1].weight)); // the stream of seed 0 is salted
    const other = new nn.Sequential(
      new nn.Linear(8, 8, { seed: 0 }),
      new nn.ReLU(),
      new nn.Sequential(new nn.Linear(8, 8, { seed: 1 }), new nn.Linear(8, 3, { seed: 2 })),
    );
    expect(A.setFeedback(other, 'alignment', 0).map(([, l]) => arr(l.feedbackMatrix!))).toEqual(Bs);
    expect(A.setFeedback(other, 'alignment', 1).map(([, l]) => arr(l.feedbackMatrix!))[1]).not.toEqual(Bs[1]);
    // withBackprop runs true backprop through FA layers; 'bp' frees B.
    const x = A.randn([4, 8], { seed: 3 });
    const gradOf = () => {
      model.zeroGrad();
      A.tidy(() => A.sum(A.square(model.forward(x))).backward());
      return arr(layers[0][1].weight.grad!);
    };
    const fa = gradOf(),
      viaBp = A.withBackprop(gradOf);
    A.setFeedback(model, 'bp');
    expect(layers.every(([, l]) => l.feedback === 'bp' && l.feedbackMatrix === null)).toBe(true);
    expect(gradOf()).toEqual(viaBp);
    expect(fa).not.toEqual(viaBp);
    for (const m of [model, other]) m.dispose();
  });

  it('is freed with the model; bad modes and shapes are named', () => {
    const before = A.memory().tensors;
    const m = new nn.Sequential(new nn.Linear(6, 4, { feedback: 'alignment' }), new nn.Linear(4, 2, { feedback: 'alignment' }));
    m.dispose();
    expect(A.memory().tensors).toBe(before);
    // Nested in a Residual (not a Sequential): the base Module.dispose reaches B too.
    const bytes = A.memory().bytesInUse;
    const r = new nn.Residual(new nn.Linear(4, 4, { feedback: 'alignment' }));
    expect(A.memory().tensors).toBe(before + 3);
    r.dispose();
    expect(A.memory()).toMatchObject({ tensors: before, bytesInUse: bytes });
    expect(() => new nn.Linear(3, 2, { feedback: 'dfa' as never })).toThrow(
      /Linear: feedback must be one of 'bp', 'alignment', 'sign', got "dfa"/,
    );
    expect(() => linearFA(A.ones([2, 3]), A.ones([4, 3]), A.ones([3, 4]))).toThrow(A.ShapeError);
  });
});

describe('training with feedback alignment', () => {
  it('reaches ≥ 90 % test accuracy on the digits MLP while the angle to the true gradient falls below 90°', async () => {
    const args = parseTrainArgs(['--epochs', '6', '--feedback', 'alignment']);
    const monitor = new Monitor({ write: () => true }, { diagnostics: false, angles: true });
    const r = await train(args, { write: () => true }, monitor.hooks());
    monitor.dispose();
    r.model.dispose();
    expect(r.testAccuracy).toBeGreaterThanOrEqual(0.9);
    const first = monitor.angles[0].angles,
      last = monitor.angles[monitor.angles.length - 1].angles;
    expect(first.map((a) => a.layer)).toEqual(['0', '3']);
    // At the start B is unrelated to W: the signal is about orthogonal to backprop's.
    expect(first[1].signal!).toBeGreaterThan(80);
    expect(last[1].signal!).toBeLessThan(80);
    expect(last[0].weight).toBeLessThan(80);
    expect(last[0].signal).toBeNull(); // layer 0's input is the data
    expect(last[1].weight).toBeLessThan(0.5); // the top layer's own update is exact
  }, 60_000);

  it('`adjoint compare` trains each rule from the same start and plots them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adjoint-cmp-'));
    const file = join(dir, 'cmp.svg');
    let out = '',
      err = '';
    const code = await main(['compare', '--feedback', 'bp,alignment', '--epochs', '2', '--plot', file], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
    });
    expect(err).toBe('');
    expect(code).toBe(0);
    const lines = out.trim().split('\n');
    expect(lines[lines.length - 1]).toMatch(/^test accuracy: bp \d+\.\d\d%, alignment \d+\.\d\d%$/);
    expect(out).toMatch(/feedback alignment +\d+\.\d\d% +0\.weight update: \d+\.\d°, signal sent back by 3: \d+\.\d°/);
    const svg = readFileSync(file, 'utf8');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    for (const t of ['Training loss', 'Test accuracy', 'Alignment with backprop', 'feedback alignment: signal sent back by 3'])
      expect(svg).toContain(t);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it.each([
    [['compare', '--feedback', 'bp,dfa'], /--feedback takes a comma-separated list of bp, alignment, sign, got "dfa"/],
    [['compare', '--feedback', 'bp,bp'], /--feedback lists a rule twice/],
    [['compare', '--save', 'w.safetensors'], /compare does not take --save/],
    [['compare', '--plot', 'cmp.png'], /--plot expects a FILE.svg path/],
  ])('compare %j is a usage error', async (argv, message) => {
    let err = '';
    const code = await main(argv, { stdout: { write: () => true }, stderr: { write: (s: string) => (err += s) } });
    expect(code).toBe(2);
    expect(err).toMatch(message);
  });
});
