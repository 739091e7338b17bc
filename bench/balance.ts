// Threads of unequal speed: a compiled training step on 2 threads with the worker slowed down by
// --slow per cent (a test hook: it spins that share of each job's time more, as a slower core
// would; 0 is the machine as it is), with the balance controller on (uneven cuts, src/wasm/balance.ts)
// and off (equal cuts), in alternating rounds of one process. Each balanced configuration starts
// from equal cuts with no change made yet, as a new process does. Reports the median step time
// of each, their ratio, and the cuts the controller chose (at the end of each timed part).
//   node scripts/run-ts.mjs bench/balance.ts [--model mlp|deep|gpt] [--slow 0,50,100] [--rounds 5] [--ms 1500]
import * as A from '../src/index.js';
import { balance, cutKey, slowWorker } from '../src/testing.js';
import { resetBalance } from '../src/wasm/balance.js';
import { compiledDenseRunner } from './dense-step.js';
import { gptRunner } from './gpt-step.js';
import { coreSpeeds, coreSpeedsText } from './capacity.js';
import { median } from './timing.js';

const argv = process.argv.slice(2);
const opt = (name: string, d: string): string => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
const model = opt('--model', 'mlp');
const slows = opt('--slow', '0,50,100').split(',').map(Number);
const ROUNDS = Number(opt('--rounds', '5')),
  MS = Number(opt('--ms', '1500'));

/** Steps for `ms` after a warm-up of the same length; ms per step over the timed part. */
function timed(run: () => void, ms: number): number {
  for (const t0 = performance.now(); performance.now() - t0 < ms; ) run();
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) run(), n++;
  return (performance.now() - t0) / n;
}

await A.init({ threads: 2 });
console.log(`balance bench: ${model}, 2 threads, compiled; ${ROUNDS} rounds of ${MS} ms warm-up + ${MS} ms timed per configuration`);
console.log(coreSpeedsText(coreSpeeds()));
const run = model === 'gpt' ? gptRunner() : compiledDenseRunner(model === 'deep' ? 'deep' : 'mlp');
const rows: { slow: number; on: number; off: number; ratio: number; cuts: string[] }[] = [];
for (const slow of slows) {
  slowWorker(0, slow);
  const on: number[] = [],
    off: number[] = [],
    ratios: number[] = [],
    cuts: string[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [true, false] : [false, true];
    const got: Record<string, number> = {};
    for (const enabled of order) {
      // Each balanced configuration starts as a new process would: equal cuts, no change made yet.
      resetBalance();
      balance.enabled = enabled;
      got[String(enabled)] = timed(run, MS);
      if (enabled) cuts.push(cutKey() || 'equal');
    }
    on.push(got.true), off.push(got.false), ratios.push(got.false / got.true);
    console.log(
      `  slow ${slow} %, round ${r + 1}: balanced ${got.true.toFixed(3)} ms (cuts ${cuts.at(-1)}), equal ${got.false.toFixed(3)} ms`,
    );
  }
  rows.push({ slow, on: median(on), off: median(off), ratio: median(ratios), cuts });
}
slowWorker(0, 0);
console.log('\n| worker slowed by | balanced (ms) | equal cuts (ms) | equal over balanced | cuts chosen (caller.worker, of 32) |');
console.log('| --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(`| ${r.slow} % | ${r.on.toFixed(3)} | ${r.off.toFixed(3)} | ${r.ratio.toFixed(2)}× | ${[...new Set(r.cuts)].join(', ')} |`);
console.log(`after: ${coreSpeedsText(coreSpeeds())}`);
process.exit(0);
