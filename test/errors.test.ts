// The error table: every public function fed wrong shapes, dtypes, NaN, disposed tensors,
// out-of-range axes/indices/labels, missing arguments and non-tensors must throw the right
// AdjointError subclass with a message naming the op, the argument and what was expected.
// Afterwards the engine must be intact: no leaked tensors or bytes, no half-recorded graph,
// and a small training run gives bit-identical results to one run before the table.
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { allRows, makeFixtures, opName, type Fixtures, type Row } from './error-rows.js';

/** 60 steps of full-batch gradient descent on a 2-layer tanh MLP with plain ops; returns the loss curve. */
function train(): number[] {
  let ws = [A.randn([4, 8], { seed: 11, requiresGrad: true }), A.randn([8, 3], { seed: 12, requiresGrad: true })];
  const x = A.randn([16, 4], { seed: 13 });
  const labels = Array.from({ length: 16 }, (_, i) => i % 3);
  const losses: number[] = [];
  for (let step = 0; step < 60; step++) {
    ws = A.tidy(() => {
      const loss = A.crossEntropy(A.matmul(A.tanh(A.matmul(x, ws[0])), ws[1]), labels);
      loss.backward();
      losses.push(loss.item());
      // An update without in-place writes: new leaves replace the old ones.
      const next = ws.map((w) => A.noGrad(() => A.sub(w, A.mul(w.grad!, 0.5))));
      for (const w of ws) w.dispose();
      for (const w of next) w.requiresGrad = true;
      return next;
    });
  }
  for (const t of [...ws, x]) t.dispose();
  return losses;
}

function thrown(f: () => unknown): unknown {
  try {
    A.tidy(() => void f());
  } catch (e) {
    return e;
  }
  return undefined;
}

let fx: Fixtures;
let rows: Row[];
let before: number[];
let base: A.MemoryInfo;

beforeAll(async () => {
  await A.init();
  before = train();
  fx = makeFixtures();
  rows = allRows(fx);
  base = A.memory();
});

describe('error table', () => {
  it('has rows', () => expect(rows.length).toBeGreaterThan(300));

  it('every row throws its AdjointError subclass with a message naming op, argument and expectation', () => {
    const failures: string[] = [];
    for (const r of rows) {
      const e = thrown(r.call);
      const where = `${r.fn} row ${rows.indexOf(r)}`;
      if (!(e instanceof Error)) {
        failures.push(`${where}: threw nothing`);
        continue;
      }
      if (!(e instanceof A.AdjointError) || !(e instanceof r.error)) {
        failures.push(`${where}: expected ${r.error.name}, got ${e.name}: ${e.message}`);
        continue;
      }
      const op = opName(r.fn).toLowerCase();
      const missing = [...r.says].filter((w) => !e.message.includes(w));
      if (!e.message.toLowerCase().includes(op)) missing.unshift(opName(r.fn));
      if (missing.length > 0) failures.push(`${where}: message lacks ${JSON.stringify(missing)}: ${e.message}`);
      if (e.name !== r.error.name) failures.push(`${where}: error.name is ${e.name}`);
    }
    expect(failures).toEqual([]);
  });

  it('covers every public function', () => {
    const covered = new Set(rows.map((r) => r.fn));
    // No arguments to get wrong; init is tested in oom.test.ts (it must run before the engine starts);
    // the async readers in their own tests; LRScheduler is the schedulers' abstract base.
    const exempt = new Set([
      'init',
      'backend',
      'memory',
      'resetPeak',
      'data.digitsRaw',
      'data.fashionMnist',
      'data.shakespeare',
      'optim.lrScheduler.LRScheduler',
    ]);
    const missing: string[] = [];
    const visit = (prefix: string, ns: Record<string, unknown>) => {
      for (const [name, v] of Object.entries(ns)) {
        const full = prefix + name;
        if (typeof v === 'object' && v !== null) visit(`${full}.`, v as Record<string, unknown>);
        else if (typeof v === 'function' && !(v.prototype instanceof Error) && v !== Error && name !== 'AdjointError') {
          if (name === 'Tensor' || name === 'Optimizer') continue; // covered through their methods / subclasses
          if (!covered.has(full) && !exempt.has(full)) missing.push(full);
        }
      }
    };
    visit('', A as unknown as Record<string, unknown>);
    expect(missing).toEqual([]);
  });

  it('fashionMnist rejects a missing directory with an ArgumentError naming it', async () => {
    await expect(A.data.fashionMnist('/nonexistent/adjoint')).rejects.toThrow(A.ArgumentError);
    await expect(A.data.fashionMnist('/nonexistent/adjoint')).rejects.toThrow(/fashionMnist: .*\/nonexistent\/adjoint/);
  });
});

describe('after the table', () => {
  it('leaked no tensors and no bytes, row by row', () => {
    const leaks: string[] = [];
    rows.forEach((r, i) => {
      const m0 = A.memory();
      thrown(r.call);
      const m1 = A.memory();
      const dt = m1.tensors - m0.tensors,
        db = m1.bytesInUse - m0.bytesInUse;
      if (dt !== 0 || db !== 0) leaks.push(`${r.fn} row ${i}: ${dt} tensors, ${db} bytes`);
    });
    expect(leaks).toEqual([]);
    expect(A.memory().tensors).toBe(base.tensors);
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
  });

  it('left recording on, forward mode on and anomaly mode off', () => {
    const y = A.tidy(() => A.keep(A.mul(fx.p, 2)));
    expect(y.requiresGrad).toBe(true);
    expect(y.node).not.toBe(null);
    y.dispose();
    expect(() => A.tidy(() => A.log(A.full([1], -1)))).not.toThrow();
  });

  it('trains bit-identically to a run before the errors', () => {
    const after = train();
    expect(after).toEqual(before);
    expect(after[after.length - 1]).toBeLessThan(after[0] * 0.5);
  });

  it('a leaf touched by a failed backward keeps its old gradient', () => {
    const w = A.randn([3], { seed: 21, requiresGrad: true });
    A.tidy(() => A.sum(A.square(w)).backward());
    const g = Array.from(w.grad!.toArray());
    const bad = A.customVjp(
      function boom(t: A.Tensor) {
        return A.mul(t, 2);
      },
      () => [A.ones([7])],
    );
    expect(() => A.tidy(() => A.add(A.sum(A.square(w)), A.sum(bad(w))).backward())).toThrow(A.GradError);
    expect(Array.from(w.grad!.toArray())).toEqual(g);
    w.dispose();
  });
});
