// Parameter groups and optimizer state dicts: each group's hyper-parameters against the
// float64 closed forms of PyTorch's rules, one optimizer over groups equal to separate
// optimizers bit for bit, the flat state-dict layout, a safetensors round trip, and a resumed
// training run (optimizer + scheduler state) bit-identical to an uninterrupted one.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

const { optim } = A;

beforeAll(async () => {
  await A.init();
});

function param(p: number[], g: number[], dtype: 'float32' | 'float64' = 'float64'): Tensor {
  const t = A.tensor(p, { dtype, requiresGrad: true });
  t.grad = A.keep(A.tensor(g, { dtype }));
  return t;
}
const bits = (t: Tensor) => Array.from(t.toArray());

describe('parameter groups', () => {
  it('AdamW: weight decay on one group only, per-group lr (float64 closed form of one step)', () => {
    const w = param([2, -1], [3, -0.25]),
      b = param([0.5], [0.1]);
    const opt = new optim.AdamW(
      [
        { params: [w], weightDecay: 0.5 },
        { params: [b], weightDecay: 0, lr: 0.01 },
      ],
      { lr: 0.1, eps: 0 },
    );
    opt.step();
    // First step: p·(1 − lr·wd) − lr·sign(g).
    expect(bits(w)).toEqual([2 * (1 - 0.1 * 0.5) - 0.1, -1 * (1 - 0.1 * 0.5) + 0.1]);
    expect(bits(b)).toEqual([0.5 - 0.01]);
    expect(opt.paramGroups.map((g) => [g.lr, g.weightDecay, g.eps, [...g.betas]])).toEqual([
      [0.1, 0.5, 0, [0.9, 0.999]],
      [0.01, 0, 0, [0.9, 0.999]],
    ]);
  });

  it('one optimizer over groups gives the bits of one optimizer per group (SGD, Adam)', () => {
    const make = () => [param([1, 2, 3, 4, 5], [0.3, -0.2, 0.1, 0.7, -0.4], 'float32'), param([-1, 0.5], [0.2, 0.9], 'float32')];
    const cases: [(g: Tensor[][]) => A.optim.Optimizer[], (g: Tensor[][]) => A.optim.Optimizer][] = [
      [
        ([a, b]) => [new optim.SGD(a, { lr: 0.1, momentum: 0.9, nesterov: true }), new optim.SGD(b, { lr: 0.05, weightDecay: 0.01 })],
        ([a, b]) =>
          new optim.SGD(
            [
              { params: a, momentum: 0.9, nesterov: true },
              { params: b, lr: 0.05, weightDecay: 0.01 },
            ],
            { lr: 0.1 },
          ),
      ],
      [
        ([a, b]) => [new optim.Adam(a, { lr: 0.01, betas: [0.8, 0.99] }), new optim.Adam(b, { lr: 0.02, eps: 1e-3 })],
        ([a, b]) =>
          new optim.Adam(
            [
              { params: a, betas: [0.8, 0.99] },
              { params: b, lr: 0.02, eps: 1e-3 },
            ],
            { lr: 0.01 },
          ),
      ],
    ];
    for (const [separate, grouped] of cases) {
      const x = make(),
        y = make();
      const opts = separate([[x[0]], [x[1]]]),
        opt = grouped([[y[0]], [y[1]]]);
      for (let s = 0; s < 3; s++) {
        opts.forEach((o) => o.step());
        opt.step();
      }
      expect(bits(y[0])).toEqual(bits(x[0]));
      expect(bits(y[1])).toEqual(bits(x[1]));
    }
  });

  it('a group lr assigned between steps is used by the next step; opt.lr sets every group', () => {
    const a = param([0], [1]),
      b = param([0], [1]);
    const opt = new optim.SGD([{ params: [a] }, { params: [b], lr: 0.5 }], { lr: 0.1 });
    expect(opt.lr).toBe(0.1);
    opt.paramGroups[1].lr = 0.25;
    opt.step();
    expect([bits(a)[0], bits(b)[0]]).toEqual([-0.1, -0.25]);
    opt.lr = 1;
    opt.step();
    expect([bits(a)[0], bits(b)[0]]).toEqual([-1.1, -1.25]);
  });

  it('a compiled step reads each group lr afresh on every replay', () => {
    const a = param([0, 0, 0, 0], [1, 1, 1, 1], 'float32');
    const opt = new optim.SGD([{ params: [a], lr: 0.5 }], { lr: 0.1 });
    const step = A.compile(() => opt.step());
    step(); // traced: −0.5
    opt.paramGroups[0].lr = 0.25;
    step(); // replayed: −0.75
    expect(bits(a)).toEqual([-0.75, -0.75, -0.75, -0.75]);
  });

  it('addParamGroup adds a group with the defaults filled in; Adam counts steps per parameter', () => {
    const a = param([1], [1]),
      b = param([2], [1]);
    const opt = new optim.Adam([a], { lr: 0.1 });
    opt.step();
    opt.addParamGroup({ params: [b], eps: 0.5 });
    opt.step();
    expect(opt.paramGroups[1]).toMatchObject({ lr: 0.1, eps: 0.5, weightDecay: 0 });
    expect([opt.stepCount(a), opt.stepCount(b)]).toEqual([2, 1]);
    expect(opt.params).toEqual([a, b]);
  });

  it.each([
    [
      'a parameter in two groups',
      () => {
        const t = A.zeros([1]);
        return new optim.SGD([{ params: [t] }, { params: [t] }], { lr: 1 });
      },
      /appears in more than one parameter group/,
    ],
    [
      'an unknown group option',
      () => new optim.AdamW([{ params: [A.zeros([1])], weight_decay: 0.1 } as never], { lr: 1 }),
      /params\[0\] has an unknown option 'weight_decay'/,
    ],
    [
      'an unknown optimizer option',
      () => new optim.Adam([A.zeros([1])], { lr: 1, momentum: 0.9 } as never),
      /options has an unknown option 'momentum'/,
    ],
    [
      'a bad group hyper-parameter',
      () => new optim.Adam([{ params: [A.zeros([1])], betas: [0.9, 1] }], {}),
      /params\[0\]\.betas\[1\] must be a finite number in \[0, 1\)/,
    ],
    ['an empty group', () => new optim.SGD([{ params: [] }], { lr: 1 }), /empty parameter list in params\[0\]/],
    [
      'tensors mixed with groups',
      () => new optim.SGD([A.zeros([1]), { params: [A.zeros([1])] }] as never, { lr: 1 }),
      /mixes Tensors and parameter groups/,
    ],
    ['no lr anywhere (SGD)', () => new optim.SGD([{ params: [A.zeros([1])] }], {} as never), /lr is required/],
  ])('%s is refused with a clear ArgumentError', (_n, f, message) => {
    expect(f).toThrow(A.ArgumentError);
    expect(f).toThrow(message);
  });

  it('clipGradNorm over opt.params clips across all groups together', () => {
    const a = param([0, 0], [3, 0]),
      b = param([0], [4]);
    const opt = new optim.SGD([{ params: [a] }, { params: [b], lr: 0.5 }], { lr: 1 });
    expect(A.clipGradNorm(opt.params, 1)).toBe(5);
    opt.step();
    expect(bits(a)).toEqual([-3 / (5 + 1e-6), 0]);
    expect(bits(b)).toEqual([-0.5 * (4 / (5 + 1e-6))]);
  });

  it('SGD accepts lr per group without a default lr', () => {
    const a = param([1], [1]);
    new optim.SGD([{ params: [a], lr: 0.5 }], {} as never).step();
    expect(bits(a)).toEqual([0.5]);
  });
});

