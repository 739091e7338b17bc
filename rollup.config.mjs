// `npm run build` (after `npm run asbuild`): the published files in dist/.
//   dist/index.js     the library as one ESM file, the kernels inlined compressed, as base64 (src/wasm/bytes.generated.ts)
//                     and fflate bundled in, so it runs with no configuration in Node, Deno, Bun,
//                     browsers and bundlers.
//   dist/data/digits.js the embedded digits (about 60 KB of base64), its own module so bundles
//                     that never call data.digits() drop it; also the subpath `adjoint/data/digits`.
//   dist/adjoint.wasm the same kernels as a file, for runtimes that forbid compiling wasm from bytes
//                     (workerd / Cloudflare Workers: `import wasm from 'adjoint/adjoint.wasm'`).
//                     index.js also carries the relaxed-SIMD kernels, as a delta of under 1 KB against those.
//   dist/adjoint-relaxed.wasm  the relaxed-SIMD kernels as a file (workerd, own loaders).
//   dist/cli.js       the `adjoint` command (only when src/cli/main.ts exists), self-contained.
// Both carry the worker programs of the thread pool minified (scripts/rollup-worker-source.mjs).
// Type declarations are written by scripts/build-types.mjs.
//
// No wasm plugin is needed: the bundle carries the bytes as a string, and @rollup/plugin-wasm's
// emitted-file mode produces code that breaks in ESM output. dist/adjoint.wasm is copied as is.
import { chmodSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import esbuild from 'rollup-plugin-esbuild';
import { bundleFflate } from './scripts/rollup-fflate.mjs';
import { minifyWorkerSource } from './scripts/rollup-worker-source.mjs';

const target = 'es2022';

// Inside src/ops the public op functions, the Tensor methods and the rule families (VJP rules are
// written with ops) import each other by design, as JAX's lax does; ESM handles it. Any other
// cycle is printed (and `npm run lint:deps`, in `npm test`, fails on it).
const opsOnly = (ids) => ids.every((id) => /[\\/]src[\\/]ops[\\/]/.test(id));
const onwarn = (warning, warn) => (warning.code === 'CIRCULAR_DEPENDENCY' && opsOnly(warning.ids ?? []) ? undefined : warn(warning));
const wasmFile = 'build/adjoint.wasm';
const relaxedWasmFile = 'build/adjoint-relaxed.wasm';
const generated = 'src/wasm/bytes.generated.ts';

/** Stops the build early with a useful message when `npm run asbuild` has not run. */
function requireKernels() {
  return {
    name: 'adjoint-require-kernels',
    buildStart() {
      for (const f of [wasmFile, relaxedWasmFile, generated]) {
        if (!existsSync(f)) this.error(`${f} is missing: run \`npm run asbuild\` first (npm run build does)`);
      }
    },
  };
}

/** Ships the kernels next to the bundle as dist/adjoint.wasm and dist/adjoint-relaxed.wasm. */
function emitWasm() {
  return {
    name: 'adjoint-emit-wasm',
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: 'adjoint.wasm', source: readFileSync(wasmFile) });
      this.emitFile({ type: 'asset', fileName: 'adjoint-relaxed.wasm', source: readFileSync(relaxedWasmFile) });
    },
  };
}

/** Gives the CLI exactly one `#!/usr/bin/env node` line and makes it executable. */
function executable() {
  return {
    name: 'adjoint-executable',
    transform(code, id) {
      return id.endsWith('src/cli/main.ts') && code.startsWith('#!') ? code.replace(/^#![^\n]*/, '') : null;
    },
    banner: '#!/usr/bin/env node',
    writeBundle(options, bundle) {
      for (const name of Object.keys(bundle)) if (name.endsWith('.js')) chmodSync(`${options.dir ?? 'dist'}/${name}`, 0o755);
    },
  };
}

const library = {
  input: { index: 'src/index.ts', 'data/digits': 'src/data/digits-data.ts' },
  // data.fashionMnist() reads files with a dynamic import('node:fs/promises') (Node, Deno, Bun).
  external: (id) => id.startsWith('node:'),
  onwarn,
  plugins: [requireKernels(), bundleFflate(), minifyWorkerSource(), esbuild({ target, tsconfig: 'tsconfig.build.json' }), emitWasm()],
  // No source map: the bundle is unminified ES2022 that reads like the sources, and a map would
  // mostly repeat the inlined kernels and digits.
  output: { dir: 'dist', format: 'esm', entryFileNames: '[name].js', sourcemap: false },
};

// Start from an empty dist/ so no stale file is ever published.
rmSync('dist', { recursive: true, force: true });

const configs = [library];

if (existsSync('src/cli/main.ts')) {
  const nodeBuiltins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  configs.push({
    input: 'src/cli/main.ts',
    external: (id) => nodeBuiltins.has(id) || id.startsWith('node:'),
    onwarn,
    plugins: [executable(), requireKernels(), bundleFflate(), minifyWorkerSource(), esbuild({ target, tsconfig: 'tsconfig.build.json' })],
    output: { dir: 'dist', format: 'esm', entryFileNames: 'cli.js', sourcemap: false },
  });
}

export default configs;
