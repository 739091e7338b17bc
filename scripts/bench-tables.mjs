// Writes the measured tables of README.md and docs/benchmarks.md from bench/results.json (written by
// `npm run bench`) and bench/fashion-results.json (written by bench/fashion.ts), so no number in
// them is pasted by hand. Each table lives between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`;
// only those regions are rewritten. `npm run bench` calls this after bench/run.ts.
//
//   node scripts/bench-tables.mjs            rewrite the regions in place
//   node scripts/bench-tables.mjs --check    exit 1 if a region differs from what it would write
//
// test/docs.test.ts imports `renderAll` and `applyRegions` to check that the committed tables
// match the committed results.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The files whose regions this script owns, relative to the repository root. */
export const FILES = ['README.md', 'docs/benchmarks.md', 'docs/vmap.md'];

const LABELS = {
  adjoint: 'adjoint',
  'adjoint-kernel': 'adjoint kernel',
  'tfjs-wasm': 'tfjs-wasm',
  'tfjs-cpu': 'tfjs-cpu',
  'jax-js': 'jax-js',
};
const PEERS = ['tfjs-wasm', 'tfjs-cpu', 'jax-js'];

// Same number format as bench/run.ts prints to the console.
const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toPrecision(2));

/** Peer time / adjoint time: above 1 adjoint is faster. GFLOP/s is a rate, so it is inverted. */
const speedup = (unit, adjoint, peer) => (unit === 'GFLOP/s' ? adjoint / peer : peer / adjoint);

function cellText(row, id) {
  const c = row.cells[id];
  if (c === undefined) return '—';
  if (c.value === undefined || c.value === null) return 'skip';
  let s = fmt(c.value);
  const a = row.cells.adjoint?.value;
  if (!id.startsWith('adjoint') && typeof a === 'number') s += ` (${fmt(speedup(row.unit, a, c.value))}×)`;
  return s;
}

function table(header, body, leftColumns) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const sep = `|${header.map((_, j) => (j < leftColumns ? ' --- ' : ' ---: ')).join('|')}|`;
  return [line(header), sep, ...body.map(line)].join('\n');
}

/** The unit shown for a row: step/forward ratio rows are stored as 'ratio' and shown as '×'. */
const unitOf = (row) => (row.unit === 'ratio' ? '×' : row.unit);

function groupTable(results, rows, ids) {
  const header = ['workload', 'unit', ...ids.map((i) => LABELS[i] ?? i)];
  return table(
    header,
    rows.map((r) => [r.name, unitOf(r), ...ids.map((i) => cellText(r, i))]),
    2,
  );
}

const byName = (results, name) => {
  const row = results.rows.find((r) => r.name === name);
  if (!row) throw new Error(`bench-tables: bench/results.json has no row "${name}"`);
  return row;
};
const value = (results, name, id = 'adjoint') => byName(results, name).cells[id]?.value;

/** Training rows in reading order: each group's step, forward, then its step/forward ratio. */
function trainingRows(results) {
  const out = [];
  for (const g of ['mlp', 'deep', 'cnn']) {
    const rows = results.rows.filter((r) => r.group === g);
    out.push(...rows.filter((r) => r.unit !== 'ratio'), ...rows.filter((r) => r.unit === 'ratio'));
  }
  return out;
}

function machineLine(results) {
  const m = results.machine;
  const o = results.options ?? {};
  const load = (l) => (l ? l[0] : '?');
  const pinned = m.pinnedCore ? `, main thread pinned to core ${m.pinnedCore}` : ', unpinned';
  return (
    `Written from \`bench/results.json\`: one \`npm run bench\` run of ${m.date.slice(0, 10)}` +
    `${o.quick ? ' (`--quick`)' : ''}, single thread, Node ${m.node} (V8 ${m.v8.split('-')[0]}), ${m.cpu}, ` +
    `${m.cores} cores, load average ${load(m.loadavgStart)} at start and ${load(m.loadavgEnd)} at the end, ` +
    `${o.clock === 'cpu' ? 'process CPU time' : 'wall-clock time'}${pinned}; ${results.seconds} s in all.`
  );
}

const fmtRange = (xs) => {
  const lo = Math.min(...xs),
    hi = Math.max(...xs);
  return lo === hi ? fmt(lo) : `${fmt(lo)}–${fmt(hi)}`;
};

