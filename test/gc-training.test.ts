// Memory without discipline: the README's training loop run for 10,000 steps with no tidy(),
// no dispose() and no `using`. Every step's loss, activations and graph become unreachable at
// the end of the step and the FinalizationRegistry gives their memory back, so the wasm bytes
// in use and the JS heap stay bounded. Finalizers run between event-loop tasks: the loop
// yields every 100 steps (as an async training loop, or a browser's animation frames, does),
// and calls the garbage collector there so the bound does not depend on V8's heuristics.
import v8 from 'node:v8';
import vm from 'node:vm';
import { expect, it } from 'vitest';
import * as A from '../src/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const turn = () => new Promise((r) => setImmediate(r));

it('10,000 steps of the README loop without tidy stay under a bounded heap and wasm memory', async () => {
  await A.init();
  await turn();
  gc();
  await turn();
  const start = A.memory();
  const x = A.randn([128, 2], { seed: 1 });
  const y = x.sin().sum(1, true);
  const w1 = A.randn([2, 32], { seed: 2, requiresGrad: true });
  const w2 = A.randn([32, 1], { seed: 3, requiresGrad: true });
  const opt = new A.optim.SGD([w1, w2], { lr: 0.05, momentum: 0.9 });
  const samples: { bytes: number; wasm: number; heap: number; tensors: number }[] = [];
  // The README's step, minus tidy (a function of its own: an async function's frame would keep the last loss reachable).
  const train = (): number => {
    const loss = x.matmul(w1).tanh().matmul(w2).sub(y).square().mean();
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss.item();
  };
  let first = NaN,
    last = NaN;
  for (let step = 0; step < 10_000; step++) {
    const l = train();
    if (step === 0) first = l;
    last = l;
    if (step % 100 === 99) {
      await turn(); // new handles are registered, earlier finalizers run
      gc();
      await turn();
      const m = A.memory();
      samples.push({ bytes: m.bytesInUse, wasm: m.wasmBytes, heap: process.memoryUsage().heapUsed, tensors: m.tensors });
    }
  }
  expect(last).toBeLessThan(first / 10); // it trained
  // One step's working set is a few tens of KiB; 100 unreclaimed steps would be ~5 MiB, 10,000 ~0.5 GiB.
  const late = samples.slice(10);
  const maxBytes = Math.max(...late.map((s) => s.bytes));
  const maxTensors = Math.max(...late.map((s) => s.tensors));
  expect(maxBytes - start.bytesInUse).toBeLessThan(6 << 20);
  expect(maxTensors - start.tensors).toBeLessThan(3000);
  // No growth from the first tenth to the end: wasm memory and the JS heap have levelled off.
  expect(Math.max(...late.map((s) => s.wasm))).toBe(samples[9].wasm);
  const heapEarly = Math.max(...samples.slice(5, 15).map((s) => s.heap));
  expect(Math.max(...samples.slice(-10).map((s) => s.heap))).toBeLessThan(heapEarly * 1.5 + (4 << 20));
  // And once the last step's tensors are dropped too, nothing but the model and optimizer is left.
  for (const t of [x, y, w1, w2]) t.dispose();
  opt.dispose();
  // Finalizers run in later tasks, and a loaded machine (the whole suite runs files in parallel)
  // may need more than a few collections and turns to deliver them all: wait up to ~2 s.
  for (let i = 0; i < 40 && A.memory().tensors !== start.tensors; i++) {
    await turn();
    gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(A.memory().tensors).toBe(start.tensors);
  expect(A.memory().bytesInUse).toBe(start.bytesInUse);
}, 120_000);
