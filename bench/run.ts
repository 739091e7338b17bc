// `npm run bench`: adjoint against TF.js (wasm, 1 thread; cpu) and jax-js (wasm, jit) in ONE
// process. Each workload is measured for every library back to back (so machine load drifts
// hit all columns alike), as the median of repeated timed samples after warm-up. Prints a table
// per group with ratios and writes bench/results.json (all numbers plus machine info).
//
// Then the relaxed-SIMD kernels against the default ones (bench/relaxed.ts), as speed ratios.
//
// Options: --quick (smaller time budgets), --only gemm,op,mlp,deep,cnn,bounds,vmap,relaxed,gpt,rnn,threads,moonshot,balance (groups; gpt runs bench/gpt.ts;
//          threads: bench/threads-step.ts, 2 threads against 1 for the MLP, deep and GPT steps; moonshot: bench/moonshot.ts,
//          the MLP step on 2 threads against PyTorch's one-thread step; balance: bench/balance.ts, the steps on 2 threads
//          with a slowed worker, uneven cuts against equal ones (gpt, threads, moonshot and balance run only when named);
//          bounds: bench/step-bounds.ts, steps against the GEMM rate and PyTorch;
//          vmap runs bench/vmap.ts's per-example-gradient and Jacobian ratios; rnn bench/rnn.ts: LSTM/GRU against PyTorch),
//          --sizes 64,512 (GEMM sizes), --out FILE (results path),
//          --clock wall|cpu|auto (table from wall time or process CPU time; auto = CPU time when
//          the load average exceeds the core count at start, since then wall time mostly measures
//          waiting for a core).
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import v8 from 'node:v8';
import vm from 'node:vm';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { adjointMemory, adjointSuite } from './adjoint-suite.js';
import { repoRoot } from './paths.js';
import { everyCore, spawnOn } from './capacity.js';
import { loadPeers } from './peers.js';
import { relaxedComparison, relaxedTable, type RelaxedResult } from './relaxed.js';
import { boundTable, deepCompiledRow, deepRow, digitsRow, fashionRow, type BoundRow } from './step-bounds.js';
import { vmapComparison, vmapTable, type VmapResult } from './vmap.js';
import { time, type TimeOptions, type Timing } from './timing.js';
import { GEMM_SIZES, type Made, type Suite, type Workload } from './workloads.js';

// ---------------------------------------------------------------- options

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const opt = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = flag('quick');
const only = opt('only')?.split(',');
const sizes = opt('sizes')?.split(',').map(Number) ?? GEMM_SIZES;
// Default 'auto': CPU time when the machine is oversubscribed at start (1-min load above the
// core count: other jobs take turns on our core and inflate wall time), else wall time.
const clockOpt = opt('clock') ?? 'auto';
const clock: 'cpu' | 'wall' = clockOpt === 'cpu' || (clockOpt === 'auto' && os.loadavg()[0] > os.cpus().length) ? 'cpu' : 'wall';
const budget: TimeOptions = quick ? { budgetMs: 100, minSamples: 3, maxWarmMs: 400 } : {};

const outPath = opt('out') ?? path.join(repoRoot(), 'bench', 'results.json');

/**
 * Pins this process's main thread (only: V8's GC and compiler threads, started earlier, keep
 * every core) to the last core with `taskset -p`, where it exists (Linux). Why: on the shared
 * 2-vCPU VM this bench was developed on, an unpinned process ran single-threaded GEMM at ~30
 * GFLOP/s in about half of the runs and ~46 in the others, for its whole life; with the main
 * thread pinned every run gave 44–47. It applies to every library alike (they all compute on
 * this thread). ADJOINT_PIN=off runs unpinned; ADJOINT_PIN=<n> picks core n.
 */
function pinMainThread(): string | null {
  const want = process.env.ADJOINT_PIN ?? String(os.cpus().length - 1);
  if (want === 'off' || process.platform !== 'linux') return null;
  const r = spawnSync('taskset', ['-p', '-c', want, String(process.pid)], { stdio: 'ignore' });
  return r.status === 0 ? want : null;
}
const pinned = pinMainThread();

// ---------------------------------------------------------------- rows

