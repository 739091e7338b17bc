// Exact GELU in float32 (assembly/gelu.ts's rational erf) against float64 references on a dense
// grid: the value within a few ulp where 1 + erf does not cancel, the derivative and the fused VJP
// to f32 rounding of the largest value, and the fused VJP bit-identical to g · gelu'(x).
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import { erf } from './ref.js';

beforeAll(() => A.init());

const geluRef = (v: number) => 0.5 * v * (1 + erf(v * Math.SQRT1_2));
const geluGradRef = (v: number) => 0.5 * (1 + erf(v * Math.SQRT1_2)) + (v * Math.exp(-0.5 * v * v)) / Math.sqrt(2 * Math.PI);
/** The spacing of float32 values at |v| (its ulp). */
function ulp32(v: number): number {
  const a = Math.fround(Math.abs(v));
  if (a < 1.1754943508222875e-38) return 1.401298464324817e-45;
  const e = Math.floor(Math.log2(a));
  return 2 ** (e - 23) * (Math.fround(2 ** e) > a ? 0.5 : 1);
}
/** Float32 inputs: a uniform grid over [−10, 10] (an odd count, so no lane pattern repeats) plus tiny magnitudes. */
function grid(): Float32Array {
  const n = 200_001,
    xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(-10 + (20 * i) / (n - 1));
  for (let e = -30; e < 0; e++) xs.push(2 ** e, -(2 ** e), 1.5 * 2 ** e);
  return Float32Array.from(xs);
}

describe('exact GELU in float32', () => {
  it('values: within 6 ulp for x > −1, within 4e-7·|x| below (1 + erf cancels there)', () => {
    A.tidy(() => {
      const x = grid(),
        y = A.gelu(A.tensor(x), { approximate: 'none' }).toArray();
      let worstUlp = 0,
        worstTail = 0;
      for (let i = 0; i < x.length; i++) {
        const e = geluRef(x[i]),
          d = Math.abs(y[i] - e);
        if (x[i] > -1) worstUlp = Math.max(worstUlp, d / ulp32(e));
        else worstTail = Math.max(worstTail, d / Math.abs(x[i]));
      }
      expect(worstUlp).toBeLessThan(6);
      expect(worstTail).toBeLessThan(4e-7);
    });
  });

  it("the derivative and the fused VJP: within 4e-7 of gelu'(x); the VJP is g · gelu'(x) to the bit", () => {
    A.tidy(() => {
      const x = grid(),
        g = Float32Array.from(x, (_, i) => Math.fround(0.5 + ((i * 7919) % 1000) / 1000)),
        xt = A.tensor(x),
        gt = A.tensor(g);
      const [, back] = A.vjp((t: A.Tensor) => A.gelu(t, { approximate: 'none' }), xt);
      const [dx] = back(gt);
      const d = A.grad((t: A.Tensor) => A.sum(A.gelu(t, { approximate: 'none' })))(xt).toArray();
      const dxs = dx.toArray();
      let worst = 0,
        differ = 0;
      for (let i = 0; i < x.length; i++) {
        worst = Math.max(worst, Math.abs(d[i] - geluGradRef(x[i])));
        if (dxs[i] !== Math.fround(g[i] * d[i])) differ++;
      }
      expect(worst).toBeLessThan(4e-7);
      expect(differ).toBe(0);
    });
  });
});
