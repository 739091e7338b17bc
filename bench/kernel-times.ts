// Per-kernel process-CPU time for the profiling benches (gpt-profile.ts, step-profile.ts,
// fashion-profile.ts): every kernel export of the initialised runtime is wrapped to add its
// process-CPU time per launch (process.cpuUsage, so a loaded machine's waiting is not counted),
// under a key that callers may refine (GEMMs by shape, with their FLOPs; convolutions by geometry).
import { runtime } from '../src/wasm/module.js';

/** A launch's key and, for products, its FLOPs. */
type KeyOf = (name: string, args: number[], memory: WebAssembly.Memory) => { key: string; flops?: number };

/** GEMMs (plain and with the bias/activation epilogue, f32) by shape, with their FLOPs; other kernels by name. */
const gemmKey: KeyOf = (n, a) => {
  if (n === 'gemm_f32') return { key: `gemm M${a[3]} N${a[4]} K${a[5]} tA${a[9]} tB${a[10]} acc${a[11]}`, flops: 2 * a[3] * a[4] * a[5] };
  if (n === 'gemm_bias_act_f32')
    return { key: `gba M${a[4]} N${a[5]} K${a[6]} tA${a[10]} tB${a[11]} act${a[12]}`, flops: 2 * a[4] * a[5] * a[6] };
  return { key: n };
};

/** Wraps the kernels once; `on` turns the timing on (off, a launch runs with one check added). */
export function timeKernels(keyOf: KeyOf = gemmKey) {
  const rt = runtime() as unknown as { exports: Record<string, unknown> };
  const acc = new Map<string, { ms: number; n: number }>();
  const flops = new Map<string, number>();
  const state = { on: false, acc, flops };
  const memory = rt.exports.memory as WebAssembly.Memory;
  const wrapped: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(rt.exports)) {
    if (typeof f !== 'function') {
      wrapped[name] = f;
      continue;
    }
    const g = f as (...a: number[]) => unknown;
    wrapped[name] = (...a: number[]) => {
      if (!state.on) return g(...a);
      const t = process.cpuUsage();
      const r = g(...a);
      const u = process.cpuUsage(t);
      const k = keyOf(name, a, memory);
      if (k.flops !== undefined) flops.set(k.key, k.flops);
      const e = acc.get(k.key) ?? { ms: 0, n: 0 };
      e.ms += (u.user + u.system) / 1000;
      e.n++;
      acc.set(k.key, e);
      return r;
    };
  }
  rt.exports = wrapped;
  return state;
}
