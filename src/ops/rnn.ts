// Recurrent cell updates after the two GEMMs (gate pre-activations xg = x·W_ihᵀ + b_ih and
// hg = h·W_hhᵀ + b_hh), in PyTorch's gate order. LSTM: i, f, g, o = σ, σ, tanh, σ of
// xg + hg; c' = f·c + i·g; h' = o·tanh(c'). GRU: r, z = σ(xr + hr), σ(xz + hz);
// n = tanh(xn + r·hn); h' = n + z·(h − n).
import type { Tensor } from '../tensor/tensor.js';
import { add, sub, mul, sigmoid, tanh, slice, composite } from './api.js';

const part = (t: Tensor, i: number, H: number): Tensor => slice(t, [0, i * H], [t.shape[0], H]);

/** [h', c'] of an LSTM step from xg, hg [B, 4H] and c [B, H]. */
export function lstmCell(xg: Tensor, hg: Tensor, c: Tensor): [Tensor, Tensor] {
  const H = c.shape[1];
  return composite(() => {
    const gates = add(xg, hg);
    const [i, f, g, o] = [0, 1, 2, 3].map((k) => (k === 2 ? tanh : sigmoid)(part(gates, k, H)));
    const c2 = add(mul(f, c), mul(i, g));
    return [mul(o, tanh(c2)), c2] as [Tensor, Tensor];
  });
}

/** h' of a GRU step from xg, hg [B, 3H] and h [B, H]. */
export function gruCell(xg: Tensor, hg: Tensor, h: Tensor): Tensor {
  const H = h.shape[1];
  return composite(() => {
    const r = sigmoid(add(part(xg, 0, H), part(hg, 0, H)));
    const z = sigmoid(add(part(xg, 1, H), part(hg, 1, H)));
    const n = tanh(add(part(xg, 2, H), mul(r, part(hg, 2, H))));
    return add(n, mul(z, sub(h, n)));
  });
}
