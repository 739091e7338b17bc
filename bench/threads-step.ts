// A training step on 1 and 2 threads, eager and compile()d, in ONE process (--model):
//   mlp   784-256-256-10, batch 128, ReLU, crossEntropy, plain SGD (the default; --optim adam:
//         Adam lr 1e-3, the step bench/torch/mlp_step.py times for PyTorch)
//   deep  32 hidden layers of 256 with tanh (256-…-256-10), batch 128, plain SGD (or --optim adam)
//   gpt   the tiny-Shakespeare GPT (4 layers, 4 heads, width 128, context 64, batch 12) forward,
//         backward and AdamW, without the gradient clipping of `adjoint gpt` (its norm is read
//         into JS, which a compiled step cannot replay); compiled only
// The pool is resized with
// init({ threads }) between rounds, and rounds alternate, so load from other processes on a
// shared machine hits every configuration alike. Each round also measures how much of a second
// core the process gets (a pure-JS loop on one thread, then on two at once: 2.00 = two idle
// cores), and the ratios are reported over all rounds and over the rounds that had ≥ 1.8. On
// Linux it also counts the CPU time other processes used during the round (/proc/stat minus this
// process, in cores: 0 = nothing else ran), which the probe cannot see (it only samples the
// moment before), and reports the ratios over the rounds where that stayed under 0.1 too.
// --relaxed runs every configuration with relaxed-SIMD kernels (init({ relaxedSimd: true })).
// Also counts, for 2 threads, splits per step, pieces the caller had to run itself (stolen),
// the time in the caller's own pieces and in its waits for workers, and the worker's time in its pieces.
//   node scripts/run-ts.mjs bench/threads-step.ts [--model mlp|deep|gpt] [--optim sgd|adam] [--relaxed] [--rounds 15] [--reps 20] [--warm-ms 250] [--claim-ms X] [--no-phases]
// (--no-phases: compiled steps without the parallel schedule, each split launch its own fork-join.
// Also a third compiled configuration, 'per-launch ×2': 2 threads without the schedule, for a
// paired comparison of the schedule itself.)
// Each configuration warms up for --warm-ms (250) before its timed steps of a round: resizing the
// pool starts new workers, and the first steps after that are slower (docs/threads.md).
// (--claim-ms sets busy.claimMs, the busy-machine rule for starved workers; Infinity turns it off.)
import * as A from '../src/index.js';
import { busy, threadStats } from '../src/testing.js';
import { thresholds } from '../src/wasm/split.js';
import { coreSpeeds, coreSpeedsText, secondCore } from './capacity.js';
import { gptRunner } from './gpt-step.js';
import { denseBatch, denseStep, type DenseModel } from './dense-step.js';
import { schedule } from '../src/compile/parallel.js';
import { workerBusyMs } from '../src/wasm/threads.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: number): number => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : d);
const ROUNDS = opt('--rounds', 15),
  REPS = opt('--reps', 20);
/** Warm-up per configuration and round, in ms (the pool is restarted whenever the thread count changes). */
const WARM_MS = opt('--warm-ms', 250);
const MODEL = argv.includes('--model') ? argv[argv.indexOf('--model') + 1] : 'mlp';
const OPTIM = argv.includes('--optim') ? argv[argv.indexOf('--optim') + 1] : 'sgd';
if (argv.includes('--no-phases')) schedule.enabled = false;

await A.init({ threads: 2, relaxedSimd: argv.includes('--relaxed') });
if (argv.includes('--claim-ms')) busy.claimMs = opt('--claim-ms', busy.claimMs);
// Other knobs of the pool (read when a pool starts): --spin-ms, --calm-after, --pause-ms; split
// thresholds as powers of two: --gemm-log2, --elementwise-log2.
for (const [flag, key] of [
  ['--spin-ms', 'spinMs'],
  ['--calm-after', 'calmAfter'],
  ['--pause-ms', 'pauseMs'],
  ['--first-pause-ms', 'firstPauseMs'],
  ['--hold-ms', 'holdMs'],
  ['--strikes', 'strikes'],
  ['--window', 'window'],
  ['--runs', 'runs'],
  ['--in-row', 'inRow'],
] as const) {
  if (argv.includes(flag)) busy[key] = opt(flag, busy[key]);
}
if (argv.includes('--gemm-log2')) thresholds.gemm = 2 ** opt('--gemm-log2', 17);
if (argv.includes('--elementwise-log2')) thresholds.elementwise = 2 ** opt('--elementwise-log2', 17);

function runner(compiled: boolean): () => void {
  if (MODEL === 'gpt') return gptRunner();
  const { step, inputs } = denseStep(MODEL as DenseModel, OPTIM as 'sgd' | 'adam');
  const f = compiled ? A.compile(step) : (x: A.Tensor, y: Int32Array) => A.tidy(() => step(x, y));
  const data = [0, 1, 2, 3].map((s) => denseBatch(inputs, s));
  let i = 0;
  return () => {
    const b = data[i++ % data.length];
    const loss = f(b.x, b.y);
    loss.item();
    loss.dispose();
  };
}

const configs = [
  ...(MODEL === 'gpt'
    ? []
    : [
        { name: 'eager ×1', threads: 1, run: runner(false) },
        { name: 'eager ×2', threads: 2, run: runner(false) },
      ]),
  { name: 'compiled ×1', threads: 1, run: runner(true) },
  { name: 'compiled ×2', threads: 2, run: runner(true) },
  { name: 'per-launch ×2', threads: 2, run: runner(true), perLaunch: true },
];
await secondCore(); // the probe's first run warms it up
/** Linux: CPU seconds used by every process, and by this one (all threads); null elsewhere. */
const { readFileSync } = await import('node:fs');
function cpuTimes(): { all: number; own: number } | null {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const own = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    // USER_HZ is 100 on Linux: clock ticks of 10 ms.
    return { all: (cpu.reduce((a, b) => a + b, 0) - cpu[3] - cpu[4]) / 100, own: (Number(own[11]) + Number(own[12])) / 100 };
  } catch {
    return null;
  }
}
const caps: number[] = [],
  foreign: number[] = [];
