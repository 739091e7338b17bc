// The recurrent step against PyTorch in one run: nn.LSTM and nn.GRU, hidden 128, input 128,
// T=50, batch 16, one layer, float32, forward + backward of output.sum(), one thread. Rounds
// interleave adjoint and PyTorch (bench/torch/rnn_step.py, Debian's python3-torch, skipped where
// it is missing), both pinned to the same core; the ratio is the median of per-round ratios of
// process CPU time (on a loaded machine wall time mostly measures waiting for a core).
// Run: node scripts/run-ts.mjs bench/rnn.ts [--rounds 5] [--quick]
import os from 'node:os';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as A from '../src/index.js';
import { timeSync, type TimeOptions } from './timing.js';

const argv = process.argv.slice(2);
const opt = (name: string, dflt: string): string => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const quick = argv.includes('--quick');
const rounds = Number(opt('rounds', quick ? '2' : '5'));
const budget: TimeOptions = quick ? { budgetMs: 300, warmMs: 100 } : { budgetMs: 1000, warmMs: 200 };
const [T, B, I, H] = [50, 16, 128, 128];

/** The repository root (this file may run from a bundle elsewhere): walk up to package.json. */
function root(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'bench/torch/rnn_step.py')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}
/** Pins this process (and so the PyTorch child it spawns) to the last core, as bench/run.ts does. */
const core = process.env.ADJOINT_PIN ?? String(os.cpus().length - 1);
const pinned =
  core !== 'off' &&
  process.platform === 'linux' &&
  spawnSync('taskset', ['-p', '-c', core, String(process.pid)], { stdio: 'ignore' }).status === 0;

await A.init();

/** CPU ms of one forward+backward of the sequence through `kind`. */
function adjointMs(kind: 'LSTM' | 'GRU'): number {
  const net = kind === 'LSTM' ? new A.nn.LSTM(I, H, { seed: 1 }) : new A.nn.GRU(I, H, { seed: 1 });
  const x = A.keep(A.randn([T, B, I], { seed: 2 }));
  const step = () =>
    A.tidy(() => {
      const [out] = net.forward(x);
      A.sum(out).backward();
      for (const p of net.parameters()) {
        p.grad!.dispose();
        p.grad = null;
      }
    });
  const ms = timeSync(step, budget).cpuMedian * 1e3;
  net.dispose();
  x.dispose();
  return ms;
}

/** PyTorch's CPU ms for both (one child process), or the reason it was skipped. */
function torchMs(): { lstm: number; gru: number; torch: string } | string {
  const py = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const r = spawnSync(py, [path.join(root(), 'bench/torch/rnn_step.py'), '--budget', String(budget.budgetMs! / 1000)], {
    encoding: 'utf8',
  });
  const last = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  try {
    const j = JSON.parse(last) as { skipped?: string; lstmCpuMs: number; gruCpuMs: number; torch: string };
    return j.skipped ?? { lstm: j.lstmCpuMs, gru: j.gruCpuMs, torch: j.torch };
  } catch {
    return `bench/torch/rnn_step.py gave no result (${(r.stderr ?? '').trim().split('\n').at(-1) ?? r.status})`;
  }
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const load0 = os.loadavg()[0];
const ours = { LSTM: [] as number[], GRU: [] as number[] },
  theirs = { LSTM: [] as number[], GRU: [] as number[] };
let skipped: string | null = null,
  version = '';
for (let r = 0; r < rounds; r++) {
  ours.LSTM.push(adjointMs('LSTM'));
  ours.GRU.push(adjointMs('GRU'));
  if (skipped !== null) continue;
  const t = torchMs();
  if (typeof t === 'string') skipped = t;
  else {
    theirs.LSTM.push(t.lstm);
    theirs.GRU.push(t.gru);
    version = t.torch;
  }
  const ratio = (k: 'LSTM' | 'GRU') => (skipped ? '' : ` (${(theirs[k][r] / ours[k][r]).toFixed(2)}×)`);
  console.log(`round ${r + 1}: LSTM ${ours.LSTM[r].toFixed(2)} ms${ratio('LSTM')}, GRU ${ours.GRU[r].toFixed(2)} ms${ratio('GRU')}`);
}
console.log(`\nRecurrent step, hidden ${H}, input ${I}, T=${T}, batch ${B}, float32, forward + backward, 1 thread`);
console.log(
  `load average ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores; ${pinned ? `pinned to core ${core}` : 'not pinned'}`,
);
console.log('| layer | adjoint ms (CPU, median) | PyTorch ms (CPU, median) | adjoint speed vs PyTorch (median of rounds) |');
console.log('|---|---:|---:|---:|');
for (const k of ['LSTM', 'GRU'] as const) {
  const vs = skipped ? `skip: ${skipped}` : `${med(theirs[k].map((t, i) => t / ours[k][i])).toFixed(2)}×`;
  console.log(`| nn.${k} | ${med(ours[k]).toFixed(2)} | ${skipped ? '—' : med(theirs[k]).toFixed(2)} | ${vs} |`);
}
if (!skipped) console.log(`PyTorch ${version} (OpenBLAS, torch.set_num_threads(1))`);
