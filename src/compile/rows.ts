// Row pieces for compile()'s parallel schedule (src/compile/parallel.ts): launches the trace left
// whole, or cut by columns, recut by rows of the batch so that they chain behind the row pieces
// of the GEMM before them and ahead of the next one's, instead of ending the chain with a barrier.
import type { Kernel } from '../wasm/hooks.js';
import { ranges } from '../wasm/split.js';
import { runtime } from '../wasm/module.js';
import type { Extent, PlannedLaunch } from './parallel.js';

/** Whether an extent's address is fixed when the program is built (memory, a plan block), not patched in per call. */
const fixedAt = (x: Extent): boolean => x.key === '' || x.key[0] === 'b';

/** Kernels recut() may cut: elementwise maps (x, y, n, p0, p1) and binary ops (a, b, y, rows, cols, sar, sac, sbr, sbc). */
const MAPS =
  /^(neg|exp|log|sqrt|abs|square|sin|cos|tanh|sigmoid|relu|softplus|leaky_relu|clamp|step|inside|sign|recip|erf|gelu_erf|gelu_erf_grad|gelu_tanh|gelu_tanh_grad)_(f32|f64)$/;
const BINARY = /^(add|sub|mul|div|maximum|minimum)_(f32|f64)$/;

/**
 * A launch the trace left whole (too small to split on its own) cut as split.ts would cut a large
 * one: maps at multiples of 16 elements, binary ops by rows (one row by columns). Alone it still runs on the calling
 * thread (a phase with little work does), but between row pieces (a residual add and the
 * layerNorm after it, the affine after that) its pieces run on the threads of their rows instead
 * of ending the chain. Null when it is already cut, not such a kernel, or has patched pointers.
 */
function recut(s: PlannedLaunch, threads: number): PlannedLaunch | null {
  const map = MAPS.exec(s.name),
    bin = map === null ? BINARY.exec(s.name) : null;
  if ((map === null && bin === null) || s.argv.length !== 1 || !s.touches[0].every((x) => x === null || fixedAt(x))) return null;
  const a = s.argv[0],
    bytes = (map ?? bin)![2] === 'f64' ? 8 : 4;
  // A binary op on one row (same-shape operands flattened, as a residual add) is cut by columns at
  // multiples of 16 elements, as split.ts's splitBinary cuts it: its count argument is then cols.
  const row = bin !== null && a[3] === 1;
  const cut = map !== null ? ranges(a[2], threads, 16) : row ? ranges(a[4], threads, 16) : a[3] > 1 ? ranges(a[3], threads, 1) : [];
  if (cut.length < 2) return null;
  // Per piece: how far each pointer argument moves per element (map), column or row (binary) of the cut.
  const step = map !== null ? [bytes, bytes] : row ? [a[6] * bytes, a[8] * bytes, bytes] : [a[5] * bytes, a[7] * bytes, a[4] * bytes];
  const size = map !== null ? 2 : row ? 4 : 3;
  return {
    ...s,
    pooled: true,
    argv: cut.map(([lo, hi]) => a.map((v, i) => (i < step.length ? v + lo * step[i] : i === size ? hi - lo : v))),
    touches: cut.map(([lo]) => s.touches[0].map((x, i) => (x === null || i >= step.length ? x : { ...x, at: x.at + lo * step[i] }))),
  };
}

/**
 * The activation-gradient kernel of bias_act_vjp's act code (1 relu, 2 tanh, 3 sigmoid; the
 * formulas are the same; 5, y holding act'(z) as GELU's saved d: the product g·y, binary.ts's mul).
 */
const VJP = ['', 'relu_vjp', 'tanh_vjp', 'sigmoid_vjp', '', 'mul'];

/**
 * A dense layer's backward pass (bias_act_vjp: gz = g·act'(y) and db = column sums of gz) as two
 * launches: gz by row pieces of the batch (the activation's own VJP kernel, the same arithmetic),
 * then db from the stored gz (bias_act_vjp without an activation: sums gz's rows from 0 in the
 * same order, the same bits). The row pieces chain behind the row pieces of the GEMM that made g
 * and before those of the next gz·W, so a deep network's backward pass needs a barrier only for
 * the GEMMs and sums that read every row (the weight and bias gradients), not one per layer.
 * Only for contiguous rows whose pointers are fixed addresses (an argument's or result's are
 * patched per call into the traced launch's own argument arrays).
 */
export function byRows(s: PlannedLaunch, threads: number): PlannedLaunch[] {
  const small = recut(s, threads);
  if (small !== null) return [small];
  const m = /^bias_act_vjp_(f32|f64)$/.exec(s.name);
  const a = s.argv[0];
  if (m === null || !VJP[a[7]]) return [s];
  const M = a[4],
    N = s.argv.reduce((n, p) => n + p[5], 0);
  const fixed = s.touches.every((t) => t.slice(0, 4).every((x) => x !== null && fixedAt(x)));
  if (a[6] !== N || M < 8 * threads || !fixed) return [s];
  const bytes = m[1] === 'f64' ? 8 : 4,
    name = `${VJP[a[7]]}_${m[1]}`;
  const [ty, tg, tz] = s.touches[0];
  const shift = (x: Extent | null, by: number): Extent => ({ ...x!, at: x!.at + by });
  const pieces = ranges(M, threads, 8);
  // mul (a, b, y, rows, cols, sar, sac, sbr, sbc) forms g·y as the code-5 pass does (one IEEE product).
  const mul = a[7] === 5;
  const gz: PlannedLaunch = {
    w: false,
    name,
    f: runtime().exports[name] as Kernel,
    pooled: pieces.length > 1,
    argv: pieces.map(([r0, r1]) => {
      const [y, g, z] = [a[0], a[1], a[2]].map((p) => p + r0 * N * bytes);
      return mul ? [g, y, z, r1 - r0, N, N, 1, N, 1] : [y, g, z, (r1 - r0) * N];
    }),
    dyn: 0,
    compute: null,
    touches: pieces.map(([r0]): (Extent | null)[] => {
      const [y, g, z] = [ty, tg, tz].map((x) => shift(x, r0 * N * bytes));
      return mul ? [g, y, z, null, null, null, null, null, null] : [y, g, z, null];
    }),
  };
  const db: PlannedLaunch = {
    ...s,
    argv: s.argv.map((p) => [p[2], p[2], p[2], p[3], p[4], p[5], p[6], 0]),
    touches: s.touches.map((t) => [t[2], t[2], t[2], ...t.slice(3)]),
  };
  return [gz, db];
}
