// Optimizers over parameter groups and learning-rate schedulers against PyTorch's own
// sequences (test/fixtures/torch/optim.json, made with Debian's PyTorch by
// scripts/fixtures/optim.py): every scheduler's lr (and OneCycleLR's momentum) after each
// step, and three steps of AdamW/Adam/SGD over two groups with their final state.
import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import * as A from '../src/index.js';

const FILE = new URL('./fixtures/torch/optim.json', import.meta.url);
const fixture = JSON.parse(readFileSync(FILE, 'utf8'));
const { optim } = A;
type Sched = A.optim.lrScheduler.LRScheduler;

beforeAll(async () => {
  await A.init();
});

/** |got − want| ≤ rel·max(|want|, scale) elementwise (rel 0: equal bits). */
function near(got: number[], want: number[], rel: number, what: string, scale = 0): void {
  expect(got.length, what).toBe(want.length);
  got.forEach((g, i) => {
    if (!(Math.abs(g - want[i]) <= rel * Math.max(Math.abs(want[i]), scale)))
      throw new Error(`${what}[${i}]: got ${g}, PyTorch ${want[i]}`);
  });
}
const maxAbs = (v: number[]) => v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

interface SchedRow {
  scheduler: string;
  options: Record<string, unknown>;
  steps: number;
  lrs: number[][];
  momentum?: number[][];
}

/** Builds the row's scheduler (nested schedulers for SequentialLR; lrLambda given as JS source). */
function build(opt: A.optim.SGD, row: { scheduler: string; options: Record<string, unknown> }): Sched {
  const o: Record<string, unknown> = { ...row.options };
  if (typeof o.lrLambda === 'string') o.lrLambda = new Function(`return ${o.lrLambda}`)();
  if (Array.isArray(o.schedulers)) o.schedulers = (o.schedulers as SchedRow[]).map((s) => build(opt, s));
  const Cls = (optim.lrScheduler as unknown as Record<string, new (opt: A.optim.Optimizer, o: unknown) => Sched>)[row.scheduler];
  return new Cls(opt, o);
}

describe('schedulers against PyTorch', () => {
  it('covers every scheduler and optimizer', () => {
    expect(new Set((fixture.schedulers as SchedRow[]).map((r) => r.scheduler))).toEqual(
      new Set(Object.keys(optim.lrScheduler).filter((k) => k !== 'LRScheduler')),
    );
    expect(new Set((fixture.optimizers as { optimizer: string }[]).map((r) => r.optimizer))).toEqual(new Set(['SGD', 'Adam', 'AdamW']));
  });

  it.each((fixture.schedulers as SchedRow[]).map((r): [string, SchedRow] => [`${r.scheduler} ${JSON.stringify(r.options)}`, r]))(
    '%s',
    (_name, row) => {
      const opt = new optim.SGD(
        [
          { params: [A.zeros([1])], lr: 0.1 },
          { params: [A.zeros([1])], lr: 0.05 },
        ],
        { lr: 0.1, momentum: 0.9 },
      );
      const s = build(opt, row);
      // Products and quotients of doubles in PyTorch's order agree exactly; a cosine may differ
      // from the C library's by an ulp, and the chainable form carries that along; LambdaLR's
      // lambdas run in the JS engine here (its ** is not the C library's pow).
      const rel = /Cosine|Sequential|OneCycle|Lambda/.test(row.scheduler) ? 1e-14 : 0;
      for (let n = 0; n <= row.steps; n++) {
        if (n > 0) {
          opt.step();
          s.step();
        }
        near(s.getLastLr(), row.lrs[n], rel, `lrs[${n}]`);
        if (row.momentum)
          near(
            opt.paramGroups.map((g) => g.momentum),
            row.momentum[n],
            1e-14,
            `momentum[${n}]`,
          );
      }
    },
  );
});

interface OptRow {
  optimizer: 'SGD' | 'Adam' | 'AdamW';
  options: Record<string, unknown>;
  groups: ({ params: string[] } & Record<string, unknown>)[];
  shapes: Record<string, number[]>;
  initial: Record<string, number[]>;
  grads: Record<string, number[]>[];
  after: Record<string, number[]>[];
  state: Record<string, { index: number; step?: number; exp_avg?: number[]; exp_avg_sq?: number[]; momentum_buffer?: number[] | null }>;
}

describe('optimizers over parameter groups against PyTorch (float64)', () => {
  it.each(
    (fixture.optimizers as OptRow[]).map((r): [string, OptRow] => [
      `${r.optimizer} ${JSON.stringify(r.options)} ${JSON.stringify(r.groups.map(({ params: _, ...g }) => g))}`,
      r,
    ]),
  )('%s', (_name, row) => {
    const p = Object.fromEntries(
      Object.entries(row.initial).map(([k, v]) => [k, A.tensor(v, { shape: row.shapes[k], dtype: 'float64', requiresGrad: true })]),
    );
    const groups = row.groups.map(({ params, ...o }) => ({ ...o, params: params.map((n) => p[n]) }));
    const opt = new (optim[row.optimizer] as new (g: unknown, o: unknown) => A.optim.Optimizer)(groups, row.options);
    row.grads.forEach((grads, s) => {
      for (const [k, g] of Object.entries(grads)) {
        p[k].grad?.dispose();
        p[k].grad = A.keep(A.tensor(g, { shape: row.shapes[k], dtype: 'float64' }));
      }
      opt.step();
      for (const k of Object.keys(p)) near(Array.from(p[k].toArray()), row.after[s][k], 1e-13, `${k} after step ${s + 1}`);
    });
    const sd = opt.stateDict();
    for (const [k, st] of Object.entries(row.state)) {
      for (const buf of ['exp_avg', 'exp_avg_sq', 'momentum_buffer'] as const) {
        const want = st[buf];
        // On the buffer's scale: PyTorch 1.13 (the fixture's) updates exp_avg as m·β1 + (1 − β1)·g,
        // our kernel as PyTorch 2's lerp, so an element that nearly cancels differs in its low bits.
        if (want) near(Array.from(sd[`state.${st.index}.${buf}`].toArray()), want, 1e-13, `${k} ${buf}`, maxAbs(want));
      }
      if (st.step !== undefined) expect(sd[`state.${st.index}.step`].item()).toBe(st.step);
    }
  });
});
