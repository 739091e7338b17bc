// Learning-rate schedulers against their closed forms (PyTorch's formulas in float64), their
// defaults, several parameter groups, state dicts, and the errors: bad options, and a
// scheduler stepped before its optimizer (the constructor's own step does not count).
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';

const { optim } = A;
const { StepLR, LinearLR, CosineAnnealingLR, LambdaLR, SequentialLR, OneCycleLR } = optim.lrScheduler;

beforeAll(async () => {
  await A.init();
});

/** An SGD over two one-element groups with base lrs 0.1 and 0.02 (momentum for OneCycleLR). */
const sgd = (lrs = [0.1, 0.02]) =>
  new optim.SGD(
    lrs.map((lr) => ({ params: [A.zeros([1])], lr })),
    { lr: lrs[0], momentum: 0.9 },
  );

/** getLastLr() after the constructor and after each of `steps` (optimizer, then scheduler) steps. */
function trajectory(opt: A.optim.Optimizer, sched: A.optim.lrScheduler.LRScheduler, steps: number): number[][] {
  const out = [sched.getLastLr()];
  for (let s = 0; s < steps; s++) {
    opt.step();
    sched.step();
    out.push(sched.getLastLr());
  }
  return out;
}

/** Each value within rel·max(|want|, scale) of the closed form. */
function follows(got: number[][], want: (epoch: number, group: number) => number, rel = 1e-14, scale = 0) {
  got.forEach((lrs, e) =>
    lrs.forEach((lr, g) => {
      const w = want(e, g);
      if (!(Math.abs(lr - w) <= rel * Math.max(Math.abs(w), scale))) throw new Error(`epoch ${e}, group ${g}: got ${lr}, want ${w}`);
    }),
  );
}
const BASE = [0.1, 0.02];

