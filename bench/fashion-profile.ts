// Per-kernel profile of the Fashion-MNIST CNN train step (src/cli/models.ts's CNN, Adam, batch
// 128; the step bench/fashion.ts times), one thread: every kernel export is wrapped to add its
// process-CPU time per launch (process.cpuUsage, so a loaded machine's waiting is not counted),
// conv kernels keyed by their geometry. The kernels' sum against the step's CPU time gives the
// JS share (dispatch, tape, allocation).
//
//   node scripts/run-ts.mjs bench/fashion-profile.ts [steps]
import { init, tidy, crossEntropy, optim, tensor } from '../src/index.js';
import { buildModel } from '../src/cli/models.js';
import { timeKernels } from './kernel-times.js';

await init();
// Convolutions by their geometry block (assembly/conv.ts: C, H, W, O, kh, …, sh, …, ph).
const times = timeKernels((name, a, memory) => {
  if (!name.startsWith('conv2d')) return { key: name };
  const g = new Int32Array(memory.buffer, a[4], 16);
  return { key: `${name} C${g[1]} ${g[2]}×${g[3]} O${g[4]} k${g[5]} s${g[7]} p${g[9]}` };
});
const { acc } = times;

const B = 128;
const model = buildModel('fashion-mnist', 'cnn', 0);
const opt = new optim.Adam(model.parameters(), { lr: 1e-3 });
const xs = new Float32Array(B * 784).map((_, i) => ((i * 7919) % 256) / 255);
const ys = Int32Array.from({ length: B }, (_, i) => (i * 31) % 10);
const step = () =>
  tidy(() => {
    const loss = crossEntropy(model.forward(tensor(xs, { shape: [B, 784] })), ys);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss.item();
  });
for (let i = 0; i < 3; i++) step();
const N = Number(process.argv[2] ?? 10);
times.on = true;
const cpu0 = process.cpuUsage(),
  t0 = performance.now();
for (let i = 0; i < N; i++) step();
const wall = (performance.now() - t0) / N;
times.on = false;
const cpu = process.cpuUsage(cpu0);
const rows = [...acc].sort((a, b) => b[1].ms - a[1].ms);
const ksum = rows.reduce((s, [, e]) => s + e.ms, 0);
const cpuMs = (cpu.user + cpu.system) / 1000 / N;
console.log(
  `step wall ${wall.toFixed(1)} ms, cpu ${cpuMs.toFixed(1)} ms, kernels ${(ksum / N).toFixed(1)} ms (×469 steps: ${((cpuMs * 469) / 1000).toFixed(1)} s cpu)`,
);
for (const [n, e] of rows.slice(0, 30))
  console.log(
    `${n.padEnd(56)} ${(e.ms / N).toFixed(2).padStart(8)} ms ${(e.n / N).toFixed(0).padStart(4)} calls ${((100 * e.ms) / ksum).toFixed(1).padStart(5)}%`,
  );
