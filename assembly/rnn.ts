// Fused LSTM and GRU cell updates: the gate nonlinearities and the state update after the two
// GEMMs, in one pass over the gates, forward and backward (PyTorch's gate order). Inputs are
// the GEMM outputs xg = x·W_ihᵀ + b_ih and hg = h·W_hhᵀ + b_hh, [B, G·H] row-major. Every
// element is computed in the order of the composed ops it replaces (src/ops/rnn.ts), with the
// same f32 lane code (vmath) and f64 scalar code, so results match the composition bit for bit.
// Contract: (pointers…, B ≥ 0, H ≥ 0); outputs must not alias inputs.
import { lanes, ld, st, at } from './lanes';
import { sigmoid_s, tanh_s } from './scalar';
import { sigmoid4, tanh4 } from './vmath';
import { MR, KC, nrOf, imin, roundUp, pack_a, pack_b, macro_tile } from './gemmtile';
import { gemm_f32, gemm_f64 } from './matmul';

@inline function sigv<T>(v: v128): v128 {
  if (sizeof<T>() == 4) return sigmoid4(v);
  return f64x2.replace_lane(f64x2.splat(sigmoid_s<f64>(f64x2.extract_lane(v, 0))), 1, sigmoid_s<f64>(f64x2.extract_lane(v, 1)));
}
@inline function tanhv<T>(v: v128): v128 {
  if (sizeof<T>() == 4) return tanh4(v);
  return f64x2.replace_lane(f64x2.splat(tanh_s<f64>(f64x2.extract_lane(v, 0))), 1, tanh_s<f64>(f64x2.extract_lane(v, 1)));
}
@inline function ldv<T>(p: usize, i: i32): v128 { return v128.load(at<T>(p, i)); }
@inline function add<T>(a: v128, b: v128): v128 { return v128.add<T>(a, b); }
@inline function sub<T>(a: v128, b: v128): v128 { return v128.sub<T>(a, b); }
@inline function mul<T>(a: v128, b: v128): v128 { return v128.mul<T>(a, b); }
/** Gate k's pre-activation at unit u of a row: xg + hg. */
@inline function gate<T>(xr: usize, hr: usize, k: i32, H: i32, u: i32): v128 { return add<T>(ldv<T>(xr, k * H + u), ldv<T>(hr, k * H + u)); }
@inline function gateS<T>(xr: usize, hr: usize, k: i32, H: i32, u: i32): T { return ld<T>(xr, k * H + u) + ld<T>(hr, k * H + u); }

// The cell bodies are functions, not @inline: lstm_cell_* and lstm_seq_* (gru alike) share one
// copy (4.5 kB of gzipped kernels saved; one call per row block, no measurable speed cost). The
// f32 lane functions stay inlined in the loops: calling them out of line saves 1.4 kB more but
// costs 2 % on the sequence step and 8 % on the bare cell (scripts/kernel-ab.mjs).
function lstmCell<T>(xg: usize, hg: usize, c: usize, cs: i32, out: usize, os: i32, B: i32, H: i32): void {
  const L = lanes<T>();
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 4 * H), hr = at<T>(hg, b * 4 * H), cr = at<T>(c, b * cs), orow = at<T>(out, b * os);
    let u = 0;
    for (; u + L <= H; u += L) {
      const i = sigv<T>(gate<T>(xr, hr, 0, H, u)), f = sigv<T>(gate<T>(xr, hr, 1, H, u));
      const g = tanhv<T>(gate<T>(xr, hr, 2, H, u)), o = sigv<T>(gate<T>(xr, hr, 3, H, u));
      const c2 = add<T>(mul<T>(f, ldv<T>(cr, u)), mul<T>(i, g));
      v128.store(at<T>(orow, u), mul<T>(o, tanhv<T>(c2)));
      v128.store(at<T>(orow, H + u), c2);
    }
    for (; u < H; u++) {
      const i = sigmoid_s<T>(gateS<T>(xr, hr, 0, H, u)), f = sigmoid_s<T>(gateS<T>(xr, hr, 1, H, u));
      const g = tanh_s<T>(gateS<T>(xr, hr, 2, H, u)), o = sigmoid_s<T>(gateS<T>(xr, hr, 3, H, u));
      const c2 = f * ld<T>(cr, u) + i * g;
      st<T>(orow, u, o * tanh_s<T>(c2));
      st<T>(orow, H + u, c2);
    }
  }
}
/** out [B, 2H] = [h' | c'] of an LSTM step: i, f, g, o = σ, σ, tanh, σ(xg + hg); c' = f·c + i·g; h' = o·tanh(c'). */
export function lstm_cell_f32(xg: usize, hg: usize, c: usize, out: usize, B: i32, H: i32): void { lstmCell<f32>(xg, hg, c, H, out, 2 * H, B, H); }
export function lstm_cell_f64(xg: usize, hg: usize, c: usize, out: usize, B: i32, H: i32): void { lstmCell<f64>(xg, hg, c, H, out, 2 * H, B, H); }