/** The targets the engine is held to, each checked against this run's numbers. */
function targetsTable(results) {
  const gemm512 = ['A·B', 'Aᵀ·B', 'A·Bᵀ', 'Aᵀ·Bᵀ'].map((t) => `gemm f32 512³ ${t}`);
  const mlpStep = 'MLP 784-256-256-10 b128 train step';
  const a = (n) => value(results, n);
  const ratio = (n, peer) => {
    const r = byName(results, n);
    const p = r.cells[peer]?.value,
      v = r.cells.adjoint?.value;
    return typeof p === 'number' && typeof v === 'number' ? speedup(r.unit, v, p) : undefined;
  };
  const gemmRates = gemm512.map(a);
  const tfjsRatios = gemm512.map((n) => ratio(n, 'tfjs-wasm')).filter((x) => x !== undefined);
  const ops = ['add [4]+[4], result freed', 'tanh [4], result freed'].map(a);
  const rows = [
    ['GEMM 512³ f32 through `matmul`, all four transposes', '≥ 42 GFLOP/s', `${fmtRange(gemmRates)} GFLOP/s`, Math.min(...gemmRates) >= 42],
    ['GEMM 512³ f32 against TF.js wasm', '≥ 1.15×', `${fmtRange(tfjsRatios)}×`, tfjsRatios.length > 0 && Math.min(...tfjsRatios) >= 1.15],
    ['MLP train step, eager', '≤ 5.3 ms', `${fmt(a(mlpStep))} ms`, a(mlpStep) <= 5.3],
    ['MLP train step against jax-js `jit`', '≥ 1.3×', `${fmt(ratio(mlpStep, 'jax-js'))}×`, ratio(mlpStep, 'jax-js') >= 1.3],
    ['MLP train step against TF.js wasm', '≥ 7×', `${fmt(ratio(mlpStep, 'tfjs-wasm'))}×`, ratio(mlpStep, 'tfjs-wasm') >= 7],
    ['MLP step / forward', '≤ 3.0', fmt(a('MLP step / forward (×)')), a('MLP step / forward (×)') <= 3],
    [
      'deep MLP train step',
      '≤ 24 ms',
      `${fmt(a('deep MLP 32×256 tanh b64 train step'))} ms`,
      a('deep MLP 32×256 tanh b64 train step') <= 24,
    ],
    ['eager op on a tiny tensor (`add`, `tanh`)', '≤ 1 µs', `${fmtRange(ops)} µs`, Math.max(...ops) <= 1],
  ];
  return table(
    ['target', 'bound', 'this run', ''],
    rows.map(([t, b, m, ok]) => [t, b, m, ok ? 'met' : 'missed']),
    3,
  );
}

/** The README's few headline rows: adjoint and its peers on the workloads that matter most. */
function headlineTable(results) {
  const names = [
    'gemm f32 512³ A·B',
    'gemm f32 512³ Aᵀ·B',
    'add [4]+[4], result freed',
    'MLP 784-256-256-10 b128 train step',
    'deep MLP 32×256 tanh b64 train step',
    'CNN 2×conv3×3/2 + fc, b32 28×28 train step',
  ];
  return groupTable(
    results,
    names.map((n) => byName(results, n)),
    ['adjoint', ...PEERS],
  );
}

const pct = (x) => `${(x * 100).toFixed(2)} %`;
const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;

function fashionTable(fashion) {
  const runs = [...fashion.rows, ...(fashion.extraRuns ?? []).flatMap((r) => r.rows.map((x) => ({ ...x, extra: true })))];
  const body = runs.map((r) => {
    const model = r.model.toUpperCase() === 'CNN' ? 'CNN' : 'MLP';
    const sec = r.epochSec ?? [];
    const acc = r.testAccuracy ?? [];
    const perEpoch = sec.length === 0 ? '—' : r.status === 'extrapolated' ? `~${fmt(mean(sec))} (extrapolated)` : fmt(mean(sec));
    const times =
      r.status === 'unsupported'
        ? `unsupported: ${r.note}`
        : r.status === 'extrapolated'
          ? `${fmt(r.probe.secPerStep)} s/step × ${r.probe.stepsPerEpoch} steps, from ${r.probe.steps} timed steps`
          : sec.map(fmt).join(', ');
    return [
      r.library + (r.extra ? ' (separate run)' : ''),
      model,
      String(sec.length || '—'),
      perEpoch,
      times,
      acc.length ? pct(acc[0]) : '—',
      acc.length ? pct(acc[acc.length - 1]) : '—',
    ];
  });
  for (const [model, ref] of Object.entries(fashion.reference?.pytorch1Thread ?? {})) {
    body.push(['PyTorch (reference, 1 thread)', model.toUpperCase(), '5', fmt(ref.secPerEpoch), '', '', pct(ref.acc5)]);
  }
  return table(['library', 'model', 'epochs', 's/epoch', 'epoch times, s', 'test acc., first epoch', 'test acc., last epoch'], body, 3);
}

