// `npm run demo`: builds the browser demo (demo/rollup.config.mjs → build/demo/) and serves it on
// localhost, printing the URL. It sends COOP/COEP, so the pages are cross-origin isolated and
// their workers may use SharedArrayBuffer (threads). Options: --port N (default 8080, or $PORT; the next free port is
// taken when it is busy), --host H (default 127.0.0.1), --no-build (serve what is there).
// test/demo/run.mjs imports buildDemo() and serveDemo() from here.
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEMO_DIR = join(ROOT, 'build/demo');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  // Served as is (no Content-Encoding): the page gunzips it.
  '.gz': 'application/gzip',
};

/** Runs the demo's rollup config; throws with rollup's message when the build fails. */
export async function buildDemo({ quiet = false } = {}) {
  const generated = join(ROOT, 'src/wasm/bytes.generated.ts');
  if (!existsSync(generated)) throw new Error('src/wasm/bytes.generated.ts is missing: run `npm run asbuild` first (npm run demo does)');
  const { rollup } = await import('rollup');
  const configs = (await import(pathToFileURL(join(ROOT, 'demo/rollup.config.mjs')).href)).default;
  const t0 = Date.now();
  const cwd = process.cwd();
  process.chdir(ROOT); // the config's paths are relative to the repository
  try {
    for (const { output, ...input } of configs) {
      const bundle = await rollup(input);
      try {
        await bundle.write(output);
      } finally {
        await bundle.close();
      }
    }
  } finally {
    process.chdir(cwd);
  }
  if (!quiet) console.log(`built build/demo/ in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** A static server for build/demo on host:port (0: any free port); resolves to { url, close }. */
export async function serveDemo({ port = 8080, host = '127.0.0.1', tries = 20 } = {}) {
  const server = createServer(async (req, res) => {
    try {
      const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      const file = normalize(join(DEMO_DIR, path.endsWith('/') ? `${path}index.html` : path));
      if (!file.startsWith(DEMO_DIR + sep) || !(await stat(file).catch(() => null))?.isFile()) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, {
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        // Always the latest build while iterating on the demo.
        'cache-control': 'no-store',
        // Cross-origin isolation: SharedArrayBuffer, so the training workers can use threads.
        'cross-origin-opener-policy': 'same-origin',
        'cross-origin-embedder-policy': 'require-corp',
      });
      res.end(req.method === 'HEAD' ? undefined : await readFile(file));
    } catch (e) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e));
    }
  });
  for (let attempt = 0; ; attempt++) {
    try {
      await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port === 0 ? 0 : port + attempt, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      break;
    } catch (e) {
      if (e.code !== 'EADDRINUSE' || port === 0 || attempt + 1 >= tries) throw e;
    }
  }
  const { port: bound } = server.address();
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/`, close: () => new Promise((r) => server.close(r)) };
}

async function main() {
  const argv = process.argv.slice(2);
  const value = (flag) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const port = Number(value('--port') ?? process.env.PORT ?? 8080);
  const host = value('--host') ?? '127.0.0.1';
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve-demo: --port must be 0..65535, got ${value('--port') ?? process.env.PORT}`);
    process.exit(2);
  }
  if (!argv.includes('--no-build')) await buildDemo();
  const { url } = await serveDemo({ port, host });
  console.log(`adjoint demo: ${url}  (Ctrl-C to stop)`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((e) => {
    console.error(`serve-demo: ${e.message ?? e}`);
    process.exit(1);
  });
}
