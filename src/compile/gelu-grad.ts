// Peephole pass over a compiled training step's trace (run by withEpilogues, src/compile/epilogues.ts):
// exact GELU's erf is computed once per element instead of twice. Traced, a GELU MLP runs
//   forward   gelu_erf(z → y)                       erf(z/√2) for y
//   backward  gelu_erf_vjp(z, g → dz)               erf(z/√2) again, and e^{−z²/2}, for gelu'(z)
//             bias_act_vjp(dz, act none → db)       the bias gradient of the Linear before it
// Here the forward computes y and d = gelu'(z) together (gelu_erf_with_grad, one erf) and keeps d
// in z's block, which nothing else reads afterwards; the backward's two launches become one
// bias_act_vjp that multiplies g by the saved d and sums the columns in the same pass (its code 5),
// or, when no bias gradient follows (a Linear without bias), the VJP becomes a plain mul g·d.
// Every value is computed by the same lane code as before and g·d is the product gelu_erf_vjp
// forms, so y, dz and db are the same bits (test/compile-gelu.test.ts).
import type { Trace, Launch, Ref, Block } from './trace.js';
import { shifted, shiftRef } from './refs.js';

/** bias_act_vjp's code for "y holds act'(z)": gz = g·y (assembly/dense.ts ACT_GIVEN). */
const GIVEN = 5;

const same = (a: Ref | null, b: Ref | null): boolean =>
  a !== null && b !== null && a.k === 'block' && b.k === 'block' && a.block === b.block && a.off === b.off;

/** A launch of `name` without per-call arguments: one plain call, or pieces cut for the thread pool. */
const launchOf = (op: Trace['ops'][number] | undefined, name: string): op is Launch =>
  op !== undefined && op.kind === 'launch' && op.name === name && op.dyn === 0 && op.jobs.length > 0;

/** Whether an op references block `id`. */
const touches = (op: Trace['ops'][number], id: number): boolean => {
  const hit = (r: Ref | null) => r !== null && r.k === 'block' && r.block === id;
  return op.kind === 'write' ? hit(op.dest) : op.refs.some((rs) => rs.some(hit));
};

/**
 * Element offsets of a launch's pieces when they tile `total` elements in order, each piece's
 * pointer arguments `args` (by index) that far on from piece 0's, with its count at argument
 * `count`; else null. A pooled elementwise launch is cut so (src/wasm/split.ts's splitMap).
 */
function tiles(l: Launch, args: readonly number[], count: number, bytes: number, total: number): number[] | null {
  const los: number[] = [];
  let lo = 0;
  for (let j = 0; j < l.jobs.length; j++) {
    if (!args.every((i) => shifted(l.refs[j][i], l.refs[0][i], lo * bytes))) return null;
    los.push(lo);
    lo += l.jobs[j][count];
  }
  return lo === total ? los : null;
}

interface Hit {
  /** Index of the gelu_erf launch and its replacement. */
  readonly f: number;
  readonly fwd: Launch;
  /** Index of the gelu_erf_vjp launch, dropped when the bias gradient's pass takes its product. */
  readonly v: number;
  /** The launch that forms g·gelu′ (at index `at`): the bias_act_vjp after the VJP, or a mul in the VJP's place. */
  readonly at: number;
  readonly bwd: Launch;
  /** Blocks the backward now reads one launch later than the traced call did (z's, g's). */
  readonly extend: readonly number[];
}

/**
 * The rewrite for the gelu_erf at i when its input z is a block of this call that, after it, only
 * one gelu_erf_vjp reads (as x, same element count): the forward becomes gelu_erf_with_grad (d in
 * z's block); the backward the bias_act_vjp without activation directly after the VJP that sums
 * its result as rows of its columns, now forming g·d itself, or else a mul g·d in the VJP's place
 * (a Linear without bias). Null when the pattern does not hold. Launches cut for the thread pool
 * keep their cuts: piece j of the forward becomes piece j of gelu_erf_with_grad (the same
 * elements), column piece j of the bias pass the same columns with code 5, piece j of the VJP
 * piece j of the mul; every element is computed as in the one-thread program.
 */
