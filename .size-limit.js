// Size budgets, checked by `npm run check:package` (after `npm run build`). Sizes are
// minified (esbuild, like a consumer's bundler) and gzipped.
const stub = (filter, contents) => ({
  name: `stub ${filter}`,
  setup(build) {
    build.onLoad({ filter }, () => ({ contents, loader: 'ts' }));
  },
});
/** The digits data is its own module (dist/data/digits.js): a core measurement leaves it out. */
const withoutDigits = (config) => ({ ...config, external: [...(config.external ?? []), './data/digits.js', 'node:*'] });

// Budgets as measured with attention, LSTM/GRU, int32, vmap and higher-order AD in (kernels
// 39.4 kB, JS without kernels 83.4 kB, one op 93 kB), with ~8 % headroom. The earlier 30 kB / 60 kB
// budgets predate those; getting back under them (a smaller Tensor method surface, -Os kernels)
// is open work.
export default [
  {
    name: 'kernels: dist/adjoint.wasm',
    path: 'dist/adjoint.wasm',
    // Measured as the file itself: esbuild copies it unchanged.
    modifyEsbuildConfig: (config) => ({ ...config, loader: { ...config.loader, '.wasm': 'copy' } }),
    gzip: true,
    limit: '42 KB',
  },
  {
    // The kernels ride along as base64 (src/wasm/bytes.generated.ts, about 37 KB of it gzipped),
    // so the whole file cannot fit 60 KB; the 60 KB budget is on the JS without them (below).
    name: 'core JS without the digits data (dist/index.js, kernels embedded)',
    path: 'dist/index.js',
    import: '*',
    gzip: true,
    modifyEsbuildConfig: withoutDigits,
    limit: '150 KB',
  },
  {
    name: 'core JS without the digits data and without the embedded kernels (src/index.ts)',
    path: 'src/index.ts',
    import: '*',
    gzip: true,
    modifyEsbuildConfig: (config) => ({
      ...withoutDigits(config),
      plugins: [
        ...(config.plugins ?? []),
        stub(/bytes\.generated\.ts$/, "export const WASM_BASE64 = '';"),
        stub(/digits-data\.ts$/, "export const DIGITS_COUNT = 0; export const DIGITS_GZIP_BASE64 = '';"),
      ],
    }),
    limit: '90 KB',
  },
  {
    name: 'one op: import { init, tensor, add } (embedded kernels included)',
    path: 'dist/index.js',
    import: '{ init, tensor, add }',
    gzip: true,
    modifyEsbuildConfig: withoutDigits,
    limit: '100 KB',
  },
];
