// The MLP 784-256-256-10 training step (batch 128, compile()d) on two threads, with the default
// and the relaxed-SIMD kernels, against PyTorch's one-thread step on the same machine
// (bench/torch/mlp_step.py: SGD, Adam, and Adam with foreach=True), in alternating rounds of one
// run, so drifts of the host's speed hit every column alike. Each adjoint column runs in a
// process of its own (the kernel build is fixed by a process's first init()), warms up, then
// reports the median of its steps; PyTorch reports the median of its steps the same way.
//   node scripts/run-ts.mjs bench/moonshot.ts [--rounds 5] [--ms 1500]
// PyTorch runs pinned to the last core (one compute thread, as `npm run bench` pins its own
// main thread); adjoint's processes get every core.
import os from 'node:os';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as A from '../src/index.js';
import { denseBatch, denseStep } from './dense-step.js';
import { threadStats } from '../src/testing.js';
import { coreSpeeds, secondCore, spawnOn } from './capacity.js';
import { repoRoot } from './paths.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: string): string => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
const load = (): string =>
  os
    .loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
type Optim = 'sgd' | 'adam';

/** Child: `--child sgd|adam [--relaxed]`: one compiled step on 2 threads, timed for --ms; prints one JSON line. */
async function child(optim: Optim, relaxed: boolean, ms: number): Promise<void> {
  await A.init({ threads: 2, relaxedSimd: relaxed });
  const { step, inputs } = denseStep('mlp', optim);
  const f = A.compile(step);
  const { x, y } = denseBatch(inputs);
  const one = () => f(x, y).dispose();
  // The first steps after the pool starts are slower (docs/threads.md), and the step settles over
  // about 1.5 s (medians of 0.5 s slices in a fresh process: 1.93–2.19 ms, then 1.83–1.90 ms from
  // the fourth on); a training run pays that once.
  for (const t0 = performance.now(); performance.now() - t0 < 1500; ) one();
  const pauses = threadStats.pauses,
    xs: number[] = [];
  for (const t0 = performance.now(); performance.now() - t0 < ms || xs.length < 50; ) {
    const t = performance.now();
    one();
    xs.push(performance.now() - t);
  }
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(JSON.stringify({ median: median(xs), mean, steps: xs.length, pauses: threadStats.pauses - pauses }));
  process.exit(0);
}

const root = repoRoot();

function adjointRound(optim: Optim, relaxed: boolean, ms: number): { median: number; mean: number; pauses: number } {
  const args = [
    path.join(root, 'scripts/run-ts.mjs'),
    'bench/moonshot.ts',
    '--child',
    optim,
    '--ms',
    String(ms),
    ...(relaxed ? ['--relaxed'] : []),
  ];
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
  const last = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (!last.startsWith('{')) throw new Error(`bench/moonshot.ts --child failed: ${(r.stderr ?? '').trim().split('\n').at(-1) ?? r.status}`);
  return JSON.parse(last) as { median: number; mean: number; pauses: number };
}

interface Torch {
  mlpStepMs: number;
  mlpAdamForeachMs: number;
  mlpSgdMs: number;
  torch: string;
}
function torchRound(ms: number): Torch | { skipped: string } {
  const py = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const script = [path.join(root, 'bench/torch/mlp_step.py'), '--budget', String(ms / 1000)];
  const r = spawnOn(String(os.cpus().length - 1), py, script);
  const last = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(last) as Torch | { skipped: string };
  } catch {
    return { skipped: `bench/torch/mlp_step.py gave no result (${(r.stderr ?? '').trim().split('\n').at(-1) ?? r.status})` };
  }
}