/** bench/vmap.ts's rows (results.vmap): per-example gradients and Jacobians, each a ratio from its own interleaved rounds. */
function vmapTable(results) {
  const v = results.vmap;
  if (!v) return 'Not in this `bench/results.json`: run `npm run bench -- --only vmap` (or the full bench).';
  const f = (x) => (typeof x !== 'number' || Number.isNaN(x) ? '—' : fmt(x));
  const body = v.rows.map((r) => [
    r.name,
    f(r.ms),
    f(r.baseMs),
    `${f(r.ratio)}×`,
    r.target === undefined ? '' : `${r.target}: ${r.met ? 'met' : 'missed'}`,
    (r.note ?? '').replaceAll('|', '\\|'),
  ]);
  const head = `Measured ${v.date.slice(0, 10)}, load average ${v.loadavg[0]}, median process CPU ms over ${v.rounds} rounds (Jacobian and loop rows fewer); ratio = median of the per-round ratios, the two sides alternating.`;
  return `${head}\n\n${table(['workload', 'ms', 'compared with, ms', 'ratio', 'target', 'note'], body, 1)}`;
}

/** Every region's contents, by name, from the parsed results files. */
export function renderAll(results, fashion) {
  const trainRows = trainingRows(results);
  return {
    machine: machineLine(results),
    targets: targetsTable(results),
    gemm: groupTable(
      results,
      results.rows.filter((r) => r.group === 'gemm'),
      ['adjoint', 'adjoint-kernel', ...PEERS],
    ),
    op: groupTable(
      results,
      results.rows.filter((r) => r.group === 'op'),
      ['adjoint', ...PEERS],
    ),
    train: groupTable(results, trainRows, ['adjoint', ...PEERS]),
    headline: headlineTable(results),
    fashion: fashionTable(fashion),
    vmap: vmapTable(results),
  };
}

/** Replaces each `<!-- bench:NAME -->…<!-- /bench:NAME -->` region's body; throws on an unknown or unclosed one. */
export function applyRegions(text, tables, file = 'file') {
  const open = /<!-- bench:([a-z]+) -->/g;
  let out = '',
    last = 0,
    m;
  while ((m = open.exec(text)) !== null) {
    const name = m[1];
    const close = `<!-- /bench:${name} -->`;
    const end = text.indexOf(close, m.index);
    if (end < 0) throw new Error(`bench-tables: ${file}: region ${name} is not closed by ${close}`);
    if (!(name in tables)) throw new Error(`bench-tables: ${file}: unknown region ${name} (known: ${Object.keys(tables).join(', ')})`);
    out += text.slice(last, m.index + m[0].length) + '\n' + tables[name] + '\n';
    last = end;
    open.lastIndex = end + close.length;
  }
  return out + text.slice(last);
}

export function loadResults(dir = root) {
  const read = (p) => JSON.parse(readFileSync(`${dir}/${p}`, 'utf8'));
  return renderAll(read('bench/results.json'), read('bench/fashion-results.json'));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes('--check');
  const tables = loadResults();
  let stale = 0;
  for (const f of FILES) {
    const path = `${root}/${f}`;
    const before = readFileSync(path, 'utf8');
    const after = applyRegions(before, tables, f);
    if (after === before) continue;
    if (check) {
      console.error(`bench-tables: ${f} is out of date (run npm run bench:tables)`);
      stale++;
    } else {
      writeFileSync(path, after);
      console.log(`bench-tables: rewrote ${f}`);
    }
  }
  if (stale > 0) process.exit(1);
}
