// Whole-sequence recurrent layers as primitives (assembly/rnn.ts): one kernel call runs the
// recurrence of one LSTM or GRU layer over all T steps, each way, instead of T small GEMMs and T
// cell launches, each recorded and dispatched from JS.
//   lstmSeq(xg [T, B, 4H], W_hh [4H, H], b_hh [4H], h0, c0 [B, H]) → y [T, B, 6H] = [h_t | c_t | hg_t]
//   gruSeq(xg [T, B, 3H], W_hh [3H, H], b_hh [3H], h0 [B, H]) → y [T, B, 4H] = [h_t | hg_t]
// with xg = x·W_ihᵀ + b_ih of every step, computed beforehand by one GEMM, and hg_t =
// h_{t−1}·W_hhᵀ + b_hh, an output so the backward reads it instead of redoing the GEMM (a
// cotangent of it is honoured like any other). Each VJP is a second
// primitive (lstmSeqGrad, gruSeqGrad) returning the cotangents of all inputs packed flat in input
// order; it reads the forward's output y, which must be lstmSeq/gruSeq of the same inputs (its
// derivatives are total derivatives in those inputs: y's own cotangent is none).
// Higher orders: the JVPs run the recurrence (and its backward) step by step on dual numbers
// built from ops, with the per-step cells of src/ops/rnn.ts. The backward B(x, g) = J_Φ(x)ᵀ·g is
// linear in g, so its VJP along G is Φ's JVP along G for g, and, since the Hessian of ⟨g, Φ⟩ is
// symmetric, B's own JVP along G (x moved by G, g fixed) for the inputs.
import { Tensor } from './tensor.js';
import { BYTES, SUFFIX, type DType } from '../tensor/dtype.js';
import { ShapeError } from '../errors.js';
import type { Rule } from './rule.js';
import { kernel } from '../wasm/module.js';
import { scratchOf } from '../wasm/scratch.js';
import { apply } from './apply.js';
import { front, loopBatch, type Dim, type Self } from './batch.js';
import { filled } from './launch.js';
import { add, sum, slice, concat, reshape, broadcastTo, zerosLike, matmulT, transpose } from './api.js';
import { CELLS, slots, tsum, dAdd, type D } from './rnn.js';

type Kind = 'lstm' | 'gru';
/** Gates per step, y's row width in units of H, and the number of inputs. */
const GATES = { lstm: 4, gru: 3 },
  WIDTH = { lstm: 6, gru: 4 },
  INPUTS = { lstm: 5, gru: 4 };
const GRAD = { lstm: 'lstmSeqGrad', gru: 'gruSeqGrad' } as const;

const geometry = (xs: readonly Tensor[]) => ({ T: xs[0].shape[0], B: xs[0].shape[1], H: xs[3].shape[1] });
const sizeOf = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** Checks the inputs' shapes against xg [T, B, G·H] and h0 [B, H]. */
function check(kind: Kind, xs: readonly Tensor[]): void {
  const { T, B, H } = geometry(xs),
    GH = GATES[kind] * H;
  const want = [[T, B, GH], [GH, H], [GH], [B, H], [B, H]].slice(0, INPUTS[kind]);
  const ok =
    xs.length === want.length && xs.every((x, i) => x.shape.length === want[i].length && x.shape.every((d, j) => d === want[i][j]));
  if (!ok)
    throw new ShapeError(
      `${kind}Seq: inputs must be [T, B, ${GATES[kind]}H], [${GATES[kind]}H, H], [${GATES[kind]}H], [B, H]…; got ${xs.map((x) => `[${x.shape}]`).join(', ')}`,
    );
}

/** The kernel's workspace (packed weights, one step's buffers). */
function workspace(kind: Kind, B: number, H: number, dtype: DType): Tensor {
  const bytes = kernel('rnn_seq_scratch_bytes')(B, H, GATES[kind], BYTES[dtype]) as number;
  return Tensor.empty([Math.ceil(bytes / BYTES[dtype])], dtype);
}

function seqForward(kind: Kind, xs: readonly Tensor[]): Tensor {
  check(kind, xs);
  const { T, B, H } = geometry(xs),
    dtype = xs[0].dtype;
  const y = Tensor.empty([T, B, WIDTH[kind] * H], dtype);
  if (y.size === 0) return y;
  const ws = workspace(kind, B, H, dtype);
  try {
    kernel(`${kind}_seq_${SUFFIX[dtype]}`)(...xs.map((x) => x.ptr), y.ptr, ws.ptr, T, B, H);
  } finally {
    ws.dispose();
  }
  return y;
}

