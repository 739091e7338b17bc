// The fused float32 attention kernels against the GEMM they are built from, at the attention
// bench's shapes (48 heads = B 12 × H 4, d = dv = 32, T = 64 and 256, causal and not): one
// forward + backward of attention_f32 / attention_vjp_f32 called directly (no op layer, no
// allocation) and the 6 gemm_f32 calls per head that the composed attention makes (S = QKᵀ,
// O = PV, dV = PᵀdO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀQ; no softmax), interleaved round by round.
// It prints both rates in GFLOP/s (fused counts 7 GEMMs of 2·T²·d, halved when causal: it
// recomputes S) and the median per-round ratio: the measured bound for fused against composed.
// Run: node scripts/run-ts.mjs bench/attention-kernels.ts [--rounds N]
import * as A from '../src/index.js';
import { Tensor } from '../src/ops/tensor.js';
import { writeArgs, kernel } from '../src/wasm/module.js';
import { scratchOf } from '../src/wasm/scratch.js';
import { timeSync } from './timing.js';

await A.init({ threads: 1 });
const ri = process.argv.indexOf('--rounds');
const rounds = ri >= 0 ? Number(process.argv[ri + 1]) : 7;
const [N, d, dv, b] = [48, 32, 32, 4];
const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

function measure(T: number, causal: number): void {
  const r = (n: number, seed: number) => A.keep(A.randn([n], { seed }));
  const q = r(N * T * d, 1),
    k = r(N * T * d, 2),
    v = r(N * T * dv, 3),
    gy = r(N * T * (dv + 1), 4);
  const y = Tensor.empty([N * T * (dv + 1)], 'float32');
  const out = Tensor.empty([N * T * (2 * d + dv)], 'float32');
  const T4 = Math.ceil(T / 4) * 4;
  const scr = Tensor.empty([T4 * (2 * d + 2 * dv + 16) + 16 * (d + dv) + 80], 'float32'); // ≥ the forward's too
  const S = Tensor.empty([N * T * T], 'float32');
  const own = scratchOf(0);
  kernel('gemm_set_scratch')(own.ptr, own.bytes);
  const g = () => writeArgs(0, [T, T, d, dv, causal, 1, 1, 0, 0]);
  const scale = 1 / Math.sqrt(d);
  const fwd = kernel('attention_f32'),
    bwd = kernel('attention_vjp_f32'),
    gemm = kernel('gemm_f32');
  const fused = () => {
    fwd(q.ptr, k.ptr, v.ptr, 0, y.ptr, 0, N, g(), scale, 0, scr.ptr, 0, 0);
    const o = out.ptr;
    bwd(q.ptr, k.ptr, v.ptr, 0, y.ptr, gy.ptr, o, o + N * T * d * b, o + 2 * N * T * d * b, 0, N, g(), scale, 0, scr.ptr, 0, 0);
  };
  const gemm6 = () => {
    for (let n = 0; n < N; n++) {
      const qn = q.ptr + n * T * d * b,
        kn = k.ptr + n * T * d * b,
        vn = v.ptr + n * T * dv * b,
        sn = S.ptr + n * T * T * b,
        on = out.ptr + n * T * d * b;
      gemm(qn, kn, sn, T, T, d, d, d, T, 0, 1, 0);
      gemm(sn, vn, on, T, dv, T, T, dv, dv, 0, 0, 0);
      gemm(sn, qn, on, T, dv, T, T, d, dv, 1, 0, 0);
      gemm(qn, vn, sn, T, T, dv, d, dv, T, 0, 1, 0);
      gemm(sn, kn, on, T, d, T, T, d, d, 0, 0, 0);
      gemm(sn, qn, on, T, d, T, T, d, d, 1, 0, 0);
    }
  };
  const tf: number[] = [],
    tg: number[] = [];
  for (let i = 0; i < rounds; i++) {
    tf.push(timeSync(fused, { budgetMs: 200, warmMs: 50 }).cpuMedian * 1e3);
    tg.push(timeSync(gemm6, { budgetMs: 200, warmMs: 50 }).cpuMedian * 1e3);
  }
  const flopsF = N * 7 * 2 * T * T * d * (causal ? 0.5 : 1),
    flopsG = N * 6 * 2 * T * T * d;
  const [f, gg] = [med(tf), med(tg)];
  console.log(
    `T=${T}${causal ? ' causal' : ''}: fused fwd+bwd ${f.toFixed(3)} ms = ${(flopsF / f / 1e6).toFixed(1)} GFLOP/s; ` +
      `6 GEMMs ${gg.toFixed(3)} ms = ${(flopsG / gg / 1e6).toFixed(1)} GFLOP/s; fused/GEMMs ${med(tf.map((x, i) => x / tg[i])).toFixed(3)} (per-round median)`,
  );
  for (const t of [q, k, v, gy, y, out, scr, S]) t.dispose();
}

for (const T of [64, 256]) for (const causal of [0, 1]) measure(T, causal);