describe('closed forms', () => {
  it('StepLR: baseLr · gamma^⌊e / stepSize⌋ (default gamma 0.1)', () => {
    const opt = sgd();
    follows(trajectory(opt, new StepLR(opt, { stepSize: 3 }), 10), (e, g) => BASE[g] * 0.1 ** Math.floor(e / 3));
    const o2 = sgd();
    const t = trajectory(o2, new StepLR(o2, { stepSize: 2, gamma: 0.5 }), 6);
    // gamma = 0.5 is exact in binary: every value is exact.
    expect(t.map((l) => l[0])).toEqual([0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125]);
  });

  it('LinearLR: baseLr · (s + (e − s)·min(e, n)/n), defaults 1/3 → 1 over 5 steps', () => {
    const opt = sgd();
    follows(trajectory(opt, new LinearLR(opt), 8), (e, g) => BASE[g] * (1 / 3 + ((2 / 3) * Math.min(e, 5)) / 5));
    const o2 = sgd();
    follows(
      trajectory(o2, new LinearLR(o2, { startFactor: 1, endFactor: 0.1, totalIters: 4 }), 6),
      (e, g) => BASE[g] * (1 - (0.9 * Math.min(e, 4)) / 4),
    );
  });

  it('CosineAnnealingLR: etaMin + (base − etaMin)(1 + cos(πe/T))/2, through the minimum and back up', () => {
    const opt = sgd();
    const t = trajectory(opt, new CosineAnnealingLR(opt, { tMax: 10, etaMin: 0.001 }), 25);
    // The chainable form accumulates rounding; compare on the scale of the base lr.
    follows(t, (e, g) => 0.001 + ((BASE[g] - 0.001) * (1 + Math.cos((Math.PI * e) / 10))) / 2, 1e-13, 0.1);
    expect(t[10][0]).toBeCloseTo(0.001, 15);
  });

  it('LambdaLR: baseLr · λ(e), one function or one per group', () => {
    const opt = sgd();
    follows(trajectory(opt, new LambdaLR(opt, { lrLambda: (e) => 1 / (1 + e) }), 5), (e, g) => BASE[g] * (1 / (1 + e)), 0);
    const o2 = sgd();
    follows(trajectory(o2, new LambdaLR(o2, { lrLambda: [(e) => e, (e) => 2 ** -e] }), 5), (e, g) => BASE[g] * (g === 0 ? e : 2 ** -e), 0);
  });

  it('SequentialLR: the published warm-up + cosine recipe (100 linear steps, cosine to lr/10 over 1900)', () => {
    const opt = sgd([1e-3]);
    const warm = new LinearLR(opt, { startFactor: 0.01, totalIters: 100 });
    const cos = new CosineAnnealingLR(opt, { tMax: 1900, etaMin: 1e-4 });
    const sched = new SequentialLR(opt, { schedulers: [warm, cos], milestones: [100] });
    const t = trajectory(opt, sched, 2000);
    follows(
      t,
      (e) => (e < 100 ? 1e-3 * (0.01 + (0.99 * e) / 100) : 1e-4 + ((1e-3 - 1e-4) * (1 + Math.cos((Math.PI * (e - 100)) / 1900))) / 2),
      1e-12,
      1e-3,
    );
    expect(t[0][0]).toBeCloseTo(1e-5, 18);
    expect(t[100][0]).toBeCloseTo(1e-3, 18);
    expect(t[2000][0]).toBeCloseTo(1e-4, 15);
  });

  it('OneCycleLR: cosine up to maxLr over pctStart, then down to maxLr/div/finalDiv; momentum the other way', () => {
    const opt = sgd();
    const sched = new OneCycleLR(opt, { maxLr: [1, 0.5], totalSteps: 20 });
    const mom: number[] = [opt.paramGroups[0].momentum];
    const t = [sched.getLastLr()];
    for (let s = 0; s < 20; s++) {
      opt.step();
      sched.step();
      t.push(sched.getLastLr());
      mom.push(opt.paramGroups[0].momentum);
    }
    const ann = (a: number, b: number, p: number) => b + ((a - b) / 2) * (Math.cos(Math.PI * p) + 1);
    const at = (e: number, max: number, lo: number, hi: number) => {
      const up = 0.3 * 20 - 1;
      return e <= up ? ann(lo, max, e / up) : ann(max, hi, (e - up) / (19 - up));
    };
    follows(
      t,
      (e, g) => {
        const m = [1, 0.5][g];
        return at(e, m, m / 25, m / 25 / 1e4);
      },
      1e-14,
    );
    follows(
      mom.map((m) => [m]),
      (e) => (e <= 5 ? ann(0.95, 0.85, e / 5) : ann(0.85, 0.95, (e - 5) / 14)),
      1e-14,
    );
    // PyTorch's annealing formula at pct 0 is end + (start − end)/2·2, not exactly start.
    expect(t[0][0]).toBe(1 + ((1 / 25 - 1) / 2) * 2);
    expect(t[5][0]).toBe(1);
  });

  it('OneCycleLR: linear three-phase, epochs × stepsPerEpoch, and Adam beta1 cycling', () => {
    const opt = new optim.Adam([A.zeros([1])], { betas: [0.5, 0.99] });
    const sched = new OneCycleLR(opt, {
      maxLr: 0.1,
      epochs: 2,
      stepsPerEpoch: 5,
      annealStrategy: 'linear',
      threePhase: true,
      pctStart: 0.4,
    });
    const t = trajectory(opt, sched, 10).map((l) => l[0]);
    const lin = (a: number, b: number, p: number) => (b - a) * p + a;
    const lo = 0.1 / 25,
      min = lo / 1e4;
    const want = (e: number) => (e <= 3 ? lin(lo, 0.1, e / 3) : e <= 6 ? lin(0.1, lo, (e - 3) / 3) : lin(lo, min, (e - 6) / 3));
    t.forEach((v, e) => expect(Math.abs(v - want(e))).toBeLessThanOrEqual(1e-16));
    expect(opt.paramGroups[0].betas[1]).toBe(0.99);
    expect(opt.paramGroups[0].betas[0]).toBeCloseTo(0.95, 15);
  });
});