function gradForward(kind: Kind, xs: readonly Tensor[]): Tensor {
  const n = INPUTS[kind],
    ins = xs.slice(0, n),
    { T, B, H } = geometry(ins),
    dtype = xs[0].dtype;
  const d = Tensor.empty([ins.reduce((a, x) => a + x.size, 0)], dtype);
  if (d.size === 0) return d;
  const ws = workspace(kind, B, H, dtype),
    dhg = Tensor.empty([Math.max(1, T * B * GATES[kind] * H)], dtype);
  try {
    const own = scratchOf(0); // ∂W_hh's GEMM packs into the calling thread's region
    kernel('gemm_set_scratch')(own.ptr, own.bytes);
    const ptrs = xs.map((x) => x.ptr);
    kernel(`${kind}_seq_vjp_${SUFFIX[dtype]}`)(...ptrs, d.ptr, dhg.ptr, ws.ptr, T, B, H);
  } finally {
    ws.dispose();
    dhg.dispose();
  }
  return d;
}

/** The parts of a flat packed tensor, shaped like `shapes` (null where not wanted). */
function unpack(d: Tensor, shapes: readonly (readonly number[])[], want: readonly boolean[] = shapes.map(() => true)): (Tensor | null)[] {
  let o = 0;
  return shapes.map((s, i) => {
    const n = sizeOf(s),
      at = o;
    o += n;
    return want[i] ? reshape(slice(d, [at], [n]), s) : null;
  });
}
const flat = (t: Tensor | null, like: Tensor): Tensor => reshape(t ?? zerosLike(like), [like.size]);

const dMatmul = (a: D, b: D, ta: boolean, tb: boolean): D => ({
  v: matmulT(a.v, b.v, ta, tb),
  t: tsum(a.t && matmulT(a.t, b.v, ta, tb), b.t && matmulT(a.v, b.t, ta, tb)),
});
const dCat = (ds: readonly D[]): D => ({
  v: concat(
    ds.map((d) => d.v),
    1,
  ),
  t: ds.some((d) => d.t !== null)
    ? concat(
        ds.map((d) => d.t ?? zerosLike(d.v)),
        1,
      )
    : null,
});
const dAcc = (a: D | null, b: D): D => (a === null ? b : dAdd(a, b));
/** Step t of a [T, B, n] tensor as [B, n] (null stays null). */
const stepOf = (x: Tensor | null, t: number): Tensor | null =>
  x && reshape(slice(x, [t, 0, 0], [1, x.shape[1], x.shape[2]]), [x.shape[1], x.shape[2]]);

/** One step as the dual recurrence saw it: the cell's input slots and the previous h. */
interface Step {
  slots: D[];
  hp: D;
}

/** The recurrence on dual numbers (values from xs, tangents ts): every step, and y's tangent [T, B, width·H]. */
function dualForward(kind: Kind, xs: readonly Tensor[], ts: readonly (Tensor | null)[]): { steps: Step[]; ty: Tensor } {
  const { T, B, H } = geometry(xs),
    GH = GATES[kind] * H;
  const w: D = { v: xs[1], t: ts[1] },
    tb = ts[2] && broadcastTo(ts[2], [B, GH]);
  let h: D = { v: xs[3], t: ts[3] },
    c: D = kind === 'lstm' ? { v: xs[4], t: ts[4] } : h;
  const steps: Step[] = [],
    ty: Tensor[] = [];
  for (let t = 0; t < T; t++) {
    const hw = dMatmul(h, w, false, true);
    const hg: D = { v: add(hw.v, xs[2]), t: tsum(hw.t, tb) };
    const sl = slots(kind, [stepOf(xs[0], t)!, hg.v, kind === 'lstm' ? c.v : h.v], [stepOf(ts[0], t), hg.t, kind === 'lstm' ? c.t : h.t]);
    steps.push({ slots: sl, hp: h });
    const out = CELLS[kind].phi(sl);
    h = out[0];
    if (kind === 'lstm') c = out[1];
    const tOf = (d: D) => d.t ?? zerosLike(d.v);
    ty.push(concat(kind === 'lstm' ? [tOf(h), tOf(c), tOf(hg)] : [tOf(h), tOf(hg)], 1));
  }
  const W = WIDTH[kind] * H;
  return { steps, ty: T === 0 ? filled([0, B, W], xs[0].dtype, 0) : reshape(concat(ty, 0), [T, B, W]) };
}

