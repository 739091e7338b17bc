// The thread pool (issue 8): bit-identical results for any thread count, the one-thread
// fallback with a notice, a worker dying mid-kernel (by its own exit, or killed from outside
// while the caller is blocked waiting for it), the run-time shared-memory variant of
// the kernels, and cuts by uneven shares (threads of unequal speed; the partition helper itself
// is tested in test/balance.test.ts). init() is once per process, so every engine
// configuration runs in a child process (test/threads-child.ts, bundled once here).
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { sharedMemoryVariant } from '../src/wasm/shared-module.js';
import { childBundle } from './helpers.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'adjoint-threads-'));
const { file: bundle, build: buildBundle } = childBundle('threads-child');

beforeAll(buildBundle, 60_000);

/** The child's balance run, made once for the tests that read it. */
let balanceRun: Record<string, unknown> | null = null;
const balanced = (): Record<string, unknown> => (balanceRun ??= child('balance'));

/** Runs the child with `args` and returns its JSON line; a child still running after `timeout` ms is killed (a hang fails). */
function child(...args: string[]): Record<string, unknown> {
  return childWithin(120_000, ...args);
}
function childWithin(timeout: number, ...args: string[]): Record<string, unknown> {
  const p = spawnSync(process.execPath, [bundle, ...args], { encoding: 'utf8', timeout, cwd: root });
  const line = p.stdout.trim().split('\n').pop() ?? '';
  if (p.signal !== null) throw new Error(`child ${args.join(' ')} was killed (${p.signal}) after ${timeout} ms: it hung`);
  if (p.status !== 0 || !line.startsWith('{')) throw new Error(`child ${args.join(' ')} failed (${p.status}):\n${p.stdout}\n${p.stderr}`);
  return JSON.parse(line) as Record<string, unknown>;
}

describe('threads: determinism', () => {
  it('trains to the same weight bytes with 1, 2 and 3 threads as without a pool', () => {
    const base = child('digest');
    expect(base.threads).toBe(1);
    for (const t of ['1', '2', '3']) {
      const r = child('digest', '--threads', t);
      expect(r.threads).toBe(Number(t));
      expect({ f32: r.f32, f64: r.f64, wide: r.wide, optim: r.optim }).toEqual({
        f32: base.f32,
        f64: base.f64,
        wide: base.wide,
        optim: base.optim,
      });
      if (t !== '1') expect(r.dispatches).toBeGreaterThan(0); // the pool really ran kernels
    }
  }, 240_000);

  it('gives the same bytes when every splittable kernel is split (no size thresholds)', () => {
    const base = child('digest');
    for (const t of ['2', '3']) {
      const r = child('digest', '--threads', t, '--force');
      expect({ f32: r.f32, f64: r.f64, wide: r.wide, optim: r.optim }).toEqual({
        f32: base.f32,
        f64: base.f64,
        wide: base.wide,
        optim: base.optim,
      });
      expect(r.dispatches).toBeGreaterThan(100);
    }
  }, 240_000);

  it('gives the same bytes when the busy-machine pause switches threads off and on mid-run', () => {
    const base = child('digest');
    const r = child('digest', '--threads', '2', '--force', '--pause');
    expect(r.pauses).toBeGreaterThan(0);
    expect(r.dispatches).toBeGreaterThan(0);
    expect({ f32: r.f32, f64: r.f64, wide: r.wide, optim: r.optim }).toEqual({
      f32: base.f32,
      f64: base.f64,
      wide: base.wide,
      optim: base.optim,
    });
  }, 120_000);
});

