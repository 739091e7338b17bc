// Recurrent cell updates after the two GEMMs (gate pre-activations xg = x·W_ihᵀ + b_ih and
// hg = h·W_hhᵀ + b_hh), in PyTorch's gate order, as fused primitives (assembly/rnn.ts).
//   LSTM: i, f, g, o = σ, σ, tanh, σ of xg + hg; c' = f·c + i·g; h' = o·tanh(c').
//   GRU:  r, z = σ(xr + hr), σ(xz + hz); n = tanh(xn + r·hn); h' = n + z·(h − n).
// Each cell is one primitive (lstmCell → [h' | c'], gruCell → h') whose VJP is a second fused
// primitive (lstmCellGrad, gruCellGrad). Both act unit by unit, so their derivatives are small
// per-unit formulas: the rules evaluate the cell (Φ) and its backward (B = J_Φᵀ·g) on dual
// numbers (value, tangent) built from ops. JVPs are Φ or B on duals; the backward primitive's
// VJP uses that B is linear in g (∂g = J_Φ·G, a JVP of Φ) and, for the state inputs, one
// JVP of B per input slot (∂x_k = Σ_j G_j·∂B_j/∂x_k). All are ops, so higher orders follow.
import { Tensor } from './tensor.js';
import { SUFFIX } from '../tensor/dtype.js';
import type { Rule } from './rule.js';
import { kernel } from '../wasm/module.js';
import { apply } from './apply.js';
import { filled } from './launch.js';
import { foldBatch } from './batch.js';
import { add, sub, mul, neg, square, sigmoid, tanh, slice, concat, reshape, zerosLike, composite } from './api.js';

/** A value and its tangent (null: zero). */
export interface D {
  v: Tensor;
  t: Tensor | null;
}
export const tsum = (a: Tensor | null, b: Tensor | null): Tensor | null => (a === null ? b : b === null ? a : add(a, b));
export const dAdd = (a: D, b: D): D => ({ v: add(a.v, b.v), t: tsum(a.t, b.t) });
const dSub = (a: D, b: D): D => ({ v: sub(a.v, b.v), t: tsum(a.t, b.t && neg(b.t)) });
const dMul = (a: D, b: D): D => ({ v: mul(a.v, b.v), t: tsum(a.t && mul(a.t, b.v), b.t && mul(a.v, b.t)) });
const dOneMinus = (a: D): D => ({ v: sub(1, a.v), t: a.t && neg(a.t) });
const dSig = (a: D): D => {
  const s = sigmoid(a.v);
  return { v: s, t: a.t && mul(a.t, mul(s, sub(1, s))) };
};
const dTanh = (a: D): D => {
  const y = tanh(a.v);
  return { v: y, t: a.t && mul(a.t, sub(1, square(y))) };
};
/** σ'(·) as a function of s = σ: s(1 − s); tanh' of y = tanh: 1 − y². */
const dSlope = (s: D): D => dMul(s, dOneMinus(s));
const dTanhSlope = (y: D): D => dOneMinus(dMul(y, y));

/** An elementwise cell: Φ over its input slots, and its backward B = J_Φᵀ·g (one result per input slot). */
interface Cell {
  phi(x: D[]): D[];
  back(x: D[], g: D[]): D[];
}

const LSTM: Cell = {
  phi([ai, af, ag, ao, c]) {
    const [i, f, g, o] = [dSig(ai), dSig(af), dTanh(ag), dSig(ao)];
    const c2 = dAdd(dMul(f, c), dMul(i, g));
    return [dMul(o, dTanh(c2)), c2];
  },
  back([ai, af, ag, ao, c], [dh, dc2]) {
    const [i, f, g, o] = [dSig(ai), dSig(af), dTanh(ag), dSig(ao)];
    const tc = dTanh(dAdd(dMul(f, c), dMul(i, g)));
    const e = dAdd(dc2, dMul(dMul(dh, o), dTanhSlope(tc)));
    return [
      dMul(dMul(e, g), dSlope(i)),
      dMul(dMul(e, c), dSlope(f)),
      dMul(dMul(e, i), dTanhSlope(g)),
      dMul(dMul(dh, tc), dSlope(o)),
      dMul(e, f),
    ];
  },
};