type Unit = 'GFLOP/s' | 'µs/op' | 'ms';
interface RowSpec {
  group: 'gemm' | 'op' | 'mlp' | 'deep' | 'cnn';
  name: string;
  unit: Unit;
  w: Workload;
  /** Flops per call (GFLOP/s rows). */
  flops?: number;
}
interface Cell {
  value?: number;
  /** Wall-clock and process-CPU medians, seconds per call (per op on per-op rows). */
  medianSec?: number;
  cpuSec?: number;
  minSec?: number;
  maxSec?: number;
  samples?: number;
  reps?: number;
  note?: string;
  leakedTensors?: number;
  /** Forward rows: loss at the initial parameters. */
  loss?: number;
}
interface Row {
  group: string;
  name: string;
  unit: Unit;
  cells: Record<string, Cell>;
}

const combos: [boolean, boolean, string][] = [
  [false, false, 'A·B'],
  [true, false, 'Aᵀ·B'],
  [false, true, 'A·Bᵀ'],
  [true, true, 'Aᵀ·Bᵀ'],
];

/** Rows in measuring order: GEMM, per-op overhead, then the training workloads. */
function specs(): RowSpec[] {
  const out: RowSpec[] = [];
  for (const dtype of ['float32', 'float64'] as const) {
    for (const n of sizes) {
      for (const [ta, tb, label] of combos) {
        // f64: every transpose combination at 512³, A·B at every size.
        if (dtype === 'float64' && (ta || tb) && n !== 512) continue;
        out.push({
          group: 'gemm',
          name: `gemm ${dtype === 'float32' ? 'f32' : 'f64'} ${n}³ ${label}`,
          unit: 'GFLOP/s',
          w: { kind: 'gemm', n, dtype, ta, tb, level: 'api' },
          flops: 2 * n ** 3,
        });
      }
    }
  }
  const ops: [Extract<Workload, { kind: 'op' }>['op'], string][] = [
    ['add', 'add [4]+[4], result freed'],
    ['tanh', 'tanh [4], result freed'],
    ['matmul4', 'matmul [4,4]·[4,4], result freed'],
    ['addChain', 'add chain y=y+b ×N, read at end'],
    ['addRecord', 'add recording a graph node (requiresGrad)'],
    ['addJit', 'compiled add call (jit / compile)'],
  ];
  for (const [op, name] of ops) out.push({ group: 'op', name, unit: 'µs/op', w: { kind: 'op', op } });
  out.push({ group: 'mlp', name: 'MLP 784-256-256-10 b128 train step', unit: 'ms', w: { kind: 'mlp', mode: 'step' } });
  out.push({ group: 'mlp', name: 'MLP 784-256-256-10 b128 forward+loss', unit: 'ms', w: { kind: 'mlp', mode: 'forward' } });
  out.push({ group: 'deep', name: 'deep MLP 32×256 tanh b64 train step', unit: 'ms', w: { kind: 'deep', mode: 'step' } });
  out.push({ group: 'deep', name: 'deep MLP 32×256 tanh b64 forward+loss', unit: 'ms', w: { kind: 'deep', mode: 'forward' } });
  out.push({ group: 'cnn', name: 'CNN 2×conv3×3/2 + fc, b32 28×28 train step', unit: 'ms', w: { kind: 'cnn', mode: 'step' } });
  out.push({ group: 'cnn', name: 'CNN 2×conv3×3/2 + fc, b32 28×28 forward+loss', unit: 'ms', w: { kind: 'cnn', mode: 'forward' } });
  return out.filter((s) => only === undefined || only.includes(s.group));
}

// ---------------------------------------------------------------- measuring

interface Column {
  id: string;
  suite: Suite;
  map: (w: Workload) => Workload | null;
}

/**
 * A peer's GEMM rate at the previous size of the same row kind: a peer predicted to need more
 * than SLOW_PEER_SEC per call at this size is skipped (tfjs-cpu, XNNPACK's transposed paths and
 * jax-js's Aᵀ·Bᵀ run at ~1 GFLOP/s or less and would cost seconds per call). adjoint itself is
 * always measured: its slow paths are what this bench is for.
 */
