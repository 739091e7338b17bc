// `npm run bench -- --only gpt`: one training step of the tiny-Shakespeare GPT (4 layers, 4 heads,
// width 128, context 64, batch 12; forward + backward + clip + AdamW) in adjoint with 1 and 2
// threads (and 2 threads with init({ relaxedSimd: true }), the relaxed-SIMD kernels), and PyTorch's step from bench/torch/gpt.py in the same run where python3-torch is
// installed. Reports median wall and process-CPU ms per step, tokens/s, and the share of the
// wasm-SIMD bound: about 3.9 GFLOP a step at 47 GFLOP/s for one core is 83 ms.
//
// jax-js (bench/gpt-jax.ts) runs the same step as a third row.
//
//   node scripts/run-ts.mjs bench/gpt.ts [--steps 30] [--torch-steps 60] [--jax-steps 10] [--out FILE]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import v8 from 'node:v8';
import path from 'node:path';
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { threadStats } from '../src/testing.js';
import { repoRoot } from './paths.js';
import { everyCore, spawnOn } from './capacity.js';

const STEP_GFLOP = 3.9,
  WASM_GFLOPS = 47,
  TOKENS = 12 * 64;
const argv = process.argv.slice(2);
const opt = (name: string, d: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : d;
};
const root = repoRoot();
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

interface Row {
  library: string;
  threads: number;
  msPerStep: number;
  cpuMsPerStep: number;
  tokensPerSec: number;
  tokensPerSecCpu: number;
  boundShare: number | null;
  note?: string;
  /** Busy-machine pauses of the thread pool during the timed steps (threads > 1). */
  pauses?: number;
}

function row(library: string, threads: number, ms: number, cpuMs: number, note?: string): Row {
  // CPU time of a multi-threaded step adds the threads' time: per-core bound share uses wall ms there.
  const per = threads > 1 ? ms : cpuMs;
  return {
    library,
    threads,
    msPerStep: +ms.toFixed(2),
    cpuMsPerStep: +cpuMs.toFixed(2),
    tokensPerSec: +((TOKENS / ms) * 1000).toFixed(0),
    tokensPerSecCpu: +((TOKENS / cpuMs) * 1000).toFixed(0),
    boundShare: +(((STEP_GFLOP / WASM_GFLOPS) * 1000) / per / threads).toFixed(3),
    note,
  };
}

