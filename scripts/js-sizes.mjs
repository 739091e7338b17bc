// `node scripts/js-sizes.mjs [--top N]` (after `npm run build`): where the JS bytes go.
// 1. What users download: the shipped dist/index.js minified by esbuild (as a consumer's bundler
//    would) with the embedded kernels' base64 stubbed out and the digits data left out, gzipped.
// 2. Where those bytes come from: src/index.ts bundled the same way with esbuild's metafile, each
//    module's minified bytes and (roughly) the gzip bytes lost when its output is dropped,
//    grouped by folder, then the largest modules, then the share of string literals.
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { parseAst } from 'rollup/parseAst';

const args = process.argv.slice(2);
const top = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 30;
const gz = (s) => gzipSync(s, { level: 9 }).length;
const kb = (n) => (n / 1000).toFixed(1).padStart(6);

/** Replaces string literals of 2000+ base64 characters (the embedded kernels) by ''. */
const stubBase64 = {
  name: 'stub-base64',
  setup(b) {
    b.onLoad({ filter: /(dist[\\/]index\.js|bytes(-relaxed)?\.generated\.ts)$/ }, async ({ path }) => {
      const { readFileSync } = await import('node:fs');
      const text = readFileSync(path, 'utf8').replace(/(["'`])[A-Za-z0-9+/=\\\n]{2000,}\1/g, "''");
      return { contents: text, loader: path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};
const common = {
  bundle: true,
  minify: true,
  write: false,
  format: 'esm',
  target: 'es2022',
  platform: 'neutral',
  external: ['./data/digits.js', 'node:*'],
  plugins: [stubBase64],
  logLevel: 'error',
};

const dist = await build({ ...common, entryPoints: ['dist/index.js'] });
const distText = dist.outputFiles[0].text;
console.log(`dist/index.js minified, kernels stubbed, no digits: ${kb(distText.length)} kB, ${kb(gz(distText))} kB gzip`);

const src = await build({
  ...common,
  entryPoints: ['src/index.ts'],
  metafile: true,
  external: [...common.external, '*/digits-data.js', '*/digits-data.ts'],
});
const text = src.outputFiles[0].text;
const whole = gz(text);
console.log(`src/index.ts the same way:                         ${kb(text.length)} kB, ${kb(whole)} kB gzip`);

const inputs = Object.entries(Object.values(src.metafile.outputs)[0].inputs).map(([file, v]) => ({ file, bytes: v.bytesInOutput }));
const folders = new Map();
for (const { file, bytes } of inputs) {
  const dir = file
    .replace(/^src\//, '')
    .replace(/\/[^/]+$/, '')
    .replace(/^node_modules\/([^/]+).*/, '$1');
  folders.set(dir, (folders.get(dir) ?? 0) + bytes);
}
console.log('\nminified bytes by folder:');
for (const [dir, bytes] of [...folders].sort((a, b) => b[1] - a[1])) console.log(`${kb(bytes)} kB  ${dir}`);
console.log(`\nlargest ${top} modules (minified kB):`);
for (const { file, bytes } of inputs.sort((a, b) => b.bytes - a.bytes).slice(0, top)) console.log(`${kb(bytes)} kB  ${file}`);

// String literals (and template text), found by parsing the bundle (rollup's parser).
let strings = 0;
const stringParts = [];
const walk = (node) => {
  if (!node || typeof node.type !== 'string') return;
  if ((node.type === 'Literal' && typeof node.value === 'string') || node.type === 'TemplateElement') {
    strings += node.end - node.start;
    stringParts.push(text.slice(node.start, node.end));
  }
  for (const v of Object.values(node)) {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') walk(v);
  }
};
walk(parseAst(text));
console.log(`\nstring literals and template text: ${kb(strings)} kB minified; gzipped on their own ${kb(gz(stringParts.join('\n')))} kB`);
