// Threads benchmark (issue 8): GEMM n×n×n (f32) for n = 256, 512, 1024 and one training step of
// the MLP 784-256-256-10 (batch 128), for adjoint and TF.js's wasm backend (XNNPACK) at 1 and 2
// threads, in one run (workloads in bench/threads-core.ts).
//   npm run asbuild && node scripts/run-ts.mjs bench/threads.ts [--threads 1,2] [--node] [--browser] [--json]
// --node (default): each (library, thread count) runs in a Node child process of its own, since
//   adjoint's init() and TF.js's setThreadsCount() are fixed once per process. TF.js's threaded
//   wasm build is browser-only and capped at half the cores; tfNodeThreads() below lifts both.
// --browser: the same in headless Chromium on a cross-origin isolated page (a fresh browser per
//   configuration; TF.js sees hardwareConcurrency = 2·threads); needs /usr/bin/chromium.
// bench/threads-step.ts compares adjoint's MLP step on 1 and 2 threads within one process
// (eager and compile()d, in alternating rounds), which is steadier on a shared machine.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SIZES, benchAdjoint, benchTf, type Lib, type Result, type Time } from './threads-core.js';
import { secondCore } from './capacity.js';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const LIBS: Lib[] = ['adjoint', 'tfjs-wasm'];
const version = (pkg: string): string => (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
const CHROMIUM = '/usr/bin/chromium';
const tfDist = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist');

async function nodeChild(lib: Lib, threads: number): Promise<Result> {
  const where = `node ${process.versions.node}`;
  if (lib === 'adjoint') {
    const A = await import('../src/index.js');
    const { threadCount } = await import('../src/testing.js');
    await A.init(threads === 1 ? {} : { threads });
    return { lib, threads: threadCount(), version: version('package.json'), where, ...benchAdjoint(A) };
  }
  /* eslint-disable @typescript-eslint/no-explicit-any */
  if (threads > 1) await tfNodeThreads(threads);
  const tf: any = await import('@tensorflow/tfjs');
  const wasm: any = await import('@tensorflow/tfjs-backend-wasm');
  if (threads > 1) tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', true); // tfjs turns it off under Node
  wasm.setThreadsCount(threads); // before the backend initialises
  wasm.setWasmPaths(tfDist + path.sep);
  if (!(await tf.setBackend('wasm'))) throw new Error('setBackend("wasm") returned false');
  await tf.ready();
  return { lib, threads: wasm.getThreadsCount(), version: version(path.join(tfDist, '..', 'package.json')), where, ...benchTf(tf) };
}

/**
 * Bench-only shim so TF.js's threaded wasm build runs in Node (tfjs#3830 keeps it browser-only):
 * its Emscripten pthread workers are started from Blob URLs, which Node's Worker does not take, so
 * string Blobs become temp files; the workers load the Emscripten glue from wasm-out/ instead of a
 * Blob of a bundled factory; and the core count it caps threads at (half the logical cores, so one
 * thread on a 2-core machine) is raised to 2·threads.
 */
async function tfNodeThreads(threads: number): Promise<void> {
  const { Worker } = await import('node:worker_threads');
  const os = (await import('node:os')).default;
  const dir = mkdtempSync(path.join(tmpdir(), 'tfjs-wasm-'));
  const texts = new WeakMap<Blob, string>();
  const NodeBlob = globalThis.Blob;
  globalThis.Blob = class extends NodeBlob {
    constructor(parts?: BlobPart[], opts?: BlobPropertyBag) {
      super(parts, opts);
      if (parts?.every((p) => typeof p === 'string')) texts.set(this, parts.join(''));
    }
  };
  let files = 0;
  const createObjectURL = URL.createObjectURL;
  URL.createObjectURL = (b: Blob) => {
    const text = texts.get(b);
    if (text === undefined) return createObjectURL(b);
    const f = path.join(dir, `blob${files++}.js`);
    writeFileSync(f, text);
    return f;
  };
  const glue = path.join(tfDist, '..', 'wasm-out', 'tfjs-backend-wasm-threaded-simd.js');
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: InstanceType<typeof Worker>, m: any, ...rest: any[]) {
    return post.call(this, m?.urlOrBlob instanceof NodeBlob ? { ...m, urlOrBlob: glue } : m, ...rest);
  };
  const cpus = os.cpus;
  os.cpus = () => Array.from({ length: 2 * threads }, (_, i) => cpus()[i % cpus().length]);
}

function runNode(counts: number[]): Result[] {
  const out: Result[] = [];
  for (const lib of LIBS) {
    for (const t of counts) {
      const p = spawnSync(process.execPath, [process.argv[1], '--child', lib, String(t)], { encoding: 'utf8', timeout: 600_000 });
      const line = p.stdout.split('\n').find((l) => l.startsWith('RESULT '));
      if (line === undefined) console.error(`node ${lib} ×${t}: failed (${p.status})\n${p.stderr.slice(-2000)}`);
      else out.push(JSON.parse(line.slice(7)) as Result);
    }
  }
  return out;
}

