// `npm run check:package` (after `npm run build`): checks the package as npm would publish it.
//   1. `npm pack`: the tarball holds only dist/, README.md, LICENSE and package.json.
//   2. publint on that tarball (exports, files, fields).
//   3. @arethetypeswrong/cli on that tarball, ESM-only profile (the package has no CommonJS entry),
//      every JS entry point (the wasm asset has no types to check).
//   4. size-limit budgets (.size-limit.js): kernels, core JS with and without the embedded kernels.
//   5. Tree-shaking: esbuild bundles a consumer of one op, minified; it must stay small and must
//      not carry the digits data, which only `data.digits()` and `adjoint/data/digits` need.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);
const bin = (name) => join(root, 'node_modules/.bin', name);
const scratch = mkdtempSync(join(tmpdir(), 'adjoint-check-package-'));
const failures = [];

/** Runs a command with inherited output; records a failure when it exits non-zero. */
function step(name, cmd, args) {
  console.log(`\n-- ${name}: ${[cmd, ...args].map((a) => a.replace(root, '')).join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root });
  if (r.status !== 0) failures.push(`${name} (exit ${r.status ?? r.signal})`);
}

for (const f of ['dist/index.js', 'dist/data/digits.js', 'dist/adjoint.wasm', 'dist/index.d.ts']) {
  if (spawnSync('test', ['-f', f]).status !== 0) {
    console.error(`check:package: ${f} is missing; run \`npm run build\` first`);
    process.exit(2);
  }
}

// ---- 1. the tarball's contents ----
console.log('-- npm pack');
const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: root, encoding: 'utf8' });
if (pack.status !== 0) {
  console.error(pack.stderr);
  process.exit(1);
}
const [info] = JSON.parse(pack.stdout);
const tarball = join(scratch, info.filename);
const allowed = (p) => p.startsWith('dist/') || ['README.md', 'LICENSE', 'package.json'].includes(p);
const stray = info.files.map((f) => f.path).filter((p) => !allowed(p));
for (const must of [
  'package.json',
  'README.md',
  'LICENSE',
  'dist/index.js',
  'dist/index.d.ts',
  'dist/adjoint.wasm',
  'dist/data/digits.js',
]) {
  if (!info.files.some((f) => f.path === must)) failures.push(`npm pack: ${must} is missing from the tarball`);
}
if (stray.length > 0) failures.push(`npm pack: files outside dist/, README.md, LICENSE: ${stray.join(', ')}`);
console.log(
  `   ${info.files.length} files, ${(info.size / 1024).toFixed(1)} KiB packed, ${(info.unpackedSize / 1024).toFixed(1)} KiB unpacked${stray.length ? `; stray: ${stray.join(', ')}` : ''}`,
);

// ---- 2, 3. publint and attw on the tarball ----
step('publint', bin('publint'), ['run', tarball, '--strict']);
// adjoint/adjoint.wasm is a binary asset, not a module with types: what its import yields depends
// on the host (workerd: a WebAssembly.Module; @rollup/plugin-wasm: a loader function).
step('attw', bin('attw'), [tarball, '--profile', 'esm-only', '--exclude-entrypoints', './adjoint.wasm', './adjoint-relaxed.wasm']);

// ---- 4. size budgets ----
step('size-limit', bin('size-limit'), []);

// ---- 5. tree-shaking ----
/** Resolves 'adjoint' and 'adjoint/…' through package.json "exports", as a consumer's bundler would. */
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const selfResolve = {
  name: 'adjoint-exports',
  setup(b) {
    b.onResolve({ filter: /^adjoint(\/.*)?$/ }, ({ path }) => {
      const target = pkg.exports[`.${path.slice('adjoint'.length)}`];
      return { path: resolve(root, typeof target === 'string' ? target : target.import) };
    });
  },
};

async function bundleSize(name, source) {
  const entry = join(scratch, `${name}.mjs`);
  writeFileSync(entry, source);
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
    external: ['node:*'],
    plugins: [selfResolve],
    logLevel: 'error',
  });
  const code = out.outputFiles.map((f) => f.text).join('\n');
  return { gzip: gzipSync(code, { level: 9 }).length, raw: code.length, digits: code.includes('H4sI') };
}

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log('\n-- tree-shaking (esbuild, minified, gzip -9)');
const oneOp = await bundleSize(
  'one-op',
  "import { init, tensor, add } from 'adjoint';\nawait init();\nconsole.log(add(tensor([1]), tensor([2])).toArray());\n",
);
const whole = await bundleSize('whole', "import * as adjoint from 'adjoint';\nconsole.log(adjoint);\n");
const digitsOnly = await bundleSize('digits', "import { DIGITS_COUNT } from 'adjoint/data/digits';\nconsole.log(DIGITS_COUNT);\n");
console.log(
  `   import { init, tensor, add }: ${kb(oneOp.gzip)} gzip (${kb(oneOp.raw)} minified), digits data ${oneOp.digits ? 'INCLUDED' : 'not included'}`,
);
console.log(
  `   import * as adjoint:          ${kb(whole.gzip)} gzip (${kb(whole.raw)} minified), digits data ${whole.digits ? 'included' : 'not included'}`,
);
console.log(`   adjoint/data/digits alone:    ${kb(digitsOnly.gzip)} gzip`);
/**
 * The one-op consumer: the embedded kernels (about 41 KiB gzipped) plus the engine core (docs/packaging.md).
 * 92 KiB until the neural ops became Tensor methods too (API.md), which every Tensor import keeps: 93.2 KiB;
 * then vmap over int32 indices, compensated float64 sums, pow's special cases and the float64 GELU tails: 96.5 KiB.
 */
const ONE_OP_BUDGET = 100 * 1024;
if (oneOp.digits) failures.push('tree-shaking: a one-op consumer carries the digits data');
if (oneOp.gzip > ONE_OP_BUDGET) failures.push(`tree-shaking: one-op consumer is ${kb(oneOp.gzip)}, budget ${kb(ONE_OP_BUDGET)}`);
if (whole.gzip - oneOp.gzip < 20 * 1024)
  failures.push(`tree-shaking: one-op consumer (${kb(oneOp.gzip)}) is not much smaller than the whole library (${kb(whole.gzip)})`);

rmSync(scratch, { recursive: true, force: true });
if (failures.length > 0) {
  console.error(`\ncheck:package: FAIL\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  process.exit(1);
}
console.log('\ncheck:package: PASS');
