// Junk arguments: every export (nn, optim, io and data included) and every public Tensor
// method is called with random junk — numbers, NaN, strings, null, undefined, objects,
// arrays, BigInt, Symbol, functions, tensors of odd shapes and dtypes, disposed tensors. A call
// may succeed; when it throws, the error must be an AdjointError (never a bare TypeError from
// deep inside). Afterwards the engine still computes a known matmul exactly and, once the
// garbage collector has run, the live tensor count is back where it started.
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import * as A from '../src/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const turn = () => new Promise((r) => setImmediate(r));

// ---------------------------------------------------------------- the callables

interface Callable {
  name: string;
  call: (args: unknown[], self: () => A.Tensor) => unknown;
}

const isClass = (f: Function): boolean => /^class\b/.test(Function.prototype.toString.call(f));

/** Every function of the module namespace, recursively; classes are constructed with `new`. */
function exportsOf(ns: Record<string, unknown>, prefix = ''): Callable[] {
  const out: Callable[] = [];
  for (const [name, v] of Object.entries(ns)) {
    const full = prefix + name;
    if (typeof v === 'object' && v !== null) out.push(...exportsOf(v as Record<string, unknown>, `${full}.`));
    if (typeof v !== 'function') continue;
    if (v === A.Tensor || v.prototype instanceof Error || v === A.AdjointError) continue; // Tensor: through its methods below
    const f = v as (...a: unknown[]) => unknown;
    out.push({ name: full, call: isClass(f) ? (args) => Reflect.construct(f, args) : (args) => f(...args) });
  }
  return out;
}

/**
 * The public Tensor methods: everything on the prototype chain but accessors and the
 * engine-internal handle methods (share/alias/save/check/make/charge: not in the API contract).
 */
const INTERNAL = new Set(['constructor', 'share', 'alias', 'save', 'check', 'make']);
function tensorMethods(): Callable[] {
  const names = new Set<string>();
  for (let p = A.Tensor.prototype; p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const k of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, k)!;
      if (typeof d.value === 'function' && !INTERNAL.has(k)) names.add(k);
    }
  }
  return [...names].map((k) => ({
    name: `Tensor.${k}`,
    call: (args, self) => (self() as unknown as Record<string, (...a: unknown[]) => unknown>)[k](...args),
  }));
}

// ---------------------------------------------------------------- the junk

/** A junk value, built fresh per call (tensors inside the call's tidy scope). */
type Junk = () => unknown;
const junk: [string, Junk][] = [
  ['0', () => 0],
  ['1', () => 1],
  ['-1', () => -1],
  ['2', () => 2],
  ['0.5', () => 0.5],
  ['NaN', () => NaN],
  ['Infinity', () => Infinity],
  ['-Infinity', () => -Infinity],
  ['2**31', () => 2 ** 31],
  ['-0', () => -0],
  ["''", () => ''],
  ["'abc'", () => 'abc'],
  ["'1e-3'", () => '1e-3'],
  ["'float32'", () => 'float32'],
  ["'mean'", () => 'mean'],
  ['null', () => null],
  ['undefined', () => undefined],
  ['true', () => true],
  ['false', () => false],
  ['{}', () => ({})],
  ['{keepdim}', () => ({ keepdim: false })],
  ['{lr}', () => ({ lr: '1e-3' })],
  ['{seed}', () => ({ seed: 1 })],
  ['{keepDim}', () => ({ keepDim: true })],
  ['{create_graph}', () => ({ create_graph: true })],
  ['{weight_decay}', () => ({ lr: 0.1, weight_decay: 0.01 })],
  ['{hasAux}', () => ({ hasAux: true })],
  ['[]', () => []],
  ['[1]', () => [1]],
  ['[2,3]', () => [2, 3]],
  ['[-1]', () => [-1]],
  ['[0.5]', () => [0.5]],
  ["['a']", () => ['a']],
  ['[null]', () => [null]],
  ['[[1]]', () => [[1]]],
  ['3n', () => 3n],
  ['Symbol', () => Symbol('junk')],
  ['fn', () => (x: unknown) => x],
  ['fn0', () => () => 1],
  ['Int32Array', () => Int32Array.of(0, 1)],
  ['Float32Array', () => Float32Array.of(1, 2)],
  ['f32[2,3]', () => A.randn([2, 3], { seed: 1 })],
  ['f64[3]', () => A.randn([3], { seed: 2, dtype: 'float64' })],
  ['f32[]', () => A.tensor(1.5)],
  ['f32[0]', () => A.zeros([0])],
  ['f32[1,1,1,1]', () => A.ones([1, 1, 1, 1])],
  ['f32[2,3] grad', () => A.randn([2, 3], { seed: 3, requiresGrad: true })],
  ['disposed', () => disposed(A.ones([2, 3]))],
  ['[tensors]', () => [A.ones([2]), A.ones([2])]],
  ['{w: tensor}', () => ({ w: A.ones([2]) })],
];
function disposed(t: A.Tensor): A.Tensor {
  t.dispose();
  return t;
}

