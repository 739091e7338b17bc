// The demo's build (`npm run demo` runs it through scripts/serve-demo.mjs; `rollup -c
// demo/rollup.config.mjs` works too): two ES-module bundles in build/demo/, built from the
// sources in src/ directly, plus the page and its stylesheet.
//   main.js    the page (controls, plot, drawing pad); imports nothing from the library.
//   worker.js  the module Web Worker that trains: the whole library, kernels and digits inlined
//              as base64 as in dist/index.js, so no wasm plugin or extra request is needed.
import { readFileSync } from 'node:fs';
import esbuild from 'rollup-plugin-esbuild';
import { bundleFflate } from '../scripts/rollup-fflate.mjs';

const out = 'build/demo';
const target = 'es2022';

/** Copies the static files of the page next to the bundles. */
function page() {
  return {
    name: 'adjoint-demo-page',
    buildStart() {
      for (const f of ['demo/index.html', 'demo/style.css']) this.addWatchFile(f);
    },
    generateBundle() {
      for (const f of ['index.html', 'style.css']) this.emitFile({ type: 'asset', fileName: f, source: readFileSync(`demo/${f}`) });
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
    plugins: [...plugins(), page()],
    output: { file: `${out}/main.js`, format: 'esm' },
  },
  {
    input: 'demo/src/worker.ts',
    // Imported lazily on Node-only paths (data.fashionMnist, thread count) that the demo never takes.
    external: (id) => id.startsWith('node:'),
    onwarn,
    plugins: plugins(),
    output: { file: `${out}/worker.js`, format: 'esm' },
  },
];
