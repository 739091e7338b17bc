// Gradient diagnostics: gradientStats against float64 norms, the vanishing / exploding
// warnings (a 50-layer tanh MLP vanishes, the same depth with residuals and LayerNorm does
// not), the wasm arccos behind the alignment angle, alignmentAngles against a hand computation
// (and that it leaves gradients and training mode as they were), the SVG writer, and the
// `train --diagnostics --plot` flags end to end.
import { describe, it, expect, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { f64, arr } from './helpers.js';
import { angleDegrees } from '../src/nn/diagnostics.js';
import { niceTicks, renderSvg } from '../src/cli/plot.js';
import { main } from '../src/cli/main.js';

const { nn } = A;

beforeAll(async () => {
  await A.init();
});

const l2 = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const angle = (a: number[], b: number[]) => (Math.acos(a.reduce((s, x, i) => s + x * b[i], 0) / (l2(a) * l2(b))) * 180) / Math.PI;

describe('gradientStats', () => {
  it('gives each parameter its gradient norm, weight norm and their ratio', () => {
    const model = new nn.Sequential(new nn.Linear(5, 4, { seed: 1, ...f64 }), new nn.Tanh(), new nn.Linear(4, 2, { seed: 2, ...f64 }));
    expect(A.gradientStats(model).every((s) => s.gradNorm === 0)).toBe(true); // before any backward pass
    const x = A.randn([6, 5], { seed: 3, ...f64 });
    A.tidy(() => A.sum(A.square(model.forward(x))).backward());
    const stats = A.gradientStats(model);
    expect(stats.map((s) => s.name)).toEqual(['0.weight', '0.bias', '2.weight', '2.bias']);
    model.namedParameters().forEach(([, p], i) => {
      expect(stats[i].weightNorm).toBeCloseTo(l2(arr(p)), 12);
      expect(stats[i].gradNorm).toBeCloseTo(l2(arr(p.grad!)), 12);
      expect(stats[i].ratio).toBeCloseTo(stats[i].gradNorm / stats[i].weightNorm, 12);
    });
    model.dispose();
  });

  it('warns about vanishing (relative to the largest) and exploding or non-finite gradients', () => {
    const s = (name: string, gradNorm: number) => ({ name, gradNorm, weightNorm: 1, ratio: gradNorm });
    expect(A.gradientWarnings([s('a', 1), s('b', 2e-7), s('c', 3e-6)])).toEqual([
      'vanishing gradient: b ‖grad‖ = 2.00e-7 < 0.000001 × the largest (a, 1.00e+0)',
    ]);
    expect(A.gradientWarnings([s('a', 1), s('b', NaN), s('c', 2e7), s('d', Infinity)])).toEqual([
      'exploding gradient: b ‖grad‖ = NaN (not finite)',
      'exploding gradient: c ‖grad‖ = 2.00e+7 > 1.00e+6',
      'exploding gradient: d ‖grad‖ = Infinity (not finite)',
    ]);
    expect(A.gradientWarnings([s('a', 1), s('b', 2e-3)], { vanishing: 1e-2 })).toHaveLength(1);
  });

  const WIDTH = 32,
    DEPTH = 50;
  const digits = () => {
    const d = A.data.digits();
    return { x: A.slice(d.xTrain, [0, 0], [64, 64]), y: d.yTrain.slice(0, 64) };
  };
  const statsAfterStep = (model: A.nn.Module) => {
    const { x, y } = digits();
    A.tidy(() => A.crossEntropy(model.forward(x), y).backward());
    const stats = A.gradientStats(model);
    model.dispose();
    return stats;
  };

  it(`a ${DEPTH}-layer tanh MLP (PyTorch init, no residuals) shows the vanishing warning`, () => {
    const layers: A.nn.Module[] = [new nn.Linear(64, WIDTH, { seed: 0 }), new nn.Tanh()];
    for (let i = 1; i < DEPTH - 1; i++) layers.push(new nn.Linear(WIDTH, WIDTH, { seed: i }), new nn.Tanh());
    layers.push(new nn.Linear(WIDTH, 10, { seed: DEPTH }));
    const stats = statsAfterStep(new nn.Sequential(...layers));
    const warnings = A.gradientWarnings(stats);
    expect(warnings.some((w) => /^vanishing gradient: 0\.weight /.test(w))).toBe(true);
    expect(warnings.every((w) => w.startsWith('vanishing'))).toBe(true);
    // The gradient decays geometrically with depth: the first layer gets < 1e-6 of the last.
    expect(stats[0].gradNorm / stats[stats.length - 2].gradNorm).toBeLessThan(1e-6);
  });

  it(`the same depth with residual blocks and LayerNorm does not`, () => {
    const layers: A.nn.Module[] = [new nn.Linear(64, WIDTH, { seed: 0 })];
    for (let i = 1; i < DEPTH - 1; i++) {
      layers.push(new nn.Residual(new nn.Sequential(new nn.LayerNorm(WIDTH), new nn.Linear(WIDTH, WIDTH, { seed: i }), new nn.Tanh())));
    }
    layers.push(new nn.LayerNorm(WIDTH), new nn.Linear(WIDTH, 10, { seed: DEPTH }));
    const stats = statsAfterStep(new nn.Sequential(...layers));
    expect(stats.find((s) => s.name === '1.module.1.weight')).toBeDefined();
    expect(A.gradientWarnings(stats)).toEqual([]);
    expect(stats[0].gradNorm / stats[stats.length - 2].gradNorm).toBeGreaterThan(1e-2);
  });
});

describe('alignment angles', () => {
  it('angleDegrees (arccos from wasm ops) matches Math.acos to 1e-5°, 0° to 180°', () => {
    for (const [a, b] of [
      [
        [1, 0],
        [1, 0],
      ],
      [
        [1, 0],
        [0, 2],
      ],
      [
        [1, 0],
        [-3, 0],
      ],
      [
        [1, 2, 3],
        [3, -1, 0.5],
      ],
      [
        [1, 1],
        [1, 0.999],
      ],
      [
        [1, 0],
        [-1, 1e-3],
      ],
    ]) {
      const got = angleDegrees(A.tensor(a, f64), A.tensor(b, f64));
      expect(Math.abs(got - angle(a, b))).toBeLessThan(1e-5);
    }
    for (let i = 0; i <= 40; i++) {
      const t = (i / 40) * Math.PI,
        a = [1, 0],
        b = [Math.cos(t), Math.sin(t)];
      expect(Math.abs(angleDegrees(A.tensor(a, f64), A.tensor(b, f64)) - (t * 180) / Math.PI)).toBeLessThan(1e-5);
    }
  });

  it('measures FA against backprop as a hand computation does, and leaves grads and mode as they were', () => {
    // x → Linear(4, 5) → tanh → Linear(5, 3); L = Σ c ⊙ y, so the output adjoint c is the same under FA and BP.
    const l1 = new nn.Linear(4, 5, { seed: 1, feedback: 'alignment', ...f64 }),
      l2 = new nn.Linear(5, 3, { seed: 2, feedback: 'alignment', ...f64 });
    const model = new nn.Sequential(l1, new nn.Tanh(), l2).train();
    const x = A.randn([6, 4], { seed: 4, ...f64 }),
      c = A.randn([6, 3], { seed: 5, ...f64 });
    const stash = A.zeros([5, 4], f64);
    l1.weight.grad = stash;
    const rows = A.alignmentAngles(model, x, (y) => A.sum(A.mul(y, c)));
    expect(l1.weight.grad).toBe(stash);
    expect(l2.weight.grad).toBeNull();
    expect(model.training).toBe(true);
    // By hand: the hidden adjoint is c·B₂ (FA) or c·W₂ (BP); ΔW₁ = (adjoint ⊙ (1 − h²))ᵀ·x.
    const h = arr(A.noGrad(() => A.tanh(l1.forward(x))));
    const cv = arr(c),
      xv = arr(x),
      sig = (m: number[]) =>
        Array.from({ length: 30 }, (_, k) => {
          const i = Math.floor(k / 5),
            j = k % 5;
          return [0, 1, 2].reduce((s, o) => s + cv[i * 3 + o] * m[o * 5 + j], 0);
        });
    const dW1 = (d: number[]) =>
      Array.from({ length: 20 }, (_, k) => {
        const j = Math.floor(k / 4),
          q = k % 4;
        return Array.from({ length: 6 }, (_, i) => d[i * 5 + j] * (1 - h[i * 5 + j] ** 2) * xv[i * 4 + q]).reduce((s, v) => s + v, 0);
      });
    const fa = sig(arr(l2.feedbackMatrix!)),
      bp = sig(arr(l2.weight));
    expect(rows.map((r) => r.layer)).toEqual(['0', '2']);
    expect(rows[0].signal).toBeNull();
    expect(rows[1].signal!).toBeCloseTo(angle(fa, bp), 5); // arccos to 2e-8 rad (≈ 1e-6°)
    expect(rows[0].weight).toBeCloseTo(angle(dW1(fa), dW1(bp)), 5);
    expect(rows[1].weight).toBeLessThan(1e-3);
    expect(A.alignmentAngles(new nn.Sequential(new nn.Linear(4, 3)), x.astype('float32'), (y) => A.sum(y))).toEqual([]);
    model.dispose();
  });
});

describe('argument errors', () => {
  const any = (v: unknown) => v as never;
  it.each([
    ['gradientStats', () => A.gradientStats(any({})), /gradientStats: model must be an nn.Module, got object/],
    ['gradientWarnings', () => A.gradientWarnings(any(null)), /gradientWarnings: stats must be the array gradientStats returns/],
    ['gradientWarnings', () => A.gradientWarnings([], { vanishing: -1 }), /gradientWarnings: vanishing must be a positive number, got -1/],
    ['alignmentAngles', () => A.alignmentAngles(new nn.Linear(2, 2), any([1, 2]), (y) => y), /alignmentAngles: x must be a Tensor/],
    [
      'alignmentAngles',
      () => A.alignmentAngles(new nn.Linear(2, 2), A.ones([1, 2]), any('sum')),
      /alignmentAngles: lossOf must be a function/,
    ],
    ['setFeedback', () => A.setFeedback(any(null), 'alignment'), /setFeedback: model must be an nn.Module, got null/],
    [
      'setFeedback',
      () => A.setFeedback(new nn.Linear(2, 2), any('random')),
      /setFeedback: feedback must be one of 'bp', 'alignment', 'sign', got "random"/,
    ],
    ['setFeedback', () => A.setFeedback(new nn.Linear(2, 2), 'alignment', 0.5), /setFeedback: seed must be a safe integer/],
    ['withBackprop', () => A.withBackprop(any(3)), /withBackprop: fn must be a function, got 3 \(a number\)/],
  ])('%s refuses a bad argument with an ArgumentError', (_name, call, message) => {
    expect(call).toThrow(A.ArgumentError);
    expect(call).toThrow(message);
  });
});

describe('plots and the CLI flags', () => {
  it('niceTicks steps by 1, 2 or 5 × 10ᵏ', () => {
    expect(niceTicks(0, 40, 5)).toEqual([0, 10, 20, 30, 40]);
    expect(niceTicks(86.2, 98.9, 7)).toEqual([88, 90, 92, 94, 96, 98]);
    expect(niceTicks(0, 1, 5)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('renderSvg writes a standalone document with escaped labels', () => {
    const svg = renderSvg('a < b & c', [
      {
        title: 'T',
        xLabel: 'epoch',
        yLabel: 'loss',
        log: true,
        series: [
          {
            label: 'x',
            color: '#000',
            points: [
              [1, 1],
              [2, 0.1],
            ],
          },
        ],
      },
    ]);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="\d+" height="\d+"/);
    expect(svg).toContain('a &lt; b &amp; c');
    expect(svg).toMatch(/<path d="M[\d.]+ [\d.]+ L[\d.]+ [\d.]+"/);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
  });

  it('train --diagnostics prints the statistics and angles per epoch; --plot writes the curves', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adjoint-diag-'));
    const file = join(dir, 'curves.svg');
    let out = '',
      err = '';
    const code = await main(['train', '--epochs', '2', '--feedback', 'alignment', '--diagnostics', '--plot', file], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
    });
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toMatch(
      / {2}gradients at the last step of epoch 2:\n {4}parameter +‖grad‖ +‖weight‖ +ratio\n {4}0\.weight +\d\.\d\de[-+]\d+ +\d\.\d\de[-+]\d+ +\d\.\d\de[-+]\d+\n/,
    );
    expect(out).toMatch(/alignment with backprop \(256-example probe\): 0\.weight update: \d+\.\d°, signal sent back by 3: \d+\.\d°\n/);
    expect(out.trim().split('\n').pop()).toMatch(/^test accuracy: \d{2}\.\d{2}%$/);
    const svg = readFileSync(file, 'utf8');
    for (const t of ['Training loss', 'Accuracy', 'Alignment with backprop']) expect(svg).toContain(t);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});