/** One element of the LSTM backward: writes d[k·H + u] (k = i, f, g, o gates, then c) of a row. */
@inline function lstmVjpS<T>(xr: usize, hr: usize, cr: usize, gr: usize, dr: usize, H: i32, u: i32): void {
  const i = sigmoid_s<T>(gateS<T>(xr, hr, 0, H, u)), f = sigmoid_s<T>(gateS<T>(xr, hr, 1, H, u));
  const g = tanh_s<T>(gateS<T>(xr, hr, 2, H, u)), o = sigmoid_s<T>(gateS<T>(xr, hr, 3, H, u));
  const c = ld<T>(cr, u), tc = tanh_s<T>(f * c + i * g), dh = ld<T>(gr, u);
  const e = ld<T>(gr, H + u) + dh * o * (<T>1 - tc * tc);
  st<T>(dr, u, e * g * (i * (<T>1 - i)));
  st<T>(dr, H + u, e * c * (f * (<T>1 - f)));
  st<T>(dr, 2 * H + u, e * i * (<T>1 - g * g));
  st<T>(dr, 3 * H + u, dh * tc * (o * (<T>1 - o)));
  st<T>(dr, 4 * H + u, e * f);
}
function lstmVjp<T>(xg: usize, hg: usize, c: usize, cs: i32, gout: usize, d: usize, B: i32, H: i32): void {
  const L = lanes<T>();
  const one = v128.splat<T>(<T>1);
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 4 * H), hr = at<T>(hg, b * 4 * H), cr = at<T>(c, b * cs), gr = at<T>(gout, b * 2 * H), dr = at<T>(d, b * 5 * H);
    let u = 0;
    for (; u + L <= H; u += L) {
      const i = sigv<T>(gate<T>(xr, hr, 0, H, u)), f = sigv<T>(gate<T>(xr, hr, 1, H, u));
      const g = tanhv<T>(gate<T>(xr, hr, 2, H, u)), o = sigv<T>(gate<T>(xr, hr, 3, H, u));
      const cv = ldv<T>(cr, u), tc = tanhv<T>(add<T>(mul<T>(f, cv), mul<T>(i, g))), dh = ldv<T>(gr, u);
      const e = add<T>(ldv<T>(gr, H + u), mul<T>(mul<T>(dh, o), sub<T>(one, mul<T>(tc, tc))));
      v128.store(at<T>(dr, u), mul<T>(mul<T>(e, g), mul<T>(i, sub<T>(one, i))));
      v128.store(at<T>(dr, H + u), mul<T>(mul<T>(e, cv), mul<T>(f, sub<T>(one, f))));
      v128.store(at<T>(dr, 2 * H + u), mul<T>(mul<T>(e, i), sub<T>(one, mul<T>(g, g))));
      v128.store(at<T>(dr, 3 * H + u), mul<T>(mul<T>(dh, tc), mul<T>(o, sub<T>(one, o))));
      v128.store(at<T>(dr, 4 * H + u), mul<T>(e, f));
    }
    for (; u < H; u++) lstmVjpS<T>(xr, hr, cr, gr, dr, H, u);
  }
}
/** d [B, 5H] = [∂gates (i, f, g, o) | ∂c] of an LSTM step given g [B, 2H] = [∂h' | ∂c']. */
export function lstm_cell_vjp_f32(xg: usize, hg: usize, c: usize, g: usize, d: usize, B: i32, H: i32): void { lstmVjp<f32>(xg, hg, c, H, g, d, B, H); }
export function lstm_cell_vjp_f64(xg: usize, hg: usize, c: usize, g: usize, d: usize, B: i32, H: i32): void { lstmVjp<f64>(xg, hg, c, H, g, d, B, H); }

