// Where a compiled step's two-thread time goes, phase by phase: each thread's list of a phase run
// alone on the calling thread (the work as cut, without concurrency), the phase run by the pool,
// and the one-thread program's kernels. Separates the cut's extra work (packing a shared operand
// twice, smaller tiles) from what running concurrently adds (memory traffic, waits, wake-ups).
//   node scripts/run-ts.mjs bench/threads-anatomy.ts [--model mlp|deep|gpt] [--optim sgd|adam] [--relaxed] [--reps 200] [--pause]
// (gpt: bench/gpt-step.ts's step, AdamW; its phases timed alone include attention and the optimizer.)
/* eslint-disable @typescript-eslint/no-explicit-any */
import * as A from '../src/index.js';
import { Program } from '../src/compile/program.js';
import { runPhase } from '../src/compile/parallel.js';
import { runJobs, holdPool, workerBusyMs } from '../src/wasm/threads.js';
import { busy, threadStats } from '../src/testing.js';
import { runTiles } from '../src/compile/fuse.js';
import { denseBatch, denseStep, type DenseModel } from './dense-step.js';
import { gptRunner } from './gpt-step.js';

const argv = process.argv.slice(2);
const arg = (name: string, d: string): string => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
const MODEL = arg('--model', 'mlp'),
  OPTIM = arg('--optim', 'sgd'),
  REPS = Number(arg('--reps', '200'));

let captured: any = null;
/** In-situ times: per program step, summed over replays while `insitu.on`. */
const insitu = { on: false, t: [] as number[], own: [] as number[], wait: [] as number[], worker: [] as number[], n: 0 };
// Each step of a replayed program timed in place: Program's runStep wrapped.
const proto = Program.prototype as any;
const runStep = proto.runStep as (i: number, ...rest: unknown[]) => void;
proto.runStep = function (this: any, i: number, ...rest: unknown[]) {
  if (i === 0) {
    captured = this;
    if (insitu.on) insitu.n++;
  }
  const t0 = performance.now(),
    s0 = { ...threadStats },
    w0 = workerBusyMs();
  runStep.call(this, i, ...rest);
  if (!insitu.on) return;
  insitu.t[i] = (insitu.t[i] ?? 0) + performance.now() - t0;
  insitu.own[i] = (insitu.own[i] ?? 0) + threadStats.ownMs - s0.ownMs;
  insitu.wait[i] = (insitu.wait[i] ?? 0) + threadStats.waitMs - s0.waitMs;
  insitu.worker[i] = (insitu.worker[i] ?? 0) + workerBusyMs() - w0;
};

function step(): () => void {
  if (MODEL === 'gpt') return gptRunner(1);
  const { step: train, inputs } = denseStep(MODEL as DenseModel, OPTIM as 'sgd' | 'adam');
  const f = A.compile(train);
  const { x, y } = denseBatch(inputs);
  // The last result stays alive: the replayed steps keep pointing into it while they are timed alone.
  let last: A.Tensor | null = null;
  return () => {
    last?.dispose();
    last = f(x, y);
  };
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
/** Median µs of fn over REPS calls (after 10 warm-ups). */
function time(fn: () => void): number {
  for (let i = 0; i < 10; i++) fn();
  const xs: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const t = performance.now();
    fn();
    xs.push(performance.now() - t);
  }
  return med(xs) * 1000;
}
const name = (c: any): string => {
  const a = c.args,
    n = c.name.replace(/_f32$/, '');
  if (n.startsWith('gemm_bias_act') || n.startsWith('gemm_sgd')) return `${n}(${a[4]}x${a[5]}x${a[6]})`;
  if (n.startsWith('gemm')) return `${n}(${a[3]}x${a[4]}x${a[5]}${a[9] ? ' tA' : ''}${a[10] ? ' tB' : ''})`;
  return n;
};
const runCall = (c: any) => c.f.apply(null, c.args);
const desc = (s: any): string =>
  s.w
    ? 'write'
    : s.tiled
      ? `tiled ${s.ops.map((o: any) => o.name.replace(/_f32$/, '')).join(',')}`
      : `${name({ name: s.name, args: s.argv[0] })}${s.pooled ? ` ×${s.argv.length}` : ''}`;

