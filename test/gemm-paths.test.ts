// The GEMM's shape-dependent packed paths give the unpacked path's bits (the reference summation
// order: K blocks of 256, acc from 0, then C = acc or C + acc) and match a float64 reference:
// op(A) stored transposed packed four slivers at a time (and its leftover slivers one at a time),
// edge tiles short in M merged as rows of vectors, edge slivers of ≤ 4 columns (f32; 2 for f64)
// computed one vector wide, for every transposition, overwrite and
// accumulate, with the bias/activation and SGD epilogues, and with scratch sized for the shape or
// smaller.
import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { signedRng as rng } from './rng.js';

type Fn = (...args: number[]) => void;
interface Exports {
  heap_base(): number;
  gemm_scratch_bytes(M: number, N: number, K: number, elemBytes: number): number;
  gemm_set_scratch(ptr: number, bytes: number): void;
  [name: string]: Fn | ((...args: number[]) => number);
}

const memory = new WebAssembly.Memory({ initial: 1024 });
const wasm = readFileSync(new URL('../build/adjoint.wasm', import.meta.url));
const k = (await WebAssembly.instantiate(wasm, { env: { memory } })).instance.exports as unknown as Exports;
const call = (name: string, ...args: number[]): void => (k[name] as Fn)(...args);

const align64 = (p: number): number => (p + 63) & ~63;
const SCRATCH_BYTES = k.gemm_scratch_bytes(1 << 30, 1 << 30, 1 << 30, 8);
const SCRATCH = align64(k.heap_base());
const REGION = 8 << 20;
const [PA, PB, PC, PX] = [0, 1, 2, 3].map((i) => align64(SCRATCH + SCRATCH_BYTES) + i * REGION);

const DTYPES = [
  { t: 'f32', Arr: Float32Array, tol: 1e-5 },
  { t: 'f64', Arr: Float64Array, tol: 1e-12 },
] as const;
type DType = (typeof DTYPES)[number];
// [M, N, K]: edges both ways, several K blocks, M past MC = 64 (and 16-row groups with leftover
// slivers), M edges under full-width tiles, N past NC = 512, and shapes that take neither new path.
const SHAPES = [
  [70, 13, 300],
  [40, 20, 33],
  [200, 40, 257],
  [1100, 20, 16],
  [20, 530, 16],
  [10, 16, 20],
  [37, 17, 9],
  [64, 48, 600],
  [33, 33, 65],
] as const;
const COMBOS = [
  [0, 0],
  [0, 1],
  [1, 0],
  [1, 1],
] as const;

/** Random operands (padded strides) and C; returns the strides and views. */
function setup(d: DType, M: number, N: number, K: number, ta: number, tb: number, seed: number) {
  const r = rng(seed);
  const lda = (ta ? M : K) + 3,
    ldb = (tb ? K : N) + 1,
    ldc = N + 2;
  const a = new d.Arr(memory.buffer, PA, (ta ? K : M) * lda).map(() => r());
  const b = new d.Arr(memory.buffer, PB, (tb ? N : K) * ldb).map(() => r());
  new d.Arr(memory.buffer, PA, a.length).set(a);
  new d.Arr(memory.buffer, PB, b.length).set(b);
  const c = new d.Arr(memory.buffer, PC, M * ldc);
  const x = new d.Arr(memory.buffer, PX, Math.max(M * ldc, N));
  for (let i = 0; i < c.length; i++) c[i] = r();
  for (let i = 0; i < x.length; i++) x[i] = r();
  return { a, b, c, x, lda, ldb, ldc, c0: c.slice(), x0: x.slice() };
}

/** Runs `name` twice on fresh copies of the same inputs, with full scratch and without, and returns both (C, X) results. */
function packedAndUnpacked(s: ReturnType<typeof setup>, run: () => void, scratch = SCRATCH_BYTES) {
  const out = [];
  for (const bytes of [scratch, 0]) {
    s.c.set(s.c0);
    s.x.set(s.x0);
    k.gemm_set_scratch(bytes ? SCRATCH : 0, bytes);
    run();
    out.push([s.c.slice(), s.x.slice()]);
  }
  k.gemm_set_scratch(SCRATCH, SCRATCH_BYTES);
  return out;
}