function gruCell<T>(xg: usize, hg: usize, h: usize, hs: i32, out: usize, os: i32, B: i32, H: i32): void {
  const L = lanes<T>();
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 3 * H), hr = at<T>(hg, b * 3 * H), hp = at<T>(h, b * hs), orow = at<T>(out, b * os);
    let u = 0;
    for (; u + L <= H; u += L) {
      const r = sigv<T>(gate<T>(xr, hr, 0, H, u)), z = sigv<T>(gate<T>(xr, hr, 1, H, u));
      const n = tanhv<T>(add<T>(ldv<T>(xr, 2 * H + u), mul<T>(r, ldv<T>(hr, 2 * H + u))));
      v128.store(at<T>(orow, u), add<T>(n, mul<T>(z, sub<T>(ldv<T>(hp, u), n))));
    }
    for (; u < H; u++) {
      const r = sigmoid_s<T>(gateS<T>(xr, hr, 0, H, u)), z = sigmoid_s<T>(gateS<T>(xr, hr, 1, H, u));
      const n = tanh_s<T>(ld<T>(xr, 2 * H + u) + r * ld<T>(hr, 2 * H + u));
      st<T>(orow, u, n + z * (ld<T>(hp, u) - n));
    }
  }
}
/** out [B, H] = h' of a GRU step: r, z = σ(xg + hg); n = tanh(xn + r·hn); h' = n + z·(h − n). */
export function gru_cell_f32(xg: usize, hg: usize, h: usize, out: usize, B: i32, H: i32): void { gruCell<f32>(xg, hg, h, H, out, H, B, H); }
export function gru_cell_f64(xg: usize, hg: usize, h: usize, out: usize, B: i32, H: i32): void { gruCell<f64>(xg, hg, h, H, out, H, B, H); }