describe('threads: compiled steps with the parallel schedule', () => {
  it('trains to the same bytes on 1, 2 and 3 threads, with every kernel split and with pauses', () => {
    const base = child('compiled');
    expect(base.threads).toBe(1);
    expect(base.lists).toBe(0);
    for (const args of [
      ['--threads', '2'],
      ['--threads', '3'],
      ['--threads', '2', '--force'],
      ['--threads', '3', '--force'],
      ['--threads', '2', '--force', '--pause'],
    ]) {
      const r = child('compiled', ...args);
      expect(r.digests).toEqual(base.digests);
      // Phases of independent launches really ran as job lists (not under the pause of --pause, which runs them on the caller).
      if (!args.includes('--pause')) expect(r.lists).toBeGreaterThan(10);
      else expect(r.pauses).toBeGreaterThan(0);
      // The fused elementwise chain: one job list per thread for each replayed call.
      const chain = r.chain as { fused: number; lists: number; replayed: number };
      expect(chain.fused).toBe(5);
      expect(chain.replayed).toBeGreaterThan(0);
      if (!args.includes('--pause')) expect(chain.lists).toBe(chain.replayed);
    }
  }, 300_000);

  it('trains to the same bytes with uneven cuts, fixed or changing between steps (each set of cuts traced as its own signature)', () => {
    const base = child('compiled');
    for (const cuts of ['24.8', '7.25', '4.20.8']) {
      const r = child('compiled', '--threads', String(cuts.split('.').length), '--force', '--cuts', cuts);
      expect(r.digests, cuts).toEqual(base.digests);
      expect(r.lists).toBeGreaterThan(10);
    }
    const r = balanced();
    expect(r.digests).toEqual(r.reference);
    expect(r.warnings).toEqual([]); // no eager fallback ("schedule changed") and no signature overflow
  }, 300_000);

  it('moves work off a worker that runs 5× slower, and back when it recovers', () => {
    type Phase = { most: number; key: string; units: number[] };
    const r = balanced() as { slow: Phase; fast: Phase } & Record<string, unknown>;
    // On cores of equal speed the caller would get 26.7 of 32 units (28 at most); its own core
    // may be slower than the worker's (this VM's vCPUs have run 2× apart): 22.9 then. In ten
    // runs on an idle VM (windows of 100 ms, phases of 3 s) the cuts ended the slow phase at
    // 26–28 and the fast one equal in nine; the test asks less of the ends. With 50 ms windows
    // and 2 s phases one run in about twelve ended the slow phase at equal cuts (an undo).
    expect(r.slow.most).toBeGreaterThanOrEqual(20);
    expect(r.slow.units[0]).toBeGreaterThan(16);
    expect(r.fast.units[0]).toBeLessThanOrEqual(r.slow.most - 2);
  }, 120_000);

  it('plans a GPT step on 2 threads near its one-thread size, with the same bytes as one thread and eager', () => {
    const one = child('plan', '--threads', '1'),
      two = child('plan', '--threads', '2');
    expect(two.threads).toBe(2);
    expect(one.compiled).toBe(one.eager);
    expect(two.compiled).toBe(one.compiled);
    expect(two.eager).toBe(one.eager);
    // Buffers are kept only while the schedule can still use their bytes: 1.11× the one-thread
    // plan; keeping every buffer freed in a run of reorderable launches to its end took 1.34×.
    expect(two.planBytes as number).toBeLessThan(1.2 * (one.planBytes as number));
  }, 120_000);

  it('reports a worker that dies in a compiled step, then replays on one thread and recovers on init()', () => {
    const r = child('compiled-death') as { error: { message: string; isAdjoint: boolean } | null } & Record<string, unknown>;
    expect(r.listsBefore).toBeGreaterThan(0);
    expect(r.error?.isAdjoint).toBe(true);
    expect(r.error?.message).toMatch(/worker 1 of 1 died while running \w+ \(exit code 70\)/);
    expect(r).toMatchObject({ afterThreads: 1, afterOk: true, restarted: 2, againOk: true });
  }, 120_000);
});

