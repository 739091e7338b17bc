// `npm run test:runtimes` (after `npm run build`): trains the same MLP with test/runtimes/train-digits.mjs
// on the built bundle in Node, Deno, Bun, Chromium, Firefox and workerd (and again on a 2-thread
// pool where SharedArrayBuffer exists, i.e. all but workerd), and fails unless every run reports
// the same loss sequence and the same SHA-256 of the final weights. Then checks the edge
// worker example in workerd, a rollup build of the bundler example, the GPT and DP-SGD examples, the published type
// declarations, and that init() fails clearly where WebAssembly or its SIMD is missing.
// Node, Chromium, Deno, Bun and Firefox also train with init({ relaxedSimd: true }), and workerd
// with init({ module }) given dist/adjoint-relaxed.wasm: those runs must load the relaxed
// kernels in Node, Chromium and workerd, stay close to the same runtime's default
// run (not bit-identical: fused multiply-add rounds once), give the same bits on 2 threads in
// Node, and give exactly the shared digest wherever the engine falls back to the default kernels. Options: --only=node,deno,... (names below), --keep
// (keep the scratch folder). A JSON report goes to test/artifacts/runtimes.json.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run, parseResult, startWorkerd } from './lib/proc.mjs';
import { serveStatic } from './lib/server.mjs';
import { runChromium, runFirefox, scratchEnv } from './lib/browsers.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const bin = (name) => join(ROOT, 'node_modules/.bin', name);
const argv = process.argv.slice(2);
const only = argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const keep = argv.includes('--keep');
const wanted = (name) => only === undefined || only.includes(name);

for (const f of ['dist/index.js', 'dist/adjoint.wasm']) {
  if (!existsSync(join(ROOT, f))) {
    console.error(`test:runtimes: ${f} is missing; run \`npm run build\` first`);
    process.exit(2);
  }
}

// Everything the runtimes write (profiles, caches, Deno's DENO_DIR, Bun's cache) goes here.
const scratch = mkdtempSync(join(tmpdir(), 'adjoint-runtimes-'));
const env = {
  ...scratchEnv(scratch),
  DENO_DIR: join(scratch, 'deno'),
  DENO_NO_UPDATE_CHECK: '1',
  NO_COLOR: '1',
  FORCE_COLOR: '0',
  BUN_INSTALL_CACHE_DIR: join(scratch, 'bun-cache'),
  DO_NOT_TRACK: '1',
};
const opts = { cwd: ROOT, env };

const fmtMs = (ms) => `${(ms / 1000).toFixed(1)} s`;
function log(msg) {
  process.stdout.write(`${msg}\n`);
}

/** Runs one named step, records { name, ok, ms, ...value | error }, logs a line. */
async function step(list, name, fn) {
  return steps(list, [name], async () => [await fn()]);
}

/** One step that yields several rows (a browser loads several pages): fn returns one value per name. */
async function steps(list, names, fn) {
  if (!wanted(names[0].split(' ')[0])) return;
  const t0 = Date.now();
  const label = names.join(', ');
  log(`-- ${label} ...`);
  try {
    const values = await fn();
    const ms = (Date.now() - t0) / names.length;
    names.forEach((name, i) => list.push({ name, ok: true, ms, ...values[i] }));
    log(`   ${label}: done in ${fmtMs(Date.now() - t0)}`);
  } catch (e) {
    for (const name of names) list.push({ name, ok: false, ms: Date.now() - t0, error: String(e?.message ?? e) });
    log(`   ${label}: FAILED in ${fmtMs(Date.now() - t0)}\n${String(e?.message ?? e).replace(/^/gm, '     ')}`);
  }
}

/** A command-line runtime running test/runtimes/cli.mjs on `threads` threads (`extra`: --relaxed, --weights). */
async function cliRuntime(cmd, args, threads = 1, extra = []) {
  const r = await run(cmd, [...args, 'test/runtimes/cli.mjs', `--threads=${threads}`, ...extra], opts);
  const result = parseResult(cmd, r);
  for (const line of r.stdout.split('\n')) if (line && !line.startsWith('ADJOINT_RESULT')) log(`   | ${line}`);
  return { version: result.runtime, result };
}