/** One element of the GRU backward: writes d[k·H + u] (∂xg r, z, n; ∂hg r, z, n; ∂h) of a row. */
@inline function gruVjpS<T>(xr: usize, hr: usize, hp: usize, gr: usize, dr: usize, H: i32, u: i32): void {
  const r = sigmoid_s<T>(gateS<T>(xr, hr, 0, H, u)), z = sigmoid_s<T>(gateS<T>(xr, hr, 1, H, u));
  const hn = ld<T>(hr, 2 * H + u), n = tanh_s<T>(ld<T>(xr, 2 * H + u) + r * hn), g = ld<T>(gr, u);
  const dan = g * (<T>1 - z) * (<T>1 - n * n);
  const dar = dan * hn * (r * (<T>1 - r)), daz = g * (ld<T>(hp, u) - n) * (z * (<T>1 - z));
  st<T>(dr, u, dar);
  st<T>(dr, H + u, daz);
  st<T>(dr, 2 * H + u, dan);
  st<T>(dr, 3 * H + u, dar);
  st<T>(dr, 4 * H + u, daz);
  st<T>(dr, 5 * H + u, dan * r);
  st<T>(dr, 6 * H + u, g * z);
}
function gruVjp<T>(xg: usize, hg: usize, h: usize, hs: i32, gout: usize, d: usize, B: i32, H: i32): void {
  const L = lanes<T>();
  const one = v128.splat<T>(<T>1);
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 3 * H), hr = at<T>(hg, b * 3 * H), hp = at<T>(h, b * hs), gr = at<T>(gout, b * H), dr = at<T>(d, b * 7 * H);
    let u = 0;
    for (; u + L <= H; u += L) {
      const r = sigv<T>(gate<T>(xr, hr, 0, H, u)), z = sigv<T>(gate<T>(xr, hr, 1, H, u));
      const hn = ldv<T>(hr, 2 * H + u), n = tanhv<T>(add<T>(ldv<T>(xr, 2 * H + u), mul<T>(r, hn))), g = ldv<T>(gr, u);
      const dan = mul<T>(mul<T>(g, sub<T>(one, z)), sub<T>(one, mul<T>(n, n)));
      const dar = mul<T>(mul<T>(dan, hn), mul<T>(r, sub<T>(one, r)));
      const daz = mul<T>(mul<T>(g, sub<T>(ldv<T>(hp, u), n)), mul<T>(z, sub<T>(one, z)));
      v128.store(at<T>(dr, u), dar);
      v128.store(at<T>(dr, H + u), daz);
      v128.store(at<T>(dr, 2 * H + u), dan);
      v128.store(at<T>(dr, 3 * H + u), dar);
      v128.store(at<T>(dr, 4 * H + u), daz);
      v128.store(at<T>(dr, 5 * H + u), mul<T>(dan, r));
      v128.store(at<T>(dr, 6 * H + u), mul<T>(g, z));
    }
    for (; u < H; u++) gruVjpS<T>(xr, hr, hp, gr, dr, H, u);
  }
}
/** d [B, 7H] = [∂xg (r, z, n) | ∂hg (r, z, n) | ∂h] of a GRU step given g [B, H] = ∂h'. */
export function gru_cell_vjp_f32(xg: usize, hg: usize, h: usize, g: usize, d: usize, B: i32, H: i32): void { gruVjp<f32>(xg, hg, h, H, g, d, B, H); }
export function gru_cell_vjp_f64(xg: usize, hg: usize, h: usize, g: usize, d: usize, B: i32, H: i32): void { gruVjp<f64>(xg, hg, h, H, g, d, B, H); }

// Whole-sequence LSTM and GRU layers: the recurrence of one layer over T steps in one call, each
// way. The input projection xg = x·W_ihᵀ + b_ih of every step is computed beforehand (one GEMM);
// per step the kernel runs the small GEMM hg = h·W_hhᵀ + b_hh against W_hhᵀ packed once per call
// (matmul.ts's micro-kernel), then the fused cell (rnn.ts). The backward pass recomputes hg step
// by step from the saved outputs, walks the steps in reverse with the fused cell backward, and
// finishes ∂W_hh = Σ_t ∂hg_tᵀ·h_{t−1} as one GEMM over all steps.
// Layouts: xg [T, B, G·H]; W_hh [G·H, H]; b_hh [G·H]; h0, c0 [B, H]; the LSTM's y [T, B, 2H] holds
// [h_t | c_t], the GRU's y [T, B, H] holds h_t. Contract: pointers…, T, B, H ≥ 0; ws is a workspace
// of rnn_seq_scratch_bytes(B, H, G, elemBytes) bytes; outputs alias nothing; the GEMM scratch of
// matmul.ts is registered.
@inline function imax(a: i32, b: i32): i32 { return a > b ? a : b; }
/** Bytes of a region rounded to a cache line. */
@inline function line(bytes: i32): i32 { return roundUp(bytes, 64); }


// Workspace regions (byte addresses), set by layout() at the start of each call: packed W_hhᵀ
// (forward GEMM), packed W_hh (backward GEMM), packed A, the edge tile, hg [B, G·H], the cell
// backward's input [B, 2H] and output [B, 7H], and a [B, H] temporary. Globals, not an object:
// kernels never allocate.
let wf: usize = 0, wb: usize = 0, ap: usize = 0, tile: usize = 0, hg: usize = 0, gout: usize = 0, dcell: usize = 0, tmp: usize = 0;

