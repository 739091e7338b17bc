// Relaxed-SIMD kernels against the default ones, in one process: two copies of the library (the
// adjoint suite bundled once, imported twice under different query strings, so each copy has its
// own module state, memory and kernels), one initialised with { relaxedSimd: true }. Every row is
// timed as interleaved rounds (a batch on the default copy, then the same batch on the relaxed
// one) and reported as the median of the per-round quotients: load that comes and goes on a
// shared machine hits both sides of a quotient alike.
//   node scripts/run-ts.mjs bench/relaxed.ts [--quick]      (npm run bench runs it too)
// Node 20 and 21 have relaxed SIMD behind a V8 flag; it is set here before any wasm compiles.
import v8 from 'node:v8';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import type { Runner, Suite, Workload } from './workloads.js';
import { repoRoot } from './paths.js';

export interface RelaxedRow {
  name: string;
  /** Median ms (or GFLOP/s on GEMM rows) of the default and relaxed copies, and their speed ratio (> 1: relaxed is faster). */
  unit: 'ms' | 'GFLOP/s';
  default: number;
  relaxed: number;
  ratio: number;
  rounds: number;
}
export interface RelaxedResult {
  kernels: string;
  rows: RelaxedRow[];
  note?: string;
}

const ROWS: { name: string; w: Workload | 'gpt'; flops?: number }[] = [
  {
    name: 'gemm f32 512³ A·B (kernel)',
    w: { kind: 'gemm', n: 512, dtype: 'float32', ta: false, tb: false, level: 'kernel' },
    flops: 2 * 512 ** 3,
  },
  {
    name: 'gemm f32 512³ A·B (matmul)',
    w: { kind: 'gemm', n: 512, dtype: 'float32', ta: false, tb: false, level: 'api' },
    flops: 2 * 512 ** 3,
  },
  {
    name: 'gemm f64 512³ A·B (kernel)',
    w: { kind: 'gemm', n: 512, dtype: 'float64', ta: false, tb: false, level: 'kernel' },
    flops: 2 * 512 ** 3,
  },
  { name: 'MLP 784-256-256-10 b128 train step', w: { kind: 'mlp', mode: 'step' } },
  { name: 'deep MLP 32×256 tanh b64 train step', w: { kind: 'deep', mode: 'step' } },
  { name: 'CNN 2×conv3×3/2 + fc, b32 28×28 train step', w: { kind: 'cnn', mode: 'step' } },
  { name: 'CNN 2×conv3×3/2 + fc, b32 28×28 forward+loss', w: { kind: 'cnn', mode: 'forward' } },
  // bench/gpt.ts's step (tiny-Shakespeare GPT, 4 layers, width 128, context 64, batch 12; AdamW, clip).
  { name: 'GPT 4×128 ctx64 b12 train step', w: 'gpt' },
];

type SuiteModule = typeof import('./adjoint-suite.js');
type GptModule = { A: typeof import('../src/index.js'); GptRun: typeof import('../src/cli/gpt-run.js').GptRun };

/** Bundles `entry` (a file, or module source with imports relative to the repository) to build/run/<name>.mjs and imports it twice: two independent copies. */
async function twice<M>(name: string, entry: string | { contents: string }): Promise<[M, M]> {
  const repo = repoRoot();
  const out = path.join(repo, 'build', 'run', `${name}.mjs`);
  await build({
    ...(typeof entry === 'string'
      ? { entryPoints: [path.join(repo, entry)] }
      : { stdin: { contents: entry.contents, resolveDir: repo, loader: 'ts' as const } }),
    outfile: out,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'error',
  });
  const url = pathToFileURL(out).href;
  return [await import(`${url}?kernels=default`), await import(`${url}?kernels=relaxed`)];
}

/** Two independent copies of the adjoint suite: the default kernels and (where the engine has relaxed SIMD) the relaxed ones. */
const copies = () => twice<SuiteModule>('adjoint-suite-lib', 'bench/adjoint-suite.ts');

/** The GPT step on two library copies (default and relaxed kernels), the same text and seed. */
async function gptRunners(): Promise<[Runner, Runner]> {
  const [d, r] = await twice<GptModule>('relaxed-gpt-lib', {
    contents: "export * as A from './src/index.ts'; export { GptRun } from './src/cli/gpt-run.ts';",
  });
  await d.A.init();
  await r.A.init({ relaxedSimd: true });
  const data = path.join(repoRoot(), 'data', 'tinyshakespeare.txt.gz');
  const runner = async (m: GptModule): Promise<Runner> => {
    const run = new m.GptRun(await m.A.data.shakespeare(data), {
      layers: 4,
      heads: 4,
      width: 128,
      context: 64,
      batch: 12,
      steps: 2000,
      seed: 0,
    });
    return { run: () => void run.trainStep(), dispose: () => run.dispose() };
  };
  return [await runner(d), await runner(r)];
}

