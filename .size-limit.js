// Size budgets, checked by `npm run check:package` (after `npm run build`). Sizes are
// minified (esbuild, like a consumer's bundler) and gzipped.
import { readFileSync } from 'node:fs';

/** Empties the embedded kernels (the base64 string constants) of dist/index.js. */
const withoutKernels = {
  name: 'dist/index.js without the kernels',
  setup(build) {
    build.onLoad({ filter: /dist[\\/]index\.js$/ }, ({ path }) => ({
      contents: readFileSync(path, 'utf8').replace(/\b((?:WASM_DEFLATE|RELAXED_DELTA)_BASE64 = )(["'`])[A-Za-z0-9+/=]*\2/g, "$1''"),
      loader: 'js',
    }));
  },
};
/** The digits data is its own module (dist/data/digits.js): a core measurement leaves it out. */
const withoutDigits = (config) => ({ ...config, external: [...(config.external ?? []), './data/digits.js', 'node:*'] });

// Budgets at the measured sizes with ~5 % headroom, so CI catches growth: kernels 43.8 kB
// (shrinkLevel 1; the LSTM/GRU cells shared by the cell and sequence kernels), the whole bundle
// 144.6 kB (kernels embedded DEFLATE-compressed), its JS without kernels 95.4 kB, one op 90.0 kB
// (since then: the two-thread GPT schedule and memory plan, JS 98.2 kB, bundle 147.4, one op 90.4;
// then cuts by the threads' measured speeds, src/wasm/balance.ts: JS 99.2 kB, bundle 148.4, one
// op 91.2, and the JS budget moved from 100 to 104 KB to keep its ~5 %; then the neural ops as
// Tensor methods, as API.md asks, which a Tensor import cannot shake off: one op 95.75 kB, its
// budget moved from 94.5 to 100 KB; then the next session's correctness work — vmap over int32
// indices (the take primitive), compensated float64 sums, pow's C99 special cases and the
// tail-accurate float64 GELU, compile's retrace guards — kernels 46.3 kB, bundle 154.8, JS
// 103.8, one op 99.1: the budgets moved to 48.5, 160, 108 and 103 KB).
// The 30 kB / 60 kB goals predate this round's kernels and features and are not met;
// docs/packaging.md says what the remaining bytes are (node scripts/wasm-sizes.mjs, node scripts/js-sizes.mjs).
export default [
  {
    name: 'kernels: dist/adjoint.wasm',
    path: 'dist/adjoint.wasm',
    // Measured as the file itself: esbuild copies it unchanged.
    modifyEsbuildConfig: (config) => ({ ...config, loader: { ...config.loader, '.wasm': 'copy' } }),
    gzip: true,
    limit: '48.5 KB',
  },
  {
    // The kernels ride along compressed, as base64 (src/wasm/bytes.generated.ts, about 41 kB of it gzipped),
    // so the whole file cannot fit 60 KB; the 60 KB budget is on the JS without them (below).
    name: 'core JS without the digits data (dist/index.js, kernels embedded)',
    path: 'dist/index.js',
    import: '*',
    gzip: true,
    modifyEsbuildConfig: withoutDigits,
    limit: '160 KB',
  },
  {
    // What users download, the shipped bundle, with the kernels' base64 (WASM_DEFLATE_BASE64 and the
    // relaxed-SIMD delta) emptied: the JS alone.
    name: 'core JS without the digits data and without the embedded kernels (dist/index.js)',
    path: 'dist/index.js',
    import: '*',
    gzip: true,
    modifyEsbuildConfig: (config) => ({
      ...withoutDigits(config),
      plugins: [...(config.plugins ?? []), withoutKernels],
    }),
    limit: '108 KB',
  },
  {
    name: 'one op: import { init, tensor, add } (embedded kernels included)',
    path: 'dist/index.js',
    import: '{ init, tensor, add }',
    gzip: true,
    modifyEsbuildConfig: withoutDigits,
    limit: '103 KB',
  },
];