/** Lays the workspace out from base; returns its end. */
function layout(base: usize, B: i32, H: i32, G: i32, S: i32): usize {
  const nr = S == 4 ? nrOf<f32>() : nrOf<f64>();
  wf = base;
  wb = wf + <usize>line(H * roundUp(G * H, nr) * S);
  ap = wb + <usize>line(G * H * roundUp(H, nr) * S);
  tile = ap + <usize>line(roundUp(B, MR) * imin(imax(G * H, H), KC) * 16);
  hg = tile + <usize>line(MR * nr * S);
  gout = hg + <usize>line(B * G * H * S);
  dcell = gout + <usize>line(B * 2 * H * S);
  tmp = dcell + <usize>line(B * 7 * H * S);
  return tmp + <usize>line(B * H * S);
}

/** Workspace bytes for a layer of batch B, hidden H, G gates (4 LSTM, 3 GRU), elements of elemBytes. */
export function rnn_seq_scratch_bytes(B: i32, H: i32, G: i32, elemBytes: i32): i32 {
  return <i32>layout(0, B, H, G, elemBytes) + 64;
}
@inline function workspace(ws: usize, B: i32, H: i32, G: i32, S: i32): void {
  layout((ws + 63) & ~(<usize>63), B, H, G, S);
}

/** Packs op(B)[K, n] (element strides rs, cs) as K blocks of KC, each in the micro-kernel's NR-column slivers. */
function packB<T>(dst: usize, b: usize, rs: i32, cs: i32, K: i32, n: i32): void {
  const S = <i32>sizeof<T>();
  for (let pc = 0; pc < K; pc += KC) {
    const kc = imin(KC, K - pc);
    pack_b<T>(dst, b + <usize>(pc * rs * S), rs, cs, kc, n);
    dst += <usize>(kc * roundUp(n, nrOf<T>()) * S);
  }
}

/** C[m, n] (row stride ldc) = A[m, K] (row stride lda)·op(B), op(B) packed by packB; summed in K blocks of KC. */
function gemmPacked<T>(a: usize, lda: i32, bp: usize, c: usize, ldc: i32, m: i32, n: i32, K: i32): void {
  const S = <i32>sizeof<T>();
  for (let pc = 0; pc < K; pc += KC) {
    const kc = imin(KC, K - pc);
    pack_a<T>(ap, a + <usize>(pc * S), lda, 1, m, kc);
    macro_tile<T>(ap, bp, c, ldc, m, n, kc, pc == 0, tile);
    bp += <usize>(kc * roundUp(n, nrOf<T>()) * S);
  }
}

/** hg [B, G·H] = h·W_hhᵀ + b_hh (bias added to the finished sum), h with row stride ldh. */
function hiddenGates<T>(h: usize, ldh: i32, bhh: usize, B: i32, GH: i32, H: i32): void {
  gemmPacked<T>(h, ldh, wf, hg, GH, B, GH, H);
  const L = lanes<T>();
  for (let b = 0; b < B; b++) {
    const r = at<T>(hg, b * GH);
    let j = 0;
    for (; j + L <= GH; j += L) v128.store(at<T>(r, j), add<T>(ldv<T>(r, j), ldv<T>(bhh, j)));
    for (; j < GH; j++) store<T>(at<T>(r, j), load<T>(at<T>(r, j)) + load<T>(at<T>(bhh, j)));
  }
}