async function main(): Promise<void> {
  const rounds = Number(opt('--rounds', '5')),
    ms = Number(opt('--ms', '1500'));
  const cols = ['sgd', 'sgd relaxed', 'adam', 'adam relaxed'] as const;
  const ours = new Map<string, number[]>(cols.map((c) => [c, []]));
  const means = new Map<string, number[]>(cols.map((c) => [c, []]));
  const torch = { sgd: [] as number[], adam: [] as number[], foreach: [] as number[] };
  /** Per round: the median second-core capacity probed before its adjoint columns. */
  const caps: number[] = [];
  let version = '',
    skipped = '',
    pauses = 0;
  console.log(`load average before: ${load()}`);
  await secondCore(); // the probe's first run warms it up
  for (let r = 0; r < rounds; r++) {
    const t = torchRound(ms);
    if ('skipped' in t) skipped = t.skipped;
    else {
      version = t.torch;
      torch.sgd.push(t.mlpSgdMs);
      torch.adam.push(t.mlpStepMs);
      torch.foreach.push(t.mlpAdamForeachMs);
    }
    const cores = coreSpeeds();
    const probes: number[] = [];
    for (const c of cols) {
      probes.push(await secondCore());
      const a = adjointRound(c.startsWith('sgd') ? 'sgd' : 'adam', c.endsWith('relaxed'), ms);
      ours.get(c)!.push(a.median);
      means.get(c)!.push(a.mean);
      pauses += a.pauses;
    }
    const cap = median(probes);
    caps.push(cap);
    console.log(
      `round ${r + 1} (second core ${cap.toFixed(2)}${cores ? `, cores ${cores.map((v) => v.toFixed(0)).join('/')} GFLOP/s` : ''}): adjoint ${cols.map((c) => `${c} ${ours.get(c)!.at(-1)!.toFixed(3)}`).join(', ')} ms` +
        (skipped
          ? ''
          : `; PyTorch SGD ${torch.sgd.at(-1)!.toFixed(3)}, Adam ${torch.adam.at(-1)!.toFixed(3)}, Adam foreach ${torch.foreach.at(-1)!.toFixed(3)} ms`),
    );
  }
  console.log(`\nMLP 784-256-256-10, batch 128, median ms a step over ${rounds} rounds (each a median of its steps)`);
  for (const c of cols)
    console.log(
      `  adjoint, 2 threads, ${c.padEnd(12)} ${median(ours.get(c)!).toFixed(3)} ms (mean of steps ${median(means.get(c)!).toFixed(3)})`,
    );
  if (skipped) {
    console.log(`  PyTorch: skipped (${skipped})`);
    return;
  }
  console.log(
    `  PyTorch ${version}, 1 thread: SGD ${median(torch.sgd).toFixed(3)}, Adam ${median(torch.adam).toFixed(3)}, Adam foreach ${median(torch.foreach).toFixed(3)} ms`,
  );
  // Per-round ratios: PyTorch's time over adjoint's, same optimizer (Adam against PyTorch's faster foreach form too).
  // Also over the rounds where the probe found a second core (≥ 1.8): without one, two threads
  // measure the host. The cores' GEMM speeds are printed per round but not used to pick rounds:
  // they are a snapshot of half a second, and a core seen at a third of its speed before a round
  // has run the round at full speed (docs/threads.md, "Cores of unequal speed").
  const calm = caps.map((c) => c >= 1.8);
  const ratio = (theirs: number[], c: string) => {
    const rs = theirs.map((v, i) => v / ours.get(c)![i]);
    const held = rs.filter((_, i) => calm[i]);
    return `${median(rs).toFixed(2)}×${held.length > 0 && held.length < rs.length ? ` (${median(held).toFixed(2)}× in ${held.length})` : ''}`;
  };
  console.log(
    `  speed against PyTorch (median of per-round ratios, and over the ${calm.filter(Boolean).length} rounds with a second core ≥ 1.8; above 1: adjoint faster):`,
  );
  for (const c of cols) {
    const vs = c.startsWith('sgd') ? `SGD ${ratio(torch.sgd, c)}` : `Adam ${ratio(torch.adam, c)}, Adam foreach ${ratio(torch.foreach, c)}`;
    console.log(`    ${c.padEnd(12)} ${vs}`);
  }
  console.log(`  busy-machine pauses in adjoint's timed steps: ${pauses}; load average after: ${load()}`);
}

if (argv.includes('--child')) await child(opt('--child', 'sgd') as Optim, argv.includes('--relaxed'), Number(opt('--ms', '1500')));
else await main();
