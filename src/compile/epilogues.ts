// Peephole pass over a compiled program's trace (src/compile/program.ts): a dense layer written
// as ops — matmul, then a bias add over the rows, then tanh or sigmoid — becomes one
// gemm_bias_act launch, the GEMM with the bias and activation applied to each finished block of
// C while it is in cache (assembly/epilogue.ts). The epilogue adds the bias to the finished sum
// (one rounding, as add does) and runs the unary kernel's own activation code, so the result is
// the same bits as the three launches (the contract nn.Linear's fused dense path already rests
// on, test/dense.test.ts). The two intermediates (the product and the pre-activation) are then
// used by nothing and keep no room in the plan.
import type { Trace, Launch, Ref, Block } from './trace.js';

/** Switch for benchmarks and tests: programs built while it is false keep the three launches. */
export const epilogues = { enabled: true };

/** Activation codes of gemm_bias_act (assembly/epilogue.ts ACT_*), by unary kernel family. */
const ACT: Readonly<Record<string, number>> = { tanh: 2, sigmoid: 3 };

const isBlock = (r: Ref | null, off = 0): r is { k: 'block'; block: number; off: number } => r !== null && r.k === 'block' && r.off === off;

/** One plain call (no thread-pool pieces, no per-call arguments). */
const plain = (op: Trace['ops'][number] | undefined, name: string): op is Launch =>
  op !== undefined && op.kind === 'launch' && op.name === name && !op.pooled && op.jobs.length === 1 && op.dyn === 0;

/** Whether block `id` is referenced by an op other than those at `skip`, or is an output. */
function usedElsewhere(trace: Trace, id: number, skip: readonly number[]): boolean {
  if (trace.outputs.some((o) => o.k === 'fresh' && o.block === id)) return true;
  const hit = (r: Ref | null) => r !== null && r.k === 'block' && r.block === id;
  return trace.ops.some((op, i) => !skip.includes(i) && (op.kind === 'write' ? hit(op.dest) : op.refs.some((rs) => rs.some(hit))));
}

/**
 * The gemm_bias_act launch for ops i, i+1, i+2 when they are gemm (C = op(A)·op(B), overwrite,
 * C contiguous), add(C, bias) with the bias broadcast over C's rows, and tanh/sigmoid of that sum,
 * with C and the sum used nowhere else; else null.
 */
function match(trace: Trace, i: number): { launch: Launch; dead: number[] } | null {
  const g = trace.ops[i],
    a = trace.ops[i + 1],
    t = trace.ops[i + 2];
  if (g?.kind !== 'launch') return null;
  const m = /^gemm_f(32|64)$/.exec(g.name);
  if (m === null || !plain(g, g.name) || !plain(a, `add_f${m[1]}`) || t?.kind !== 'launch') return null;
  const act = /^(\w+)_f(32|64)$/.exec(t.name);
  if (act === null || act[2] !== m[1] || ACT[act[1]] === undefined || !plain(t, t.name)) return null;
  const [, , , M, N, K, lda, ldb, ldc, ta, tb, acc] = g.jobs[0];
  const [, , , rows, cols, sar, sac, sbr, sbc] = a.jobs[0];
  const [, , n] = t.jobs[0];
  const c = g.refs[0][2],
    sum = a.refs[0][2],
    bias = a.refs[0][1],
    y = t.refs[0][1];
  if (acc !== 0 || ldc !== N || rows !== M || cols !== N || sar !== N || sac !== 1 || sbr !== 0 || sbc !== 1 || n !== M * N) return null;
  if (!isBlock(c) || !isBlock(a.refs[0][0]) || a.refs[0][0].block !== c.block || !isBlock(sum) || !isBlock(t.refs[0][0])) return null;
  if (t.refs[0][0].block !== sum.block || bias === null || y === null) return null;
  // The epilogue reads the bias after C's blocks are stored: it must not be C or the result.
  if (bias.k === 'block' && (bias.block === c.block || (y.k === 'block' && bias.block === y.block))) return null;
  if (y.k === 'block' && (y.block === c.block || y.block === sum.block)) return null;
  const skip = [i, i + 1, i + 2];
  if (usedElsewhere(trace, c.block, skip) || usedElsewhere(trace, sum.block, skip)) return null;
  const [pa, pb] = g.jobs[0],
    [, pbias] = a.jobs[0],
    [, py] = t.jobs[0];
  const launch: Launch = {
    kind: 'launch',
    name: `gemm_bias_act_f${m[1]}`,
    pooled: false,
    jobs: [[pa, pb, py, pbias, M, N, K, lda, ldb, ldc, ta, tb, ACT[act[1]]]],
    refs: [[g.refs[0][0], g.refs[0][1], y, bias, null, null, null, null, null, null, null, null, null]],
    dyn: 0,
    compute: null,
    at: g.at,
  };
  return { launch, dead: [c.block, sum.block] };
}

/**
 * The trace with every matmul → bias add → tanh/sigmoid triple replaced by one gemm_bias_act
 * launch (and the intermediates it no longer writes shrunk to nothing); the same trace when none
 * matches.
 */
export function withEpilogues(trace: Trace): Trace {
  if (!epilogues.enabled) return trace;
  const ops: Trace['ops'][number][] = [];
  const dead = new Set<number>();
  for (let i = 0; i < trace.ops.length; i++) {
    const hit = match(trace, i);
    if (hit === null) {
      ops.push(trace.ops[i]);
      continue;
    }
    ops.push(hit.launch);
    for (const b of hit.dead) dead.add(b);
    i += 2;
  }
  if (dead.size === 0) return trace;
  const blocks: Block[] = trace.blocks.map((b) => (dead.has(b.id) ? { ...b, bytes: 0 } : b));
  // A view of the trace with these ops and blocks; everything else (outputs, inputs, reads) as traced.
  return Object.assign(Object.create(Object.getPrototypeOf(trace) as object) as Trace, trace, { ops, blocks });
}
