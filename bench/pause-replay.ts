// The busy-machine pause rule of the thread pool (src/wasm/congestion.ts) judged on recorded
// dispatches. `record` runs a compiled step on 2 threads with pausing off and saves what the
// rule is given for every fork-join (time, own piece, wait, steal, excuse); `replay` feeds such
// logs to the rule as it is now and as configured by flags, on a mocked clock, and counts the
// pauses and the time they would have covered (calls inside a pause are skipped, as they would
// have run on the calling thread). The same log judged by two rules: an idle machine's hitches
// should cause no pause, a busy machine's starved worker should be paused most of the time.
//   node scripts/run-ts.mjs bench/pause-replay.ts record --model gpt|mlp|deep [--steps 150] [--busy] --out FILE
//   node scripts/run-ts.mjs bench/pause-replay.ts replay FILE... (each log under the default rule, and with
//     runs 1 and inRow 0: the rule before runs were counted)
// --busy runs a spinning process next to the step for the length of the recording.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as A from '../src/index.js';
import { busy, congestion, paused, recordDispatches, resetCongestion, threadStats } from '../src/wasm/congestion.js';
import { compiledDenseRunner, type DenseModel } from './dense-step.js';
import { gptRunner } from './gpt-step.js';
import { loadavg } from 'node:os';

const argv = process.argv.slice(2);
const opt = (name: string, d: string): string => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);

interface Log {
  model: string;
  busy: boolean;
  load: string;
  steps: number[];
  calls: number[][];
}

const runner = (model: string): (() => void) => (model === 'gpt' ? gptRunner() : compiledDenseRunner(model as DenseModel));

async function record(): Promise<void> {
  const model = opt('--model', 'gpt'),
    steps = Number(opt('--steps', model === 'gpt' ? '150' : '1000')),
    out = opt('--out', `/tmp/dispatches-${model}.json`);
  busy.pauseMs = 0;
  await A.init({ threads: 2 });
  const run = runner(model);
  for (let i = 0; i < 5; i++) run();
  const spinner = argv.includes('--busy') ? spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }) : null;
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const calls: number[][] = [];
  const times: number[] = [];
  recordDispatches(calls);
  for (let i = 0; i < steps; i++) {
    const t = performance.now();
    run();
    times.push(performance.now() - t);
  }
  recordDispatches(null);
  spinner?.kill();
  await A.init({ threads: 1 });
  const median = [...times].sort((a, b) => a - b)[times.length >> 1];
  writeFileSync(out, JSON.stringify({ model, busy: spinner !== null, load, steps: times, calls } satisfies Log));
  console.log(
    `${model}${spinner ? ', busy' : ''}: ${steps} steps, median ${median.toFixed(2)} ms, ${calls.length} dispatches, load ${load} → ${out}`,
  );
}

/** Pauses and paused ms when `log` is judged by the rule with `config`. */
function judge(log: Log, config: Partial<typeof busy>): [number, number] {
  const saved = { ...busy };
  Object.assign(busy, { pauseMs: 1000 }, config);
  resetCongestion();
  const clock = performance.now;
  let now = 0;
  performance.now = () => now;
  const p0 = threadStats.pauses;
  const last = log.calls.at(-1)![0];
  let pausedMs = 0,
    until = 0;
  try {
    for (const [t, own, wait, stole, excused] of log.calls) {
      now = t;
      if (paused()) continue;
      const before = threadStats.pauses;
      congestion(own, wait, stole === 1, excused === 1);
      if (threadStats.pauses > before) {
        // The pause's length is the rule's own: step the clock until it ends.
        let end = t;
        do now = ++end;
        while (paused());
        pausedMs += Math.min(end, last) - Math.max(t, until);
        until = end;
        now = t;
      }
    }
  } finally {
    performance.now = clock;
    Object.assign(busy, saved);
    resetCongestion();
  }
  return [threadStats.pauses - p0, pausedMs];
}

function replay(): void {
  const rules: [string, Partial<typeof busy>][] = [
    ['now', {}],
    ['runs 1, inRow 0', { runs: 1, inRow: 0 }],
  ];
  for (const file of argv.slice(1).filter((a) => !a.startsWith('--'))) {
    const log = JSON.parse(readFileSync(file, 'utf8')) as Log;
    const span = log.calls.at(-1)![0] - log.calls[0][0];
    const cells = rules.map(([name, c]) => {
      const [n, ms] = judge(log, c);
      return `${name}: ${n} pauses, ${((100 * ms) / span).toFixed(0)} % paused`;
    });
    console.log(
      `${file} (${log.model}${log.busy ? ', busy' : ''}, ${log.steps.length} steps, ${span.toFixed(0)} ms, load ${log.load})\n  ${cells.join('\n  ')}`,
    );
  }
}

if (argv[0] === 'record') await record();
else if (argv[0] === 'replay') replay();
else console.log('usage: bench/pause-replay.ts record --model gpt|mlp|deep [--steps N] [--busy] --out FILE | replay FILE...');