describe('threads: failure modes', () => {
  it('falls back to one thread with one notice where SharedArrayBuffer is missing', () => {
    const r = child('fallback');
    expect(r.threads).toBe(1);
    expect(r.ok).toBe(true);
    expect(r.warnings).toEqual(['adjoint: threads need SharedArrayBuffer, which this runtime does not provide; running on one thread']);
  }, 60_000);

  it('reports a worker that dies mid-kernel as an AdjointError naming it, then recovers on init()', () => {
    const r = child('death') as { error: { name: string; message: string; isAdjoint: boolean } } & Record<string, unknown>;
    expect(r.error.isAdjoint).toBe(true);
    expect(r.error.message).toMatch(/worker 1 of 1 died while running gemm_f32 \(exit code 70\)/);
    expect(r.error.message).toMatch(/await init\(\)/);
    expect(r).toMatchObject({ afterThreads: 1, afterOk: true, restarted: 2, againOk: true });
  }, 60_000);

  it('reports a worker terminated from outside while the caller is blocked waiting for it, then recovers on init()', () => {
    // Before the supervisor thread, this child hung forever in Atomics.wait (no code of a
    // terminated worker runs, and the caller's event loop, which would get its exit event, is blocked).
    const r = childWithin(45_000, 'terminate') as { error: { message: string; isAdjoint: boolean } | null } & Record<string, unknown>;
    expect(r.error?.isAdjoint).toBe(true);
    expect(r.error?.message).toMatch(/worker 1 of 1 died while running gemm_f32 \(exited with code 1\)/);
    expect(r.waitedMs).toBeGreaterThan(0); // the caller reached its wait for the worker
    expect(r).toMatchObject({ afterThreads: 1, afterOk: true, restarted: 2, againOk: true });
  }, 60_000);
});

describe('threads: resizing the pool', () => {
  it('init({ threads }) on a running engine resizes, stops and restarts the pool with the same results', () => {
    expect(child('resize')).toMatchObject({ counts: [2, 3, 1, 2], same: true, overlapped: 2, orphaned: 0 });
  }, 60_000);

  it('a restart reuses the control slots of the stopped pool: 40 restarts fit under a 4 MiB cap', () => {
    expect(child('resize-many')).toMatchObject({ error: null, threads: 2, ok: true });
  }, 120_000);

  it('overlapping first init() calls with the same module bytes in separate buffers both succeed', () => {
    expect(child('overlap-module')).toMatchObject({
      calls: ['ok', 'ok'],
      again: 'ok',
      other: expect.stringMatching(/^init: module was fixed by the first init\(\) call/),
      threads: 2,
    });
  }, 60_000);
});

describe('threads: kernels for a shared memory', () => {
  it('rewriting the memory import equals asc --sharedMemory --enable threads, byte for byte', () => {
    const asc = join(root, 'node_modules/assemblyscript/bin/asc.js');
    // One snapshot of the sources for both builds (the kernels may be edited meanwhile).
    const src = join(scratch, 'src');
    cpSync(join(root, 'assembly'), join(src, 'assembly'), { recursive: true });
    cpSync(join(root, 'asconfig.json'), join(src, 'asconfig.json'));
    const compileTo = (out: string, extra: string[]) => {
      const p = spawnSync(
        process.execPath,
        [
          asc,
          'assembly/index.ts',
          '--config',
          'asconfig.json',
          '--target',
          'release',
          '--outFile',
          out,
          '--textFile',
          out.replace(/wasm$/, 'wat'),
          ...extra,
        ],
        { cwd: src, encoding: 'utf8' },
      );
      if (p.status !== 0) throw new Error(p.stderr);
      return new Uint8Array(readFileSync(out));
    };
    const plain = compileTo(join(scratch, 'plain.wasm'), []);
    const shared = compileTo(join(scratch, 'shared.wasm'), ['--sharedMemory', '--maximumMemory', '65536', '--enable', 'threads']);
    expect(Buffer.from(sharedMemoryVariant(plain)!).equals(Buffer.from(shared))).toBe(true);
    expect(Buffer.from(sharedMemoryVariant(shared)!).equals(Buffer.from(shared))).toBe(true); // already shared: unchanged
  }, 180_000);

  it('returns null for bytes that are not a wasm module importing a memory', () => {
    expect(sharedMemoryVariant(new Uint8Array([1, 2, 3]))).toBeNull();
    expect(sharedMemoryVariant(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))).toBeNull();
  });
});