/** The backward B(x, g) on dual numbers: the packed tangent of the packed input cotangents. */
function dualBackward(kind: Kind, xs: readonly Tensor[], g: Tensor, ts: readonly (Tensor | null)[], tg: Tensor | null): Tensor {
  const { T, B, H } = geometry(xs);
  const { steps } = dualForward(kind, xs, ts);
  const w: D = { v: xs[1], t: ts[1] },
    zero = zerosLike(xs[3]);
  let dh: D = { v: zero, t: null },
    dc: D = { v: zero, t: null },
    dw: D | null = null,
    db: D | null = null;
  const dxg: D[] = [];
  for (let t = T - 1; t >= 0; t--) {
    const gy: D = { v: stepOf(g, t)!, t: stepOf(tg, t) };
    const cols = (k: number, n: number): D => ({ v: slice(gy.v, [0, k * H], [B, n * H]), t: gy.t && slice(gy.t, [0, k * H], [B, n * H]) });
    const n = kind === 'lstm' ? 2 : 1,
      gout = kind === 'lstm' ? [dAdd(cols(0, 1), dh), dAdd(cols(1, 1), dc)] : [dAdd(cols(0, 1), dh)];
    const b = CELLS[kind].back(steps[t].slots, gout);
    const dx = dCat(b.slice(0, GATES[kind])),
      dhg = dAdd(kind === 'lstm' ? dx : dCat(b.slice(3, 6)), cols(n, GATES[kind])); // hg's own cotangent joins the cell's
    dxg[t] = dx;
    dw = dAcc(dw, dMatmul(dhg, steps[t].hp, true, false));
    db = dAcc(db, { v: sum(dhg.v, 0), t: dhg.t && sum(dhg.t, 0) });
    dh = dMatmul(dhg, w, false, false);
    if (kind === 'lstm') dc = b[4];
    else dh = dAdd(dh, b[6]);
  }
  const tx = T === 0 ? null : reshape(concat(dxg.map((d) => d.t ?? zerosLike(d.v))), xs[0].shape);
  const parts = [tx, dw?.t ?? null, db?.t ?? null, dh.t, kind === 'lstm' ? dc.t : null].slice(0, INPUTS[kind]);
  return concat(parts.map((p, i) => flat(p, xs[i])));
}

/**
 * vmap of a layer whose W_hh and b_hh are shared (unmapped): the n examples fold into the
 * sequence's batch axis, xg [T, n·B, G·H] and the states [n·B, H], whose rows the kernel runs
 * independently, so one launch serves every example; y comes back as [T, n, B, W], mapped on
 * axis 1. Per-example weights still run a layer per example.
 */
function seqBatch<P>(xs: readonly Tensor[], dims: readonly Dim[], p: P, self: Self<P>): [Tensor, number] {
  if (dims[1] !== null || dims[2] !== null) return loopBatch(xs, dims, self, p);
  const at = dims.findIndex((d) => d !== null),
    n = xs[at].shape[dims[at]!];
  const stacked = (i: number) =>
    dims[i] === null ? broadcastTo(reshape(xs[i], [1, ...xs[i].shape]), [n, ...xs[i].shape]) : front(xs[i], dims[i]);
  const xg = transpose(stacked(0), [1, 0, 2, 3]),
    [T, , B, G] = xg.shape;
  const states = xs.slice(3).map((_, k) => {
    const h = stacked(3 + k);
    return reshape(h, [n * B, h.shape[2]]);
  });
  const y = self([reshape(xg, [T, n * B, G]), xs[1], xs[2], ...states], p);
  return [reshape(y, [T, n, B, y.shape[2]]), 1];
}

function seqRule(kind: Kind): Rule<Record<string, never>> {
  return {
    saves: { inputs: 'all', output: true },
    forward: (xs) => seqForward(kind, xs),
    vjp: (g, s, _p, needs) => {
      const xs = s.x as Tensor[];
      return unpack(apply(GRAD[kind], [...xs, s.y!, g], {}), s.shapes, needs);
    },
    jvp: (ts, xs) => dualForward(kind, xs, ts).ty,
    batch: (xs, dims, p, self) => seqBatch(xs, dims, p, self),
  };
}

function seqGradRule(kind: Kind): Rule<Record<string, never>> {
  const n = INPUTS[kind];
  return {
    saves: { inputs: 'all', output: false },
    forward: (xs) => gradForward(kind, xs),
    vjp: (G, s, _p, needs) => {
      const xs = s.x as Tensor[],
        ins = xs.slice(0, n),
        g = xs[n + 1];
      const Gx = unpack(G, s.shapes.slice(0, n));
      const dx = needs.slice(0, n).some(Boolean)
        ? unpack(dualBackward(kind, ins, g, Gx, null), s.shapes.slice(0, n), needs)
        : ins.map(() => null);
      return [...dx, null, needs[n + 1] ? dualForward(kind, ins, Gx).ty : null];
    },
    jvp: (ts, xs) => dualBackward(kind, xs.slice(0, n), xs[n + 1], ts.slice(0, n), ts[n + 1]),
    batch: (xs, dims, p, self) => loopBatch(xs, dims, self, p),
  };
}

export const rnnSeqRules = {
  lstmSeq: seqRule('lstm'),
  lstmSeqGrad: seqGradRule('lstm'),
  gruSeq: seqRule('gru'),
  gruSeqGrad: seqGradRule('gru'),
};

/** y [T, B, 2H] = [h_t | c_t] of an LSTM layer over xg = x·W_ihᵀ + b_ih [T, B, 4H], from h0, c0 [B, H]: one kernel each way. */
export const lstmSequence = (xg: Tensor, whh: Tensor, bhh: Tensor, h0: Tensor, c0: Tensor): Tensor =>
  apply('lstmSeq', [xg, whh, bhh, h0, c0], {});

/** y [T, B, H] = h_t of a GRU layer over xg = x·W_ihᵀ + b_ih [T, B, 3H], from h0 [B, H]: one kernel each way. */
export const gruSequence = (xg: Tensor, whh: Tensor, bhh: Tensor, h0: Tensor): Tensor => apply('gruSeq', [xg, whh, bhh, h0], {});
