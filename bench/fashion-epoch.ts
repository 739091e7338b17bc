// One whole Fashion-MNIST CNN epoch as a user runs it: `adjoint train --dataset fashion-mnist
// --model cnn --epochs 1 --threads N` (compiled steps, Adam, batch 128, 469 steps, the CLI's own
// "epoch 1/1 … s" line), against PyTorch's whole epoch of the same model on the same machine
// (bench/torch/fashion_cnn.py --epochs 1: one and two threads), in alternating rounds of one run.
// The target from when the work was planned: at most 2× PyTorch's 11.9 s epoch quoted then, 23.8 s.
//   node scripts/run-ts.mjs bench/fashion-epoch.ts [--rounds 1] [--threads 1,2]
// Every process gets every core (a child of a pinned `npm run bench` would inherit its one core).
import os from 'node:os';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { everyCore, spawnOn } from './capacity.js';
import { median } from './timing.js';
import { repoRoot } from './paths.js';

const DATA = '/usr/share/datasets/fashion-mnist';
const QUOTED = 11.9;
const argv = process.argv.slice(2);
const opt = (name: string, d: string): string => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
const rounds = Number(opt('--rounds', '1'));
const threads = opt('--threads', '1,2').split(',').map(Number);
const root = repoRoot();

/** The CLI's epoch seconds with `threads` threads, or a reason it did not run. */
function adjointEpoch(t: number): number | string {
  const p = spawnOn(
    everyCore(),
    process.execPath,
    [
      path.join(root, 'scripts/run-ts.mjs'),
      'src/cli/main.ts',
      'train',
      '--dataset',
      'fashion-mnist',
      '--model',
      'cnn',
      '--epochs',
      '1',
      '--threads',
      String(t),
    ],
    { cwd: root },
  );
  const m = /^epoch 1\/1 {2}469 steps {2}([\d.]+) s/m.exec(p.stdout ?? '');
  return m ? Number(m[1]) : `adjoint train failed: ${(p.stderr ?? '').trim().split('\n').pop()}`;
}

/** PyTorch's whole-epoch wall seconds with `t` threads, or a reason it did not run. */
function torchEpoch(t: number): number | string {
  const p = spawnOn(
    everyCore(),
    '/usr/bin/python3',
    [path.join(root, 'bench/torch/fashion_cnn.py'), '--threads', String(t), '--budget', '1', '--epochs', '1'],
    {
      cwd: root,
    },
  );
  try {
    const j = JSON.parse((p.stdout ?? '').trim().split('\n').pop() ?? '');
    return j.skipped ?? j.epochSec[0];
  } catch {
    return `PyTorch failed: ${(p.stderr ?? '').trim().split('\n').pop()}`;
  }
}

if (!existsSync(path.join(DATA, 'train-images-idx3-ubyte.gz'))) {
  console.log(`fashion-epoch: skipped (no Fashion-MNIST data at ${DATA})`);
  process.exit(0);
}
const torch = existsSync('/usr/bin/python3');
const cols: Record<string, number[]> = {};
const add = (k: string, v: number | string) => (typeof v === 'number' ? (cols[k] ??= []).push(v) : console.log(`  ${k}: ${v}`));
console.log(`Fashion-MNIST CNN, one whole epoch (469 steps of 128, Adam), ${rounds} round(s); load ${os.loadavg()[0].toFixed(2)}`);
for (let r = 0; r < rounds; r++) {
  for (const t of threads) add(`adjoint ${t}t`, adjointEpoch(t));
  if (torch) for (const t of threads) add(`PyTorch ${t}t`, torchEpoch(t));
  console.log(
    `  round ${r + 1}: ${Object.entries(cols)
      .map(([k, v]) => `${k} ${v[v.length - 1].toFixed(2)} s`)
      .join(', ')}`,
  );
}
const best = (prefix: string) =>
  Math.min(
    ...Object.entries(cols)
      .filter(([k]) => k.startsWith(prefix))
      .map(([, v]) => median(v)),
  );
const ours = best('adjoint'),
  theirs = best('PyTorch');
console.log(
  `  medians: ${Object.entries(cols)
    .map(([k, v]) => `${k} ${median(v).toFixed(2)} s`)
    .join(', ')}`,
);
console.log(
  `  adjoint's best ${ours.toFixed(2)} s: ${(ours / QUOTED).toFixed(2)}× the quoted PyTorch ${QUOTED} s (target ≤ 2×)${Number.isFinite(theirs) ? `; PyTorch's best here ${theirs.toFixed(2)} s, ${(theirs / ours).toFixed(2)}× adjoint's time` : ''}; load ${os.loadavg()[0].toFixed(2)}`,
);