describe('stateDict / loadStateDict', () => {
  it('AdamW: the flat layout, with float64 hyper-parameters and copies of the moments', () => {
    const a = param([1, 2], [0.5, -0.5]),
      b = param([3], [1]),
      c = A.tensor([0], { dtype: 'float64', requiresGrad: true });
    const opt = new optim.AdamW(
      [
        { params: [a, c], weightDecay: 0.1 },
        { params: [b], weightDecay: 0 },
      ],
      { lr: 0.01, betas: [0.9, 0.99] },
    );
    opt.step();
    const sd = opt.stateDict();
    expect(Object.keys(sd).sort()).toEqual([
      'param_groups.0.betas',
      'param_groups.0.eps',
      'param_groups.0.lr',
      'param_groups.0.params',
      'param_groups.0.weight_decay',
      'param_groups.1.betas',
      'param_groups.1.eps',
      'param_groups.1.lr',
      'param_groups.1.params',
      'param_groups.1.weight_decay',
      'state.0.exp_avg',
      'state.0.exp_avg_sq',
      'state.0.step',
      'state.2.exp_avg',
      'state.2.exp_avg_sq',
      'state.2.step',
    ]);
    expect(bits(sd['param_groups.0.params'])).toEqual([0, 1]);
    expect(bits(sd['param_groups.1.params'])).toEqual([2]);
    expect(bits(sd['param_groups.0.betas'])).toEqual([0.9, 0.99]);
    expect(sd['state.0.step'].shape).toEqual([]);
    expect(sd['state.0.step'].item()).toBe(1);
    // After one step, as the kernel computes them: exp_avg = 0 + (1 − β1)·(g − 0), exp_avg_sq = 0·β2 + ((1 − β2)·g)·g.
    expect(bits(sd['state.0.exp_avg'])).toEqual([(1 - 0.9) * 0.5, (1 - 0.9) * -0.5]);
    expect(bits(sd['state.0.exp_avg_sq'])).toEqual([(1 - 0.99) * 0.5 * 0.5, (1 - 0.99) * -0.5 * -0.5]);
    // A copy: the optimizer keeps going without changing the record.
    opt.step();
    expect(sd['state.0.step'].item()).toBe(1);
  });

  it('SGD: momentum buffers and booleans; no state before the first step', () => {
    const a = param([1, 2], [1, 1]);
    const opt = new optim.SGD([a], { lr: 0.1, momentum: 0.9, nesterov: true });
    expect(Object.keys(opt.stateDict()).some((k) => k.startsWith('state.'))).toBe(false);
    opt.step();
    const sd = opt.stateDict();
    expect(bits(sd['state.0.momentum_buffer'])).toEqual([1, 1]);
    expect(sd['param_groups.0.nesterov'].item()).toBe(1);
    expect(sd['state.0.step']).toBeUndefined();
  });

  it('round-trips through safetensors into a fresh optimizer that continues bit for bit', () => {
    const run = (opt: A.optim.Optimizer, t: Tensor, steps: number) => {
      for (let s = 0; s < steps; s++) {
        t.grad?.dispose();
        t.grad = A.keep(A.tensor([0.3 - 0.1 * s, 0.2 * s, -0.5, 0.05 * s * s, 1], { dtype: 'float32' }));
        opt.step();
      }
    };
    for (const make of [
      (t: Tensor) => new optim.AdamW([t], { lr: 0.02, weightDecay: 0.1 }),
      (t: Tensor) => new optim.Adam([t], { lr: 0.02, betas: [0.3, 0.9] }),
      (t: Tensor) => new optim.SGD([t], { lr: 0.1, momentum: 0.9, dampening: 0.1 }),
    ]) {
      const x = A.tensor([1, 2, 3, 4, 5], { requiresGrad: true }),
        y = A.tensor([1, 2, 3, 4, 5], { requiresGrad: true });
      const o1 = make(x);
      run(o1, x, 6);
      const o2 = make(y);
      run(o2, y, 3);
      const bytes = A.io.saveSafetensors(o2.stateDict());
      const o3 = make(y);
      o3.loadStateDict(A.io.loadSafetensors(bytes));
      o2.dispose();
      // Continue with steps 3..5 (same gradients as x's run).
      for (let s = 3; s < 6; s++) {
        y.grad?.dispose();
        y.grad = A.keep(A.tensor([0.3 - 0.1 * s, 0.2 * s, -0.5, 0.05 * s * s, 1], { dtype: 'float32' }));
        o3.step();
      }
      expect(bits(y)).toEqual(bits(x));
    }
  });

  it('casts state to the parameter dtype and checks shapes, group counts and keys', () => {
    const a = param([1, 2], [1, 1]);
    const opt = new optim.Adam([a]);
    opt.step();
    const sd = opt.stateDict();
    const f32 = A.tensor([1, 2], { dtype: 'float32', requiresGrad: true });
    const o32 = new optim.Adam([f32]);
    o32.loadStateDict(sd);
    expect(o32.stateDict()['state.0.exp_avg'].dtype).toBe('float32');
    const bad = (record: Record<string, Tensor>, o: A.optim.Optimizer, re: RegExp, E: typeof A.AdjointError) => {
      expect(() => o.loadStateDict(record)).toThrow(E);
      expect(() => o.loadStateDict(record)).toThrow(re);
    };
    bad(
      { ...sd, 'state.0.exp_avg': A.zeros([3], { dtype: 'float64' }) },
      new optim.Adam([param([1, 2], [0, 0])]),
      /'state\.0\.exp_avg' has shape \[3\] but parameter 0 has shape \[2\]/,
      A.ShapeError,
    );
    bad(
      sd,
      new optim.Adam([{ params: [param([1, 2], [0, 0])] }, { params: [param([1], [0])] }]),
      /state dict has 1 parameter groups but this optimizer has 2/,
      A.ArgumentError,
    );
    bad(
      sd,
      new optim.Adam([param([1, 2], [0, 0]), param([1], [0])]),
      /group 0 has 1 parameters in the state dict but 2 in this optimizer/,
      A.ArgumentError,
    );
    bad(
      { ...sd, 'param_groups.0.momentum': A.zeros([]) },
      new optim.Adam([param([1, 2], [0, 0])]),
      /unexpected key 'param_groups\.0\.momentum'/,
      A.FormatError,
    );
    bad({ ...sd, extra: A.zeros([]) }, new optim.Adam([param([1, 2], [0, 0])]), /unexpected key 'extra'/, A.FormatError);
    const { 'state.0.exp_avg_sq': _, ...partial } = sd;
    bad(partial, new optim.Adam([param([1, 2], [0, 0])]), /state\.0 has exp_avg but not exp_avg_sq/, A.FormatError);
    bad(sd, new optim.SGD([param([1, 2], [0, 0])], { lr: 1 }), /unexpected key/, A.FormatError);
  });

  it('a failed load changes nothing and leaks nothing', () => {
    const a = param([1, 2], [1, 1]);
    const opt = new optim.Adam([a], { lr: 0.1 });
    opt.step();
    const before = opt.stateDict();
    const broken = { ...before, 'param_groups.0.lr': A.tensor(-1, { dtype: 'float64' }) };
    const tensors = A.memory().tensors;
    expect(() => opt.loadStateDict(broken)).toThrow(/lr must be a finite number ≥ 0, got -1/);
    expect(A.memory().tensors).toBe(tensors);
    expect(bits(opt.stateDict()['state.0.exp_avg'])).toEqual(bits(before['state.0.exp_avg']));
    expect(opt.lr).toBe(0.1);
  });
});

