// The compiled GPT training step (bench/gpt.ts's model) built with and without one compile-time
// switch, in alternating paired rounds; checks that both give the same loss bits at every step
// and prints the median per-round ratio. Switches: the peepholes of src/compile/epilogues.ts
// (`gelu`: GELU's erf once per element, src/compile/gelu-grad.ts; `sgd`; `enabled`: all of them)
// and `constants` (src/compile/copies.ts: strided copies and attention read their arrays from
// program constants and join the parallel schedule). One thread is timed in process CPU (pin it:
// taskset -c 1), more in wall time (CPU would count every thread), with the pool's pause off so
// that no round runs on one thread.
//
//   node scripts/run-ts.mjs bench/gpt-switch-ab.ts [--switch gelu|sgd|enabled|constants] [--threads 1|2] [--rounds 9] [--steps 6] [--bias false]
import os from 'node:os';
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { constants } from '../src/compile/copies.js';
import { epilogues } from '../src/compile/epilogues.js';
import { busy } from '../src/testing.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: string) => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : d);
const key = opt('switch', 'gelu'),
  threads = Number(opt('threads', '1')),
  rounds = Number(opt('rounds', '9')),
  steps = Number(opt('steps', '6'));
const flags: Record<string, [Record<string, boolean>, string]> = {
  gelu: [epilogues, 'gelu'],
  sgd: [epilogues, 'sgd'],
  enabled: [epilogues, 'enabled'],
  constants: [constants, 'enabled'],
};
if (!(key in flags)) throw new Error(`--switch ${key}: expected one of ${Object.keys(flags).join(', ')}`);
const [flag, field] = flags[key];
await A.init({ threads });
busy.pauseMs = 0;
const text = await A.data.shakespeare('data/tinyshakespeare.txt.gz');
const config = { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0, bias: opt('bias', 'true') !== 'false' };
/** A run whose compiled step is built while the switch is `on` (programs read it when built). */
const build = (on: boolean) => {
  flag[field] = on;
  const run = new GptRun(text, config);
  const losses = [0, 1, 2].map(() => run.trainStep());
  flag[field] = true;
  return { run, losses };
};
const off = build(false),
  on = build(true);
const bits = (v: number) => new Uint32Array(new Float32Array([v]).buffer)[0];
let same = off.losses.every((l, i) => bits(l) === bits(on.losses[i]));
/** Milliseconds a step of `x` takes over `steps` steps: process CPU on one thread, wall time on more. */
const time = (x: typeof on): number => {
  const [c0, t0] = [process.cpuUsage(), performance.now()];
  for (let i = 0; i < steps; i++) x.losses.push(x.run.trainStep());
  const c = process.cpuUsage(c0);
  return (threads === 1 ? (c.user + c.system) / 1000 : performance.now() - t0) / steps;
};
const r: number[] = [];
const load0 = os.loadavg()[0];
for (let i = 0; i < rounds; i++) {
  const [a, b] = i % 2 ? [on, off] : [off, on];
  const ta = time(a),
    tb = time(b);
  const [tOff, tOn] = a === on ? [tb, ta] : [ta, tb];
  r.push(tOn / tOff);
  console.log(`round ${i}: ${key} off ${tOff.toFixed(2)} ms, on ${tOn.toFixed(2)} ms, ratio ${(tOn / tOff).toFixed(3)}`);
}
same &&= off.losses.every((l, i) => bits(l) === bits(on.losses[i]));
console.log(
  `median on/off ${[...r].sort((p, q) => p - q)[r.length >> 1].toFixed(3)} over ${rounds} rounds of ${steps} steps on ${threads} thread(s); ` +
    `losses ${same ? 'bit-identical' : 'DIFFER'} over ${on.losses.length} steps; load ${load0.toFixed(2)} → ${os.loadavg()[0].toFixed(2)}`,
);
off.run.dispose(), on.run.dispose();
process.exit(0);