describe('behaviour', () => {
  it('the constructor sets the first value and records initialLr; step() moves each group', () => {
    const opt = sgd();
    const s = new LinearLR(opt, { startFactor: 0.5, totalIters: 2 });
    expect(opt.paramGroups.map((g) => g.lr)).toEqual([0.05, 0.01]);
    expect(opt.paramGroups.map((g) => g.initialLr)).toEqual([0.1, 0.02]);
    expect(s.baseLrs).toEqual([0.1, 0.02]);
    expect(s.lastEpoch).toBe(0);
  });

  it('a stepped schedule drives a training step (the lr reaches the kernel)', () => {
    const p = A.tensor([0], { dtype: 'float64', requiresGrad: true });
    const opt = new optim.SGD([p], { lr: 1 });
    const s = new StepLR(opt, { stepSize: 1, gamma: 0.5 });
    for (let i = 0; i < 3; i++) {
      p.grad = A.keep(A.tensor([1], { dtype: 'float64' }));
      opt.step();
      opt.zeroGrad();
      s.step();
    }
    expect(p.item()).toBe(-(1 + 0.5 + 0.25));
  });

  it('stateDict / loadStateDict resume a schedule (LinearLR inside SequentialLR)', () => {
    const make = () => {
      const opt = sgd();
      const s = new SequentialLR(opt, {
        schedulers: [new LinearLR(opt, { totalIters: 3 }), new StepLR(opt, { stepSize: 2, gamma: 0.5 })],
        milestones: [3],
      });
      return { opt, s };
    };
    const a = make();
    const full = trajectory(a.opt, a.s, 8);
    const b = make();
    trajectory(b.opt, b.s, 4);
    const saved = JSON.parse(JSON.stringify({ opt: b.opt.paramGroups.map((g) => g.lr), s: b.s.stateDict() }));
    const c = make();
    c.opt.paramGroups.forEach((g, i) => (g.lr = saved.opt[i]));
    c.s.loadStateDict(saved.s);
    expect(trajectory(c.opt, c.s, 4)).toEqual(full.slice(4));
  });

  it('a state that fails to load changes nothing (a bad stepCount left lastEpoch loaded)', () => {
    const opt = sgd();
    const s = new StepLR(opt, { stepSize: 2, gamma: 0.5 });
    const before = s.stateDict();
    expect(() => s.loadStateDict({ ...before, lastEpoch: 7, stepCount: -3 })).toThrow(A.ArgumentError);
    expect(s.stateDict()).toEqual(before);
    // SequentialLR: its own state loads before its schedulers' states are checked; it is rolled back.
    const opt2 = sgd();
    const seq = new SequentialLR(opt2, {
      schedulers: [new LinearLR(opt2, { totalIters: 3 }), new StepLR(opt2, { stepSize: 2 })],
      milestones: [3],
    });
    const seqBefore = seq.stateDict();
    const bad = { ...seqBefore, lastEpoch: 5, schedulers: [seqBefore.schedulers] };
    expect(() => seq.loadStateDict(bad as typeof seqBefore)).toThrow(/expected the states of 2 schedulers, got 1/);
    expect(seq.stateDict()).toEqual(seqBefore);
  });
});

