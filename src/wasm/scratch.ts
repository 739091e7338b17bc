// The GEMM packing scratch: one region per thread, reserved from the arena on first use and
// kept for the runtime's life (pool restarts reuse them).
import { runtime } from './module.js';

/** GEMM scratch regions reserved per runtime, one per thread (kept across pool restarts). */
const regions = new WeakMap<object, { scratch: number[]; scratchBytes: number }>();

/** The packing scratch of thread t (0 = the calling thread), reserved on first use. */
export function scratchOf(t: number): { ptr: number; bytes: number } {
  const r = runtime();
  let reg = regions.get(r);
  if (reg === undefined) {
    const bytes = r.exports.gemm_scratch_bytes?.(1 << 30, 1 << 30, 1 << 30, 8) ?? 0;
    regions.set(r, (reg = { scratch: [], scratchBytes: bytes }));
  }
  while (reg.scratch.length <= t) {
    // Without room for it (a small memory.maximumBytes) the calling thread packs nothing: the
    // GEMM's unpacked path gives the same bits, only slower. Workers need theirs (startPool).
    try {
      reg.scratch.push(reg.scratchBytes > 0 ? r.arena.reserve(reg.scratchBytes) : 0);
    } catch (e) {
      if (t > 0) throw e;
      reg.scratch.push(0);
    }
  }
  return { ptr: reg.scratch[t], bytes: reg.scratch[t] === 0 ? 0 : reg.scratchBytes };
}
