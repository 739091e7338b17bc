// `node scripts/kernel-ab.mjs A.wasm B.wasm [--rounds N] [--reps N] [--only name,…]`: the speed of two kernel
// builds against each other, for size work (a cut must not cost f32 speed). Both modules are
// instantiated in this process, each with its own memory and GEMM scratch, and run the same
// workloads on the same data in interleaved rounds (A, B, B, A, …); per workload it prints the
// median of per-round CPU-time ratios B/A and their range. Pins itself to the last core (taskset),
// as bench/run.ts does. Results must be identical bit for bit: the script checks the outputs.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { loadKernels } from './kernel-load.mjs';

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : dflt);
const [fileA, fileB] = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
const rounds = Number(opt('rounds', '9'));
const only = opt('only', '')?.split(',').filter(Boolean);
if (!fileA || !fileB) throw new Error('usage: node scripts/kernel-ab.mjs A.wasm B.wasm [--rounds N] [--only name,…]');
spawnSync('taskset', ['-p', '-c', String(os.cpus().length - 1), String(process.pid)], { stdio: 'ignore' });

const PAGES = 1024; // 64 MiB each
const load = (file) => loadKernels(file, PAGES);
const mods = [await load(fileA), await load(fileB)];

/** Fills n f32 (or f64) at p with the same pseudo-random values in [-2, 2) in both modules. */
function fill(m, p, n, S = 4, seed = 1) {
  const a = S === 4 ? new Float32Array(m.memory.buffer, p, n) : new Float64Array(m.memory.buffer, p, n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = (s / 2 ** 32) * 4 - 2;
  }
}

// Each workload: setup(m) → run() closure and the output region to compare.
const T = 50;
const B = 16;
const H = 128;
const workloads = {
  'lstm_seq f32 fwd+bwd (T50 B16 H128)': (m, S = 4) => {
    const { k, alloc } = m;
    const GH = 4 * H;
    const xg = alloc(T * B * GH * S);
    const whh = alloc(GH * H * S);
    const bhh = alloc(GH * S);
    const h0 = alloc(B * H * S);
    const c0 = alloc(B * H * S);
    const y = alloc(T * B * 6 * H * S);
    const gy = alloc(T * B * 6 * H * S);
    const d = alloc((T * B * GH + GH * H + GH + 2 * B * H) * S);
    const dhg = alloc(T * B * GH * S);
    const ws = alloc(k.rnn_seq_scratch_bytes(B, H, 4, S));
    for (const [p, n, s] of [
      [xg, T * B * GH, 1],
      [whh, GH * H, 2],
      [bhh, GH, 3],
      [h0, B * H, 4],
      [c0, B * H, 5],
      [gy, T * B * 6 * H, 6],
    ])
      fill(m, p, n, S, s);
    for (let i = 0; i < GH * H; i++)
      (S === 4 ? new Float32Array(m.memory.buffer, whh, GH * H) : new Float64Array(m.memory.buffer, whh, GH * H))[i] *= 0.05;
    const f = S === 4 ? [k.lstm_seq_f32, k.lstm_seq_vjp_f32] : [k.lstm_seq_f64, k.lstm_seq_vjp_f64];
    return {
      run: () => {
        f[0](xg, whh, bhh, h0, c0, y, ws, T, B, H);
        f[1](xg, whh, bhh, h0, c0, y, gy, d, dhg, ws, T, B, H);
      },
      out: [d, (T * B * GH + GH * H + GH + 2 * B * H) * S],
    };
  },
  'gru_seq f32 fwd+bwd (T50 B16 H128)': (m, S = 4) => {
    const { k, alloc } = m;
    const GH = 3 * H;
    const xg = alloc(T * B * GH * S);
    const whh = alloc(GH * H * S);
    const bhh = alloc(GH * S);
    const h0 = alloc(B * H * S);
    const y = alloc(T * B * 4 * H * S);
    const gy = alloc(T * B * 4 * H * S);
    const d = alloc((T * B * GH + GH * H + GH + B * H) * S);
    const dhg = alloc(T * B * GH * S);
    const ws = alloc(k.rnn_seq_scratch_bytes(B, H, 3, S));
    for (const [p, n, s] of [
      [xg, T * B * GH, 1],
      [whh, GH * H, 2],
      [bhh, GH, 3],
      [h0, B * H, 4],
      [gy, T * B * 4 * H, 6],
    ])
      fill(m, p, n, S, s);
    for (let i = 0; i < GH * H; i++)
      (S === 4 ? new Float32Array(m.memory.buffer, whh, GH * H) : new Float64Array(m.memory.buffer, whh, GH * H))[i] *= 0.05;
    return {
      run: () => {
        k.gru_seq_f32(xg, whh, bhh, h0, y, ws, T, B, H);
        k.gru_seq_vjp_f32(xg, whh, bhh, h0, y, gy, d, dhg, ws, T, B, H);
      },
      out: [d, (T * B * GH + GH * H + GH + B * H) * S],
    };
  },
  'lstm_cell f32 fwd+bwd (B64 H256)': (m) => {
    const { k, alloc } = m;
    const [b, h] = [64, 256];
    const xg = alloc(b * 4 * h * 4);
    const hg = alloc(b * 4 * h * 4);
    const c = alloc(b * h * 4);
    const out = alloc(b * 2 * h * 4);
    const g = alloc(b * 2 * h * 4);
    const d = alloc(b * 5 * h * 4);
    for (const [p, n, s] of [
      [xg, b * 4 * h, 1],
      [hg, b * 4 * h, 2],
      [c, b * h, 3],
      [g, b * 2 * h, 4],
    ])
      fill(m, p, n, 4, s);
    return {
      run: () => {
        for (let r = 0; r < 20; r++) {
          k.lstm_cell_f32(xg, hg, c, out, b, h);
          k.lstm_cell_vjp_f32(xg, hg, c, g, d, b, h);
        }
      },
      out: [d, b * 5 * h * 4],
    };
  },
  'gemm f32 512³': (m) => {
    const { k, alloc } = m;
    const n = 512;
    const a = alloc(n * n * 4);
    const b = alloc(n * n * 4);
    const c = alloc(n * n * 4);
    fill(m, a, n * n, 4, 1);
    fill(m, b, n * n, 4, 2);
    return { run: () => k.gemm_f32(a, b, c, n, n, n, n, n, n, 0, 0, 0), out: [c, n * n * 4] };
  },
  'sigmoid+tanh+exp f32 (1M)': (m) => {
    const { k, alloc } = m;
    const n = 1 << 20;
    const x = alloc(n * 4);
    const y = alloc(n * 4);
    fill(m, x, n, 4, 1);
    return {
      run: () => {
        k.sigmoid_f32(x, y, n, 0, 0);
        k.tanh_f32(y, y, n, 0, 0);
        k.exp_f32(y, y, n, 0, 0);
      },
      out: [y, n * 4],
    };
  },
  'lstm_seq f64 fwd+bwd (T50 B16 H128)': (m) => workloads['lstm_seq f32 fwd+bwd (T50 B16 H128)'](m, 8),
};