/** Receivers for Tensor methods (made fresh per call: a method may dispose its receiver). */
const receivers: (() => A.Tensor)[] = [
  () => A.randn([2, 3], { seed: 4 }),
  () => A.randn([3], { seed: 5, dtype: 'float64' }),
  () => A.tensor(2),
  () => A.randn([2, 3], { seed: 6, requiresGrad: true }),
  () => disposed(A.ones([2])),
];

/** Functions that change engine-wide state: reset after every call. */
function resetModes(): void {
  A.detectAnomaly(false);
}

/** Frees what a successful call returned (tensors, modules, optimizers, arrays and records of them). */
function release(v: unknown, depth = 0): void {
  if (depth > 4 || v === null || typeof v !== 'object') return;
  if (v instanceof A.Tensor || v instanceof A.nn.Module || v instanceof A.optim.Optimizer) (v as { dispose(): void }).dispose();
  else if (Array.isArray(v)) for (const x of v) release(x, depth + 1);
  else if (Object.getPrototypeOf(v) === Object.prototype) for (const x of Object.values(v)) release(x, depth + 1);
}

// ---------------------------------------------------------------- extra positional arguments

/** Exports that take any number of arguments (rest parameters), and the error classes. */
const VARIADIC = new Set(['permute', 'vjp', 'functionalCall', 'nn.Sequential']);
const TAKES_AT_MOST = /takes at most (\d+) arguments?, got (\d+)/;

/** The arity an export reports when given n arguments (null: it did not refuse them for their count). */
async function refusedArity(c: Callable, n: number): Promise<{ max: number | null; error: unknown }> {
  try {
    let pending: Promise<unknown> | null = null;
    const r = A.tidy(() => {
      const v = c.call(
        Array.from({ length: n }, () => undefined),
        () => A.ones([2]),
      );
      if (v instanceof Promise) pending = v; // an async export refuses by rejecting
      return v instanceof Promise ? undefined : v;
    });
    release(pending === null ? r : await pending);
    return { max: null, error: null };
  } catch (e) {
    const m = e instanceof A.ArgumentError ? TAKES_AT_MOST.exec(e.message) : null;
    return { max: m === null ? null : Number(m[1]), error: e };
  }
}

// ---------------------------------------------------------------- unknown option keys