describe('resuming a training run', () => {
  // A 3-4-1 tanh MLP on fixed data: AdamW with decay on the matrices only, clipping, and a
  // warm-up + cosine schedule — the GPT recipe in miniature.
  const X = [
      [1, 2, 3],
      [0, 1, 0],
      [2, 0, 1],
      [1, 1, 1],
      [-1, 0.5, 2],
    ],
    Y = [[1], [2], [3], [4], [0]];
  const build = () => {
    const model = new A.nn.Sequential(new A.nn.Linear(3, 4, { seed: 3 }), new A.nn.Tanh(), new A.nn.Linear(4, 1, { seed: 4 }));
    const named = model.namedParameters();
    const opt = new optim.AdamW(
      [
        { params: named.filter(([n]) => n.endsWith('weight')).map(([, p]) => p), weightDecay: 0.1 },
        { params: named.filter(([n]) => n.endsWith('bias')).map(([, p]) => p), weightDecay: 0 },
      ],
      { lr: 0.05, betas: [0.9, 0.99] },
    );
    const warm = new optim.lrScheduler.LinearLR(opt, { startFactor: 0.1, totalIters: 4 });
    const cosine = new optim.lrScheduler.CosineAnnealingLR(opt, { tMax: 8, etaMin: 0.005 });
    const sched = new optim.lrScheduler.SequentialLR(opt, { schedulers: [warm, cosine], milestones: [4] });
    return { model, opt, sched };
  };
  const train = ({ model, opt, sched }: ReturnType<typeof build>, steps: number) => {
    const x = A.tensor(X),
      y = A.tensor(Y);
    for (let s = 0; s < steps; s++) {
      A.tidy(() => {
        A.mseLoss(model.forward(x), y).backward();
        A.clipGradNorm(model.parameters(), 1);
        opt.step();
        opt.zeroGrad();
        sched.step();
      });
    }
  };
  const weights = (m: A.nn.Module) => m.parameters().flatMap((p) => Array.from(p.toArray()));

  it('10 + 2 steps from saved model, optimizer and scheduler state equal 12 steps bit for bit', () => {
    const straight = build();
    train(straight, 12);
    const first = build();
    train(first, 10);
    const modelBytes = A.io.saveSafetensors(first.model.stateDict());
    const optBytes = A.io.saveSafetensors(first.opt.stateDict(), { scheduler: JSON.stringify(first.sched.stateDict()) });
    const schedJson = JSON.stringify(first.sched.stateDict());
    // A fresh process: build everything, then load all three states.
    const resumed = build();
    resumed.model.loadStateDict(A.io.loadSafetensors(modelBytes));
    resumed.opt.loadStateDict(A.io.loadSafetensors(optBytes));
    resumed.sched.loadStateDict(JSON.parse(schedJson));
    expect(resumed.sched.getLastLr()).toEqual(first.sched.getLastLr());
    train(resumed, 2);
    expect(weights(resumed.model)).toEqual(weights(straight.model));
    expect(resumed.sched.getLastLr()).toEqual(straight.sched.getLastLr());
    expect(weights(straight.model).every(Number.isFinite)).toBe(true);
  });
});
