// Fused LSTM and GRU cell updates: the gate nonlinearities and the state update after the two
// GEMMs, in one pass over the gates, forward and backward (PyTorch's gate order). Inputs are
// the GEMM outputs xg = x·W_ihᵀ + b_ih and hg = h·W_hhᵀ + b_hh, [B, G·H] row-major. Every
// element is computed in the order of the composed ops it replaces (src/ops/rnn.ts), with the
// same f32 lane code (vmath) and f64 scalar code, so results match the composition bit for bit.
// Contract: (pointers…, B ≥ 0, H ≥ 0); outputs must not alias inputs.
import { lanes, ld, st, at } from './lanes';
import { sigmoid_s, tanh_s } from './scalar';
import { sigmoid4, tanh4 } from './vmath';

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

@inline function lstmCell<T>(xg: usize, hg: usize, c: usize, out: usize, B: i32, H: i32): void {
  const L = lanes<T>();
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 4 * H), hr = at<T>(hg, b * 4 * H), cr = at<T>(c, b * H), orow = at<T>(out, b * 2 * H);
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
export function lstm_cell_f32(xg: usize, hg: usize, c: usize, out: usize, B: i32, H: i32): void { lstmCell<f32>(xg, hg, c, out, B, H); }
export function lstm_cell_f64(xg: usize, hg: usize, c: usize, out: usize, B: i32, H: i32): void { lstmCell<f64>(xg, hg, c, out, B, H); }

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
@inline function lstmVjp<T>(xg: usize, hg: usize, c: usize, gout: usize, d: usize, B: i32, H: i32): void {
  const L = lanes<T>();
  const one = v128.splat<T>(<T>1);
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 4 * H), hr = at<T>(hg, b * 4 * H), cr = at<T>(c, b * H), gr = at<T>(gout, b * 2 * H), dr = at<T>(d, b * 5 * H);
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
export function lstm_cell_vjp_f32(xg: usize, hg: usize, c: usize, g: usize, d: usize, B: i32, H: i32): void { lstmVjp<f32>(xg, hg, c, g, d, B, H); }
export function lstm_cell_vjp_f64(xg: usize, hg: usize, c: usize, g: usize, d: usize, B: i32, H: i32): void { lstmVjp<f64>(xg, hg, c, g, d, B, H); }

@inline function gruCell<T>(xg: usize, hg: usize, h: usize, out: usize, B: i32, H: i32): void {
  const L = lanes<T>();
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 3 * H), hr = at<T>(hg, b * 3 * H), hp = at<T>(h, b * H), orow = at<T>(out, b * H);
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
export function gru_cell_f32(xg: usize, hg: usize, h: usize, out: usize, B: i32, H: i32): void { gruCell<f32>(xg, hg, h, out, B, H); }
export function gru_cell_f64(xg: usize, hg: usize, h: usize, out: usize, B: i32, H: i32): void { gruCell<f64>(xg, hg, h, out, B, H); }

@inline function gruVjp<T>(xg: usize, hg: usize, h: usize, gout: usize, d: usize, B: i32, H: i32): void {
  for (let b = 0; b < B; b++) {
    const xr = at<T>(xg, b * 3 * H), hr = at<T>(hg, b * 3 * H), hp = at<T>(h, b * H), gr = at<T>(gout, b * H), dr = at<T>(d, b * 7 * H);
    for (let u = 0; u < H; u++) {
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
  }
}
/** d [B, 7H] = [∂xg (r, z, n) | ∂hg (r, z, n) | ∂h] of a GRU step given g [B, H] = ∂h'. */
export function gru_cell_vjp_f32(xg: usize, hg: usize, h: usize, g: usize, d: usize, B: i32, H: i32): void { gruVjp<f32>(xg, hg, h, g, d, B, H); }
export function gru_cell_vjp_f64(xg: usize, hg: usize, h: usize, g: usize, d: usize, B: i32, H: i32): void { gruVjp<f64>(xg, hg, h, g, d, B, H); }