/** ∂W_hh [G·H, H] = Σ_t ∂hg_tᵀ·h_{t−1}: steps 1… against y's h rows (stride ldy) in one GEMM, then step 0 against h0. */
function weightGrad<T>(dhg: usize, y: usize, ldy: i32, h0: usize, dw: usize, T: i32, B: i32, GH: i32, H: i32): void {
  const S = <i32>sizeof<T>();
  const rest = dhg + <usize>(B * GH * S);
  if (sizeof<T>() == 4) {
    if (T > 1) gemm_f32(rest, y, dw, GH, H, (T - 1) * B, GH, ldy, H, 1, 0, 0);
    gemm_f32(dhg, h0, dw, GH, H, B, GH, H, H, 1, 0, T > 1 ? 1 : 0);
  } else {
    if (T > 1) gemm_f64(rest, y, dw, GH, H, (T - 1) * B, GH, ldy, H, 1, 0, 0);
    gemm_f64(dhg, h0, dw, GH, H, B, GH, H, H, 1, 0, T > 1 ? 1 : 0);
  }
}

/** dst[0:n] = src[0:n] (+ add[0:n] when add ≠ 0). */
@inline function copyAdd<T>(dst: usize, src: usize, add: usize, n: i32): void {
  const L = lanes<T>();
  let i = 0;
  if (add == 0) {
    memory.copy(dst, src, <usize>n << alignof<T>());
    return;
  }
  for (; i + L <= n; i += L) v128.store(at<T>(dst, i), v128.add<T>(ldv<T>(src, i), ldv<T>(add, i)));
  for (; i < n; i++) store<T>(at<T>(dst, i), load<T>(at<T>(src, i)) + load<T>(at<T>(add, i)));
}

/** Copies B rows of n elements: dst (row stride ds) = src (row stride ss). */
@inline function rows<T>(dst: usize, ds: i32, src: usize, ss: i32, B: i32, n: i32): void {
  for (let b = 0; b < B; b++) memory.copy(at<T>(dst, b * ds), at<T>(src, b * ss), <usize>n << alignof<T>());
}

@inline function lstmSeq<T>(xg: usize, whh: usize, bhh: usize, h0: usize, c0: usize, y: usize, ws: usize, T: i32, B: i32, H: i32): void {
  const S = <i32>sizeof<T>(), GH = 4 * H, RW = 6 * H;
  workspace(ws, B, H, 4, S);
  packB<T>(wf, whh, 1, H, H, GH);
  for (let t = 0; t < T; t++) {
    const prev: usize = t == 0 ? 0 : at<T>(y, (t - 1) * B * RW), yt = at<T>(y, t * B * RW);
    const hp = t == 0 ? h0 : prev, cp = t == 0 ? c0 : prev + <usize>(H * S), ld = t == 0 ? H : RW;
    hiddenGates<T>(hp, ld, bhh, B, GH, H);
    lstmCell<T>(at<T>(xg, t * B * GH), hg, cp, ld, yt, RW, B, H);
    rows<T>(at<T>(yt, 2 * H), RW, hg, GH, B, GH);
  }
}
/** y [T, B, 6H] = [h_t | c_t | hg_t] of an LSTM layer over xg [T, B, 4H] from h0, c0 (hg_t = h_{t−1}·W_hhᵀ + b_hh, kept for the backward). */
export function lstm_seq_f32(xg: usize, whh: usize, bhh: usize, h0: usize, c0: usize, y: usize, ws: usize, T: i32, B: i32, H: i32): void { lstmSeq<f32>(xg, whh, bhh, h0, c0, y, ws, T, B, H); }
export function lstm_seq_f64(xg: usize, whh: usize, bhh: usize, h0: usize, c0: usize, y: usize, ws: usize, T: i32, B: i32, H: i32): void { lstmSeq<f64>(xg, whh, bhh, h0, c0, y, ws, T, B, H); }