// Process CPU time, not wall time: on a loaded machine wall time mostly measures waiting for a core.
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e3;
};
const time = (fn) => {
  const t0 = cpu();
  fn();
  return cpu() - t0;
};
console.log(
  `A = ${fileA}\nB = ${fileB}\n${rounds} rounds, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const [name, make] of Object.entries(workloads)) {
  if (only.length && !only.some((o) => name.includes(o))) continue;
  const [a, b] = mods.map((m) => make(m));
  // Warm up both, then check they agree bit for bit.
  for (let i = 0; i < 3; i++) a.run(), b.run();
  const bytes = (m, [p, n]) => new Uint8Array(m.memory.buffer, p, n);
  const same = Buffer.compare(Buffer.from(bytes(mods[0], a.out)), Buffer.from(bytes(mods[1], b.out))) === 0;
  const ratios = [];
  for (let r = 0; r < rounds; r++) {
    const reps = Number(opt('reps', '5'));
    let ta = 0;
    let tb = 0;
    for (let i = 0; i < reps; i++) {
      if ((r + i) % 2 === 0) (ta += time(a.run)), (tb += time(b.run));
      else (tb += time(b.run)), (ta += time(a.run));
    }
    ratios.push(tb / ta);
  }
  ratios.sort((x, y) => x - y);
  const med = ratios[Math.floor(ratios.length / 2)];
  console.log(
    `${name.padEnd(40)} B/A median ${med.toFixed(3)}  range ${ratios[0].toFixed(3)}–${ratios.at(-1).toFixed(3)}  ${same ? 'outputs identical' : 'OUTPUTS DIFFER'}`,
  );
}
