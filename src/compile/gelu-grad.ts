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

/** bias_act_vjp's code for "y holds act'(z)": gz = g·y (assembly/dense.ts ACT_GIVEN). */
const GIVEN = 5;

const same = (a: Ref | null, b: Ref | null): boolean =>
  a !== null && b !== null && a.k === 'block' && b.k === 'block' && a.block === b.block && a.off === b.off;

/** One plain call (no thread-pool pieces, no per-call arguments). */
const plain = (op: Trace['ops'][number] | undefined, name: string): op is Launch =>
  op !== undefined && op.kind === 'launch' && op.name === name && !op.pooled && op.jobs.length === 1 && op.dyn === 0;

/** Whether an op references block `id`. */
const touches = (op: Trace['ops'][number], id: number): boolean => {
  const hit = (r: Ref | null) => r !== null && r.k === 'block' && r.block === id;
  return op.kind === 'write' ? hit(op.dest) : op.refs.some((rs) => rs.some(hit));
};

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
 * (a Linear without bias). Null when the pattern does not hold.
 */
function match(trace: Trace, i: number): Hit | null {
  const f = trace.ops[i];
  if (f?.kind !== 'launch') return null;
  const m = /^gelu_erf_f(32|64)$/.exec(f.name);
  if (m === null || !plain(f, f.name)) return null;
  const [z, y] = f.refs[0];
  const n = f.jobs[0][2];
  if (z === null || z.k !== 'block' || y === null || (y.k === 'block' && y.block === z.block)) return null;
  if (trace.outputs.some((o) => o.k === 'fresh' && o.block === z.block)) return null;
  let v = -1;
  for (let k = i + 1; k < trace.ops.length; k++) {
    if (!touches(trace.ops[k], z.block)) continue;
    if (v >= 0) return null; // a second reader after the forward: z must stay z
    v = k;
  }
  const vjp = trace.ops[v];
  if (v < 0 || !plain(vjp, `gelu_erf_vjp_f${m[1]}`)) return null;
  const [x, g, dz] = vjp.refs[0];
  if (!same(x, z) || vjp.jobs[0][3] !== n || g === null || dz === null) return null;
  const [pz, py] = f.jobs[0],
    [, pg, pdz] = vjp.jobs[0];
  const fwd: Launch = { ...f, name: `gelu_erf_with_grad_f${m[1]}`, jobs: [[pz, py, pz, n]], refs: [[z, y, z, null]] };
  const sum = biasPass(trace.ops[v + 1], `bias_act_vjp_f${m[1]}`, n, dz, z.block);
  if (sum === null) {
    // dz = g·d as binary.ts's mul (rows 1, both operands contiguous): gelu_erf_vjp's product.
    const mul: Launch = {
      ...vjp,
      name: `mul_f${m[1]}`,
      jobs: [[pg, pz, pdz, 1, n, 0, 1, 0, 1]],
      refs: [[g, z, dz, null, null, null, null, null, null]],
    };
    return { f: i, fwd, v, at: v, bwd: mul, extend: [] };
  }
  const [M, N, rs, pdb, db] = sum;
  const bwd: Launch = {
    ...(trace.ops[v + 1] as Launch),
    jobs: [[pz, pg, pdz, pdb, M, N, rs, GIVEN]],
    refs: [[z, g, dz, db, null, null, null, null]],
  };
  return { f: i, fwd, v, at: v + 1, bwd, extend: [z.block, ...(g.k === 'block' ? [g.block] : [])] };
}

/** [M, N, rs, db pointer, db ref] of `b` when it is a plain bias_act_vjp without activation summing dz (n elements, rows of N); else null. */
function biasPass(
  b: Trace['ops'][number] | undefined,
  name: string,
  n: number,
  dz: Ref,
  zBlock: number,
): [number, number, number, number, Ref] | null {
  if (!plain(b, name)) return null;
  const [, gb, gz, db] = b.refs[0];
  const [, , , pdb, M, N, rs, act] = b.jobs[0];
  if (act !== 0 || M * N !== n || rs !== N || !same(gb, dz) || db === null || (db.k === 'block' && db.block === zBlock)) return null;
  // gz is not written for act none: whatever it pointed at, the fused launch writes dz there.
  if (gz !== null && !same(gz, dz)) return null;
  return [M, N, rs, pdb, db];
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
