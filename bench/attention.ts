// Attention and recurrent steps. Rows:
//   attention fwd+bwd, B=12, H=4, d=32, T=64 and T=256 (float32, causal and not): the fused
//     scaledDotProductAttention primitive against the same attention composed of matmul and
//     softmax ops (which stores the Tq×Tk weights), with the peak bytes of one step for each
//     (memory().peakBytes after resetPeak(), inputs allocated beforehand);
//   LSTM / GRU, hidden 128, T=50, batch 16, input 128: forward + backward of one sequence.
// Run: node scripts/run-ts.mjs bench/attention.ts [--quick] [--only attention|rnn] [--threads N]
// Times are medians of process CPU time per call (bench/timing.ts), the two attention variants
// interleaved round by round so machine load hits both sides of a ratio.
import * as A from '../src/index.js';
import { timeSync, type TimeOptions } from './timing.js';

const argv = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = argv.includes('--quick');
const only = opt('only')?.split(',');
const threads = Number(opt('threads') ?? 1);
const budget: TimeOptions = quick ? { budgetMs: 150, warmMs: 30 } : { budgetMs: 600, warmMs: 100 };

await A.init({ threads });

/** Attention composed of today's ops: S = q kᵀ·scale (+ causal bias), P = softmax(S), P·v. */
function composed(q: A.Tensor, k: A.Tensor, v: A.Tensor, bias: A.Tensor | null): A.Tensor {
  let s = A.mul(A.matmul(q, A.transpose(k, [0, 1, 3, 2])), 1 / Math.sqrt(q.shape[3]));
  if (bias !== null) s = A.add(s, bias);
  return A.matmul(A.softmax(s, -1), v);
}

function causalBias(T: number): A.Tensor {
  const a = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) a[i * T + j] = -Infinity;
  return A.keep(A.tensor(a, { shape: [T, T] }));
}

interface Row {
  name: string;
  ms: number;
  peakMB: number;
}
const rows: Row[] = [];

/** One fwd+bwd step of f on fresh leaves q, k, v (made outside the timed region) and its peak bytes. */
function attentionRows(T: number, causal: boolean): void {
  const [B, H, d] = [12, 4, 32];
  const mk = (seed: number) => A.keep(A.randn([B, H, T, d], { seed }));
  const q = mk(1),
    k = mk(2),
    v = mk(3),
    w = mk(4);
  for (const x of [q, k, v]) x.requiresGrad = true;
  const bias = causal ? causalBias(T) : null;
  const fused = () => A.scaledDotProductAttention(q, k, v, { causal });
  const comp = () => composed(q, k, v, bias);
  const step = (f: () => A.Tensor) => () =>
    A.tidy(() => {
      A.sum(A.mul(f(), w)).backward();
      for (const x of [q, k, v]) {
        A.sum(x.grad!); // reads the gradient (materialises a lazy slice) without copying it out to JS
        x.grad!.dispose();
        x.grad = null;
      }
    });
  const peak = (f: () => void): number => {
    A.resetPeak();
    const before = A.memory().bytesInUse;
    f();
    return (A.memory().peakBytes - before) / 2 ** 20;
  };
  const pf = peak(step(fused)),
    pc = peak(step(comp));
  const times = { fused: [] as number[], comp: [] as number[] };
  for (let round = 0; round < (quick ? 2 : 4); round++) {
    times.fused.push(timeSync(step(fused), budget).cpuMedian * 1e3);
    times.comp.push(timeSync(step(comp), budget).cpuMedian * 1e3);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const label = `attention fwd+bwd B=${B} H=${H} T=${T} d=${d}${causal ? ' causal' : ''}`;
  rows.push(
    { name: `${label}: fused`, ms: med(times.fused), peakMB: pf },
    { name: `${label}: matmul+softmax`, ms: med(times.comp), peakMB: pc },
  );
  for (const x of [q, k, v, w, bias]) x?.dispose();
}

/** One forward+backward of a sequence through nn.LSTM / nn.GRU. */
function rnnRow(kind: 'LSTM' | 'GRU'): void {
  const [T, Bt, I, Hd] = [50, 16, 128, 128];
  const net = kind === 'LSTM' ? new A.nn.LSTM(I, Hd, { seed: 1 }) : new A.nn.GRU(I, Hd, { seed: 1 });
  const x = A.keep(A.randn([T, Bt, I], { seed: 2 }));
  const step = () =>
    A.tidy(() => {
      const [out] = net.forward(x);
      A.sum(out).backward();
      for (const p of net.parameters()) {
        p.grad!.dispose();
        p.grad = null;
      }
    });
  const pk = (() => {
    A.resetPeak();
    const before = A.memory().bytesInUse;
    step();
    return (A.memory().peakBytes - before) / 2 ** 20;
  })();
  rows.push({ name: `${kind} hidden ${Hd} T=${T} batch ${Bt} fwd+bwd`, ms: timeSync(step, budget).cpuMedian * 1e3, peakMB: pk });
  net.dispose();
  x.dispose();
}

if (only === undefined || only.includes('attention')) {
  for (const T of [64, 256]) for (const causal of [false, true]) attentionRows(T, causal);
}
if (only === undefined || only.includes('rnn')) {
  rnnRow('LSTM');
  rnnRow('GRU');
}

console.log(`threads: ${threads}`);
console.log('| workload | ms (CPU, median) | peak MB |');
console.log('|---|---:|---:|');
for (const r of rows) console.log(`| ${r.name} | ${r.ms.toFixed(2)} | ${r.peakMB.toFixed(2)} |`);
for (let i = 0; i + 1 < rows.length; i += 2) {
  if (!rows[i].name.endsWith('fused')) continue;
  console.log(
    `${rows[i].name.replace(/: fused$/, '')}: fused is ${(rows[i + 1].ms / rows[i].ms).toFixed(2)}× faster, ${(rows[i + 1].peakMB / rows[i].peakMB).toFixed(1)}× less peak memory`,
  );
}
