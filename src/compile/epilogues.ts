// Peephole pass over a compiled program's trace (src/compile/program.ts): a dense layer written
// as ops — matmul, then a bias add over the rows, then tanh or sigmoid — becomes one
// gemm_bias_act launch, the GEMM with the bias and activation applied to each finished block of
// C while it is in cache (assembly/epilogue.ts). The epilogue adds the bias to the finished sum
// (one rounding, as add does) and runs the unary kernel's own activation code, so the result is
// the same bits as the three launches (the contract nn.Linear's fused dense path already rests
// on, test/dense.test.ts). The two intermediates (the product and the pre-activation) are then
// used by nothing and keep no room in the plan.
//
// A second peephole fuses a weight gradient's GEMM with its plain SGD step (gemm_sgd): when a
// GEMM overwrites a block that only a later sgd launch (momentum 0) reads, as the gradient of a
// parameter no op in between touches, and the block is freed before the call returns (zeroGrad()
// inside the step: no .grad outlives it), the update runs in the GEMM's epilogue on each finished
// block while it is in cache, and the sgd launch goes. The GEMM still writes the gradient (its
// block is the GEMM's output tile); the update is sgd's own arithmetic (assembly/epilogue.ts's
// sgdStep), so the parameters get the same bits.
//
// A third (src/compile/gelu-grad.ts) computes exact GELU's erf once per element in a training
// step: the forward keeps gelu' for the backward, whose gelu_erf_vjp and bias gradient become one pass.
import type { Trace, Launch, Ref, Block } from './trace.js';
import { withGeluGrad } from './gelu-grad.js';

/**
 * Switches for benchmarks and tests: programs built while `enabled` is false keep every launch;
 * while `sgd` is false, the gradient GEMMs and their sgd steps; while `gelu` is false, GELU's two erf passes.
 */
export const epilogues = { enabled: true, sgd: true, gelu: true };

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

/** Whether refs a and b point into the same buffer (any offsets). */
function sameBuffer(a: Ref | null, b: Ref): boolean {
  if (a === null || a.k !== b.k) return false;
  if (a.k === 'block') return a.block === (b as typeof a).block;
  if (a.k === 'input') return a.input === (b as typeof a).input;
  if (a.k === 'ext') return a.storage === (b as typeof a).storage;
  return false;
}

/** Whether any op strictly between i and j references the buffer of r. */
function touchedBetween(trace: Trace, i: number, j: number, r: Ref): boolean {
  for (let k = i + 1; k < j; k++) {
    const op = trace.ops[k];
    if (op.kind === 'write' ? sameBuffer(op.dest, r) : op.refs.some((rs) => rs.some((x) => sameBuffer(x, r)))) return true;
  }
  return false;
}

/**
 * The C rectangles of a gemm launch's pieces (one for a plain call, one per thread-pool piece):
 * overwrite, one block, one row stride ldc, and together exactly rows × ldc elements, so C is
 * contiguous and an elementwise pass over it sees the same elements. Null otherwise.
 */
function gemmTiles(g: Launch, S: number): { block: number; elems: number } | null {
  const ldc = g.jobs[0][8],
    c0 = g.refs[0][2];
  if (c0 === null || c0.k !== 'block') return null;
  let elems = 0,
    rows = 0;
  for (let k = 0; k < g.jobs.length; k++) {
    const [, , , M, N, , , , l, , , acc] = g.jobs[k];
    const c = g.refs[k][2];
    if (acc !== 0 || l !== ldc || c === null || c.k !== 'block' || c.block !== c0.block || c.off % S !== 0) return null;
    const e = c.off / S;
    if ((e % ldc) + N > ldc) return null;
    elems += M * N;
    rows = Math.max(rows, Math.floor(e / ldc) + M);
  }
  return elems === rows * ldc ? { block: c0.block, elems } : null;
}

/** Where a parameter lives: an input of the call or a tensor from before it. */
type Param = Extract<Ref, { k: 'ext' | 'input' }>;

/**
 * The sgd launch's parameter when its pieces (one, or one per thread-pool piece) step through the
 * gradient block from its start and the parameter alike, consecutively, `elems` in all, with
 * momentum 0; else null.
 */
function sgdParam(s: Launch, block: number, elems: number, S: number): Param | null {
  const p0 = s.refs[0][0];
  if (p0 === null || (p0.k !== 'ext' && p0.k !== 'input')) return null;
  let at = 0;
  for (let k = 0; k < s.jobs.length; k++) {
    const [, , , n, , mu] = s.jobs[k];
    const [p, gr] = s.refs[k];
    if (mu !== 0 || gr === null || gr.k !== 'block' || gr.block !== block || gr.off !== at * S) return null;
    if (p === null || p.k !== p0.k || !sameBuffer(p, p0) || p.off !== p0.off + at * S) return null;
    at += n;
  }
  return at === elems ? p0 : null;
}

