// Where a compiled step's time goes on 1 and 2 threads: every step of the replayed program
// (launch, fused tile run, JS write, parallel phase) with its measured time, and for phases the
// pieces per thread and their planned cost. A diagnostic for the parallel schedule.
//   node scripts/run-ts.mjs bench/threads-plan.ts [--model mlp|deep|gpt] [--reps 50]
import * as A from '../src/index.js';
import { Program } from '../src/compile/program.js';
import { gptRunner } from './gpt-step.js';
import { compiledDenseRunner, type DenseModel } from './dense-step.js';

const argv = process.argv.slice(2);
const MODEL = argv.includes('--model') ? argv[argv.indexOf('--model') + 1] : 'mlp';
const REPS = argv.includes('--reps') ? Number(argv[argv.indexOf('--reps') + 1]) : 50;

const times = new Map<Program, Float64Array>();
// Each step of a replayed program timed in place: Program's runStep wrapped.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const proto = Program.prototype as any;
const runStep = proto.runStep as (i: number, ...rest: unknown[]) => void;
proto.runStep = function (this: { steps: unknown[] }, i: number, ...rest: unknown[]) {
  let t = times.get(this as never);
  if (!t) times.set(this as never, (t = new Float64Array(this.steps.length)));
  const t0 = performance.now();
  runStep.call(this, i, ...rest);
  t[i] += performance.now() - t0;
};

const mlp = (): (() => void) => compiledDenseRunner(MODEL as DenseModel);
const gpt = (): (() => void) => gptRunner(1);

const desc = (s: any): string => {
  if ('phase' in s) {
    if (s.lists.length === 0) return `phase(pre ${s.pre.length})`;
    if (s.lists.length > 0 && s.lists.flat().length > 12)
      return `PHASE ${s.lists.map((l: any[]) => `[${l.length} calls, cost ${(l.reduce((t, c) => t + work(c), 0) / 1e6).toFixed(1)}M]`).join(' | ')}`;
    return `PHASE ${s.lists.map((l: any[]) => '[' + l.map((c) => c.name.replace(/_f32$/, '') + `(${cost(c)})`).join(' ') + ']').join(' | ')}`;
  }
  if (s.w) return 'write';
  if (s.tiled) return `tiled ${s.ops.map((o: any) => o.name.replace(/_f32$/, '')).join(',')} n=${s.n} x${s.threads}`;
  return `${s.name.replace(/_f32$/, '')}${s.pooled ? ` pooled×${s.argv.length}` : ''}`;
};
function work(c: any): number {
  const a = c.args;
  if (c.name.startsWith('gemm_bias_act')) return a[4] * a[5] * a[6];
  if (c.name.startsWith('gemm')) return a[3] * a[4] * a[5];
  return 0;
}
function cost(c: any): string {
  const a = c.args;
  if (c.name.startsWith('gemm_bias_act')) return `${a[4]}x${a[5]}x${a[6]}`;
  if (c.name.startsWith('gemm')) return `${a[3]}x${a[4]}x${a[5]}`;
  return '';
}

await A.init({ threads: 2 });
for (const threads of [1, 2]) {
  await A.init({ threads });
  times.clear();
  const run = MODEL === 'gpt' ? gpt() : mlp();
  for (let i = 0; i < 5; i++) run();
  times.clear();
  const t0 = performance.now();
  for (let i = 0; i < REPS; i++) run();
  const total = (performance.now() - t0) / REPS;
  for (const [p, t] of times) {
    const steps = (p as any).steps as any[];
    let sum = 0;
    const phases = steps.filter((s) => 'phase' in s && s.lists.length > 1).length;
    console.log(
      `\n=== ${MODEL} threads ${threads}: step ${total.toFixed(3)} ms, ${steps.length} program steps, ${phases} fork-join phases`,
    );
    console.log(`memory plan ${(p.bytes / 1e6).toFixed(1)} MB`);
    steps.forEach((s, i) => {
      sum += t[i] / REPS;
      console.log(`${String(i).padStart(3)} ${(t[i] / REPS).toFixed(3).padStart(7)} ms  ${desc(s)}`);
    });
    console.log(`sum of steps ${sum.toFixed(3)} ms`);
  }
}
process.exit(0);