/** The training rows of one browser run (page.html, then page.html?threads=N). */
function browserResults(out) {
  return out.values.map((value) => {
    if (!value.ok) throw new Error(value.error);
    const { result } = value;
    log(`   | losses: ${result.losses.map((l) => l.toFixed(6)).join(' ')}`);
    log(`   | weights sha256: ${result.digest}${result.kernels === 'relaxed' ? ' (relaxed kernels)' : ''}`);
    return { version: out.version, result };
  });
}

/** An init() check: `outcome` is the init-check result; passes when init failed with an AdjointError naming `mention`. */
function expectInitError(outcome, mention) {
  if (outcome.initialised) throw new Error('init() succeeded where it should have failed');
  if (!outcome.isAdjointError) throw new Error(`init() threw ${outcome.errorName}, not an AdjointError: ${outcome.message}`);
  if (!mention.test(outcome.message)) throw new Error(`init()'s message does not say what is missing: ${outcome.message}`);
  return { detail: outcome.message };
}

const training = [];
const checks = [];
const t0 = Date.now();
log(`adjoint cross-runtime suite (scratch: ${scratch})`);

// Each runtime trains on one thread and, where SharedArrayBuffer exists, on a pool of THREADS
// (init({ threads })): the results must not depend on the thread count either.
const THREADS = 2;
const threaded = (name) => `${name} threads=${THREADS}`;
const relaxedName = (name) => `${name} relaxed`;
// Node 20 and 21 have relaxed SIMD behind a V8 flag (on by default from Node 22).
const RELAXED_PROBE = [
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0, 65, 0, 253, 15, 65, 0, 253, 15, 65, 0, 253, 15, 253,
  133, 2, 11,
];
const nodeRelaxedFlags = WebAssembly.validate(new Uint8Array(RELAXED_PROBE)) ? [] : ['--experimental-wasm-relaxed-simd'];
for (const [name, cmd, args] of [
  ['node', process.execPath, []],
  ['deno', bin('deno'), ['run', '--no-prompt']],
  ['bun', bin('bun'), []],
]) {
  await step(training, name, () => cliRuntime(cmd, args, 1, ['--weights']));
  await step(training, threaded(name), () => cliRuntime(cmd, args, THREADS));
  const rargs = name === 'node' ? [...nodeRelaxedFlags, ...args] : args;
  await step(training, relaxedName(name), () => cliRuntime(cmd, rargs, 1, ['--relaxed']));
  if (name === 'node') await step(training, threaded(relaxedName(name)), () => cliRuntime(cmd, rargs, THREADS, ['--relaxed']));
}

const needsServer = ['chromium', 'firefox', 'init-no-wasm-firefox'].some(wanted);
const server = needsServer ? await serveStatic(ROOT) : null;
const page = (query = '') => `${server.url}/test/runtimes/page.html${query}`;
try {
  // A function: with --only naming no browser there is no server to point at.
  const pages = () => [page('?weights=1'), page(`?threads=${THREADS}`), page('?relaxed=1')];
  await steps(training, ['chromium', threaded('chromium'), relaxedName('chromium')], async () =>
    browserResults(await runChromium(pages(), scratch)),
  );
  await steps(training, ['firefox', threaded('firefox'), relaxedName('firefox')], async () =>
    browserResults(await runFirefox(pages(), scratch)),
  );
  await step(checks, 'init-no-wasm-firefox', async () => {
    const out = await runFirefox([page('?check=init')], scratch, { prefs: { 'javascript.options.wasm': false } });
    const [value] = out.values;
    if (!value.ok) throw new Error(value.error);
    return { ...expectInitError(value, /WebAssembly/), version: out.version };
  });
} finally {
  await server?.close();
}