await A.init({ threads: 2, relaxedSimd: argv.includes('--relaxed') });
// The busy-machine pause would mix one-thread phases into the two-thread times: off unless --pause.
if (!argv.includes('--pause')) busy.pauseMs = 0;
for (const threads of [1, 2]) {
  await A.init({ threads });
  const run = step();
  for (let i = 0; i < 5; i++) run();
  const whole = time(run);
  const p = captured;
  console.log(`\n=== ${MODEL} ${OPTIM}, ${threads} thread(s): step ${whole.toFixed(0)} µs (median of ${REPS})`);
  Object.assign(insitu, { on: true, t: [], own: [], wait: [], worker: [], n: 0 });
  const w = time(run);
  insitu.on = false;
  const per = (x: number[], i: number) => (((x[i] ?? 0) / insitu.n) * 1000).toFixed(0);
  let sum = 0;
  console.log(`in situ (replay timed step by step): step ${w.toFixed(0)} µs`);
  p.steps.forEach((s: any, i: number) => {
    const us = ((insitu.t[i] ?? 0) / insitu.n) * 1000;
    sum += us;
    if (us < 3) return;
    const what =
      'phase' in s
        ? `phase of ${s.lists.map((l: any[]) => l.length).join('+')} calls: caller ${per(insitu.own, i)}, wait ${per(insitu.wait, i)}, worker ${per(insitu.worker, i)}`
        : desc(s);
    console.log(`  ${String(i).padStart(3)} ${us.toFixed(0).padStart(5)} µs  ${what}`);
  });
  console.log(`  sum of steps ${sum.toFixed(0)} µs`);
  let kernels = 0;
  for (const s of p.steps) {
    if (s.w) continue;
    if ('phase' in s) {
      if (s.lists.length === 0) continue;
      holdPool(true); // as inside a replay: the workers poll between phases
      const s0 = { ...threadStats },
        w0 = workerBusyMs();
      const par = time(() => runPhase(s));
      const n = REPS + 10,
        own = ((threadStats.ownMs - s0.ownMs) / n) * 1000,
        wait = ((threadStats.waitMs - s0.waitMs) / n) * 1000,
        worker = ((workerBusyMs() - w0) / n) * 1000,
        stolen = (threadStats.stolen - s0.stolen) / n;
      holdPool(false);
      const alone = s.lists.map((l: any[]) => time(() => l.forEach(runCall)));
      const sum = alone.reduce((a: number, b: number) => a + b, 0);
      kernels += par;
      console.log(
        `PHASE ${par.toFixed(0).padStart(5)} µs; lists alone ${alone.map((x: number) => x.toFixed(0)).join(' + ')} = ${sum.toFixed(0)} µs (wall/ideal ${((par * s.lists.length) / sum).toFixed(2)}); ` +
          `in the pool: caller's list ${own.toFixed(0)} µs, its wait ${wait.toFixed(0)} µs, worker's list ${worker.toFixed(0)} µs, stolen ${stolen.toFixed(2)}`,
      );
      s.lists.forEach((l: any[], t: number) => {
        const each = l.map((c) => `${name(c)} ${time(() => runCall(c)).toFixed(0)}`);
        console.log(`   t${t}: ${each.join(', ')}`);
      });
      continue;
    }
    // Kernels whose inputs may have been overwritten since (labels) are not rerun out of context.
    if (s.tiled || !/^(gemm|bias_act|relu|tanh|sgd|adam|sum)/.test(s.name)) continue;
    const us = time(() => {
      if (s.tiled) runTiles(s.ops, s.n, s.tile, s.threads);
      else if (s.pooled) runJobs(s.name, s.argv, s.f);
      else s.f.apply(null, s.argv[0]);
    });
    kernels += us;
    if (us >= 5) console.log(`${desc(s)} ${us.toFixed(0)} µs`);
  }
  console.log(`sum of kernel steps ${kernels.toFixed(0)} µs; pauses so far ${threadStats.pauses}`);
  // The phases in program order, each timed where it runs after the others (as in a step, without the JS between).
  const ph = p.steps.filter((s: any) => 'phase' in s && s.lists.length > 1);
  if (ph.length > 1) {
    holdPool(true);
    const ts: number[][] = ph.map(() => []);
    for (let r = 0; r < REPS + 10; r++)
      ph.forEach((s: any, i: number) => {
        const t = performance.now();
        runPhase(s);
        if (r >= 10) ts[i].push((performance.now() - t) * 1000);
      });
    holdPool(false);
    console.log(`phases back to back in program order: ${ts.map((x: number[]) => med(x).toFixed(0)).join(', ')} µs`);
  }
}
process.exit(0);