function match(trace: Trace, i: number): Hit | null {
  const f = trace.ops[i];
  if (f?.kind !== 'launch') return null;
  const m = /^gelu_erf_f(32|64)$/.exec(f.name);
  if (m === null || !launchOf(f, f.name)) return null;
  const bytes = m[1] === '32' ? 4 : 8;
  const [z, y] = f.refs[0];
  const n = f.jobs.reduce((k, a) => k + a[2], 0);
  if (z === null || z.k !== 'block' || y === null || (y.k === 'block' && y.block === z.block)) return null;
  if (tiles(f, [0, 1], 2, bytes, n) === null) return null;
  if (trace.outputs.some((o) => o.k === 'fresh' && o.block === z.block)) return null;
  let v = -1;
  for (let k = i + 1; k < trace.ops.length; k++) {
    if (!touches(trace.ops[k], z.block)) continue;
    if (v >= 0) return null; // a second reader after the forward: z must stay z
    v = k;
  }
  const vjp = trace.ops[v];
  if (v < 0 || !launchOf(vjp, `gelu_erf_vjp_f${m[1]}`)) return null;
  const [x, g, dz] = vjp.refs[0];
  if (!same(x, z) || g === null || dz === null || tiles(vjp, [0, 1, 2], 3, bytes, n) === null) return null;
  const [pz, pg, pdz] = [f.jobs[0][0], vjp.jobs[0][1], vjp.jobs[0][2]];
  const fwd: Launch = {
    ...f,
    name: `gelu_erf_with_grad_f${m[1]}`,
    jobs: f.jobs.map(([px, py, k]) => [px, py, px, k]),
    refs: f.refs.map(([rz, ry]) => [rz, ry, rz, null]),
  };
  const sum = biasPass(trace.ops[v + 1], `bias_act_vjp_f${m[1]}`, n, dz, z.block, bytes);
  if (sum === null) {
    // dz = g·d as binary.ts's mul (rows 1, both operands contiguous): gelu_erf_vjp's product, piece by piece.
    const mul: Launch = {
      ...vjp,
      name: `mul_f${m[1]}`,
      jobs: vjp.jobs.map(([px, pgj, pdzj, k]) => [pgj, px, pdzj, 1, k, 0, 1, 0, 1]),
      refs: vjp.refs.map(([rx, rg, rdz]) => [rg, rx, rdz, null, null, null, null, null, null]),
    };
    return { f: i, fwd, v, at: v, bwd: mul, extend: [] };
  }
  const b = trace.ops[v + 1] as Launch;
  // Column piece j (first column c): z, g and dz from column c, as the piece read dz there.
  const bwd: Launch = {
    ...b,
    jobs: b.jobs.map(([, , , pdb, M, N, rs], j) => {
      const c = sum[j] * bytes;
      return [pz + c, pg + c, pdz + c, pdb, M, N, rs, GIVEN];
    }),
    refs: b.refs.map((rs, j) => {
      const c = sum[j] * bytes;
      return [shiftRef(z, c), shiftRef(g, c), shiftRef(dz, c), rs[3], null, null, null, null];
    }),
  };
  return { f: i, fwd, v, at: v + 1, bwd, extend: [z.block, ...(g.k === 'block' ? [g.block] : [])] };
}

/**
 * The first column of each piece of `b` when it is a bias_act_vjp without activation summing dz
 * (n elements as rows of rs, the pieces' columns tiling a row in order, one plain call or pieces
 * cut by columns); else null.
 */
function biasPass(b: Trace['ops'][number] | undefined, name: string, n: number, dz: Ref, zBlock: number, bytes: number): number[] | null {
  if (!launchOf(b, name)) return null;
  const cols: number[] = [];
  let c = 0;
  const M = b.jobs[0][4],
    rs = b.jobs[0][6];
  for (let j = 0; j < b.jobs.length; j++) {
    const [, gb, gz, db] = b.refs[j];
    const [, , , , Mj, N, rsj, act] = b.jobs[j];
    if (act !== 0 || Mj !== M || rsj !== rs || !shifted(gb, dz, c * bytes) || db === null) return null;
    if (db.k === 'block' && db.block === zBlock) return null;
    // gz is not written for act none: whatever it pointed at, the fused launch writes dz there.
    if (gz !== null && !shifted(gz, dz, c * bytes)) return null;
    cols.push(c);
    c += N;
  }
  return c === rs && M * rs === n ? cols : null;
}

/**
 * The trace with each such gelu_erf → … → gelu_erf_vjp chain rewritten (the forward keeps gelu′
 * in z's block; the backward is one bias_act_vjp, or a mul), or the same trace.
 */
export function withGeluGrad(trace: Trace): Trace {
  const replace = new Map<number, Launch>();
  const drop = new Set<number>();
  const until = new Map<number, number>(); // block → clock it must live past
  for (let i = 0; i < trace.ops.length; i++) {
    const hit = match(trace, i);
    if (hit === null || drop.has(hit.v) || replace.has(hit.at)) continue;
    replace.set(hit.f, hit.fwd);
    if (hit.at !== hit.v) drop.add(hit.v);
    replace.set(hit.at, hit.bwd);
    for (const b of hit.extend) until.set(b, Math.max(until.get(b) ?? -Infinity, hit.bwd.at + 0.5));
  }
  if (replace.size === 0) return trace;
  const ops = trace.ops.flatMap((op, i) => (drop.has(i) ? [] : [replace.get(i) ?? op]));
  // With the bias pass, z and g are read at the bias_act_vjp, one launch later than the gelu_erf_vjp read them.
  const blocks: Block[] = trace.blocks.map((b) => {
    const t = until.get(b.id);
    return t === undefined || b.free < 0 || b.free >= t ? b : { ...b, free: t };
  });
  return Object.assign(Object.create(Object.getPrototypeOf(trace) as object) as Trace, trace, { ops, blocks });
}
