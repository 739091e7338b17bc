// The demo's build (`npm run demo` runs it through scripts/serve-demo.mjs; `rollup -c
// demo/rollup.config.mjs` works too): ES-module bundles in build/demo/, built from the sources in
// src/ directly, plus the two pages, their stylesheet and the Shakespeare text.
//   main.js         the digits page (controls, plot, drawing pad); imports nothing from the library.
//   worker.js       its module Web Worker that trains: the whole library, kernels and digits
//                   inlined as base64 as in dist/index.js, so no wasm plugin or extra request.
//   shakespeare.js  the Shakespeare page (shakespeare.html); imports nothing from the library.
//   gpt-worker.js   its worker: the library and the CLI's GPT run; it fetches
//                   tinyshakespeare.txt.gz, copied here from data/ (never into the library bundle).
import { readFileSync } from 'node:fs';
import esbuild from 'rollup-plugin-esbuild';
import { bundleFflate } from '../scripts/rollup-fflate.mjs';

const out = 'build/demo';
const target = 'es2022';

/** Copies static files (build/demo name → repository path) next to the bundles. */
function copy(files) {
  return {
    name: 'adjoint-demo-copy',
    buildStart() {
      for (const f of Object.values(files)) this.addWatchFile(f);
    },
    generateBundle() {
      for (const [name, f] of Object.entries(files)) this.emitFile({ type: 'asset', fileName: name, source: readFileSync(f) });
    },
  };
}

// The op modules import each other by design (see rollup.config.mjs); ESM handles it.
const onwarn = (warning, warn) => warning.code !== 'CIRCULAR_DEPENDENCY' && warn(warning);
// keepNames: the page shows layer class names (constructor.name), and error names stay readable.
const plugins = () => [bundleFflate(), esbuild({ target, minify: true, keepNames: true, tsconfig: 'demo/tsconfig.json' })];

export default [
  {
    input: 'demo/src/main.ts',
    onwarn,
    plugins: [...plugins(), copy({ 'index.html': 'demo/index.html', 'style.css': 'demo/style.css' })],
    output: { file: `${out}/main.js`, format: 'esm' },
  },
  {
    input: 'demo/src/gpt-main.ts',
    onwarn,
    plugins: [...plugins(), copy({ 'shakespeare.html': 'demo/shakespeare.html', 'tinyshakespeare.txt.gz': 'data/tinyshakespeare.txt.gz' })],
    output: { file: `${out}/shakespeare.js`, format: 'esm' },
  },
  {
    input: 'demo/src/worker.ts',
    // Imported lazily on Node-only paths (data.fashionMnist, thread count) that the demo never takes.
    external: (id) => id.startsWith('node:'),
    onwarn,
    plugins: plugins(),
    output: { file: `${out}/worker.js`, format: 'esm' },
  },
  {
    input: 'demo/src/gpt-worker.ts',
    external: (id) => id.startsWith('node:'),
    onwarn,
    plugins: plugins(),
    output: { file: `${out}/gpt-worker.js`, format: 'esm' },
  },
];