const cpuSec = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function batch(r: Runner, n: number, clock: 'cpu' | 'wall'): Promise<number> {
  const c0 = cpuSec(),
    t0 = performance.now();
  for (let i = 0; i < n; i++) await r.run();
  return (clock === 'cpu' ? cpuSec() - c0 : (performance.now() - t0) / 1000) / n;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Interleaved rounds of one workload on both copies; null when a copy cannot run it. */
async function pair(suites: [Suite, Suite], row: (typeof ROWS)[number], quick: boolean, clock: 'cpu' | 'wall'): Promise<RelaxedRow | null> {
  const w = row.w;
  const made = w === 'gpt' ? await gptRunners() : await Promise.all(suites.map((s) => s.make(w)));
  if (made.some((m) => m === null || typeof m === 'string')) return null;
  const [d, r] = made as [Runner, Runner];
  try {
    // Warm-up (TurboFan tier-up of both copies' kernels and JS), then batches of ~30 ms.
    const warmEnd = performance.now() + (quick ? 150 : 400);
    let one = 0;
    do one = Math.max(await batch(d, 1, 'wall'), await batch(r, 1, 'wall'));
    while (performance.now() < warmEnd);
    const n = Math.max(1, Math.round(0.03 / one));
    const ds: number[] = [],
      rs: number[] = [],
      q: number[] = [];
    for (let i = 0; i < (quick ? 7 : 21); i++) {
      const a = await batch(d, n, clock),
        b = await batch(r, n, clock);
      ds.push(a);
      rs.push(b);
      q.push(a / b);
    }
    const per = d.perCall ?? 1;
    const value = (sec: number) => (row.flops !== undefined ? row.flops / (sec / per) / 1e9 : (sec / per) * 1e3);
    return {
      name: row.name,
      unit: row.flops !== undefined ? 'GFLOP/s' : 'ms',
      default: value(median(ds)),
      relaxed: value(median(rs)),
      ratio: median(q),
      rounds: q.length,
    };
  } finally {
    d.dispose?.();
    r.dispose?.();
  }
}

/** The relaxed/default comparison; `only` limits the rows (by name substring). */
export async function relaxedComparison({
  quick = false,
  clock = 'wall' as 'cpu' | 'wall',
  only = [] as string[],
} = {}): Promise<RelaxedResult> {
  v8.setFlagsFromString('--experimental-wasm-relaxed-simd'); // no-op where relaxed SIMD is on by default
  const [a, b] = await copies();
  const suites: [Suite, Suite] = [await a.adjointSuite('default'), await b.adjointSuite('relaxed', { relaxedSimd: true })];
  const kernels = b.adjointBackend().kernels;
  if (kernels !== 'relaxed') return { kernels, rows: [], note: 'this engine has no relaxed SIMD: both copies run the default kernels' };
  const rows: RelaxedRow[] = [];
  for (const row of ROWS) {
    if (only.length > 0 && !only.some((o) => row.name.includes(o))) continue;
    const r = await pair(suites, row, quick, clock);
    if (r !== null) rows.push(r);
    process.stderr.write(`  relaxed: ${row.name}\n`);
  }
  return { kernels, rows };
}

/** The table printed by npm run bench. */
export function relaxedTable(res: RelaxedResult): string {
  const head =
    '\n### Relaxed SIMD: init({ relaxedSimd: true }) against the default kernels (one process, interleaved rounds; speed ratio = default time / relaxed time, above 1 the relaxed kernels are faster)\n';
  if (res.rows.length === 0) return `${head}\n${res.note ?? 'no rows'}`;
  const f = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  const lines = ['| workload | unit | default | relaxed | speed ratio |', '|---|---|--:|--:|--:|'];
  for (const r of res.rows) lines.push(`| ${r.name} | ${r.unit} | ${f(r.default)} | ${f(r.relaxed)} | ${r.ratio.toFixed(3)}× |`);
  return [head, ...lines].join('\n');
}

// Run alone (build/run/relaxed.mjs), not when bundled into bench/run.ts, whose bundle also sees its own URL as argv[1].
if (path.basename(process.argv[1] ?? '') === 'relaxed.mjs') {
  const argv = process.argv.slice(2);
  // Pinned to the last core as bench/run.ts pins itself (ADJOINT_PIN=off: unpinned).
  const core = String(os.cpus().length - 1);
  const pinned =
    process.env.ADJOINT_PIN !== 'off' &&
    process.platform === 'linux' &&
    spawnSync('taskset', ['-p', '-c', core, String(process.pid)], { stdio: 'ignore' }).status === 0;
  const load0 = os.loadavg()[0];
  const res = await relaxedComparison({
    quick: argv.includes('--quick'),
    clock: argv.includes('--cpu') ? 'cpu' : 'wall',
    only: argv.filter((a) => !a.startsWith('--')),
  });
  console.log(relaxedTable(res));
  console.log(
    `\nload ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores; ${pinned ? `pinned to core ${core}` : 'not pinned'}; ${argv.includes('--cpu') ? 'process CPU time' : 'wall time'}`,
  );
}