@inline function lstmSeqVjp<T>(xg: usize, whh: usize, bhh: usize, h0: usize, c0: usize, y: usize, gy: usize, d: usize, dhg: usize, ws: usize, T: i32, B: i32, H: i32): void {
  const S = <i32>sizeof<T>(), GH = 4 * H, RW = 6 * H;
  workspace(ws, B, H, 4, S);
  const dw = at<T>(d, T * B * GH), db = at<T>(dw, GH * H), dh = at<T>(db, GH), dc = at<T>(dh, B * H);
  packB<T>(wb, whh, H, 1, GH, H);
  memory.fill(db, 0, <usize>((GH + 2 * B * H) * S));
  for (let t = T - 1; t >= 0; t--) {
    const prev: usize = t == 0 ? 0 : at<T>(y, (t - 1) * B * RW), yt = at<T>(y, t * B * RW);
    const cp = t == 0 ? c0 : prev + <usize>(H * S), ld = t == 0 ? H : RW;
    rows<T>(hg, GH, at<T>(yt, 2 * H), RW, B, GH);
    const g = at<T>(gy, t * B * RW), dx = at<T>(d, t * B * GH), dr = at<T>(dhg, t * B * GH);
    for (let b = 0; b < B; b++) {
      copyAdd<T>(at<T>(gout, b * 2 * H), at<T>(g, b * RW), at<T>(dh, b * H), H);
      copyAdd<T>(at<T>(gout, b * 2 * H + H), at<T>(g, b * RW + H), at<T>(dc, b * H), H);
    }
    lstmVjp<T>(at<T>(xg, t * B * GH), hg, cp, ld, gout, dcell, B, H);
    for (let b = 0; b < B; b++) {
      const r = at<T>(dcell, b * 5 * H);
      copyAdd<T>(at<T>(dx, b * GH), r, 0, GH);
      copyAdd<T>(at<T>(dc, b * H), at<T>(r, GH), 0, H);
      copyAdd<T>(at<T>(dr, b * GH), r, at<T>(g, b * RW + 2 * H), GH); // hg's own cotangent joins the gates'
      copyAdd<T>(db, db, at<T>(dr, b * GH), GH);
    }
    gemmPacked<T>(dr, GH, wb, dh, H, B, H, GH);
  }
  if (T > 0) weightGrad<T>(dhg, y, RW, h0, dw, T, B, GH, H);
  else memory.fill(dw, 0, <usize>(GH * H * S));
}
/** d = [∂xg (T·B·4H) | ∂W_hh (4H·H) | ∂b_hh (4H) | ∂h0 (B·H) | ∂c0 (B·H)] of lstm_seq given gy [T, B, 6H] = ∂y; dhg [T, B, 4H] is scratch. */
export function lstm_seq_vjp_f32(xg: usize, whh: usize, bhh: usize, h0: usize, c0: usize, y: usize, gy: usize, d: usize, dhg: usize, ws: usize, T: i32, B: i32, H: i32): void { lstmSeqVjp<f32>(xg, whh, bhh, h0, c0, y, gy, d, dhg, ws, T, B, H); }
export function lstm_seq_vjp_f64(xg: usize, whh: usize, bhh: usize, h0: usize, c0: usize, y: usize, gy: usize, d: usize, dhg: usize, ws: usize, T: i32, B: i32, H: i32): void { lstmSeqVjp<f64>(xg, whh, bhh, h0, c0, y, gy, d, dhg, ws, T, B, H); }

@inline function gruSeq<T>(xg: usize, whh: usize, bhh: usize, h0: usize, y: usize, ws: usize, T: i32, B: i32, H: i32): void {
  const S = <i32>sizeof<T>(), GH = 3 * H, RW = 4 * H;
  workspace(ws, B, H, 3, S);
  packB<T>(wf, whh, 1, H, H, GH);
  for (let t = 0; t < T; t++) {
    const hp = t == 0 ? h0 : at<T>(y, (t - 1) * B * RW), ld = t == 0 ? H : RW, yt = at<T>(y, t * B * RW);
    hiddenGates<T>(hp, ld, bhh, B, GH, H);
    gruCell<T>(at<T>(xg, t * B * GH), hg, hp, ld, yt, RW, B, H);
    rows<T>(at<T>(yt, H), RW, hg, GH, B, GH);
  }
}
/** y [T, B, 4H] = [h_t | hg_t] of a GRU layer over xg [T, B, 3H] from h0 (hg_t = h_{t−1}·W_hhᵀ + b_hh, kept for the backward). */
export function gru_seq_f32(xg: usize, whh: usize, bhh: usize, h0: usize, y: usize, ws: usize, T: i32, B: i32, H: i32): void { gruSeq<f32>(xg, whh, bhh, h0, y, ws, T, B, H); }
export function gru_seq_f64(xg: usize, whh: usize, bhh: usize, h0: usize, y: usize, ws: usize, T: i32, B: i32, H: i32): void { gruSeq<f64>(xg, whh, bhh, h0, y, ws, T, B, H); }

