// Bundles src/main.js, with 'adjoint' taken from node_modules like any dependency, into
// dist/app.js. @rollup/plugin-wasm turns `import loadKernels from 'adjoint/adjoint.wasm'` into a
// loader; 'auto-inline' keeps the bytes in the bundle (base64), which runs in Node, Deno and
// browsers alike. (Its emitted-file mode reads the file with require() and __dirname in Node, which
// an ESM bundle does not have; for a browser-only app, `targetEnv: 'browser'` emits the .wasm
// next to the bundle and streams it with fetch.) In a real project you would use
// @rollup/plugin-node-resolve; the few lines below do the part this app needs (a package's
// "exports" map, ESM "import" condition).
import wasm from '@rollup/plugin-wasm';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

function packageExports() {
  return {
    name: 'package-exports',
    resolveId(id, importer) {
      const m = /^((?:@[^/]+\/)?[^./][^/]*)(\/.*)?$/.exec(id);
      if (m === null) return null;
      const [, name, sub = ''] = m;
      for (let dir = importer ? dirname(importer) : process.cwd(); ; dir = dirname(dir)) {
        const pkg = join(dir, 'node_modules', name, 'package.json');
        if (existsSync(pkg)) {
          let target = JSON.parse(readFileSync(pkg, 'utf8')).exports?.[`.${sub}`];
          if (target && typeof target === 'object') target = target.import ?? target.default;
          return typeof target === 'string' ? resolve(dirname(pkg), target) : null;
        }
        if (dirname(dir) === dir) return null;
      }
    },
  };
}

export default {
  input: 'src/main.js',
  plugins: [packageExports(), wasm({ targetEnv: 'auto-inline' })],
  // adjoint's data.fashionMnist() loads files through import('node:fs/promises') when called.
  external: (id) => id.startsWith('node:'),
  output: { file: 'dist/app.js', format: 'esm' },
};
