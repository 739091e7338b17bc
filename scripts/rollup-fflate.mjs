// A rollup plugin shared by rollup.config.mjs and demo/rollup.config.mjs: bundles fflate (the gzip
// decoder behind data.digits() and data.loadIdx()) from node_modules into the output, so the
// bundles stay self-contained for hosts without a module resolver (workerd, browsers loading the
// file directly). Its browser build: the same synchronous code without the node:worker_threads
// import that fflate's Node build carries for its asynchronous API.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export function bundleFflate() {
  const require = createRequire(import.meta.url);
  return {
    name: 'adjoint-bundle-fflate',
    resolveId(id) {
      return id === 'fflate' ? join(dirname(require.resolve('fflate')), '../esm/browser.js') : null;
    },
  };
}