@inline function gruSeqVjp<T>(xg: usize, whh: usize, bhh: usize, h0: usize, y: usize, gy: usize, d: usize, dhg: usize, ws: usize, T: i32, B: i32, H: i32): void {
  const S = <i32>sizeof<T>(), GH = 3 * H, RW = 4 * H;
  workspace(ws, B, H, 3, S);
  const dw = at<T>(d, T * B * GH), db = at<T>(dw, GH * H), dh = at<T>(db, GH);
  packB<T>(wb, whh, H, 1, GH, H);
  memory.fill(db, 0, <usize>((GH + B * H) * S));
  for (let t = T - 1; t >= 0; t--) {
    const hp = t == 0 ? h0 : at<T>(y, (t - 1) * B * RW), ld = t == 0 ? H : RW, yt = at<T>(y, t * B * RW);
    rows<T>(hg, GH, at<T>(yt, H), RW, B, GH);
    const g = at<T>(gy, t * B * RW);
    for (let b = 0; b < B; b++) copyAdd<T>(at<T>(gout, b * H), at<T>(g, b * RW), at<T>(dh, b * H), H);
    gruVjp<T>(at<T>(xg, t * B * GH), hg, hp, ld, gout, dcell, B, H);
    const dx = at<T>(d, t * B * GH), dr = at<T>(dhg, t * B * GH);
    for (let b = 0; b < B; b++) {
      const r = at<T>(dcell, b * 7 * H);
      copyAdd<T>(at<T>(dx, b * GH), r, 0, GH);
      copyAdd<T>(at<T>(dr, b * GH), at<T>(r, GH), at<T>(g, b * RW + H), GH); // hg's own cotangent joins the cell's
      copyAdd<T>(db, db, at<T>(dr, b * GH), GH);
    }
    gemmPacked<T>(dr, GH, wb, tmp, H, B, H, GH);
    for (let b = 0; b < B; b++) copyAdd<T>(at<T>(dh, b * H), at<T>(tmp, b * H), at<T>(dcell, b * 7 * H + 6 * H), H);
  }
  if (T > 0) weightGrad<T>(dhg, y, RW, h0, dw, T, B, GH, H);
  else memory.fill(dw, 0, <usize>(GH * H * S));
}
/** d = [∂xg (T·B·3H) | ∂W_hh (3H·H) | ∂b_hh (3H) | ∂h0 (B·H)] of gru_seq given gy [T, B, 4H] = ∂y; dhg [T, B, 3H] is scratch. */
export function gru_seq_vjp_f32(xg: usize, whh: usize, bhh: usize, h0: usize, y: usize, gy: usize, d: usize, dhg: usize, ws: usize, T: i32, B: i32, H: i32): void { gruSeqVjp<f32>(xg, whh, bhh, h0, y, gy, d, dhg, ws, T, B, H); }
export function gru_seq_vjp_f64(xg: usize, whh: usize, bhh: usize, h0: usize, y: usize, gy: usize, d: usize, dhg: usize, ws: usize, T: i32, B: i32, H: i32): void { gruSeqVjp<f64>(xg, whh, bhh, h0, y, gy, d, dhg, ws, T, B, H); }