let workerdVersion = 'workerd';
if (wanted('workerd') || wanted('edge-worker')) {
  const v = await run(bin('workerd'), ['--version'], opts).catch(() => null);
  workerdVersion = v?.stdout.trim() || 'workerd (version unknown)';
}
await step(training, 'workerd', async () => {
  const wd = await startWorkerd(bin('workerd'), 'test/runtimes/workerd/config.capnp', opts);
  try {
    // Before /train (which initialises): init() without { module } must fail with a clear message.
    await step(checks, 'init-bytes-workerd', async () => {
      const res = await fetch(`${wd.url}/init-check`, { signal: AbortSignal.timeout(60_000) });
      return expectInitError(await res.json(), /adjoint\/adjoint\.wasm.*init\(\{ module: wasm \}\)/);
    });
    const res = await fetch(`${wd.url}/train`, { signal: AbortSignal.timeout(300_000) });
    const body = await res.json();
    if (!res.ok) throw new Error(`HTTP ${res.status}: ${body.error ?? JSON.stringify(body)}\n${wd.output()}`);
    log(`   | losses: ${body.losses.map((l) => l.toFixed(6)).join(' ')}`);
    log(`   | weights sha256: ${body.digest}`);
    // The relaxed kernels as a precompiled dist/adjoint-relaxed.wasm, in a service of their own.
    await step(training, relaxedName('workerd'), async () => {
      const r = await fetch(`${wd.url}/train-relaxed`, { signal: AbortSignal.timeout(300_000) });
      const relaxed = await r.json();
      if (!r.ok) throw new Error(`HTTP ${r.status}: ${relaxed.error ?? JSON.stringify(relaxed)}\n${wd.output()}`);
      log(`   | weights sha256: ${relaxed.digest} (${relaxed.kernels} kernels)`);
      return { version: workerdVersion, result: relaxed };
    });
    return { version: workerdVersion, result: body };
  } finally {
    await wd.stop();
  }
});

await step(checks, 'edge-worker', async () => {
  const { testEdgeWorker } = await import('./edge-worker.mjs');
  const wd = await startWorkerd(bin('workerd'), 'examples/edge-worker/config.capnp', opts);
  try {
    const s = await testEdgeWorker(wd.url);
    return {
      detail: `${workerdVersion}: ${s.steps} POST /train steps identical to Node, loss ${s.firstLoss.toFixed(4)} -> ${s.lastLoss.toFixed(4)}; POST /predict identical, accuracy on 64 test digits ${(100 * s.accuracy).toFixed(1)}%; POST /generate identical to Node (${s.generate.tokens} characters)`,
    };
  } catch (e) {
    e.message += `\n${wd.output()}`;
    throw e;
  } finally {
    await wd.stop();
  }
});

await step(checks, 'bundler-app', async () => {
  const { testBundlerApp } = await import('./bundler-app.mjs');
  const r = await testBundlerApp(ROOT, scratch, env);
  return { detail: `rollup bundle ${(r.bytes / 1024).toFixed(0)} KiB; ${r.line}` };
});

await step(checks, 'cli', async () => {
  if (!existsSync(join(ROOT, 'dist/cli.js'))) throw new Error('dist/cli.js is missing (is src/cli/main.ts there?)');
  // Executed directly: checks the shebang and the executable bit that package.json "bin" relies on.
  const r = await run(join(ROOT, 'dist/cli.js'), ['train', '--epochs', '1'], { ...opts, timeoutMs: 120_000 });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  if (r.code !== 0 || !/^test accuracy: \d+\.\d\d%$/.test(last))
    throw new Error(`dist/cli.js train failed (exit ${r.code}):\n${(r.stdout + r.stderr).trim().split('\n').slice(-10).join('\n')}`);
  return { detail: `dist/cli.js train --epochs 1 -> ${last}` };
});