describe('errors', () => {
  it('stepping a scheduler before its optimizer throws, naming both; the constructor is not a step', () => {
    const opt = new optim.AdamW([A.zeros([1])], { lr: 0.1 });
    const s = new StepLR(opt, { stepSize: 1 });
    expect(() => s.step()).toThrow(A.AdjointError);
    expect(() => s.step()).toThrow(/StepLR\.step\(\) was called before AdamW\.step\(\)/);
    opt.step();
    s.step();
    expect(s.lastEpoch).toBe(1);
    const q = new SequentialLR(opt, { schedulers: [new LinearLR(opt), new StepLR(opt, { stepSize: 2 })], milestones: [2] });
    expect(() => q.step()).toThrow(/SequentialLR\.step\(\) was called before AdamW\.step\(\)/);
  });

  it.each([
    ['StepLR without stepSize', () => new StepLR(sgd(), {} as never), /StepLR: stepSize must be an integer ≥ 1, got undefined/],
    ['LinearLR startFactor 0', () => new LinearLR(sgd(), { startFactor: 0 }), /startFactor must be a number in \(0, 1\], got 0/],
    ['LinearLR endFactor 2', () => new LinearLR(sgd(), { endFactor: 2 }), /endFactor must be a number in \[0, 1\], got 2/],
    ['CosineAnnealingLR tMax 0', () => new CosineAnnealingLR(sgd(), { tMax: 0 }), /tMax must be an integer ≥ 1, got 0/],
    ['an unknown option', () => new CosineAnnealingLR(sgd(), { tMax: 5, T_max: 5 } as never), /unknown option 'T_max'/],
    ['not an optimizer', () => new StepLR({} as never, { stepSize: 1 }), /first argument must be an optimizer/],
    ['LambdaLR with a wrong count', () => new LambdaLR(sgd(), { lrLambda: [(e: number) => e] }), /expected 2 lrLambda functions/],
    ['LambdaLR with a non-function', () => new LambdaLR(sgd(), { lrLambda: 0.5 as never }), /lrLambda must be a function/],
    [
      'SequentialLR with a wrong milestone count',
      () => {
        const o = sgd();
        return new SequentialLR(o, { schedulers: [new LinearLR(o), new StepLR(o, { stepSize: 1 })], milestones: [] });
      },
      /expected 1 milestones for 2 schedulers, got 0/,
    ],
    [
      'SequentialLR over another optimizer',
      () => {
        const o = sgd();
        return new SequentialLR(o, { schedulers: [new LinearLR(sgd())], milestones: [] });
      },
      /belongs to another optimizer/,
    ],
    [
      'SequentialLR with decreasing milestones',
      () => {
        const o = sgd();
        return new SequentialLR(o, { schedulers: [new LinearLR(o), new LinearLR(o), new LinearLR(o)], milestones: [5, 3] });
      },
      /milestones\[1\] must be an integer ≥ 6, got 3/,
    ],
    [
      'SequentialLR first in a SequentialLR (it threw "LinearLR.step() was called before SGD.step()")',
      () => {
        const o = sgd();
        const inner = new SequentialLR(o, { schedulers: [new LinearLR(o), new StepLR(o, { stepSize: 1 })], milestones: [2] });
        return new SequentialLR(o, { schedulers: [inner, new CosineAnnealingLR(o, { tMax: 4 })], milestones: [6] });
      },
      /SequentialLR: schedulers\[0\] is a SequentialLR, which cannot come first/,
    ],
    ['OneCycleLR without a length', () => new OneCycleLR(sgd(), { maxLr: 1 }), /give either totalSteps or both epochs and stepsPerEpoch/],
    [
      'OneCycleLR with maxLr per group mismatched',
      () => new OneCycleLR(sgd(), { maxLr: [1, 2, 3], totalSteps: 10 }),
      /maxLr must have one value per parameter group \(2\), got 3/,
    ],
    [
      'OneCycleLR pctStart 1.5',
      () => new OneCycleLR(sgd(), { maxLr: 1, totalSteps: 10, pctStart: 1.5 }),
      /pctStart must be a number in \[0, 1\]/,
    ],
    [
      'OneCycleLR annealStrategy',
      () => new OneCycleLR(sgd(), { maxLr: 1, totalSteps: 10, annealStrategy: 'exp' as never }),
      /annealStrategy must be 'cos' or 'linear'/,
    ],
  ])('%s', (_n, f, message) => {
    expect(f).toThrow(A.ArgumentError);
    expect(f).toThrow(message);
  });

  it('OneCycleLR refuses to step past totalSteps', () => {
    const opt = sgd();
    const s = new OneCycleLR(opt, { maxLr: 1, totalSteps: 3 });
    for (let i = 0; i < 3; i++) {
      opt.step();
      s.step();
    }
    opt.step();
    expect(() => s.step()).toThrow(/stepped 4 times, but totalSteps is 3/);
  });
});

