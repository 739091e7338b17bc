// Where the repository is, for benches that spawn scripts or read its files: they run from
// esbuild bundles in build/run/ (scripts/run-ts.mjs), not from bench/.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest directory up from this bundle whose package.json is adjoint's (else the working directory). */
export function repoRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'adjoint') return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}
