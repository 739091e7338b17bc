// Rows that hold a training step against a bound measured in the same run (`npm run bench`):
//   - the digits MLP (64-512-10, dropout 0.5, batch 32, SGD + Nesterov momentum), compiled: its
//     step time against the time of its own FLOPs at this run's GEMM rate (target ≤ 2×);
//   - the deep 32×256 tanh step against its GEMM-bound time, 805 MFLOP at this run's GEMM rate
//     (target ≥ 90 %): compiled (the same ops, weights and SGD as the training table's row, under
//     compile(): the kernels alone), and the training table's eager step (kernels + eager dispatch);
//   - the Fashion-MNIST CNN (src/cli/models.ts; Adam, batch 128) epoch against PyTorch's
//     (bench/torch/fashion_cnn.py, Debian /usr/bin/python3, one thread, pinned to this
//     process's core): both from step medians on real batches × 469 steps (target ≤ 2×).
//     adjoint is timed before and after PyTorch and the two medians averaged (load drifts).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as A from '../src/index.js';
import { buildModel } from '../src/cli/models.js';
import { time, type TimeOptions } from './timing.js';
import { DEEP, deepData } from './workloads.js';

export interface BoundRow {
  name: string;
  /** Milliseconds per step (or seconds per epoch), ours and the bound/peer's. */
  value: number;
  bound: number;
  unit: 'ms' | 's';
  /** value / bound: lower is better. */
  ratio: number;
  target: string;
  note?: string;
}

const FASHION_DIR = '/usr/share/datasets/fashion-mnist';

/** FLOPs of one digits MLP step: forward 2·B·(64·512 + 512·10), backward dW1, dW2 and dx of layer 2. */
export function digitsFlops(batch = 32): number {
  const f = 2 * batch * (64 * 512 + 512 * 10);
  return f + 2 * batch * 64 * 512 + 2 * 2 * batch * 512 * 10;
}

/** FLOPs of one deep-MLP step (32 layers 256→256, batch 64): 3 GEMMs per layer (the first layer's dx skipped is noise). */
export const DEEP_FLOPS = 3 * 2 * DEEP.batch * DEEP.width * DEEP.width * DEEP.depth;

const pick = (t: { median: number; cpuMedian: number }, clock: 'cpu' | 'wall') => (clock === 'cpu' ? t.cpuMedian : t.median);

/** One step of a bound row's workload (its loss read back and freed), the compiled function's counters, and a dispose. */
export interface StepRunner {
  run: () => void;
  stats: () => unknown;
  dispose: () => void;
}

/** The digits MLP's compiled step (64-512-10, batch 32, SGD with Nesterov momentum) on four fixed random batches. */
export function digitsStep(B = 32): StepRunner {
  const model = buildModel('digits', 'mlp', 0);
  const opt = new A.optim.SGD(model.parameters(), { lr: 0.05, momentum: 0.9, nesterov: true });
  const step = A.compile((x: A.Tensor, y: Int32Array) => {
    const loss = A.crossEntropy(model.forward(x), y);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  });
  const xs = [0, 1, 2, 3].map((s) => A.rand([B, 64], { seed: 700 + s })),
    ys = [0, 1, 2, 3].map((s) => Int32Array.from({ length: B }, (_, i) => (i * 7 + s) % 10));
  let i = 0;
  return {
    run: () => {
      const loss = step(xs[i & 3], ys[i & 3]);
      i++;
      loss.item();
      loss.dispose();
    },
    stats: () => step.stats,
    dispose: () => {
      xs.forEach((x) => x.dispose());
      opt.dispose();
      model.dispose();
    },
  };
}

/** The digits MLP's compiled step, timed; row against its FLOPs at `gflops`. */
export async function digitsRow(gflops: number, clock: 'cpu' | 'wall', budget: TimeOptions): Promise<BoundRow> {
  const B = 32;
  const s = digitsStep(B);
  const t = await time(s.run, budget);
  s.dispose();
  const ms = pick(t, clock) * 1e3,
    bound = (digitsFlops(B) / (gflops * 1e9)) * 1e3;
  return {
    name: 'digits MLP 64-512-10 b32 compiled step vs its FLOPs at the GEMM rate',
    value: ms,
    bound,
    unit: 'ms',
    ratio: ms / bound,
    target: '≤ 2×',
  };
}

/** The deep step's time (ms, from the training table: eager) against 805 MFLOP at `gflops`. */
export function deepRow(stepMs: number, gflops: number, how = 'eager'): BoundRow {
  const bound = (DEEP_FLOPS / (gflops * 1e9)) * 1e3;
  return {
    name: `deep MLP 32×256 ${how} step vs ${(DEEP_FLOPS / 1e6).toFixed(0)} MFLOP at the GEMM rate`,
    value: stepMs,
    bound,
    unit: 'ms',
    ratio: stepMs / bound,
    target: '≤ 1.11× (≥ 90 % of GEMM-bound)',
  };
}

/**
 * The deep step compiled: the training table's computation (bench/adjoint-suite.ts: x·W + b → tanh
 * per layer, [in, out] weights, MSE to the target, optim.SGD), with zeroGrad at the end of the step.
 */