// The examples a user copies: the GPT of public parts (on the built bundle) and DP-SGD written out.
await step(checks, 'example-gpt', async () => {
  const r = await run(process.execPath, ['examples/gpt/train.mjs', '50'], { ...opts, timeoutMs: 180_000 });
  const loss = /^step 50\/50 {2}loss (\d+\.\d{4})$/m.exec(r.stdout);
  if (r.code !== 0 || loss === null || !(Number(loss[1]) < 3.3) || !/^ROMEO:\n./m.test(r.stdout))
    throw new Error(`examples/gpt/train.mjs 50 failed (exit ${r.code}):\n${(r.stdout + r.stderr).trim().split('\n').slice(-8).join('\n')}`);
  return { detail: `examples/gpt/train.mjs 50 -> loss ${loss[1]} (from ln 65 = 4.17), a sample after "ROMEO:"` };
});
await step(checks, 'example-dp-sgd', async () => {
  const r = await run(process.execPath, ['scripts/run-ts.mjs', 'examples/dp-sgd/train.ts', '1', '1'], { ...opts, timeoutMs: 120_000 });
  const acc = [...r.stdout.matchAll(/test accuracy +(\d+\.\d\d)%/g)].map((m) => Number(m[1]));
  if (r.code !== 0 || acc.length !== 2 || !(acc[0] > 90 && acc[1] > 85 && acc[1] < acc[0]))
    throw new Error(`examples/dp-sgd/train.ts failed (exit ${r.code}):\n${(r.stdout + r.stderr).trim().split('\n').slice(-8).join('\n')}`);
  return { detail: `examples/dp-sgd/train.ts 1 1 -> test accuracy ${acc[0]}% without privacy, ${acc[1]}% with` };
});

await step(checks, 'types', async () => {
  const { testTypes } = await import('./types.mjs');
  return testTypes(ROOT, scratch, env);
});

await step(checks, 'init-no-wasm-node', async () =>
  expectInitError(
    parseResult('node --jitless', await run(process.execPath, ['--jitless', 'test/runtimes/init-check.mjs'], opts)),
    /WebAssembly/,
  ),
);
await step(checks, 'init-no-simd-node', async () =>
  expectInitError(
    parseResult(
      'node (no SIMD)',
      await run(process.execPath, ['--import', './test/runtimes/lib/no-simd.mjs', 'test/runtimes/init-check.mjs'], opts),
    ),
    /SIMD/,
  ),
);

// ---- compare and summarise ----
// The relaxed-SIMD runs are checked on their own (compareRelaxed), not bit for bit with the rest.
const relaxedRuns = training.filter((t) => / relaxed/.test(t.name));
training.splice(0, training.length, ...training.filter((t) => !relaxedRuns.includes(t)));
const done = training.filter((t) => t.ok);
const ref = done[0]?.result;
const problems = [];
for (const t of training) {
  if (!t.ok) continue;
  const r = t.result;
  const diffs = [];
  if (r.digest !== ref.digest) diffs.push('weights digest');
  if (JSON.stringify(r.losses) !== JSON.stringify(ref.losses)) {
    const i = r.losses.findIndex((l, k) => l !== ref.losses[k]);
    diffs.push(`losses (first difference at step ${i + 1}: ${r.losses[i]} vs ${ref.losses[i]})`);
  }
  if (r.data !== ref.data || r.optimizer !== ref.optimizer || r.steps !== ref.steps) diffs.push('workload');
  if (JSON.stringify(r.gpt) !== JSON.stringify(ref.gpt))
    diffs.push(`GPT train+sample (${JSON.stringify(r.gpt)} vs ${JSON.stringify(ref.gpt)})`);
  if (r.liveTensors !== 0) diffs.push(`${r.liveTensors} tensors leaked`);
  t.match = diffs.length === 0;
  if (!t.match) problems.push(`${t.name}: differs from ${done[0].name} in ${diffs.join(', ')}`);
}
for (const t of [...training, ...relaxedRuns, ...checks]) if (!t.ok) problems.push(`${t.name}: ${t.error.split('\n')[0]}`);
const { compareRelaxed, RELAXED_REQUIRED } = await import('./relaxed.mjs');
for (const t of relaxedRuns) {
  if (!t.ok) continue;
  const runtime = t.name.split(' ')[0];
  const problem = compareRelaxed(t, {
    shared: ref,
    own: training.find((d) => d.ok && d.name === runtime)?.result,
    one: relaxedRuns.find((r) => r.ok && r.name === relaxedName(runtime))?.result,
    required: RELAXED_REQUIRED.includes(runtime),
  });
  if (problem !== null) problems.push(`${t.name}: ${problem}`);
}
const expected = ['node', 'deno', 'bun', 'chromium', 'firefox', 'workerd']
  .filter(wanted)
  .flatMap((n) => (n === 'workerd' ? [n] : [n, threaded(n)]));

