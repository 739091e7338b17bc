// Runs a TypeScript entry point (CLI, benches) on plain Node 20: esbuild bundles it into
// build/run/<name>.mjs (dependencies stay external) and the bundle is imported with the rest
// of the command line as its arguments.
import { build } from 'esbuild';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';

const [entry, ...rest] = process.argv.slice(2);
if (!entry) {
  console.error('usage: node scripts/run-ts.mjs <entry.ts> [args...]');
  process.exit(2);
}
const outfile = new URL(`../build/run/${basename(entry).replace(/\.ts$/, '')}.mjs`, import.meta.url);
await build({
  entryPoints: [entry],
  outfile: outfile.pathname,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: 'inline',
  logLevel: 'error',
});
process.argv = [process.argv[0], outfile.pathname, ...rest];
await import(pathToFileURL(outfile.pathname).href);