/** '' when x and y hold the same bits, else the first difference. */
function sameBits(x: ArrayLike<number>, y: ArrayLike<number>): string {
  for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return `element ${i}: ${x[i]} vs ${y[i]}`;
  return '';
}

/** '' when C (row stride ldc) is within tol of the float64 reference op(A)·op(B) (+ C0). */
function againstReference(
  d: DType,
  s: ReturnType<typeof setup>,
  M: number,
  N: number,
  K: number,
  ta: number,
  tb: number,
  acc: number,
): string {
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let sum = acc ? s.c0[i * s.ldc + j] : 0,
        mag = Math.abs(sum);
      for (let p = 0; p < K; p++) {
        const v = s.a[ta ? p * s.lda + i : i * s.lda + p] * s.b[tb ? j * s.ldb + p : p * s.ldb + j];
        sum += v;
        mag += Math.abs(v);
      }
      const got = s.c[i * s.ldc + j];
      if (!(Math.abs(got - sum) <= d.tol * mag + 1e-300)) return `(${i},${j}): got ${got}, want ${sum}`;
    }
  return '';
}

describe.each(DTYPES)('gemm $t packed paths', (d) => {
  it.each(COMBOS)('transA=%i transB=%i: the unpacked path’s bits and the float64 reference, overwrite and accumulate', (ta, tb) => {
    const bad: string[] = [];
    for (const [M, N, K] of SHAPES)
      for (const acc of [0, 1]) {
        const s = setup(d, M, N, K, ta, tb, M + N + K + acc);
        const go = () => call(`gemm_${d.t}`, PA, PB, PC, M, N, K, s.lda, s.ldb, s.ldc, ta, tb, acc);
        const [[packed], [unpacked]] = packedAndUnpacked(s, go);
        const diff = sameBits(packed, unpacked);
        if (diff) bad.push(`${M}×${N}×${K} acc ${acc}: ${diff}`);
        s.c.set(packed);
        const ref = againstReference(d, s, M, N, K, ta, tb, acc);
        if (ref) bad.push(`${M}×${N}×${K} acc ${acc}: ${ref}`);
      }
    expect(bad).toEqual([]);
  });

  it.each(COMBOS)('transA=%i transB=%i: bias + tanh and SGD epilogues give the unpacked path’s bits', (ta, tb) => {
    const bad: string[] = [];
    for (const [M, N, K] of SHAPES) {
      const s = setup(d, M, N, K, ta, tb, 7 * M + N);
      const epis: [string, () => void][] = [
        ['bias+tanh', () => call(`gemm_bias_act_${d.t}`, PA, PB, PC, PX, M, N, K, s.lda, s.ldb, s.ldc, ta, tb, 2)],
        ['sgd', () => call(`gemm_sgd_${d.t}`, PA, PB, PC, PX, M, N, K, s.lda, s.ldb, s.ldc, ta, tb, 0.1, 0.01)],
      ];
      for (const [name, go] of epis) {
        const [[pc, px], [uc, ux]] = packedAndUnpacked(s, go);
        const diff = sameBits(pc, uc) || sameBits(px, ux);
        if (diff) bad.push(`${name} ${M}×${N}×${K}: ${diff}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('scratch of gemm_scratch_bytes for the shape, or too small for one N panel, gives the same bits', () => {
    for (const [M, N, K] of [
      [200, 40, 257],
      [40, 200, 257],
      [1100, 20, 16],
    ]) {
      const s = setup(d, M, N, K, 1, 0, 5);
      const go = () => call(`gemm_${d.t}`, PA, PB, PC, M, N, K, s.lda, s.ldb, s.ldc, 1, 0, 0);
      const [[full]] = packedAndUnpacked(s, go);
      const [[exact], [unpacked]] = packedAndUnpacked(s, go, k.gemm_scratch_bytes(M, N, K, d.Arr.BYTES_PER_ELEMENT));
      const [[small]] = packedAndUnpacked(s, go, k.gemm_scratch_bytes(Math.min(M, N), 16, K, d.Arr.BYTES_PER_ELEMENT));
      expect(sameBits(exact, full)).toBe('');
      expect(sameBits(small, full)).toBe('');
      expect(sameBits(unpacked, full)).toBe('');
    }
  });
});
