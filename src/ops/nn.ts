// Neural-network primitives with kernels of their own: softmax over the last axis (one pass
// per row, max-subtracted). Its VJP y·(g − Σ g·y) and JVP have the same form.
import { Tensor } from './tensor.js';
import type { Rule } from './table.js';
import { splitRows } from '../wasm/split.js';
import { SUFFIX } from '../tensor/dtype.js';
import { mul, sub, sum } from './api.js';

/** y ⊙ (v − Σ_last v ⊙ y): the softmax Jacobian (symmetric) applied to v. */
export const softmaxJ = (y: Tensor, v: Tensor): Tensor => mul(y, sub(v, sum(mul(v, y), [y.shape.length - 1], true)));

export const nnRules = {
  softmax: {
    saves: { inputs: [], output: true },
    forward: ([x]) => {
      const y = Tensor.empty(x.shape, x.dtype);
      const cols = x.shape[x.shape.length - 1];
      const bytes = x.dtype === 'float32' ? 4 : 8;
      // Rows are independent: split across threads when large.
      if (x.size > 0) splitRows(`softmax_${SUFFIX[x.dtype]}`, x.size / cols, cols, 8, (lo, hi) => [x.ptr + lo * cols * bytes, y.ptr + lo * cols * bytes, hi - lo, cols]);
      return y;
    },
    vjp: (g, s) => [softmaxJ(s.y!, g)],
    jvp: ([t], _x, y) => softmaxJ(y, t!),
  } satisfies Rule<Record<string, never>>,
};