/**
 * The gemm_sgd launch for the gemm at i (overwrite, C contiguous) and the later sgd launch that is
 * the only reader of C, with momentum 0, over a parameter (an input or a tensor from before the
 * call) nothing between them touches, C freed before the call returns; else null. A gemm the
 * traced call cut into thread-pool pieces gives a gemm_sgd cut the same way, each piece updating
 * its own rectangle of the parameter (the sgd's own pieces may have been cut elsewhere).
 */
function matchSgd(trace: Trace, i: number): { launch: Launch; sgd: number; grad: number } | null {
  const g = trace.ops[i];
  if (g?.kind !== 'launch') return null;
  const m = /^gemm_f(32|64)$/.exec(g.name);
  if (m === null || g.dyn !== 0 || (!g.pooled && g.jobs.length !== 1)) return null;
  const S = m[1] === '32' ? 4 : 8;
  const tiles = gemmTiles(g, S);
  if (tiles === null) return null;
  const block = trace.blocks.find((b) => b.id === tiles.block);
  if (block === undefined || block.free < 0 || trace.outputs.some((o) => o.k === 'fresh' && o.block === tiles.block)) return null;
  // The first later op that references C must be the sgd reading it as the gradient.
  const c: Ref = { k: 'block', block: tiles.block, off: 0 };
  let j = i + 1;
  for (; j < trace.ops.length; j++) {
    const op = trace.ops[j];
    if (op.kind === 'write' ? sameBuffer(op.dest, c) : op.refs.some((rs) => rs.some((x) => sameBuffer(x, c)))) break;
  }
  const s = trace.ops[j];
  if (s?.kind !== 'launch' || s.name !== `sgd_f${m[1]}` || (!s.pooled && s.jobs.length !== 1) || s.dyn !== 5 || s.compute === null)
    return null;
  const p = sgdParam(s, tiles.block, tiles.elems, S);
  if (p === null || usedElsewhere(trace, tiles.block, [i, j]) || touchedBetween(trace, i, j, p)) return null;
  if (g.refs.some((rs) => rs.some((r) => sameBuffer(r, p)))) return null;
  const compute = s.compute;
  const [pp, , , , lr, , , wd] = s.jobs[0];
  const launch: Launch = {
    kind: 'launch',
    name: `gemm_sgd_f${m[1]}`,
    pooled: g.pooled,
    // Each piece's parameter rectangle sits where its C rectangle sits in C (gemm_sgd: p + (cb − c)).
    jobs: g.jobs.map((job, k) => {
      const off = (g.refs[k][2] as { off: number }).off;
      return [job[0], job[1], job[2], pp + off, ...job.slice(3, 11), lr, wd];
    }),
    refs: g.refs.map((rs) => {
      const off = (rs[2] as { off: number }).off;
      return [rs[0], rs[1], rs[2], { ...p, off: p.off + off }, null, null, null, null, null, null, null, null, null, null];
    }),
    // sgd's per-call scalars (lr, momentum, dampening, weight decay, flags): lr and weight decay.
    dyn: 2,
    compute: () => {
      const v = compute();
      return [v[0], v[3]];
    },
    at: g.at,
  };
  return { launch, sgd: j, grad: tiles.block };
}

/**
 * The trace with every matmul → bias add → tanh/sigmoid triple replaced by one gemm_bias_act
 * launch (and the intermediates it no longer writes shrunk to nothing), and every weight
 * gradient's gemm with its plain sgd step by one gemm_sgd launch; the same trace when none matches.
 */
export function withEpilogues(traced: Trace): Trace {
  if (!epilogues.enabled) return traced;
  const trace = epilogues.gelu ? withGeluGrad(traced) : traced;
  const ops: Trace['ops'][number][] = [];
  const dead = new Set<number>();
  const gone = new Set<number>(); // sgd launches folded into an earlier gemm_sgd
  const grads = new Map<number, number>(); // their gradient blocks → the gemm_sgd's clock
  for (let i = 0; i < trace.ops.length; i++) {
    if (gone.has(i)) continue;
    const hit = match(trace, i);
    if (hit === null) {
      const sgd = epilogues.sgd ? matchSgd(trace, i) : null;
      if (sgd !== null) gone.add(sgd.sgd), grads.set(sgd.grad, sgd.launch.at);
      ops.push(sgd?.launch ?? trace.ops[i]);
      continue;
    }
    ops.push(hit.launch);
    for (const b of hit.dead) dead.add(b);
    i += 2;
  }
  if (dead.size === 0 && gone.size === 0) return trace;
  // A fused gradient is only the GEMM's output tile: its block is free right after the launch
  // (so the plan reuses one block for every layer's gradient, which then stays in cache).
  const blocks: Block[] = trace.blocks.map((b) => {
    if (dead.has(b.id)) return { ...b, bytes: 0 };
    const at = grads.get(b.id);
    return at === undefined ? b : { ...b, free: at + 0.5 };
  });
  // A view of the trace with these ops and blocks; everything else (outputs, inputs, reads) as traced.
  return Object.assign(Object.create(Object.getPrototypeOf(trace) as object) as Trace, trace, { ops, blocks });
}
