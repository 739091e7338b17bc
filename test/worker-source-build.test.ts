// The published bundle's worker programs: scripts/rollup-worker-source.mjs replaces
// src/wasm/worker-source.ts with a module of the same exports, the programs minified. It must
// export the same names and the same non-program values, and each program must still parse and
// define the same top-level functions.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { minifyWorkerSource } from '../scripts/rollup-worker-source.mjs';
import * as original from '../src/wasm/worker-source.js';

const file = resolve('src/wasm/worker-source.ts');
const topLevelFunctions = (code: string): string[] =>
  [...code.matchAll(/(?:^|[;}\n])\s*function\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1]).sort();

describe('the minified worker programs (npm run build)', async () => {
  const ctx = {
    error(message: string): never {
      throw new Error(message);
    },
  };
  const out = await minifyWorkerSource().load.call(ctx, file);
  const built = (await import(`data:text/javascript;base64,${Buffer.from(out!.code).toString('base64')}`)) as Record<string, unknown>;
  const programs = Object.keys(original).filter((k) => /(_WORKER|_SUPERVISOR)$/.test(k));

  it('exports the same names, and the same values apart from the programs', () => {
    expect(Object.keys(built).sort()).toEqual(Object.keys(original).sort());
    expect(programs.length).toBeGreaterThanOrEqual(4);
    for (const [k, v] of Object.entries(original)) if (!programs.includes(k)) expect(built[k]).toEqual(v);
  });

  it.each(programs)('%s parses, defines the same top-level functions and is smaller', (name) => {
    const min = built[name] as string;
    const src = (original as Record<string, unknown>)[name] as string;
    expect(() => new Function(min)).not.toThrow();
    expect(topLevelFunctions(min)).toEqual(topLevelFunctions(src));
    expect(min.length).toBeLessThan(0.8 * src.length);
  });
});