const lastRate = new Map<string, number>();
const SLOW_PEER_SEC = quick ? 0.5 : 1.5;
const rateKey = (col: Column, w: Workload) => (w.kind === 'gemm' ? `${col.id}|${w.dtype}|${w.ta}|${w.tb}` : '');

/**
 * A full garbage collection before each measurement, so one library's garbage (or the warm-up
 * pass's) is not collected on the next one's clock: with the CPU-time clock, V8's concurrent
 * GC threads count too. Node exposes gc() only behind --expose-gc; the flag can be set at run
 * time and the function fetched from a fresh context.
 */
const collectGarbage: () => void = (() => {
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as (() => void) | undefined;
    if (typeof gc === 'function') return gc;
  } catch {
    /* not available: measure without */
  }
  return () => {};
})();

async function measure(col: Column, spec: RowSpec): Promise<Cell | null> {
  const w = col.map(spec.w);
  if (w === null) return null;
  const rate = lastRate.get(rateKey(col, w));
  if (!col.id.startsWith('adjoint') && rate !== undefined && spec.flops! / (rate * 1e9) > SLOW_PEER_SEC) {
    return { note: `skipped: run time (≈${(spec.flops! / (rate * 1e9)).toFixed(1)} s per call at ${rate.toFixed(2)} GFLOP/s)` };
  }
  collectGarbage();
  const cell = await measureRunner(col, spec, w);
  if (cell?.value !== undefined && spec.unit === 'GFLOP/s') lastRate.set(rateKey(col, w), cell.value);
  return cell;
}

async function measureRunner(col: Column, spec: RowSpec, w: Workload): Promise<Cell | null> {
  await col.suite.activate?.();
  const before = col.suite.id === 'adjoint' ? adjointMemory() : null;
  let made: Made;
  try {
    made = await col.suite.make(w);
  } catch (e) {
    return { note: `failed to set up: ${(e as Error).message}`.slice(0, 200) };
  }
  if (made === null) return null;
  if (typeof made === 'string') return { note: made };
  const runner = made;
  // Per-op rows time ~µs paths through many JS functions: warm up long enough for V8 to
  // optimise them all (TurboFan compiles on a background thread, slow on a busy machine).
  const opts: TimeOptions = spec.group === 'op' ? { ...budget, warmMs: quick ? 100 : 300 } : budget;
  let t: Timing;
  try {
    // The first call validates the workload and absorbs one-off costs (jax-js jit compiles,
    // first-touch of memory); it is never a sample. A later call slower than slowMs is the only
    // sample (see timing.ts), so a slow workload costs two calls.
    const first = runner.run();
    if (first instanceof Promise) await first;
    t = await time(runner.run, opts);
  } catch (e) {
    try {
      runner.dispose?.();
    } catch {
      /* already broken */
    }
    return { note: `failed: ${(e as Error).message}`.slice(0, 200) };
  }
  let loss: number | undefined;
  try {
    if (runner.loss && spec.w.kind !== 'gemm' && spec.w.kind !== 'op' && spec.w.mode === 'forward') loss = await runner.loss();
  } catch {
    /* the timing stands without the check */
  }
  runner.dispose?.();
  const per = runner.perCall ?? 1;
  const sec = (clock === 'cpu' ? t.cpuMedian : t.median) / per;
  const value = spec.unit === 'GFLOP/s' ? spec.flops! / sec / 1e9 : spec.unit === 'µs/op' ? sec * 1e6 : sec * 1e3;
  const cell: Cell = {
    value,
    loss,
    medianSec: t.median / per,
    cpuSec: t.cpuMedian / per,
    minSec: t.min / per,
    maxSec: t.max / per,
    samples: t.samples,
    reps: t.reps,
  };
  if (before !== null) {
    const after = adjointMemory();
    if (after.tensors !== before.tensors) cell.leakedTensors = after.tensors - before.tensors;
  }
  return cell;
}

/**
 * step / forward of one library as the median over rounds that time a batch of forward calls
 * and then a batch of steps back to back: each quotient compares two clocks read seconds apart,
 * so load that comes and goes (this bench often shares its machine) cancels, where the two rows'
 * medians were taken minutes apart. Null when a call is too slow for several rounds.
 */