async function adjointStep(text: string, threads: number, steps: number, relaxed: boolean): Promise<Row> {
  // Node 20 and 21 have relaxed SIMD behind a V8 flag (process-wide, so the pool's workers see it too).
  if (relaxed) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
  await A.init({ ...(threads > 1 ? { threads } : {}), ...(relaxed ? { relaxedSimd: true } : {}) });
  if (relaxed && A.backend().kernels !== 'relaxed') throw new Error('this engine has no relaxed SIMD');
  const run = new GptRun(text, { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0 });
  // Warm-up, at least 10 steps and 2 s: wasm tier-up, first-touch memory, the compiled step's
  // first replays, and on 2 threads the new pool's first steps (30–50 % slower for 10–20 steps,
  // docs/threads.md): 3 steps left the 2-thread median of 30 steps 2–20 % above the later one.
  for (let i = 0, t0 = performance.now(); i < 10 || performance.now() - t0 < 2000; i++) run.trainStep();
  const wall: number[] = [],
    cpu: number[] = [];
  const pauses0 = threadStats.pauses;
  for (let i = 0; i < steps; i++) {
    const t = performance.now(),
      c = process.cpuUsage();
    run.trainStep();
    wall.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  run.dispose();
  const r = row('adjoint', threads, median(wall), median(cpu), relaxed ? 'relaxed SIMD' : undefined);
  return threads > 1 ? { ...r, pauses: threadStats.pauses - pauses0 } : r;
}

function torchStep(steps: number): Row | { skipped: string } {
  const script = path.join(root, 'bench/torch/gpt.py');
  const py = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const r = spawnSync(py, [script, '--steps', String(steps)], { encoding: 'utf8' });
  const last = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  try {
    const j = JSON.parse(last) as { skipped?: string; msPerStepMedian: number; cpuMsPerStepMedian: number; torch: string };
    if (j.skipped) return { skipped: j.skipped };
    return row('pytorch', 1, j.msPerStepMedian, j.cpuMsPerStepMedian, `torch ${j.torch}, OpenBLAS, 1 thread`);
  } catch {
    return { skipped: `bench/torch/gpt.py gave no result (${(r.stderr ?? '').trim().split('\n').at(-1) ?? r.status})` };
  }
}

/** jax-js on its wasm device (bench/gpt-jax.ts), in its own process. */
function jaxStep(steps: number): Row | { skipped: string } {
  const r = spawnSync(
    process.execPath,
    [path.join(root, 'scripts/run-ts.mjs'), 'bench/gpt-jax.ts', '--jax-main', '--steps', String(steps)],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  const last = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (!last.startsWith('{')) return { skipped: `bench/gpt-jax.ts failed: ${(r.stderr ?? '').trim().split('\n').at(-1) ?? r.status}` };
  const j = JSON.parse(last) as { ms: number; cpuMs: number };
  return row('jax-js', 1, j.ms, j.cpuMs, 'jax-js 0.1.25, wasm device, jit; attention composed');
}

async function benchGpt(out = opt('out', path.join(root, 'bench/gpt-results.json'))): Promise<void> {
  const steps = Number(opt('steps', '30')),
    torchSteps = Number(opt('torch-steps', '60'));
  const load0 = os.loadavg()[0];
  const rows: Row[] = [];
  // One process per thread count and kernel build: both are fixed by the first init() of a process.
  for (const [threads, relaxed] of [
    [1, false],
    [2, false],
    [2, true],
  ] as const) {
    const args = [path.join(root, 'scripts/run-ts.mjs'), 'bench/gpt.ts', '--adjoint-threads', String(threads), '--steps', String(steps)];
    if (relaxed) args.push('--relaxed');
    // A child inherits the pinned main thread's one-core affinity: with more threads, give it every core back.
    const r = spawnOn(threads > 1 ? everyCore() : null, process.execPath, args, { cwd: root });
    const line = (r.stdout ?? '').trim().split('\n').at(-1) ?? '';
    const label = `adjoint ${threads} thread(s)${relaxed ? ', relaxed SIMD' : ''}`;
    if (!line.startsWith('{')) {
      // Relaxed SIMD is optional (an engine without it skips the row); the default rows must run.
      if (relaxed) {
        console.log(`  ${label}: skipped (${(r.stderr ?? '').trim().split('\n').at(-1)})`);
        continue;
      }
      throw new Error(`${label} step failed: ${(r.stderr ?? '').trim()}`);
    }
    rows.push(JSON.parse(line) as Row);
    const last = rows.at(-1)!;
    process.stderr.write(`  ${label}: ${last.msPerStep} ms/step${last.pauses === undefined ? '' : `, ${last.pauses} pool pauses`}\n`);
  }
  const jax = jaxStep(Number(opt('jax-steps', '10')));
  if ('library' in jax) rows.push(jax);
  const torch = torchStep(torchSteps);
  if ('library' in torch) rows.push(torch);
  const pt = rows.find((r) => r.library === 'pytorch');
  console.log('\nGPT training step (4 layers, 4 heads, width 128, context 64, batch 12: forward + backward + clip + AdamW)');
  console.log('library   threads  ms/step  CPU ms/step  tokens/s  tokens/s (CPU)  wasm-bound share  vs PyTorch (CPU)');
  for (const r of rows) {
    const vs = pt && r !== pt ? `${(pt.cpuMsPerStep / (r.threads > 1 ? r.msPerStep : r.cpuMsPerStep)).toFixed(2)}×` : '';
    console.log(
      `${r.library.padEnd(9)} ${String(r.threads).padStart(7)}  ${r.msPerStep.toFixed(1).padStart(7)}  ${r.cpuMsPerStep.toFixed(1).padStart(11)}  ${String(r.tokensPerSec).padStart(8)}  ${String(r.tokensPerSecCpu).padStart(14)}  ${r.library !== 'pytorch' ? `${(r.boundShare! * 100).toFixed(0)} %` : ''}`.padEnd(
        100,
      ) +
        vs +
        (r.note === 'relaxed SIMD' ? '  (relaxed SIMD)' : ''),
    );
  }
  if (!('library' in torch)) console.log(`  PyTorch: skipped (${torch.skipped})`);
  if (!('library' in jax)) console.log(`  jax-js: skipped (${jax.skipped})`);
  console.log(
    `  load average ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores; on a loaded machine compare the CPU columns`,
  );
  const prev = existsSync(out) ? (JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>) : {};
  writeFileSync(
    out,
    JSON.stringify(
      {
        ...prev,
        step: {
          rows,
          steps,
          torchSteps,
          stepGflop: STEP_GFLOP,
          wasmGflops: WASM_GFLOPS,
          loadAvg: [load0, os.loadavg()[0]],
          date: new Date().toISOString(),
        },
      },
      null,
      2,
    ) + '\n',
  );
  console.log(`wrote ${out}`);
}

const child = argv.indexOf('--adjoint-threads');
if (child >= 0) {
  const text = await A.data.shakespeare(path.join(root, 'data/tinyshakespeare.txt.gz'));
  console.log(JSON.stringify(await adjointStep(text, Number(argv[child + 1]), Number(opt('steps', '30')), argv.includes('--relaxed'))));
} else {
  await benchGpt();
}
