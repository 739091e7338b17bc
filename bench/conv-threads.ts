// Kernels split across the thread pool beyond GEMM (issue 8): the small CNN's conv layers
// forward + backward (bench/workloads.ts: b32 28×28, conv 1→8 and 8→16, 3×3 stride 2 pad 1),
// its whole SGD train step, a larger conv layer (b32, 16→32 channels, 28×28), a bias-gradient sum [1024, 512] → [512] and a layerNorm [128, 256]
// forward + backward, at 1 and 2 threads in one process (the pool resized by init({ threads })
// between alternating blocks, so both see the same machine load). Prints medians in ms.
//   npm run asbuild && node scripts/run-ts.mjs bench/conv-threads.ts [--reps 60] [--blocks 4]
import os from 'node:os';
import * as A from '../src/index.js';
import { threadCount, threadStats } from '../src/testing.js';
import { CNN, cnnData, cnnOut2 } from './workloads.js';

const arg = (name: string, d: number): number => {
  const i = process.argv.indexOf(name);
  return i < 0 ? d : Number(process.argv[i + 1]);
};
const REPS = arg('--reps', 60),
  BLOCKS = arg('--blocks', 4);
await A.init({ threads: 2 });

const d = cnnData();
const { batch, hw, c1, c2, k, stride, pad, classes } = CNN;
const x = A.tensor(d.x, { shape: [batch, 1, hw, hw] });
const labels = Array.from(d.labels);
const w1 = A.tensor(d.w1, { shape: [c1, 1, k, k] }),
  b1 = A.tensor(d.b1, { shape: [c1] });
const w2 = A.tensor(d.w2, { shape: [c2, c1, k, k] }),
  b2 = A.tensor(d.b2, { shape: [c2] });
const fc = A.tensor(d.fc.w, { shape: [c2 * cnnOut2 * cnnOut2, classes] }),
  fb = A.tensor(d.fc.b, { shape: [classes] });
const params = [w1, b1, w2, b2, fc, fb];
for (const p of params) p.requiresGrad = true;
const opts = { stride, padding: pad };
const r2 = A.randn([batch, c2, cnnOut2, cnnOut2], { seed: 3 });
const wide = A.randn([128, 256], { seed: 4 }),
  plain = A.randn([1024, 512], { seed: 4 }),
  g256 = A.randn([128, 256], { seed: 5 });

/** Forward + backward of the two conv layers alone (loss Σ conv2(conv1(x))·r: the gradients reach x's layer and both filters). */
function convs(): void {
  A.tidy(() => {
    A.sum(A.mul(A.conv2d(A.conv2d(x, w1, opts), w2, opts), r2)).backward();
    for (const p of [w1, w2]) p.grad!.dispose(), (p.grad = null);
  });
}

/** One SGD step of the CNN (conv, relu, conv, relu, fc, crossEntropy). */
const opt = new A.optim.SGD(params, { lr: CNN.lr });
function step(): void {
  A.tidy(() => {
    let h = A.relu(A.conv2d(x, w1, b1, opts));
    h = A.relu(A.conv2d(h, w2, b2, opts));
    A.crossEntropy(A.add(A.matmul(A.reshape(h, [batch, -1]), fc), fb), labels).backward();
    opt.step();
    opt.zeroGrad();
  });
}

const biasGrad = (): void => A.tidy(() => void A.sum(plain, 0));
function norm(): void {
  A.tidy(() => {
    wide.requiresGrad = true;
    A.sum(A.mul(A.layerNorm(wide), g256)).backward();
    wide.grad!.dispose();
    wide.grad = null;
  });
}

/** A larger conv layer fwd+bwd (input, filter and bias gradients), where a kernel call takes milliseconds. */
const bx = A.randn([32, 16, 28, 28], { seed: 6 }),
  bw = A.randn([32, 16, 3, 3], { seed: 7 }),
  br = A.randn([32, 32, 28, 28], { seed: 8 });
bx.requiresGrad = bw.requiresGrad = true;
function bigConv(): void {
  A.tidy(() => {
    A.sum(A.mul(A.conv2d(bx, bw, { padding: 1 }), br)).backward();
    for (const p of [bx, bw]) p.grad!.dispose(), (p.grad = null);
  });
}

const cases: [string, () => void][] = [
  ['conv 16→32 3×3 b32 28×28 fwd+bwd', bigConv],
  ['CNN conv layers fwd+bwd', convs],
  ['CNN train step', step],
  ['bias-grad sum [1024,512]→[512]', biasGrad],
  ['layerNorm [128,256] fwd+bwd', norm],
];
const times = new Map<string, number[]>();
/** Per case at 2 threads: time the caller spent on its own pieces of split kernels, and waiting for the worker's, per call. */
const shares = new Map<string, { own: number; wait: number; n: number }>();
/** CPU time (all threads of the process) per call, by case and thread count: duplicated work or spinning shows here. */
const cpu = new Map<string, number>();
const median = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];

for (let b = 0; b < BLOCKS; b++) {
  for (const t of [1, 2]) {
    await A.init({ threads: t });
    for (const [name, f] of cases) {
      for (let i = 0; i < 5; i++) f(); // warm up the workers and the arena
      const own0 = threadStats.ownMs,
        wait0 = threadStats.waitMs,
        cpu0 = process.cpuUsage();
      for (let i = 0; i < REPS; i++) {
        const t0 = performance.now();
        f();
        const key = `${name}@${threadCount()}`;
        (times.get(key) ?? times.set(key, []).get(key)!).push(performance.now() - t0);
      }
      const c = process.cpuUsage(cpu0),
        cpuKey = `${name}@${t}`;
      cpu.set(cpuKey, (cpu.get(cpuKey) ?? 0) + (c.user + c.system) / 1000 / REPS / BLOCKS);
      const sh = shares.get(name) ?? shares.set(name, { own: 0, wait: 0, n: 0 }).get(name)!;
      if (t === 2)
        Object.assign(sh, { own: sh.own + threadStats.ownMs - own0, wait: sh.wait + threadStats.waitMs - wait0, n: sh.n + REPS });
    }
  }
}
// Medians, and the best sample (the machine is often shared: the best is the least disturbed).
const rows = cases.map(([name]) => {
  const one = times.get(`${name}@1`)!,
    two = times.get(`${name}@2`)!;
  const ms = (v: number) => +v.toFixed(3),
    best = (v: number[]) => Math.min(...v);
  return {
    case: name,
    '1 thr median': ms(median(one)),
    '2 thr median': ms(median(two)),
    speedup: +(median(one) / median(two)).toFixed(2),
    '1 thr best': ms(best(one)),
    '2 thr best': ms(best(two)),
    'best speedup': +(best(one) / best(two)).toFixed(2),
    'own pieces ms': ms(shares.get(name)!.own / shares.get(name)!.n),
    'wait ms': ms(shares.get(name)!.wait / shares.get(name)!.n),
    'cpu ms 1 thr': ms(cpu.get(`${name}@1`)!),
    'cpu ms 2 thr': ms(cpu.get(`${name}@2`)!),
  };
});
console.table(rows);
const { pauses, stolen, dispatches } = threadStats;
console.log(JSON.stringify({ rows, loadavg: os.loadavg().map((v) => +v.toFixed(2)), pauses, stolen, dispatches }));