async function pairedRatio(col: Column, stepRow: Row, fwdRow: Row): Promise<number | null> {
  const specOf = (r: Row) => specs().find((x) => x.name === r.name)!;
  const slowest = Math.max(stepRow.cells[col.id]?.minSec ?? 1, fwdRow.cells[col.id]?.minSec ?? 1);
  if (slowest > 0.25) return null;
  await col.suite.activate?.();
  const made = await Promise.all(
    [specOf(stepRow), specOf(fwdRow)].map(async (sp) => {
      const w = col.map(sp.w);
      return w === null ? null : col.suite.make(w);
    }),
  );
  const [step, fwd] = made;
  if (!step || !fwd || typeof step === 'string' || typeof fwd === 'string') return null;
  const batch = async (r: Exclude<Made, null | string>, n: number): Promise<number> => {
    const c0 = process.cpuUsage(),
      t0 = performance.now();
    for (let i = 0; i < n; i++) await r.run();
    const c = process.cpuUsage(c0);
    return clock === 'cpu' ? (c.user + c.system) / 1e6 : (performance.now() - t0) / 1000;
  };
  await batch(step, 2);
  await batch(fwd, 2);
  const n = Math.max(1, Math.round(0.03 / slowest));
  const ratios: number[] = [];
  for (let i = 0; i < (quick ? 5 : 15); i++) ratios.push((await batch(step, n)) / (await batch(fwd, n)));
  step.dispose?.();
  fwd.dispose?.();
  ratios.sort((a, b) => a - b);
  return ratios[ratios.length >> 1] / ((step.perCall ?? 1) / (fwd.perCall ?? 1));
}

// ---------------------------------------------------------------- printing

const fmt = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(2));

/** Peer time / adjoint time: > 1 means adjoint is faster. */
function speedup(unit: Unit, adjoint: number, peer: number): number {
  return unit === 'GFLOP/s' ? adjoint / peer : peer / adjoint;
}

function cellText(row: Row, id: string, ref: string): string {
  const c = row.cells[id];
  if (c === undefined) return '—';
  if (c.value === undefined) return c.note?.startsWith('TODO') ? 'TODO' : 'skip';
  let s = fmt(c.value);
  const a = row.cells[ref]?.value;
  if (id !== ref && !id.startsWith('adjoint') && a !== undefined) s += ` (${fmt(speedup(row.unit, a, c.value))}×)`;
  if (c.leakedTensors) s += ` [leak ${c.leakedTensors}]`;
  return s;
}

