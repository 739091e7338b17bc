// float64 GELU (both forms) and its derivative against correctly rounded references, over the
// whole line: the left tail where ½x(1 + erf(x/√2)) and ½x(1 + tanh u) cancel (x < −1.4; all digits
// gone below x ≈ −8, where they returned −0 or 2 % off), the derivatives' zeros near x = −0.752,
// and the underflow to subnormals and −0. float32 keeps its bits (its kernels are GPT training's).
import { createHash } from 'node:crypto';
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import { geluTanh, geluTanhGrad } from '../src/ops/api.js';

beforeAll(() => A.init());

// [x, exact gelu x·Φ(x), its derivative Φ(x) + x·φ(x), tanh form x·σ(w), its derivative σ(w) + x·w'·σ(w)(1 − σ(w))],
// w = 2√(2/π)(x + 0.044715x³) with 0.044715 exact. Computed with mpmath at 200 bits (ncdf, npdf, exp),
// printed to 40 digits and rounded to float64 by Python's correctly rounded float() (subnormals included).
const TABLE: readonly (readonly [number, number, number, number, number])[] = [
  [-40, -0.0, -0.0, -0.0, -0.0],
  [-38.7, -0.0, -0.0, -0.0, -0.0],
  [-38.6, -0.0, -4.4e-323, -0.0, -0.0],
  [-38.4, -2.535e-321, -9.7346e-320, -0.0, -0.0],
  [-37.9, -4.87685527557e-313, -1.848326363996e-311, -0.0, -0.0],
  [-36.59095453466347, -7.287687269581166e-292, -2.666631371411079e-290, -0.0, -0.0],
  [-30, -1.472014178144456e-196, -4.416031690708495e-195, -0.0, -0.0],
  [-25, -7.641741765956403e-137, -1.9104257373984655e-135, -0.0, -0.0],
  [-21.05, -2.4068558436761586e-97, -5.0663805149725685e-96, -4.908271423715908e-303, -4.731610740129306e-301],
  [-20.5, -2.206758018052147e-92, -4.523803306172878e-91, -1.3502940601643467e-280, -1.2356213261882888e-278],
  [-16, -1.022200704086094e-56, -1.6354721620665074e-55, -1.529763371299099e-137, -8.617733488266979e-136],
  [-13.303541410982326, -1.4684398469374187e-39, -1.9534236814587622e-38, -8.710351365541334e-82, -3.432455882222912e-80],
  [-12, -2.1317785344932147e-32, -2.5578956616748956e-31, -1.635985449353481e-61, -5.290403352522559e-60],
  [-10, -7.619853024160526e-23, -7.618400096464814e-22, -1.204092348209806e-37, -2.7576380638540315e-36],
  [-8, -4.976768459417427e-15, -3.979607261086796e-14, -3.1077829375011112e-21, -4.7147845041068414e-20],
  [-7.9, -1.1016685458608188e-14, -8.699033694671999e-14, -1.392751516041609e-20, -2.0653041331754607e-19],
  [-6, -5.9195258702261885e-9, -3.5468709453902015e-8, -8.439646700762297e-11, -7.709973930953696e-10],
  [-5.097328925540111, -8.77962610355848e-7, -4.464018372238044e-6, -1.1761292138071714e-7, -8.187709897927342e-7],
  [-4.974859437167048, -1.624167288967025e-6, -8.057783251899897e-6, -2.7136124689845794e-7, -1.8161360395657238e-6],
  [-3.5, -0.0008142017766243376, -0.002821760353624635, -0.0006161976553736633, -0.002422643760116431],
  [-3, -0.0040496940948902835, -0.011945647204183927, -0.003637392081773019, -0.011584166630969726],
  [-2.823123083552197, -0.006713148092723758, -0.01856181892508722, -0.006251494699303924, -0.018381511426759922],
  [-2.5, -0.015524163314440337, -0.03761108590814521, -0.015084266089998582, -0.037951576212666184],
  [-2, -0.04550026389635842, -0.0852318010781969, -0.04540230591222498, -0.08609925662361838],
  [-1.6, -0.08767886671929279, -0.1226740437875709, -0.0878630378556385, -0.12310051309178777],
  [-1.4, -0.11305932292727948, -0.12886179265627173, -0.1132919328388055, -0.12892204155359338],
  [-1.2, -0.13808360426604993, -0.11795359575814726, -0.1382972308621351, -0.11772613473311258],
  [-1, -0.15865525393145705, -0.0833154705876863, -0.1588080093917233, -0.08296408384578255],
  [-0.9, -0.16565411281208353, -0.05541659956211986, -0.16577151129027945, -0.05506720475961667],
  [-0.7524614220710163, -0.16997111069965337, -0.00028888244065083756, -0.17004075057125406, -1.5647455740893692e-17],
  [-0.7517915246935645, -0.16997120747990366, -6.453751729367753e-18, -0.17004065395871265, 0.00028849779121015265],
  [-0.75, -0.16997051428265114, 0.0007742782607648957, -0.1700394448343797, 0.0010617438625857023],
  [-0.6, -0.16455187065004415, 0.07431835601499381, -0.16458480076918525, 0.07450846666751695],
  [-0.5, -0.15426876936299344, 0.13250487534383715, -0.15428599017485609, 0.1326300964653577],
  [-0.25, -0.10032341857926907, 0.30462664511636395, -0.100324649298315, 0.30464590484893955],
  [-0.001, -0.000499601057786089, 0.4992021157051586, -0.000499601057786418, 0.499202115706475],
  [-1e-10, -4.999999999601058e-11, 0.49999999992021155, -4.999999999601058e-11, 0.49999999992021155],
  [-1e-300, -5e-301, 0.5, -5e-301, 0.5],
  [1e-10, 5.000000000398942e-11, 0.5000000000797885, 5.000000000398942e-11, 0.5000000000797885],
  [0.3, 0.1853734266566858, 0.7323277668271099, 0.18537092354275925, 0.7322954516388018],
  [0.75, 0.5800294857173488, 0.9992257217392351, 0.5799605551656203, 0.9989382561374143],
  [1, 0.8413447460685429, 1.0833154705876864, 0.8411919906082767, 1.0829640838457826],
  [1.5, 1.399789198096713, 1.1274691922299795, 1.3995715769802328, 1.1277107931514332],
  [2, 1.9544997361036416, 1.085231801078197, 1.954597694087775, 1.0860992566236183],
  [3, 2.99595030590511, 1.011945647204184, 2.996362607918227, 1.0115841666309697],
  [5, 4.999998566742141, 1.000007146946002, 4.999999770820381, 1.0000015463619876],
  [8, 7.999999999999995, 1.0000000000000397, 8.0, 1.0],
  [20, 20.0, 1.0, 20.0, 1.0],
  [39, 39.0, 1.0, 39.0, 1.0],
];

