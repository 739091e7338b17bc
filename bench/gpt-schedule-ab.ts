// The 2-thread compiled GPT training step (bench/gpt.ts's model) built with and without one
// compile-time switch, in alternating paired rounds of wall time (two threads: process CPU would
// count both): `constants` (src/compile/copies.ts: strided copies and attention read their arrays
// from program constants and join the parallel schedule) or `gelu` (src/compile/gelu-grad.ts,
// which now applies to the pool's pieces too). Checks that both give the same loss bits at every
// step and prints the median per-round ratio.
//
//   node scripts/run-ts.mjs bench/gpt-schedule-ab.ts [--switch constants|gelu] [--rounds 9] [--steps 6]
import os from 'node:os';
import * as A from '../src/index.js';
import { GptRun } from '../src/cli/gpt-run.js';
import { epilogues } from '../src/compile/epilogues.js';
import { constants } from '../src/compile/copies.js';
import { busy } from '../src/testing.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: string) => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : d);
const key = opt('switch', 'constants'),
  rounds = Number(opt('rounds', '9')),
  steps = Number(opt('steps', '6'));
const flag: { enabled?: boolean; gelu?: boolean } = key === 'gelu' ? epilogues : constants;
const field = key === 'gelu' ? 'gelu' : 'enabled';
await A.init({ threads: 2 });
busy.pauseMs = 0; // a pause would run some rounds on one thread: compare the two programs, not the machine
const text = await A.data.shakespeare('data/tinyshakespeare.txt.gz');
const config = { layers: 4, heads: 4, width: 128, context: 64, batch: 12, steps: 2000, seed: 0, bias: true };
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
const wall = (x: typeof on): number => {
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) x.losses.push(x.run.trainStep());
  return (performance.now() - t0) / steps;
};
const r: number[] = [];
const load0 = os.loadavg()[0];
for (let i = 0; i < rounds; i++) {
  const [a, b] = i % 2 ? [on, off] : [off, on];
  const ta = wall(a),
    tb = wall(b);
  const [tOff, tOn] = a === on ? [tb, ta] : [ta, tb];
  r.push(tOn / tOff);
  console.log(`round ${i}: ${key} off ${tOff.toFixed(2)} ms, on ${tOn.toFixed(2)} ms, ratio ${(tOn / tOff).toFixed(3)}`);
}
same &&= off.losses.every((l, i) => bits(l) === bits(on.losses[i]));
console.log(
  `median on/off ${[...r].sort((p, q) => p - q)[r.length >> 1].toFixed(3)} over ${rounds} rounds of ${steps} steps; ` +
    `losses ${same ? 'bit-identical' : 'DIFFER'} over ${on.losses.length} steps; load ${load0.toFixed(2)} → ${os.loadavg()[0].toFixed(2)}`,
);
off.run.dispose(), on.run.dispose();
process.exit(0);
