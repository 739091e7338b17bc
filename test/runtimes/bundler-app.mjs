// Consumes the package the way a bundler user does: copies examples/bundler-app into a scratch
// folder whose node_modules/adjoint is a symlink to this repo, bundles it with rollup through the
// package's "exports" (the kernels through @rollup/plugin-wasm and init({ module })), and runs the bundle.
import { cpSync, mkdirSync, mkdtempSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './lib/proc.mjs';

export async function testBundlerApp(root, scratch, env) {
  const app = mkdtempSync(join(scratch, 'bundler-app-'));
  for (const f of ['src', 'rollup.config.mjs', 'package.json'])
    cpSync(join(root, 'examples/bundler-app', f), join(app, f), { recursive: true });
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(root, join(app, 'node_modules/adjoint'), 'dir');
  // The example's rollup.config.mjs loads @rollup/plugin-wasm: taken from this repo's devDependencies.
  mkdirSync(join(app, 'node_modules/@rollup'));
  symlinkSync(join(root, 'node_modules/@rollup/plugin-wasm'), join(app, 'node_modules/@rollup/plugin-wasm'), 'dir');
  const build = await run(process.execPath, [join(root, 'node_modules/rollup/dist/bin/rollup'), '-c'], { cwd: app, env });
  if (build.code !== 0) throw new Error(`rollup failed:\n${build.stderr.trim()}`);
  if (/\(!\)/.test(build.stderr)) throw new Error(`rollup warned:\n${build.stderr.trim()}`);
  const start = await run(process.execPath, ['dist/app.js'], { cwd: app, env });
  const line = start.stdout.trim().split('\n').pop() ?? '';
  if (start.code !== 0 || !line.endsWith('-> ok'))
    throw new Error(`bundled app failed (exit ${start.code}):\n${start.stdout}${start.stderr}`);
  return { line, bytes: statSync(join(app, 'dist/app.js')).size };
}
