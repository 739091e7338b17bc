// `node bench/gemm-shapes.mjs A.wasm [B.wasm …] [--rounds N] [--ms T] [--cold] [--only 768x128,…]`: the GEMM rate of the
// training steps' shapes (the GPT step's and the deep MLP step's, as bench/gpt-profile.ts and
// bench/step-profile.ts list them, the deep and digits steps) plus 512³, for one kernel build or two against each other.
// Both modules run the same calls on the same data in interleaved rounds (A, B, B, A, …); per
// shape it prints each build's GFLOP/s (median over rounds, process CPU time) and the median of
// the per-round time ratios B/A, and checks the outputs are identical bit for bit. Pins itself to
// the last core, as bench/run.ts does.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { loadKernels } from '../scripts/kernel-load.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : dflt);
const files = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const rounds = Number(opt('rounds', '7'));
const cold = args.includes('--cold');
const only = opt('only', '')?.split(',').filter(Boolean);
if (files.length < 1) throw new Error('usage: node bench/gemm-shapes.mjs A.wasm [B.wasm] [--rounds N] [--only shape,…]');
spawnSync('taskset', ['-p', '-c', String(os.cpus().length - 1), String(process.pid)], { stdio: 'ignore' });

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e3;
};
const PAGES = 2048; // 128 MiB each
async function load(file) {
  const m = await loadKernels(file, PAGES);
  return { ...m, evict: m.alloc(8 << 20) };
}
// --instances n: each build instantiated n times, its time the mean over them (one compiled
// instance can run a few % slower or faster than another of the same bytes, by code placement).
const inst = Number(opt('instances', '1'));
const owner = files.flatMap((_, f) => Array(inst).fill(f));
const mods = [];
for (const f of owner) mods.push(await load(files[f]));

function fill(m, p, n, seed) {
  const a = new Float32Array(m.memory.buffer, p, n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = (s / 2 ** 32) * 4 - 2;
  }
}

// [label, kind, M, N, K, tA, tB]; kind: gemm (overwrite), acc (accumulate), gba (bias, act), sgd.
const shapes = [
  ['gba 768x128x128 tB', 'gba', 768, 128, 128, 0, 1],
  ['gemm 128x128x768 tA', 'gemm', 128, 128, 768, 1, 0],
  ['gba 768x128x512 tB', 'gba', 768, 128, 512, 0, 1],
  ['gba 768x512x128 tB', 'gba', 768, 512, 128, 0, 1],
  ['gemm 512x128x768 tA', 'gemm', 512, 128, 768, 1, 0],
  ['gemm 128x512x768 tA', 'gemm', 128, 512, 768, 1, 0],
  ['gemm 768x128x128', 'gemm', 768, 128, 128, 0, 0],
  ['gemm 768x128x512', 'gemm', 768, 128, 512, 0, 0],
  ['gemm 768x512x128', 'gemm', 768, 512, 128, 0, 0],
  ['deep gba 64x256x256 tanh', 'gba2', 64, 256, 256, 0, 0],
  ['deep gemm 64x256x256 tB', 'gemm', 64, 256, 256, 0, 1],
  ['deep sgd 256x256x64 tA', 'sgd', 256, 256, 64, 1, 0],
  ['digits 512x64x32 tA', 'gemm', 512, 64, 32, 1, 0],
  ['digits gba 32x10x512 tB', 'gba', 32, 10, 512, 0, 1],
  ['digits 10x512x32 tA', 'gemm', 10, 512, 32, 1, 0],
  ['gemm 512x512x512', 'gemm', 512, 512, 512, 0, 0],
  ['odd 77x45x300 tA tB acc', 'acc', 77, 45, 300, 1, 1],
];

function make(m, [, kind, M, N, K, tA, tB]) {
  const { k, alloc } = m;
  const a = alloc(M * K * 4);
  const b = alloc(K * N * 4);
  const c = alloc(M * N * 4);
  const bias = alloc(N * 4);
  const p = alloc(M * N * 4);
  fill(m, a, M * K, 1);
  fill(m, b, K * N, 2);
  fill(m, bias, N, 3);
  fill(m, c, M * N, 4);
  fill(m, p, M * N, 5);
  const lda = tA ? M : K;
  const ldb = tB ? K : N;
  // Enough calls per timed run to last --ms (default 5) ms at 45 GFLOP/s.
  const reps = Math.max(2, Math.round((Number(opt('ms', '5')) * 45e6) / (2 * M * N * K)));
  const one =
    kind === 'gba' || kind === 'gba2'
      ? () => k.gemm_bias_act_f32(a, b, c, bias, M, N, K, lda, ldb, N, tA, tB, kind === 'gba2' ? 2 : 0)
      : kind === 'sgd'
        ? () => k.gemm_sgd_f32(a, b, c, p, M, N, K, lda, ldb, N, tA, tB, 1e-9, 0)
        : () => k.gemm_f32(a, b, c, M, N, K, lda, ldb, N, tA, tB, kind === 'acc' ? 1 : 0);
  const reset = kind === 'acc' || kind === 'sgd' ? () => (fill(m, c, M * N, 4), fill(m, p, M * N, 5)) : () => {};
  // --cold: before each call, 8 MB of stores evict L1 and L2 (the operands stay in L3 at most),
  // as in a training step where other kernels ran in between; only the GEMM calls are timed.
  const evict = m.evict;
  return {
    run: cold
      ? () => {
          let t = 0;
          for (let i = 0; i < reps; i++) {
            k.fill_f32(evict, 2 << 20, i);
            const t0 = cpu();
            one();
            t += cpu() - t0;
          }
          return t;
        }
      : () => {
          for (let i = 0; i < reps; i++) one();
        },
    check: () => {
      reset();
      one();
      one();
      return [new Uint8Array(m.memory.buffer, c, M * N * 4).slice(), new Uint8Array(m.memory.buffer, p, M * N * 4).slice()];
    },
    flop: 2 * M * N * K * reps,
  };
}

const time = (fn) => {
  const t0 = cpu();
  const t = fn();
  return t ?? cpu() - t0;
};
const med = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
console.log(
  `${files.join(' vs ')}\n${rounds} rounds, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const shape of shapes) {
  if (only.length && !only.some((o) => shape[0].includes(o))) continue;
  const runs = mods.map((m) => make(m, shape));
  for (let i = 0; i < 5; i++) for (const r of runs) r.run();
  const outs = runs.map((r) => r.check());
  const same = outs.every((o) => o.every((x, j) => Buffer.compare(Buffer.from(x), Buffer.from(outs[0][j])) === 0));
  const t = files.map(() => []);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...runs.keys()].reverse() : [...runs.keys()];
    const tr = files.map(() => 0);
    for (let i = 0; i < 4; i++) for (const j of i % 2 ? [...order].reverse() : order) tr[owner[j]] += time(runs[j].run);
    tr.forEach((x, f) => t[f].push(x / 4 / inst));
  }
  const rate = t.map((ts) => (runs[0].flop / med(ts) / 1e6).toFixed(1));
  const ratio = t
    .slice(1)
    .map((tb, j) => {
      const r = tb.map((x, i) => x / t[0][i]);
      return `  ${String.fromCharCode(66 + j)}/A ${med(r).toFixed(3)} (${Math.min(...r).toFixed(3)}–${Math.max(...r).toFixed(3)})`;
    })
    .join('');
  console.log(
    `${shape[0].padEnd(28)} GFLOP/s ${rate.join(' / ')}${ratio}${t.length > 1 ? (same ? '  identical' : '  OUTPUTS DIFFER') : ''}`,
  );
}
