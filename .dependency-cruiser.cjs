// The layering of src/, bottom up (see docs/CONTRIBUTING.md):
//   wasm → tensor → ops → autodiff → compile → nn, optim, io, data → cli
// A module may import its own layer and the layers below it, never one above; src/errors.ts
// sits under everything. Type-only imports are exempt (they vanish from the bundle). No runtime
// import cycle is allowed anywhere, except inside src/ops, where the public op functions and
// the rule families (VJP rules are written with ops) import each other by design.
// `npm run lint:deps` runs it; `npm test` too.
const layers = [
  ['wasm', '^src/wasm/'],
  ['tensor', '^src/tensor/'],
  ['ops', '^src/ops/'],
  ['autodiff', '^src/autodiff/'],
  ['compile', '^src/compile/'],
  ['nn/optim/io/data', '^src/(nn|optim|io|data)/'],
  ['cli', '^src/cli/'],
];
const runtimeOnly = { dependencyTypesNot: ['type-only'] };

const upward = layers.slice(0, -1).map(([name, path], i) => ({
  name: `no-upward-from-${name.replace(/\//g, '-')}`,
  comment: `${name} imports a higher layer at run time (order: ${layers.map(([n]) => n).join(' → ')})`,
  severity: 'error',
  from: { path },
  to: { path: layers.slice(i + 1).map(([, p]) => p).join('|'), ...runtimeOnly },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-errors-upward',
      comment: 'src/errors.ts is the bottom of every layer: it imports nothing of ours',
      severity: 'error',
      from: { path: '^src/errors\\.ts$' },
      to: { path: '^src/', ...runtimeOnly },
    },
    {
      name: 'no-import-of-entry',
      comment: 'src/index.ts is the public entry: nothing inside imports it',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/index\\.(ts|js)$' },
    },
    {
      name: 'no-import-of-testing',
      comment: 'src/testing.ts is the test-only entry (fault injection, internal counters): production code never imports it',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/testing\\.(ts|js)$' },
      to: { path: '^src/testing\\.(ts|js)$' },
    },
    {
      name: 'no-runtime-cycle',
      comment: 'a runtime import cycle (only src/ops may cycle inside itself: op functions and their rules)',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/ops/' },
      to: { circular: true, viaOnly: runtimeOnly },
    },
    {
      name: 'no-cycle-leaving-ops',
      comment: 'a runtime cycle through src/ops that leaves the folder',
      severity: 'error',
      from: { path: '^src/ops/' },
      to: { circular: true, viaOnly: runtimeOnly, viaSomeNot: '^src/ops/' },
    },
  ],
  // scripts/lint-deps.mjs cruises src/ transpiled to JavaScript (ADJOINT_DEPS_JS set), where only
  // runtime imports are left. Cruising the TypeScript directly (`npx depcruise src`) also works,
  // but the swc parser reports type-only imports as ordinary ones.
  options: process.env.ADJOINT_DEPS_JS ? {
    doNotFollow: { path: 'node_modules' },
    moduleSystems: ['es6'],
  } : {
    // TypeScript 7 has no JavaScript API: parse with swc.
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|\\.generated\\.ts$' },
    moduleSystems: ['es6'],
  },
};
