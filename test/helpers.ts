// Small assertions shared by the nn, feedback, diagnostics and io tests, the child-process
// bundle the threads and relaxed-SIMD tests run, and the compiled-against-eager check of the
// epilogue tests.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { runtime } from '../src/wasm/module.js';

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

/** A model's parameters and one training step on (x, t) that returns the loss. */
export interface StepNet {
  ps: Tensor[];
  step: (x: Tensor, t: Tensor) => Tensor;
}

const bytesOf = (t: Tensor): string => Buffer.from(t.toArray().buffer).toString('base64');

/**
 * Six calls of `eager.step` (under tidy) and of `comp.step` compiled, on (x, t): the same loss bytes
 * each call, calls 4–6 replayed, then the same parameter bytes. Returns how many times the kernels
 * `kernels` ran, counted through the export table (a program binds its kernels when it is built, so
 * the counter wraps them before the first call and is removed after the sixth).
 */
export function compiledMatchesEager(eager: StepNet, comp: StepNet, x: Tensor, t: Tensor, kernels: string[]): number {
  const compiled = A.compile(comp.step);
  const rt = runtime() as unknown as { exports: Record<string, unknown> };
  const saved = rt.exports;
  let calls = 0;
  const wrapped: Record<string, unknown> = { ...saved };
  for (const name of kernels) {
    const f = saved[name] as (...a: number[]) => void;
    wrapped[name] = (...a: number[]) => {
      calls++;
      return f(...a);
    };
  }
  rt.exports = wrapped;
  try {
    for (let s = 0; s < 6; s++) {
      const le = A.tidy(() => eager.step(x, t));
      const lc = compiled(x, t);
      expect(bytesOf(lc), `loss, step ${s}`).toBe(bytesOf(le));
      le.dispose(), lc.dispose();
    }
  } finally {
    rt.exports = saved;
  }
  expect(compiled.stats.replayed, JSON.stringify(compiled.stats)).toBe(3);
  eager.ps.forEach((p, i) => expect(bytesOf(comp.ps[i]), `parameter ${i}`).toBe(bytesOf(p)));
  return calls;
}
