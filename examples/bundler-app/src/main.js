// A tiny app that uses adjoint through a bundler: learns XOR with a 2-8-1 MLP and Adam.
// The kernels come in through @rollup/plugin-wasm: importing 'adjoint/adjoint.wasm' yields a
// loader whose call without imports compiles the module; init() takes the compiled Module. (The
// package also embeds the kernels, so a plain `await init()` works with no plugin at all.)
import { init, tensor, tidy, mseLoss, nn, optim } from 'adjoint';
import loadKernels from 'adjoint/adjoint.wasm';

const module = await loadKernels();
if (!(module instanceof WebAssembly.Module)) throw new Error('@rollup/plugin-wasm did not yield a WebAssembly.Module');
await init({ module });
const x = tensor([
  [0, 0],
  [0, 1],
  [1, 0],
  [1, 1],
]);
const y = tensor([[0], [1], [1], [0]]);
const net = new nn.Sequential(new nn.Linear(2, 8, { seed: 1 }), new nn.Tanh(), new nn.Linear(8, 1, { seed: 2 }));
const opt = new optim.Adam(net.parameters(), { lr: 0.05 });
let loss = Infinity;
for (let step = 0; step < 300; step++) {
  loss = tidy(() => {
    const l = mseLoss(net.forward(x), y);
    l.backward();
    return l.item();
  });
  opt.step();
  opt.zeroGrad();
}
const pred = Array.from(
  tidy(() => net.forward(x).toArray()),
  (v) => Math.round(v),
);
const ok = loss < 0.01 && pred.join() === '0,1,1,0';
console.log(`bundler-app: loss ${loss.toFixed(6)}, predictions ${pred.join(',')} -> ${ok ? 'ok' : 'FAILED'}`);
if (!ok && typeof process !== 'undefined') process.exitCode = 1;