const GRU: Cell = {
  phi([xr, xz, xn, hr, hz, hn, h]) {
    const r = dSig(dAdd(xr, hr)),
      z = dSig(dAdd(xz, hz));
    const n = dTanh(dAdd(xn, dMul(r, hn)));
    return [dAdd(n, dMul(z, dSub(h, n)))];
  },
  back([xr, xz, xn, hr, hz, hn, h], [g]) {
    const r = dSig(dAdd(xr, hr)),
      z = dSig(dAdd(xz, hz));
    const n = dTanh(dAdd(xn, dMul(r, hn)));
    const dan = dMul(dMul(g, dOneMinus(z)), dTanhSlope(n));
    const dar = dMul(dMul(dan, hn), dSlope(r)),
      daz = dMul(dMul(g, dSub(h, n)), dSlope(z));
    return [dar, daz, dan, dar, daz, dMul(dan, r), dMul(g, z)];
  },
};

/** Columns [k·H, (k + 1)·H) of a [B, n·H] tensor. */
const part = (t: Tensor, k: number, H: number): Tensor => slice(t, [0, k * H], [t.shape[0], H]);
const parts = (t: Tensor | null, n: number, H: number): (Tensor | null)[] =>
  Array.from({ length: n }, (_, k) => (t === null ? null : part(t, k, H)));
const cat = (ts: (Tensor | null)[], like: Tensor): Tensor =>
  ts.length === 1
    ? (ts[0] ?? zerosLike(like))
    : concat(
        ts.map((t) => t ?? zerosLike(like)),
        1,
      );

/** The input slots of a cell primitive's inputs (with tangents): LSTM a = xg + hg in 4 gates, c; GRU xg's 3, hg's 3, h. */
export function slots(kind: 'lstm' | 'gru', [xg, hg, s]: readonly Tensor[], ts: readonly (Tensor | null)[]): D[] {
  const H = s.shape[1];
  if (kind === 'lstm') {
    const a = add(xg, hg),
      ta = tsum(ts[0], ts[1]);
    return [...parts(a, 4, H).map((v, k) => ({ v: v!, t: ta && part(ta, k, H) })), { v: s, t: ts[2] }];
  }
  const tx = parts(ts[0], 3, H),
    th = parts(ts[1], 3, H);
  return [
    ...parts(xg, 3, H).map((v, k) => ({ v: v!, t: tx[k] })),
    ...parts(hg, 3, H).map((v, k) => ({ v: v!, t: th[k] })),
    { v: s, t: ts[2] },
  ];
}
/** Cotangents of the primitive inputs (xg, hg, state) from per-slot ones. */
function unslot(kind: 'lstm' | 'gru', d: Tensor[]): Tensor[] {
  if (kind === 'lstm') {
    const da = concat(d.slice(0, 4), 1);
    return [da, reshape(da, da.shape), d[4]]; // one gradient for both GEMM outputs: two recorded handles, as the engine consumes each
  }
  return [concat(d.slice(0, 3), 1), concat(d.slice(3, 6), 1), d[6]];
}

export const CELLS = { lstm: LSTM, gru: GRU };
const OUTS = { lstm: 2, gru: 1 };
const SLOTS = { lstm: 5, gru: 7 };

/** Runs a cell kernel (inputs …, output [B, width·H]). */
function launch(name: string, xs: readonly Tensor[], width: number): Tensor {
  const [B, H] = xs[2].shape;
  const y = Tensor.empty([B, width * H], xs[0].dtype);
  if (y.size > 0) kernel(`${name}_${SUFFIX[y.dtype]}`)(...xs.map((x) => x.ptr), y.ptr, B, H);
  return y;
}

