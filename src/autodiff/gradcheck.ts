// Gradient checking: the analytic gradient (reverse mode) against central differences
// (f(x + h) − f(x − h)) / 2h, all in float64.
import { ArgumentError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { fromValues } from '../ops/create.js';
import { tidy } from '../tensor/memory.js';
import { grad } from './transforms.js';
import { scalarFn } from './forward.js';
import { describe, optionsArg, tooMany } from '../args.js';

/** What {@link gradcheck} found. */
export interface GradcheckResult {
  /** Whether every element's relative error is within `rtol`. */
  ok: boolean;
  /** The largest relative error `|ga − gn| / max(|ga|, |gn|, 1e-12)` over all inputs' elements (∞ where either is NaN, or one is infinite and the other not equal). */
  maxRelError: number;
  /** Where the largest error is: input position, flat element index, analytic and numeric values. */
  worst: {
    /** Position of the input in `inputs`. */
    input: number;
    /** Flat (row-major) index of the element in that input. */
    index: number;
    /** The reverse-mode gradient there. */
    analytic: number;
    /** The central-difference estimate there. */
    numeric: number;
  };
}

/**
 * Checks `f`'s reverse-mode gradient against central differences `(f(x + h) − f(x − h)) / 2h`,
 * element by element, with the inputs cast to float64. `f` must return a scalar.
 *
 * @param options - `eps` (the step h, default 1e-6) and `rtol` (the relative error allowed, default 1e-7).
 * @throws {@link ArgumentError} when `inputs` is empty or holds a non-tensor, or `eps`/`rtol` is not positive.
 */
export function gradcheck(
  f: (...xs: Tensor[]) => Tensor,
  inputs: readonly Tensor[],
  options?: { eps?: number; rtol?: number },
): GradcheckResult {
  if (arguments.length > 3) throw tooMany('gradcheck', 3, arguments.length);
  const { eps = 1e-6, rtol = 1e-7 } = optionsArg('gradcheck', options, ['eps', 'rtol']);
  if (typeof f !== 'function') throw new ArgumentError(`gradcheck: f must be a function, got ${describe(f)}`);
  if (!Array.isArray(inputs) || inputs.length === 0) throw new ArgumentError('gradcheck: inputs must be a non-empty array of tensors');
  inputs.forEach((x, i) => {
    if (!(x instanceof Tensor)) throw new ArgumentError(`gradcheck: input ${i} must be a Tensor, got ${describe(x)}`);
    x.check('gradcheck');
  });
  if (typeof eps !== 'number' || typeof rtol !== 'number' || !(eps > 0) || !(rtol > 0))
    throw new ArgumentError(`gradcheck: eps and rtol must be positive numbers, got eps=${describe(eps)}, rtol=${describe(rtol)}`);
  return tidy(() => {
    const xs = inputs.map((x) => x.astype('float64'));
    const base = xs.map((x) => x.toArray() as Float64Array);
    // scalarFn: a non-scalar f is gradcheck's error, not grad's.
    const analytic = (grad(scalarFn('gradcheck', f), { argnums: xs.map((_, i) => i) })(...xs) as Tensor[]).map((g) => g.toArray());
    const evalAt = (i: number, j: number, delta: number): number =>
      tidy(() => {
        const v = base[i].slice();
        v[j] += delta;
        const args = xs.map((x, k) => (k === i ? fromValues(v, x.shape, 'float64') : x));
        return f(...args).item();
      });
    let worst = { input: 0, index: -1, analytic: 0, numeric: 0 };
    let maxRelError = 0;
    xs.forEach((x, i) => {
      for (let j = 0; j < x.size; j++) {
        const numeric = (evalAt(i, j, eps) - evalAt(i, j, -eps)) / (2 * eps);
        const a = analytic[i][j];
        // A NaN on either side, or an infinity the other side does not match, is the worst error,
        // not none: NaN fails every comparison below, so it used to be skipped (ok: true).
        const d = a === numeric ? 0 : Math.abs(a - numeric) / Math.max(Math.abs(a), Math.abs(numeric), 1e-12);
        const rel = Number.isNaN(d) ? Infinity : d;
        if (rel > maxRelError || worst.index < 0) {
          maxRelError = Math.max(rel, maxRelError);
          if (rel >= maxRelError) worst = { input: i, index: j, analytic: a, numeric };
        }
      }
    });
    return { ok: maxRelError < rtol, maxRelError, worst };
  });
}