/** A static server for `files` (url path → file) with the COOP/COEP headers of a cross-origin isolated page. */
async function serve(files: (p: string) => string | null): Promise<{ url: string; close: () => Promise<void> }> {
  const { createServer } = await import('node:http');
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm' };
  const server = createServer((req, res) => {
    const file = files(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    if (process.env.BENCH_LOGS) console.error('GET', req.url);
    let body: Buffer | null = null;
    try {
      body = file === null ? null : readFileSync(file);
    } catch {
      /* 404 below */
    }
    if (body === null) {
      if (process.env.BENCH_LOGS) console.error('404', req.url);
      return void res.writeHead(404).end();
    }
    res.writeHead(200, {
      'content-type': types[path.extname(file!)] ?? 'application/octet-stream',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-embedder-policy': 'require-corp',
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

async function runBrowser(counts: number[]): Promise<Result[]> {
  const { build } = await import('esbuild');
  const { chromium } = await import('playwright-core');
  const dir = mkdtempSync(path.join(tmpdir(), 'adjoint-threads-bench-'));
  await build({
    entryPoints: ['bench/threads-page.ts'],
    outfile: path.join(dir, 'page.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    external: ['node:*'],
    logLevel: 'error',
  });
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>\n');
  const server = await serve((p) =>
    p.startsWith('/tfjs/') ? path.join(tfDist, path.basename(p)) : ['/index.html', '/page.js'].includes(p) ? path.join(dir, p) : null,
  );
  const out: Result[] = [];
  try {
    for (const lib of LIBS) {
      for (const t of counts) {
        // A fresh browser per configuration: nothing left running from the previous one.
        const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
        const logs: string[] = [];
        try {
          const page = await browser.newPage();
          // TF.js's wasm backend runs at most hardwareConcurrency/2 threads whatever it is asked.
          if (lib === 'tfjs-wasm')
            await page.addInitScript(`Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => ${2 * t} })`);
          page.on('console', (m) => logs.push(`[${m.type()}] ${m.text()}`));
          page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
          await page.goto(`${server.url}/index.html?lib=${lib}&threads=${t}&wasm=${encodeURIComponent(`${server.url}/tfjs/`)}`);
          const value = (await page
            .waitForFunction(() => (window as unknown as { __adjoint?: unknown }).__adjoint, null, { timeout: 600_000, polling: 250 })
            .then((h) => h.jsonValue())) as Result & { error?: string };
          if (value.error !== undefined) throw new Error(value.error);
          out.push({
            ...value,
            where: `chromium ${browser.version()}, ${value.where.replace(/^.*?, /, '')}`,
            version: value.version || version('package.json'),
          });
        } catch (e) {
          console.error(`browser ${lib} ×${t}: failed: ${(e as Error).message.slice(0, 2000)}`);
        } finally {
          if (process.env.BENCH_LOGS) console.error(logs.join('\n'));
          await browser.close();
        }
      }
    }
  } finally {
    await server.close();
  }
  return out;
}

/** Median and best sample: on a shared machine the best is the steadier figure of what the code can do. */
function report(title: string, results: Result[]): void {
  if (results.length === 0) return;
  const head = results.map((r) => `${r.lib} ×${r.threads}`);
  const pad = (s: string, n = 19) => s.padStart(n);
  const libs = [...new Set(results.map((r) => `${r.lib} ${r.version}`))].join(', ');
  const gf = (n: number, s: number) => ((2 * n ** 3) / s / 1e9).toFixed(1);
  console.log(`\n${title} (${results[0].where}; ${libs}); median / best`);
  console.log('GEMM f32, GFLOP/s'.padEnd(30) + head.map((h) => pad(h)).join(''));
  for (const n of SIZES)
    console.log(`  ${n}³`.padEnd(30) + results.map((r) => pad(`${gf(n, r.gemm[n].median)} / ${gf(n, r.gemm[n].min)}`)).join(''));
  console.log(
    'MLP step (784-256-256-10), ms'.padEnd(30) +
      results.map((r) => pad(`${(r.mlp.median * 1e3).toFixed(2)} / ${(r.mlp.min * 1e3).toFixed(2)}`)).join(''),
  );
  for (const lib of LIBS) {
    const one = results.find((r) => r.lib === lib && r.threads === 1),
      two = results.find((r) => r.lib === lib && r.threads === 2);
    if (one && two) {
      const x = (a: Time, b: Time) => `${(a.median / b.median).toFixed(2)}× / ${(a.min / b.min).toFixed(2)}×`;
      console.log(
        `  ${lib}, 2 threads vs 1: GEMM ${SIZES.map((n) => `${n}³ ${x(one.gemm[n], two.gemm[n])}`).join(', ')}; MLP step ${x(one.mlp, two.mlp)}`,
      );
    }
  }
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') {
  const r = await nodeChild(argv[1] as Lib, Number(argv[2]));
  console.log('RESULT ' + JSON.stringify(r));
  process.exit(0);
} else {
  const ti = argv.indexOf('--threads');
  const counts = (ti >= 0 ? argv[ti + 1] : '1,2').split(',').map(Number);
  const browser = argv.includes('--browser'),
    node = argv.includes('--node') || !browser;
  const results: Record<string, Result[]> = {};
  const load = (await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  console.log(
    `machine check: two threads of plain JS get ${(await secondCore(1e8)).toFixed(2)}× the work of one done (2.00 = two idle cores); load average ${load}`,
  );
  if (node) report('Node', (results.node = runNode(counts)));
  if (browser) report('Chromium', (results.browser = await runBrowser(counts)));
  if (argv.includes('--json')) console.log(JSON.stringify(results, null, 1));
}