/** The spacing of float64 values at |v| (2^-1074 for subnormals and zero). */
function ulp(v: number): number {
  const a = Math.abs(v);
  if (a < 2 ** -1022) return 2 ** -1074;
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  return 2 ** (e - 52);
}

/** Error of got in ulp of want; a zero want must be matched with its sign. */
function ulps(got: number, want: number): number {
  if (want === 0) return Object.is(got, want) ? 0 : Infinity;
  return Math.abs(got - want) / ulp(want);
}

const FORMS = [
  ['none', 1, 2],
  ['tanh', 3, 4],
] as const;

describe('float64 gelu in the tail', () => {
  it.each(FORMS)("approximate '%s': values and derivatives within 4 ulp of the references", (approximate, v, d) => {
    A.tidy(() => {
      const x = A.tensor(
        TABLE.map((r) => r[0]),
        { dtype: 'float64' },
      );
      const y = A.gelu(x, { approximate }).toArray();
      const g = (A.grad((t: A.Tensor) => A.sum(A.gelu(t, { approximate })))(x) as A.Tensor).toArray();
      const bad: string[] = [];
      TABLE.forEach((r, i) => {
        const ey = ulps(y[i], r[v]),
          eg = ulps(g[i], r[d]);
        if (ey > 4) bad.push(`gelu(${r[0]}) = ${y[i]}, want ${r[v]} (${ey.toPrecision(3)} ulp)`);
        if (eg > 4.5) bad.push(`gelu'(${r[0]}) = ${g[i]}, want ${r[d]} (${eg.toPrecision(3)} ulp)`);
      });
      expect(bad).toEqual([]);
    });
  });

  it('keeps ±∞ and NaN as the plain formulas had them', () => {
    A.tidy(() => {
      const x = A.tensor([Infinity, -Infinity, NaN, 50, -50], { dtype: 'float64' });
      for (const approximate of ['none', 'tanh'] as const) {
        expect(Array.from(A.gelu(x, { approximate }).toArray())).toEqual([Infinity, NaN, NaN, 50, -0]);
        const g = (A.grad((t: A.Tensor) => A.sum(A.gelu(t, { approximate })))(x) as A.Tensor).toArray();
        expect(Array.from(g)).toEqual([NaN, NaN, NaN, 1, 0]);
      }
    });
  });
});

describe('the tanh-form kernels in float32', () => {
  it('round the float64 results (public float32 gelu keeps its composite)', () => {
    A.tidy(() => {
      const xs: number[] = [];
      for (let i = 0; i <= 2000; i++) xs.push(Math.fround(-30 + i * 0.03));
      for (const op of [geluTanh, geluTanhGrad]) {
        const y32 = op(A.tensor(xs, { dtype: 'float32' })).toArray(),
          y64 = op(A.tensor(xs, { dtype: 'float64' })).toArray();
        expect(Array.from(y32)).toEqual(Array.from(y64, (v) => Math.fround(v)));
      }
    });
  });
});

describe('float32 gelu', () => {
  // SHA-256 of the float32 values and gradients of both forms over the sweep below, computed with
  // the kernels before the float64 tail fix (commit 76bb1ae): float32 must keep every bit.
  const BEFORE = 'cb08b5c1c61d7f23182a3e30226808e87213bf8272a5e74315ee3cace39920ad';
  it('is bit-identical to before the float64 fix (values and gradients, both forms)', () => {
    A.tidy(() => {
      const xs: number[] = [];
      for (let i = 0; i <= 20000; i++) xs.push(-20 + i * 0.002);
      xs.push(0, -0, Infinity, -Infinity, NaN, 1e-30, -1e-30, 3e38, -3e38);
      const h = createHash('sha256');
      for (const approximate of ['none', 'tanh'] as const) {
        const x = A.tensor(xs, { dtype: 'float32' });
        const y = A.gelu(x, { approximate }).toArray() as Float32Array;
        const g = (A.grad((t: A.Tensor) => A.sum(A.gelu(t, { approximate })))(x) as A.Tensor).toArray() as Float32Array;
        h.update(new Uint8Array(y.buffer, y.byteOffset, y.byteLength));
        h.update(new Uint8Array(g.buffer, g.byteOffset, g.byteLength));
      }
      expect(h.digest('hex')).toBe(BEFORE);
    });
  });
});