export function deepCompiledStep(): StepRunner {
  const d = deepData();
  const x = A.tensor(d.x, { shape: [DEEP.batch, DEEP.width] }),
    target = A.tensor(d.target, { shape: [DEEP.batch, DEEP.width] });
  const ps = d.layers.flatMap((l) => [
    A.tensor(l.w, { shape: [l.fanIn, l.fanOut], requiresGrad: true }),
    A.tensor(l.b, { shape: [l.fanOut], requiresGrad: true }),
  ]);
  const opt = new A.optim.SGD(ps, { lr: DEEP.lr });
  const step = A.compile((x: A.Tensor, t: A.Tensor) => {
    let h = x;
    for (let i = 0; i < ps.length; i += 2) h = A.tanh(A.add(A.matmul(h, ps[i]), ps[i + 1]));
    const loss = A.mseLoss(h, t);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  });
  return {
    run: () => {
      const loss = step(x, target);
      loss.item();
      loss.dispose();
    },
    stats: () => step.stats,
    dispose: () => {
      for (const p of [x, target, ...ps]) p.dispose();
      opt.dispose();
    },
  };
}

/** The compiled deep step, timed; row against 805 MFLOP at `gflops`. */
export async function deepCompiledRow(gflops: number, clock: 'cpu' | 'wall', budget: TimeOptions): Promise<BoundRow> {
  const s = deepCompiledStep();
  const t = await time(s.run, budget);
  s.dispose();
  return deepRow(pick(t, clock) * 1e3, gflops, 'compiled');
}

/** adjoint's Fashion CNN step median (ms) on real batches. */
async function adjointFashionStep(split: A.data.Split, clock: 'cpu' | 'wall', budget: TimeOptions): Promise<number> {
  const model = buildModel('fashion-mnist', 'cnn', 0);
  const opt = new A.optim.Adam(model.parameters(), { lr: 1e-3 });
  const it = A.data.batches(split.xTrain, split.yTrain, { batchSize: 128, seed: 1 });
  const t = await time(() => {
    let b = it.next();
    if (b.done || b.value.x.shape[0] !== 128) b = it.next(); // skip the epoch's short last batch
    const { x, y } = b.value!;
    A.tidy(() => {
      const loss = A.crossEntropy(model.forward(x), y);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      loss.item();
    });
    x.dispose();
  }, budget);
  opt.dispose();
  model.dispose();
  return pick(t, clock) * 1e3;
}

/** The Fashion CNN epoch row, or a string saying why it was skipped. */
export async function fashionRow(
  root: string,
  clock: 'cpu' | 'wall',
  budget: TimeOptions,
  core: string | null,
): Promise<BoundRow | string> {
  if (!existsSync(path.join(FASHION_DIR, 'train-images-idx3-ubyte.gz'))) return `no Fashion-MNIST data at ${FASHION_DIR}`;
  if (!existsSync('/usr/bin/python3')) return 'no /usr/bin/python3 (PyTorch reference)';
  const split = await A.data.fashionMnist(FASHION_DIR);
  const before = await adjointFashionStep(split, clock, budget);
  const script = path.join(root, 'bench', 'torch', 'fashion_cnn.py');
  const cmd = core === null ? ['/usr/bin/python3', script] : ['taskset', '-c', core, '/usr/bin/python3', script];
  const r = spawnSync(cmd[0], [...cmd.slice(1), '--budget', budget.budgetMs !== undefined && budget.budgetMs < 1000 ? '1' : '3'], {
    encoding: 'utf8',
  });
  const after = await adjointFashionStep(split, clock, budget);
  split.xTrain.dispose();
  split.xTest.dispose();
  const last = (r.stdout ?? '').trim().split('\n').pop() ?? '';
  let torch: { skipped?: string; stepMs?: number; stepCpuMs?: number; stepsPerEpoch?: number; torch?: string };
  try {
    torch = JSON.parse(last);
  } catch {
    return `PyTorch reference failed: ${(r.stderr ?? '').trim().split('\n').pop()}`;
  }
  if (torch.skipped) return torch.skipped;
  const steps = torch.stepsPerEpoch ?? 469,
    ours = ((before + after) / 2) * steps * 1e-3,
    theirs = (clock === 'cpu' ? torch.stepCpuMs! : torch.stepMs!) * steps * 1e-3;
  return {
    name: `Fashion-MNIST CNN epoch (${steps} steps × step median) vs PyTorch ${torch.torch} 1 thread`,
    value: ours,
    bound: theirs,
    unit: 's',
    ratio: ours / theirs,
    target: '≤ 2×',
    note: `adjoint step ${before.toFixed(1)} / ${after.toFixed(1)} ms (before / after PyTorch), load ${os.loadavg()[0].toFixed(1)}`,
  };
}

export function boundTable(rows: (BoundRow | string)[], gflops: number): string {
  const lines = [`\nSteps against bounds (GEMM rate of this run: ${gflops.toFixed(1)} GFLOP/s, f32 512³ kernel)`];
  for (const r of rows) {
    if (typeof r === 'string') lines.push(`  skipped: ${r}`);
    else
      lines.push(
        `  ${r.name}: ${r.value.toFixed(2)} ${r.unit} vs ${r.bound.toFixed(2)} ${r.unit} → ${r.ratio.toFixed(2)}× (target ${r.target})${r.note ? `; ${r.note}` : ''}`,
      );
  }
  return lines.join('\n');
}
