// The one-thread compiled GPT training step (bench/gpt.ts's model) built with and without one
// compile-time peephole switch of src/compile/epilogues.ts (default `gelu`: GELU's erf once per
// element, src/compile/gelu-grad.ts), in alternating paired rounds of process-CPU time; checks
// that both give the same loss bits at every step and prints the median per-round ratio.
//
//   taskset -c 1 node scripts/run-ts.mjs bench/gpt-epilogue-ab.ts [--switch gelu] [--rounds 9] [--steps 6] [--bias false]
import os from 'node:os';
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { epilogues } from '../src/compile/epilogues.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: string) => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : d);
const key = opt('switch', 'gelu') as 'gelu' | 'sgd' | 'enabled',
  rounds = Number(opt('rounds', '9')),
  steps = Number(opt('steps', '6'));
await A.init({ threads: 1 });
const text = await A.data.shakespeare('data/tinyshakespeare.txt.gz');
const config = { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0, bias: opt('bias', 'true') !== 'false' };
/** A run whose compiled step is built while the switch is `on` (programs read it when built). */
const build = (on: boolean) => {
  epilogues[key] = on;
  const run = new GptRun(text, config);
  const losses = [0, 1, 2].map(() => run.trainStep());
  epilogues[key] = true;
  return { run, losses };
};
const off = build(false),
  on = build(true);
const bits = (v: number) => new Uint32Array(new Float32Array([v]).buffer)[0];
let same = off.losses.every((l, i) => bits(l) === bits(on.losses[i]));
const cpu = (run: GptRun): number => {
  const c0 = process.cpuUsage();
  for (let i = 0; i < steps; i++) {
    const a = run.trainStep();
    (run === on.run ? on : off).losses.push(a);
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / steps;
};
const r: number[] = [];
const load0 = os.loadavg()[0];
for (let i = 0; i < rounds; i++) {
  const first = i % 2 ? on.run : off.run;
  const a = cpu(first),
    b = cpu(first === on.run ? off.run : on.run);
  const [tOff, tOn] = first === on.run ? [b, a] : [a, b];
  r.push(tOn / tOff);
  console.log(`round ${i}: ${key} off ${tOff.toFixed(2)} ms, on ${tOn.toFixed(2)} ms, ratio ${(tOn / tOff).toFixed(3)}`);
}
same &&= off.losses.every((l, i) => bits(l) === bits(on.losses[i]));
console.log(
  `median on/off ${[...r].sort((p, q) => p - q)[r.length >> 1].toFixed(3)} over ${rounds} rounds of ${steps} steps; ` +
    `losses ${same ? 'bit-identical' : 'DIFFER'} over ${on.losses.length} steps; load ${load0.toFixed(2)} → ${os.loadavg()[0].toFixed(2)}`,
);
off.run.dispose(), on.run.dispose();