/** Every public options object, each given a misspelt key (the calls are valid otherwise). */
const TYPO = { zzTypo: 1 };
function optionCalls(): [string, (o: object) => unknown][] {
  const x = A.randn([2, 3], { seed: 1 });
  const img = A.randn([1, 1, 4, 4], { seed: 2 });
  const lin = new A.nn.Linear(3, 2, { seed: 1 });
  const opt = new A.optim.SGD(lin.parameters(), { lr: 0.1 });
  const f = (t: A.Tensor) => A.sum(A.mul(t, t));
  const p = () => A.randn([2], { seed: 3, requiresGrad: true });
  const S = A.optim.lrScheduler;
  return [
    ['grad', (o) => A.grad(f, o)],
    ['valueAndGrad', (o) => A.valueAndGrad(f, o)],
    ['vjp', (o) => A.vjp(f, x, { hasAux: false, ...o })],
    ['vmap', (o) => A.vmap(f, o)],
    ['backward', (o) => A.sum(p()).backward(undefined, o)],
    ['autograd.grad', (o) => A.autograd.grad(A.sum(p()), [p()], o)],
    ['crossEntropy', (o) => A.crossEntropy(x, [0, 1], o)],
    ['mseLoss', (o) => A.mseLoss(x, x, o)],
    ['gelu', (o) => A.gelu(x, o)],
    ['conv2d', (o) => A.conv2d(img, A.randn([1, 1, 3, 3]), null, o)],
    ['dropout', (o) => A.dropout(x, 0.5, o)],
    ['scaledDotProductAttention', (o) => A.scaledDotProductAttention(x, x, x, o)],
    ['compile', (o) => A.compile(f, o)],
    ['gradcheck', (o) => A.gradcheck(f, [A.randn([2], { dtype: 'float64' })], o)],
    ['tensor', (o) => A.tensor([1], o)],
    ['zeros', (o) => A.zeros([1], o)],
    ['ones', (o) => A.ones([1], o)],
    ['full', (o) => A.full([1], 2, o)],
    ['arange', (o) => A.arange(3, o)],
    ['randn', (o) => A.randn([1], o)],
    ['rand', (o) => A.rand([1], o)],
    ['gradientWarnings', (o) => A.gradientWarnings(A.gradientStats(lin), o)],
    ['nn.Linear', (o) => new A.nn.Linear(3, 2, o)],
    ['nn.Sequential', (o) => new A.nn.Sequential(new A.nn.ReLU(), o)],
    ['nn.GELU', (o) => new A.nn.GELU(o)],
    ['nn.Dropout', (o) => new A.nn.Dropout(0.5, o)],
    ['nn.LayerNorm', (o) => new A.nn.LayerNorm(3, o)],
    ['nn.Embedding', (o) => new A.nn.Embedding(3, 2, o)],
    ['nn.Conv2d', (o) => new A.nn.Conv2d(1, 1, 3, o)],
    ['nn.MultiheadAttention', (o) => new A.nn.MultiheadAttention(4, 2, o)],
    ['nn.TransformerEncoderLayer', (o) => new A.nn.TransformerEncoderLayer(4, 2, o)],
    ['nn.LSTM', (o) => new A.nn.LSTM(3, 2, o)],
    ['nn.GRU', (o) => new A.nn.GRU(3, 2, o)],
    ['nn.GPT', (o) => new A.nn.GPT({ vocabSize: 4, ...o })],
    ['optim.SGD', (o) => new A.optim.SGD(lin.parameters(), { lr: 0.1, ...o })],
    ['optim.Adam', (o) => new A.optim.Adam(lin.parameters(), { lr: 0.1, ...o })],
    ['optim.AdamW', (o) => new A.optim.AdamW(lin.parameters(), { lr: 0.1, ...o })],
    ['lrScheduler.StepLR', (o) => new S.StepLR(opt, { stepSize: 1, ...o })],
    ['lrScheduler.LinearLR', (o) => new S.LinearLR(opt, o)],
    ['lrScheduler.CosineAnnealingLR', (o) => new S.CosineAnnealingLR(opt, { tMax: 2, ...o })],
    ['lrScheduler.LambdaLR', (o) => new S.LambdaLR(opt, { lrLambda: () => 1, ...o })],
    ['lrScheduler.OneCycleLR', (o) => new S.OneCycleLR(opt, { maxLr: 1, totalSteps: 3, ...o })],
    ['lrScheduler.SequentialLR', (o) => new S.SequentialLR(opt, { schedulers: [], milestones: [], ...o })],
    ['data.digits', (o) => A.data.digits(o)],
    ['data.batches', (o) => A.data.batches(x, new Int32Array(2), { batchSize: 1, ...o })],
    ['data.lmBatches', (o) => A.data.lmBatches(new Int32Array(9), { batchSize: 1, blockSize: 2, ...o })],
    ['init', (o) => A.init(o)],
  ] as [string, (o: object) => unknown][];
}