function printTable(title: string, rows: Row[], ids: string[], labels: Record<string, string>): string {
  if (rows.length === 0) return '';
  const header = ['workload', 'unit', ...ids.map((i) => labels[i] ?? i)];
  const body = rows.map((r) => [r.name, r.unit, ...ids.map((i) => cellText(r, i, 'adjoint'))]);
  const widths = header.map((h, j) => Math.max(h.length, ...body.map((b) => b[j].length)));
  const line = (cells: string[]) => '| ' + cells.map((c, j) => (j < 2 ? c.padEnd(widths[j]) : c.padStart(widths[j]))).join(' | ') + ' |';
  const sep = '|' + widths.map((w, j) => (j < 2 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|';
  const text = [`\n### ${title}\n`, line(header), sep, ...body.map(line)].join('\n');
  console.log(text);
  return text;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  // The GPT step (bench/gpt.ts) runs in its own process: it trains a real model and calls PyTorch.
  if (only?.includes('gpt')) {
    const passOn = ['steps', 'torch-steps'].flatMap((n) => (opt(n) === undefined ? [] : [`--${n}`, opt(n)!]));
    spawnSync(process.execPath, [path.join(repoRoot(), 'scripts/run-ts.mjs'), 'bench/gpt.ts', ...passOn], {
      stdio: 'inherit',
      cwd: repoRoot(),
    });
  }
  // Two threads against one (bench/threads-step.ts, paired rounds in one process per model), then the
  // MLP step on two threads against PyTorch (bench/moonshot.ts). Each gets every core: this process is pinned.
  const unpinned = (script: string, args: string[]) =>
    spawnOn(pinned === null ? null : everyCore(), process.execPath, [path.join(repoRoot(), 'scripts/run-ts.mjs'), script, ...args], {
      stdio: 'inherit',
      cwd: repoRoot(),
    });
  if (only?.includes('threads')) {
    for (const model of ['mlp', 'deep', 'gpt']) {
      console.log(`\n2 threads against 1: ${model} (bench/threads-step.ts)`);
      unpinned('bench/threads-step.ts', ['--model', model, '--rounds', quick ? '3' : model === 'mlp' ? '15' : '9']);
    }
  }
  if (only?.includes('moonshot')) unpinned('bench/moonshot.ts', quick ? ['--rounds', '2', '--ms', '500'] : []);
  if (only?.includes('balance')) {
    for (const model of ['mlp', 'deep', 'gpt']) {
      console.log(`\nthreads of unequal speed: ${model} (bench/balance.ts)`);
      const gpt = model === 'gpt';
      unpinned('bench/balance.ts', [
        '--model',
        model,
        '--slow',
        gpt ? '0,100' : '0,50,100',
        '--rounds',
        quick ? '2' : gpt ? '3' : '5',
        '--ms',
        quick ? '500' : gpt ? '5000' : '2000',
      ]);
    }
  }
  if (only?.includes('epoch')) {
    console.log('\nFashion-MNIST CNN epoch as `adjoint train` runs it (bench/fashion-epoch.ts)');
    unpinned('bench/fashion-epoch.ts', quick ? ['--threads', '2'] : []);
  }
  if (only?.every((g) => ['gpt', 'threads', 'moonshot', 'balance', 'epoch'].includes(g))) return;
  // The LSTM/GRU step against PyTorch (bench/rnn.ts) also runs in its own process, with PyTorch's rounds interleaved.
  if (only === undefined || only.includes('rnn')) {
    spawnSync(process.execPath, [path.join(repoRoot(), 'scripts/run-ts.mjs'), 'bench/rnn.ts', ...(quick ? ['--quick'] : [])], {
      stdio: 'inherit',
      cwd: repoRoot(),
    });
    if (only?.every((g) => ['rnn', 'gpt', 'threads', 'moonshot', 'balance', 'epoch'].includes(g))) return;
  }
  const t0 = performance.now();
  const cpus = os.cpus();
  const machine = {
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.release()}`,
    arch: os.arch(),
    cpu: cpus[0]?.model ?? '?',
    cores: cpus.length,
    totalMemGB: +(os.totalmem() / 2 ** 30).toFixed(1),
    loadavgStart: os.loadavg().map((x) => +x.toFixed(2)),
    date: new Date().toISOString(),
    pinnedCore: pinned,
  };
  console.log(`adjoint bench — node ${machine.node}, ${machine.cpu} (${machine.cores} cores), load ${machine.loadavgStart.join(' ')}`);
  console.log(
    `  clock: ${clock === 'cpu' ? 'process CPU time (machine oversubscribed or --clock cpu)' : 'wall time'}; ${pinned !== null ? `main thread pinned to core ${pinned} (ADJOINT_PIN=off to run unpinned)` : 'not pinned'}`,
  );

  const own = JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as { version?: string };
  const adjoint = await adjointSuite(own.version ?? '?');
  const { suites: peers, notes } = await loadPeers();
  console.log(`  versions: ${[adjoint, ...peers].map((x) => `${x.label} ${x.version}`).join(', ')}`);
  for (const n of notes) console.log(`  ${n.id}: ${n.note}`);
  const columns: Column[] = [
    { id: 'adjoint', suite: adjoint, map: (w) => w },
    { id: 'adjoint-kernel', suite: adjoint, map: (w) => (w.kind === 'gemm' ? { ...w, level: 'kernel' } : null) },
    ...peers.map((s) => ({ id: s.id, suite: s, map: (w: Workload) => w })),
  ];
  const labels: Record<string, string> = Object.fromEntries(
    columns.map((c) => [c.id, c.id === 'adjoint-kernel' ? 'adjoint kernel' : c.suite.label]),
  );

  // Process warm-up: V8 compiles wasm with its baseline compiler first and tiers hot functions
  // up to TurboFan on a background thread (slow when cores are busy), so the first row measured
  // would otherwise see baseline-compiled GEMM kernels. Run each library's GEMM paths (every
  // transpose combination), an elementwise op and the MLP step briefly, unmeasured.
  const warmSpecs: Workload[] = [
    ...combos.map(([ta, tb]) => ({ kind: 'gemm', n: 128, dtype: 'float32', ta, tb, level: 'api' }) as Workload),
    { kind: 'gemm', n: 128, dtype: 'float64', ta: false, tb: false, level: 'api' },
    { kind: 'op', op: 'add' },
    { kind: 'mlp', mode: 'step' },
  ];
  for (const col of columns) {
    for (const spec of warmSpecs) {
      const w = col.map(spec);
      if (w === null) continue;
      await col.suite.activate?.();
      try {
        const r = await col.suite.make(w);
        if (r === null || typeof r === 'string') continue;
        const end = performance.now() + (quick ? 60 : 150);
        do await r.run();
        while (performance.now() < end);
        r.dispose?.();
      } catch {
        /* reported when the row itself runs */
      }
    }
  }
  process.stderr.write(`  ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s  warm-up pass\n`);

  // Libraries run back to back within each row, so load drift on a shared machine hits every
  // column of a row alike. (The raw-kernel column registers its own GEMM packing scratch and
  // unregisters it after its row; the library registers its own before every GEMM launch,
  // src/wasm/split.ts and src/ops/conv.ts, so the two never see each other's region.)
  const rows: Row[] = [];
  for (const spec of specs()) {
    const row: Row = { group: spec.group, name: spec.name, unit: spec.unit, cells: {} };
    for (const col of columns) {
      const cell = await measure(col, spec);
      if (cell !== null) row.cells[col.id] = cell;
    }
    rows.push(row);
    process.stderr.write(`  ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s  ${spec.name}\n`);
  }

  // Derived rows: step / forward per library, from interleaved pairs (see pairedRatio); the
  // quotient of the two rows' medians, taken minutes apart, is the fallback.
  const ratioRow = async (group: string, name: string): Promise<Row | null> => {
    const step = rows.find((r) => r.group === group && r.name.endsWith('train step'));
    const fwd = rows.find((r) => r.group === group && r.name.endsWith('forward+loss'));
    if (!step || !fwd) return null;
    const cells: Record<string, Cell> = {};
    for (const id of Object.keys(step.cells)) {
      const s = step.cells[id]?.value,
        f = fwd.cells[id]?.value;
      if (s === undefined || f === undefined) {
        cells[id] = { note: 'n/a' };
        continue;
      }
      const col = columns.find((c) => c.id === id)!;
      const paired = await pairedRatio(col, step, fwd);
      cells[id] = { value: paired ?? s / f, note: paired === null ? 'ratio of the two rows' : undefined };
    }
    return { group, name, unit: 'ms', cells };
  };

  const peerIds = peers.map((p) => p.id);
  const out: string[] = [];
  out.push(
    printTable(
      'GEMM (GFLOP/s, higher is better; "adjoint" = public matmul/transpose, "adjoint kernel" = raw gemm kernel with packing scratch)',
      rows.filter((r) => r.group === 'gemm'),
      ['adjoint', 'adjoint-kernel', ...peerIds],
      labels,
    ),
  );
  out.push(
    printTable(
      'Eager per-op overhead (µs per op, lower is better)',
      rows.filter((r) => r.group === 'op'),
      ['adjoint', ...peerIds],
      labels,
    ),
  );
  const trainRows = rows.filter((r) => ['mlp', 'deep', 'cnn'].includes(r.group));
  const derived: Row[] = [];
  for (const g of ['mlp', 'deep', 'cnn'] as const) {
    const r = await ratioRow(g, `${g === 'mlp' ? 'MLP' : g === 'deep' ? 'deep MLP' : 'CNN'} step / forward (×)`);
    if (r !== null) derived.push(r);
  }
  const trainTable = trainRows.flatMap((r) => {
    const d = derived.find((x) => x.group === r.group && r.name.endsWith('forward+loss'));
    return d ? [r, { ...d, unit: '×' as Unit }] : [r];
  });
  out.push(
    printTable(
      'Training (ms per call, lower is better; step = forward + backward + SGD update)',
      trainTable,
      ['adjoint', ...peerIds],
      labels,
    ),
  );
  console.log("\n(×N) after a peer's number = peer time / adjoint time: above 1 adjoint is faster, below 1 the peer is.");
  for (const r of rows) {
    for (const [id, c] of Object.entries(r.cells))
      if (c.note && !c.note.startsWith('skipped: run time')) console.log(`  note: ${r.name} / ${labels[id]}: ${c.note}`);
  }

  // Same computation? The forward loss at the shared initial parameters should agree.
  for (const r of rows.filter((x) => x.name.endsWith('forward+loss'))) {
    const ref = r.cells.adjoint?.loss;
    const parts = Object.entries(r.cells)
      .filter(([, c]) => c.loss !== undefined)
      .map(([id, c]) => {
        const off = ref === undefined ? '' : Math.abs(c.loss! - ref) > 1e-3 * Math.max(1, Math.abs(ref)) ? ' MISMATCH' : '';
        return `${labels[id]} ${c.loss!.toPrecision(6)}${off}`;
      });
    if (parts.length) console.log(`  loss check, ${r.name}: ${parts.join(', ')}`);
  }

  // Steps against bounds of this run (bench/step-bounds.ts): the GEMM rate is the f32 512³ kernel's.
  let bounds: (BoundRow | string)[] | undefined;
  const gemmRate = rows.find((r) => r.name === 'gemm f32 512³ A·B')?.cells['adjoint-kernel']?.value;
  if ((only === undefined || only.includes('bounds')) && gemmRate !== undefined) {
    const deepStep = rows.find((r) => r.name === 'deep MLP 32×256 tanh b64 train step')?.cells.adjoint?.value;
    bounds = [await digitsRow(gemmRate, clock, budget)];
    bounds.push(await deepCompiledRow(gemmRate, clock, budget));
    if (deepStep !== undefined) bounds.push(deepRow(deepStep, gemmRate));
    bounds.push(await fashionRow(repoRoot(), clock, budget, pinned));
    const text = boundTable(bounds, gemmRate);
    console.log(text);
    out.push(text);
  }

  // vmap (bench/vmap.ts): per-example gradients and Jacobians, each a ratio measured within its own rounds.
  let vmap: VmapResult | undefined;
  if (only === undefined || only.includes('vmap')) {
    await adjoint.activate?.();
    vmap = await vmapComparison({ quick });
    const text = vmapTable(vmap);
    console.log(text);
    out.push(text);
  }

  // Relaxed SIMD: two more copies of the library in this process (bench/relaxed.ts), so it runs last.
  let relaxed: RelaxedResult | undefined;
  if (only === undefined || only.includes('relaxed')) {
    relaxed = await relaxedComparison({ quick, clock });
    const text = relaxedTable(relaxed);
    console.log(text);
    out.push(text);
  }

  const seconds = (performance.now() - t0) / 1000;
  const results = {
    machine: { ...machine, loadavgEnd: os.loadavg().map((x) => +x.toFixed(2)) },
    versions: Object.fromEntries([['adjoint', adjoint.version], ...peers.map((p) => [p.id, p.version])]),
    peerNotes: notes,
    options: { quick, sizes, budget, clock },
    method: `value = from the median ${clock === 'cpu' ? 'process CPU' : 'wall-clock'} seconds per call over repeated timed samples after warm-up (medianSec = wall, cpuSec = process CPU); peer results forced with dataSync()/blockUntilReady(); ratio = peer time / adjoint time`,
    seconds: +seconds.toFixed(1),
    rows: [...rows, ...derived.map((d) => ({ ...d, unit: 'ratio' }))],
    bounds,
    vmap,
    relaxed,
  };
  writeFileSync(outPath, JSON.stringify(results, null, 2) + '\n');
  console.log(`\nwrote ${outPath} (${seconds.toFixed(0)} s)`);
}

await main();