const pad = (s, n) => String(s).padEnd(n);
log('\n==================== adjoint runtimes summary ====================');
if (ref) log(`workload: ${ref.steps} steps, data=${ref.data}, ${ref.optimizer}, ${ref.weightBytes} weight bytes`);
log(`${pad('runtime', 20)}${pad('version', 26)}${pad('time', 9)}${pad('weights sha256', 20)}losses`);
for (const t of training) {
  const v = t.ok ? t.version : '-';
  const d = t.ok ? `${t.result.digest.slice(0, 16)}…` : 'FAILED';
  const l = t.ok ? (t.match ? 'same' : 'DIFFERENT') : '-';
  log(`${pad(t.name, 20)}${pad(v, 26)}${pad(fmtMs(t.ms), 9)}${pad(d, 20)}${l}`);
}
if (ref) log(`shared digest: ${ref.digest}\nlosses sha256: ${ref.lossDigest}`);
if (ref?.gpt)
  log(`GPT (3 steps + 40 sampled characters): weights ${ref.gpt.digest.slice(0, 16)}…, sample ${JSON.stringify(ref.gpt.sample)}`);
if (relaxedRuns.length > 0) {
  log(`relaxed SIMD (init({ relaxedSimd: true }); closeness to the same runtime's default run, max over steps and weights):`);
  log(
    `  ${pad('run', 26)}${pad('kernels', 9)}${pad('weights sha256', 20)}${pad('loss rel. diff', 16)}${pad('weight diff/max|w|', 20)}verdict`,
  );
  for (const t of relaxedRuns) {
    const r = t.result,
      c = t.closeness;
    const cells = t.ok
      ? [r.kernels, `${r.digest.slice(0, 16)}…`, c?.loss?.toExponential(1) ?? '-', c?.weights?.toExponential(1) ?? '-', c?.verdict ?? '-']
      : ['-', 'FAILED', '-', '-', '-'];
    log(`  ${pad(t.name, 26)}${pad(cells[0], 9)}${pad(cells[1], 20)}${pad(cells[2], 16)}${pad(cells[3], 20)}${cells[4]}`);
  }
}
log('checks:');
for (const c of checks) log(`  ${pad(c.name, 22)}${c.ok ? 'ok    ' : 'FAILED'}${c.ok ? c.detail : c.error.split('\n')[0]}`);
const agree = training.filter((t) => t.ok && t.match).length;
const pass = problems.length === 0 && agree === expected.length && training.length + checks.length > 0;
log(`total time ${fmtMs(Date.now() - t0)}`);
for (const p of problems) log(`problem: ${p}`);
const runtimes = new Set(training.filter((t) => t.ok && t.match).map((t) => t.name.split(' ')[0])).size;
const relaxedOk = relaxedRuns.filter((t) => t.ok && !problems.some((p) => p.startsWith(`${t.name}:`))).length;
log(
  `RESULT: ${pass ? 'PASS' : 'FAIL'} — ${runtimes} runtimes, ${agree}/${expected.length} runs agree bit for bit; ${relaxedOk}/${relaxedRuns.length} relaxed-SIMD runs pass; ${checks.filter((c) => c.ok).length}/${checks.length} checks passed`,
);

mkdirSync(join(ROOT, 'test/artifacts'), { recursive: true });
// The weights (thousands of numbers per run) served the closeness check; the report keeps their digest.
for (const t of [...training, ...relaxedRuns]) if (t.result) delete t.result.weights;
writeFileSync(
  join(ROOT, 'test/artifacts/runtimes.json'),
  `${JSON.stringify({ pass, training, relaxed: relaxedRuns, checks, problems }, null, 2)}\n`,
);
if (!keep) rmSync(scratch, { recursive: true, force: true });
process.exitCode = pass ? 0 : 1;
