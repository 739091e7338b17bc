// The limit of memory safety without discipline: the FinalizationRegistry's callbacks run only
// between event-loop tasks, so a synchronous loop without tidy() that never awaits cannot get
// anything back from the garbage collector, however unreachable its tensors are. Shown here
// with a capped memory: the synchronous loop runs out, and its OutOfMemoryError says why (the
// tensors waiting for the collector, tidy, the event loop). The same loop that yields every
// 100 steps (collecting there) runs 10,000 steps in the same memory. (This file is its own vitest worker, so it
// starts the engine with its own cap.)
import v8 from 'node:v8';
import vm from 'node:vm';
import { expect, it } from 'vitest';
import * as A from '../src/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const turn = () => new Promise((r) => setImmediate(r));
const MAX = 32 << 20;

it('a synchronous loop without tidy runs out of memory with a message naming tidy and the event loop; yielding, it does not', async () => {
  await A.init({ memory: { maximumBytes: MAX } });
  const x = A.randn([128, 2], { seed: 1 });
  const y = x.sin().sum(1, true);
  const w1 = A.randn([2, 32], { seed: 2, requiresGrad: true });
  const w2 = A.randn([32, 1], { seed: 3, requiresGrad: true });
  const opt = new A.optim.SGD([w1, w2], { lr: 0.05, momentum: 0.9 });
  const train = (): number => {
    const loss = x.matmul(w1).tanh().matmul(w2).sub(y).square().mean();
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss.item();
  };
  let error: unknown = null,
    steps = 0;
  try {
    for (; steps < 10_000; steps++) train();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(A.OutOfMemoryError);
  expect(steps).toBeLessThan(10_000);
  const message = (error as Error).message;
  expect(message).toMatch(/\d+ of them are in no tidy\(\) scope and wait for the garbage collector/);
  expect(message).toMatch(/only between event-loop tasks: a synchronous loop that never awaits/);
  expect(message).toMatch(/tidy\(\(\) => …\), declare them with `using`/);
  // Once the loop yields, the collector gives everything back, and a loop that yields trains on.
  for (let i = 0; i < 3; i++) {
    await turn();
    gc();
    await turn();
  }
  let last = NaN;
  for (let step = 0; step < 10_000; step++) {
    last = train();
    if (step % 100 === 99) {
      await turn(); // as test/gc-training.test.ts: yield, and collect so the bound does not hang on V8's heuristics
      gc();
      await turn();
    }
  }
  expect(Number.isFinite(last)).toBe(true);
  expect(A.memory().wasmBytes).toBeLessThanOrEqual(MAX);
}, 120_000);