const samples = new Map(configs.map((c) => [c.name, [] as number[]]));
const split = new Map(configs.map((c) => [c.name, { own: 0, wait: 0, dispatches: 0, stolen: 0, steps: 0, worker: 0, pauses: 0 }]));
const uptime = async () =>
  (await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
console.log(`load average before: ${await uptime()}; ${coreSpeedsText(coreSpeeds())}`);
for (let r = -2; r < ROUNDS; r++) {
  if (r >= 0) caps.push(await secondCore());
  const c0 = cpuTimes(),
    t0r = performance.now();
  for (const c of configs) {
    await A.init({ threads: c.threads });
    // The schedule is planned when a program is built (the first calls): per configuration.
    const on = schedule.enabled;
    if ('perLaunch' in c) schedule.enabled = false;
    // Warm up for WARM_MS (at least 3 steps): after the pool starts, the first ~10–20 steps run
    // slower (the new threads being placed, their code warming up), a cost a training run pays
    // once, not every 20 steps.
    const tw = performance.now();
    for (let i = 0; i < 3 || performance.now() - tw < WARM_MS; i++) c.run();
    schedule.enabled = on;
    const s0 = { ...threadStats },
      w0 = workerBusyMs();
    const t0 = performance.now();
    for (let i = 0; i < REPS; i++) c.run();
    const ms = (performance.now() - t0) / REPS;
    if (r < 0) continue; // warm-up rounds
    samples.get(c.name)!.push(ms);
    const sp = split.get(c.name)!;
    sp.own += threadStats.ownMs - s0.ownMs;
    sp.wait += threadStats.waitMs - s0.waitMs;
    sp.dispatches += threadStats.dispatches - s0.dispatches;
    sp.stolen += threadStats.stolen - s0.stolen;
    sp.steps += REPS;
    sp.worker += workerBusyMs() - w0;
    sp.pauses += threadStats.pauses - s0.pauses;
  }
  const c1 = cpuTimes();
  if (r >= 0 && c0 !== null && c1 !== null) foreign.push((c1.all - c0.all - (c1.own - c0.own)) / ((performance.now() - t0r) / 1000));
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const min = (xs: number[]) => Math.min(...xs);
for (const c of configs) {
  const xs = samples.get(c.name)!,
    sp = split.get(c.name)!;
  const per = (v: number) => (v / sp.steps).toFixed(3);
  console.log(
    `${c.name.padEnd(12)} median ${med(xs).toFixed(2)} ms, best ${min(xs).toFixed(2)} ms` +
      (c.threads > 1
        ? `; per step: ${per(sp.dispatches)} splits, ${per(sp.stolen)} stolen, own pieces ${per(sp.own)} ms, waits ${per(sp.wait)} ms, worker pieces ${per(sp.worker)} ms (caller's share of split work ${((100 * sp.own) / (sp.own + sp.worker)).toFixed(0)} %), ${sp.pauses} pauses`
        : ''),
  );
}
console.log(
  `model ${MODEL}, ${OPTIM}${argv.includes('--relaxed') ? ', relaxed SIMD' : ''}${schedule.enabled ? '' : ' (no parallel schedule)'}`,
);
/** Rounds where nothing else ran: the probe found a second core and other processes used under 0.1 of one. */
const quiet = caps.map((c, i) => c >= 1.8 && (foreign[i] ?? 0) < 0.1);
for (const kind of MODEL === 'gpt' ? ['compiled'] : ['eager', 'compiled']) {
  const one = samples.get(`${kind} ×1`)!,
    two = samples.get(`${kind} ×2`)!;
  // Per-round ratios: both measured within a second of each other, under the same load.
  const ratios = one.map((x, i) => x / two[i]),
    calm = ratios.filter((_, i) => caps[i] >= 1.8),
    still = ratios.filter((_, i) => quiet[i]);
  const over = (xs: number[]) => (xs.length ? `${med(xs).toFixed(2)}×` : '—');
  console.log(
    `${kind}: 2 threads vs 1: median of per-round ratios ${med(ratios).toFixed(2)}× (${calm.length} rounds with capacity ≥ 1.8: ${over(calm)}` +
      (foreign.length ? `; ${still.length} of them with other processes' CPU < 0.1 core: ${over(still)}` : '') +
      `), ` +
      `ratio of medians ${(med(one) / med(two)).toFixed(2)}×, ratio of bests ${(min(one) / min(two)).toFixed(2)}×`,
  );
}
{
  const a = samples.get('per-launch ×2')!,
    b = samples.get('compiled ×2')!;
  const ratios = a.map((x, i) => x / b[i]);
  console.log(
    `compiled, 2 threads: parallel schedule vs per-launch fork-joins: median of per-round ratios ${med(ratios).toFixed(2)}×, ratio of bests ${(min(a) / min(b)).toFixed(2)}×`,
  );
}
console.log(`second-core capacity per round: median ${med(caps).toFixed(2)}, max ${Math.max(...caps).toFixed(2)}`);
if (foreign.length)
  console.log(
    `other processes' CPU per round (cores): median ${med(foreign).toFixed(2)}, min ${Math.min(...foreign).toFixed(2)}, max ${Math.max(...foreign).toFixed(2)}`,
  );
console.log(`load average after: ${await uptime()}; pauses: ${threadStats.pauses}; ${coreSpeedsText(coreSpeeds())}`);
process.exit(0);