function cellRule(kind: 'lstm' | 'gru'): Rule<Record<string, never>> {
  const cell = CELLS[kind],
    grad = kind === 'lstm' ? 'lstmCellGrad' : 'gruCellGrad';
  return {
    saves: { inputs: 'all', output: false },
    forward: (xs) => launch(`${kind}_cell`, xs, OUTS[kind]),
    vjp: (g, s, _p, needs) => {
      const xs = s.x as Tensor[],
        d = apply(grad, [...xs, g], {}),
        H = xs[2].shape[1];
      return unslot(kind, parts(d, SLOTS[kind], H) as Tensor[]).map((t, i) => (needs[i] ? t : null));
    },
    jvp: (ts, xs) =>
      cat(
        cell.phi(slots(kind, xs, ts)).map((o) => o.t),
        xs[2],
      ),
    batch: (xs, dims, p, self) =>
      foldBatch(
        xs,
        dims,
        p,
        self,
        xs.map(() => true),
      ), // rows are independent: the examples' rows stack
  };
}

function cellGradRule(kind: 'lstm' | 'gru'): Rule<Record<string, never>> {
  const cell = CELLS[kind],
    n = SLOTS[kind];
  return {
    saves: { inputs: 'all', output: false },
    forward: (xs) => launch(`${kind}_cell_vjp`, xs, n),
    batch: (xs, dims, p, self) =>
      foldBatch(
        xs,
        dims,
        p,
        self,
        xs.map(() => true),
      ),
    vjp: (G, s, _p, needs) => {
      const [xg, hg, st, g] = s.x as Tensor[],
        H = st.shape[1],
        Gs = parts(G, n, H) as Tensor[];
      const x = slots(kind, [xg, hg, st], [null, null, null]),
        gs = parts(g, OUTS[kind], H).map((v) => ({ v: v!, t: null }));
      // B is linear in g: ∂g = J_Φ·G, Φ's JVP along G.
      const dg = needs[3]
        ? cat(
            cell.phi(x.map((d, k) => ({ v: d.v, t: Gs[k] }))).map((o) => o.t),
            st,
          )
        : null;
      if (!needs[0] && !needs[1] && !needs[2]) return [null, null, null, dg];
      const one = filled(st.shape, st.dtype, 1);
      const dx = x.map((_, k) => {
        const b = cell.back(
          x.map((d, m) => (m === k ? { v: d.v, t: one } : d)),
          gs,
        );
        return b.reduce<Tensor | null>((acc, o, j) => tsum(acc, o.t && mul(o.t, Gs[j])), null) ?? zerosLike(st);
      });
      return [...unslot(kind, dx).map((t, i) => (needs[i] ? t : null)), dg];
    },
    jvp: (ts, xs) => {
      const H = xs[2].shape[1],
        tg = parts(ts[3], OUTS[kind], H);
      const gs = parts(xs[3], OUTS[kind], H).map((v, k) => ({ v: v!, t: tg[k] }));
      return cat(
        cell.back(slots(kind, xs, ts), gs).map((o) => o.t),
        xs[2],
      );
    },
  };
}

export const rnnRules = {
  lstmCell: cellRule('lstm'),
  lstmCellGrad: cellGradRule('lstm'),
  gruCell: cellRule('gru'),
  gruCellGrad: cellGradRule('gru'),
};

/** [h', c'] of an LSTM step from xg, hg [B, 4H] and c [B, H]: one fused kernel each way. */
export function lstmCell(xg: Tensor, hg: Tensor, c: Tensor): [Tensor, Tensor] {
  const H = c.shape[1];
  return composite(() => {
    const y = apply('lstmCell', [xg, hg, c], {});
    return [part(y, 0, H), part(y, 1, H)] as [Tensor, Tensor];
  });
}

/** h' of a GRU step from xg, hg [B, 3H] and h [B, H]: one fused kernel each way. */
export const gruCell = (xg: Tensor, hg: Tensor, h: Tensor): Tensor => apply('gruCell', [xg, hg, h], {});
