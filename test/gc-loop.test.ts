import { it, expect } from 'vitest';
import * as A from '../src/index.js';
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const turn = () => new Promise((r) => setImmediate(r));

it('scratch', async () => {
  await A.init();
  const x = A.randn([128, 2], { seed: 1 });
  const y = x.sin().sum(1, true);
  const w1 = A.randn([2, 32], { seed: 2, requiresGrad: true });
  const w2 = A.randn([32, 1], { seed: 3, requiresGrad: true });
  const opt = new A.optim.SGD([w1, w2], { lr: 0.05, momentum: 0.9 });
  const t0 = Date.now();
  for (let step = 0; step < 10000; step++) {
    const l = x.matmul(w1).tanh().matmul(w2).sub(y).square().mean();
    l.backward();
    opt.step();
    opt.zeroGrad();
    if (step % 500 === 0) { 
      await turn();
      const m = A.memory();
      console.log(step, m.tensors, m.bytesInUse, m.wasmBytes, process.memoryUsage().heapUsed, l.item());
    }
  }
  gc(); await turn(); await turn();
  console.log('end', A.memory(), Date.now() - t0);
}, 120000);