// ---------------------------------------------------------------- the run

describe('junk arguments', () => {
  it('every export refuses one positional argument too many, naming itself and its arity', async () => {
    await A.init();
    const callables = exportsOf(A as unknown as Record<string, unknown>).filter((c) => !VARIADIC.has(c.name));
    expect(callables.length).toBeGreaterThan(120);
    const bad: string[] = [];
    for (const c of callables) {
      const far = await refusedArity(c, 9);
      if (far.max === null) {
        bad.push(`${c.name}: 9 arguments gave ${far.error === null ? 'no error' : String(far.error)}`);
        continue;
      }
      const name = (far.error as Error).message.split(':')[0];
      // A function exported twice (clipGradNorm and optim.clipGradNorm) is named by its shorter path.
      if (name !== c.name && !c.name.endsWith(`.${name}`)) bad.push(`${c.name}: the error names ${JSON.stringify(name)}`);
      // One more than the arity is refused; exactly the arity is not refused for its count.
      if ((await refusedArity(c, far.max + 1)).max !== far.max) bad.push(`${c.name}: ${far.max + 1} arguments not refused`);
      if ((await refusedArity(c, far.max)).max !== null) bad.push(`${c.name}: ${far.max} arguments refused`);
    }
    expect(bad).toEqual([]);
    // Tensor methods too (installed over the prototype in ops/tensor.ts).
    const x = A.ones([2]);
    expect(() => (x as unknown as { sum(...a: unknown[]): unknown }).sum(0, false, 'extra')).toThrow(
      /sum: takes at most 2 arguments, got 3/,
    );
    x.dispose();
  });

  it('Module, Optimizer and scheduler methods refuse one argument too many', async () => {
    await A.init();
    const m = new A.nn.Linear(2, 2, { seed: 0 });
    const opt = new A.optim.SGD(m.parameters(), { lr: 0.1 });
    const sched = new A.optim.lrScheduler.StepLR(opt, { stepSize: 1 });
    const calls: [string, () => unknown][] = [
      ['Module.parameters: takes at most 0 arguments, got 1', () => (m.parameters as (...a: unknown[]) => unknown)(1)],
      ['Module.namedParameters: takes at most 2 arguments, got 3', () => (m.namedParameters as (...a: unknown[]) => unknown)('', true, 1)],
      ['Module.zeroGrad: takes at most 0 arguments, got 1', () => (m.zeroGrad as (...a: unknown[]) => unknown)(1)],
      ['Module.train: takes at most 1 argument, got 2', () => (m.train as (...a: unknown[]) => unknown)(true, 1)],
      ['Module.loadStateDict: takes at most 1 argument, got 2', () => (m.loadStateDict as (...a: unknown[]) => unknown)(m.stateDict(), 1)],
      ['Optimizer.step: takes at most 0 arguments, got 1', () => (opt.step as (...a: unknown[]) => unknown)(1)],
      ['Optimizer.zeroGrad: takes at most 0 arguments, got 1', () => (opt.zeroGrad as (...a: unknown[]) => unknown)(true)],
      ['LRScheduler.step: takes at most 0 arguments, got 1', () => (sched.step as (...a: unknown[]) => unknown)(3)],
      ['LRScheduler.getLastLr: takes at most 0 arguments, got 1', () => (sched.getLastLr as (...a: unknown[]) => unknown)(0)],
    ];
    for (const [message, call] of calls) {
      expect(call).toThrow(A.ArgumentError);
      expect(call).toThrow(message);
    }
    // Module forwards count their inputs too.
    const x = A.ones([1, 2]);
    expect(() => (m.forward as (...a: unknown[]) => unknown)(x, 1)).toThrow('nn.Linear.forward: takes at most 1 argument, got 2');
    const lstm = new A.nn.LSTM(2, 3, { seed: 0 });
    expect(() => (lstm.forward as (...a: unknown[]) => unknown)(A.ones([1, 1, 2]), null, 1)).toThrow(
      'nn.LSTM.forward: takes at most 2 arguments, got 3',
    );
    lstm.dispose();
    x.dispose();
    // The same calls at their arity still work.
    expect(m.parameters()).toHaveLength(2);
    m.train(false);
    opt.zeroGrad();
    expect(sched.getLastLr()).toEqual([0.1]);
    opt.dispose();
    m.dispose();
  });

  it('every public options object refuses an unknown key, naming it and the accepted ones', async () => {
    await A.init();
    const bad: string[] = [];
    for (const [name, call] of optionCalls()) {
      let error: unknown = null;
      try {
        const r = call(TYPO); // no tidy: init is async (its fixtures are reclaimed by the collector)
        if (r instanceof Promise) await r;
      } catch (e) {
        error = e;
      }
      const says = error instanceof A.ArgumentError ? error.message : String(error);
      if (
        !(error instanceof A.ArgumentError) ||
        !/unknown option .zzTypo./.test(says) ||
        !/\(known: |\(expected |the options are: /.test(says)
      )
        bad.push(`${name}: ${says}`);
    }
    expect(bad).toEqual([]);
  });

  it('every throw from every export and Tensor method is an AdjointError, and the engine carries on', async () => {
    await A.init();
    gc();
    await turn();
    const start = A.memory();
    const callables = [...exportsOf(A as unknown as Record<string, unknown>), ...tensorMethods()];
    expect(callables.length).toBeGreaterThan(100);
    const bad = new Map<string, string>();
    let calls = 0;
    const t0 = Date.now();
    await fc.assert(
      fc.asyncProperty(
        fc.nat(callables.length - 1),
        fc.array(fc.nat(junk.length - 1), { maxLength: 4 }),
        fc.nat(receivers.length - 1),
        async (ci, argIx, ri) => {
          const c = callables[ci];
          calls++;
          if (process.env.JUNK_TRACE)
            (await import('node:fs')).appendFileSync('/tmp/safety/trace.txt', `${c.name} ${argIx.map((i) => junk[i][0]).join(', ')}\n`);
          let result: unknown;
          let error: unknown = null;
          try {
            let pending: Promise<unknown> | null = null;
            result = A.tidy(() => {
              const r = c.call(
                argIx.map((i) => junk[i][1]()),
                receivers[ri],
              );
              if (r instanceof Promise) pending = r; // init, fashionMnist: awaited outside the (synchronous) scope
              return r instanceof Promise ? undefined : r;
            });
            if (pending !== null) result = await pending;
          } catch (e) {
            error = e;
          } finally {
            resetModes();
          }
          release(result);
          if (error !== null && !(error instanceof A.AdjointError)) {
            const key = `${c.name}(${argIx.map((i) => junk[i][0]).join(', ')})`;
            const e = error as Error;
            if (!bad.has(c.name)) bad.set(c.name, `${key}: ${e?.name}: ${e?.message}`);
          }
        },
      ),
      { numRuns: Number(process.env.JUNK_RUNS ?? 4000), seed: Number(process.env.JUNK_SEED ?? 16), interruptAfterTimeLimit: 20_000 },
    );
    expect(calls).toBeGreaterThan(500);
    expect([...bad.values()]).toEqual([]);

    // The engine still works: a known matmul, exactly.
    const m = A.tidy(() =>
      Array.from(
        A.matmul(
          A.tensor([
            [1, 2],
            [3, 4],
          ]),
          A.tensor([
            [5, 6],
            [7, 8],
          ]),
        ).toArray(),
      ),
    );
    expect(m).toEqual([19, 22, 43, 50]);
    // And nothing leaked: what a call left unreachable is reclaimed by the garbage collector.
    for (let i = 0; i < 4 && A.memory().tensors !== start.tensors; i++) {
      gc();
      await turn();
    }
    expect(A.memory().tensors).toBe(start.tensors);
    expect(A.memory().bytesInUse).toBe(start.bytesInUse);
    console.log(`junk arguments: ${calls} calls over ${callables.length} callables in ${Date.now() - t0} ms`);
  }, 60_000);
});
