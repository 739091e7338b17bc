// Small assertions shared by the nn, feedback, diagnostics and io tests, and the child-process
// bundle the threads and relaxed-SIMD tests run.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { expect } from 'vitest';
import type { Tensor } from '../src/index.js';

export const f64 = { dtype: 'float64' as const };
/** A tensor's values as a plain array (for toEqual). */
export const arr = (t: Tensor): number[] => Array.from(t.toArray());
/** Element-wise |got − want| ≤ tol·max(1, |want|), lengths equal. */
export const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-12): void => {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want[i])));
};

/**
 * test/NAME.ts bundled (with fflate, which inflates the embedded kernels, since the scratch
 * file's folder has no node_modules) into a scratch file for `node FILE …` child processes:
 * `file` is its path, `build()` writes it (in a beforeAll).
 */
export function childBundle(name: string): { file: string; build: () => Promise<unknown> } {
  const file = join(mkdtempSync(join(tmpdir(), `adjoint-${name}-`)), `${name}.mjs`);
  const entry = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  const write = () =>
    build({
      entryPoints: [entry],
      outfile: file,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      logLevel: 'error',
    });
  return { file, build: write };
}
