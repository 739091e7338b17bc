// A rollup plugin for rollup.config.mjs: ships the thread pool's worker programs
// (src/wasm/worker-source.ts, source text assembled from readable templates) minified. At build
// time it bundles and evaluates that module, then replaces it with one that exports the same
// values, every program string (the exports ending in _WORKER or _SUPERVISOR) minified by esbuild
// as a classic script (top-level names kept, so Node's `eval` workers and module Web Workers run
// it alike). The other exports (slot layout, status codes) are written out as JSON values.
import { build, transform } from 'esbuild';

const isProgram = (name) => /(_WORKER|_SUPERVISOR)$/.test(name);

/** The module's exports, computed from its source with its own imports bundled. */
async function evaluate(file) {
  const out = await build({ entryPoints: [file], bundle: true, format: 'esm', write: false, platform: 'neutral', logLevel: 'error' });
  return import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
}

export function minifyWorkerSource() {
  return {
    name: 'adjoint-minify-worker-source',
    async load(id) {
      if (!/[\\/]src[\\/]wasm[\\/]worker-source\.ts$/.test(id)) return null;
      const values = await evaluate(id);
      const lines = [];
      const programs = [];
      for (const [name, value] of Object.entries(values)) {
        if (!isProgram(name)) {
          lines.push(`export const ${name} = ${JSON.stringify(value)};`);
          continue;
        }
        if (typeof value !== 'string') this.error(`worker-source: ${name} is not a string`);
        programs.push([
          name,
          (await transform(value, { minifyWhitespace: true, minifySyntax: true, target: 'es2020', logLevel: 'error' })).code,
        ]);
      }
      if (programs.length === 0) this.error('worker-source: no worker program found');
      // The programs share their first functions (the service loop, the death mark): a program
      // that starts like an earlier one is written as that one's prefix plus its own rest.
      programs.forEach(([name, code], i) => {
        let best = 0;
        let from = -1;
        for (let j = 0; j < i; j++) {
          const other = programs[j][1];
          let n = 0;
          while (n < code.length && n < other.length && code[n] === other[n]) n++;
          if (n > best) [best, from] = [n, j];
        }
        lines.push(
          best >= 200
            ? `export const ${name} = /* @__PURE__ */ ${programs[from][0]}.slice(0, ${best}) + ${JSON.stringify(code.slice(best))};`
            : `export const ${name} = ${JSON.stringify(code)};`,
        );
      });
      // The load hook returns JS; the TypeScript plugin passes it through unchanged.
      return { code: lines.join('\n'), moduleSideEffects: false };
    },
  };
}