describe('OneCycleLR with a phase of no steps', () => {
  it('is refused when built, not at the last step of the run (pctStart 1)', () => {
    const opt = new A.optim.SGD([A.ones([1], { requiresGrad: true })], { lr: 0.1 });
    expect(() => new OneCycleLR(opt, { maxLr: 1, totalSteps: 10, pctStart: 1 })).toThrow(
      /OneCycleLR: phase 2 has no steps \(pctStart 1 of totalSteps 10\)/,
    );
    expect(() => new OneCycleLR(opt, { maxLr: 1, totalSteps: 10, pctStart: 0.1 })).toThrow(/phase 1 has no steps/);
    const s = new OneCycleLR(opt, { maxLr: 1, totalSteps: 10, pctStart: 0 }); // a first phase of negative length is skipped, as PyTorch's
    for (let i = 0; i < 10; i++) {
      opt.step();
      s.step();
    }
    expect(Number.isFinite(s.getLastLr()[0])).toBe(true);
  });
});

describe('a parameter group added after the scheduler was built', () => {
  /** SGD over one group (lr 0.1), the scheduler, then addParamGroup({ lr: 0.01 }) and six steps. */
  function addedLate(make: (opt: A.optim.SGD) => A.optim.lrScheduler.LRScheduler): { lrs: number[][]; b: A.Tensor } {
    const a = A.ones([1], { dtype: 'float64', requiresGrad: true }),
      b = A.ones([1], { dtype: 'float64', requiresGrad: true });
    const opt = new optim.SGD([a], { lr: 0.1 });
    const s = make(opt);
    opt.addParamGroup({ params: [b], lr: 0.01 });
    const lrs: number[][] = [];
    for (let i = 0; i < 6; i++) {
      for (const p of [a, b]) p.grad = A.keep(A.ones([1], { dtype: 'float64' }));
      opt.step();
      s.step();
      lrs.push(s.getLastLr());
    }
    return { lrs, b };
  }

  // PyTorch 1.13 (zip(base_lrs, param_groups)): the forms that start from base lrs leave the new
  // group's lr alone; these used to set it to undefined, and the next step made its parameters NaN.
  it('LambdaLR keeps its lr, as PyTorch', () => {
    const { lrs, b } = addedLate((opt) => new LambdaLR(opt, { lrLambda: (e) => 0.5 ** e }));
    expect(lrs).toEqual([0.05, 0.025, 0.0125, 0.00625, 0.003125, 0.0015625].map((lr) => [lr, 0.01]));
    expect(b.item()).toBeCloseTo(1 - 6 * 0.01, 15);
  });

  it("CosineAnnealingLR's restart step skips it, as PyTorch", () => {
    const { lrs } = addedLate((opt) => new CosineAnnealingLR(opt, { tMax: 2, etaMin: 0.001 }));
    const torch = [
      [0.0505, 0.0055000000000000005],
      [0.001, 0.001],
      [0.050499999999999996, 0.001],
      [0.10000000000000002, 0.001],
      [0.050500000000000024, 0.001],
      [0.001, 0.001],
    ];
    follows(lrs, (e, g) => torch[e][g]);
  });

  it('OneCycleLR refuses to step it (PyTorch: KeyError max_lr)', () => {
    expect(() => addedLate((opt) => new OneCycleLR(opt, { maxLr: 0.1, totalSteps: 10 }))).toThrow(
      /OneCycleLR\.step\(\): the optimizer has 2 parameter groups but the schedule was built for 1/,
    );
  });
});
