// gemm_f32 / gemm_f64 against a naive float64 reference: every transpose combo, accumulate 0/1,
// padded strides, edge tiles in every dimension, K = 0, a large blocked case, and bit-identity of
// the packed (scratch) and unpacked (no scratch) paths.
import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { signedRng as rng } from './rng.js';

interface GemmExports {
  heap_base(): number;
  gemm_scratch_bytes(M: number, N: number, K: number, elemBytes: number): number;
  gemm_set_scratch(ptr: number, bytes: number): void;
  gemm_f32: GemmFn;
  gemm_f64: GemmFn;
}
type GemmFn = (
  a: number,
  b: number,
  c: number,
  M: number,
  N: number,
  K: number,
  lda: number,
  ldb: number,
  ldc: number,
  transA: number,
  transB: number,
  accumulate: number,
) => void;
type FloatArray = Float32Array | Float64Array;

const memory = new WebAssembly.Memory({ initial: 2048 });
const wasm = readFileSync(new URL('../build/adjoint.wasm', import.meta.url));
const { instance } = await WebAssembly.instantiate(wasm, { env: { memory } });
const k = instance.exports as unknown as GemmExports;

const align64 = (p: number): number => (p + 63) & ~63;
const SCRATCH_BYTES = k.gemm_scratch_bytes(1 << 30, 1 << 30, 1 << 30, 8);
const SCRATCH = align64(k.heap_base());
const arena = align64(SCRATCH + SCRATCH_BYTES);
const REGION = 8 << 20; // bytes per operand region: enough for the large case in f64
const [PA, PB, PC] = [0, 1, 2].map((i) => arena + i * REGION);

interface Case {
  M: number;
  N: number;
  K: number;
  ta: number;
  tb: number;
  acc: number;
  pad: number;
}
const DTYPES = [
  { name: 'f32', Arr: Float32Array, fn: () => k.gemm_f32, bytes: 4, tol: 1e-5 },
  { name: 'f64', Arr: Float64Array, fn: () => k.gemm_f64, bytes: 8, tol: 1e-12 },
] as const;
type DType = (typeof DTYPES)[number];

/** Writes random op(A), op(B), C into wasm memory (padded strides; C's padding holds a sentinel). */
function setup(d: DType, c: Case, seed: number) {
  const r = rng(seed);
  const lda = (c.ta ? c.M : c.K) + c.pad,
    ldb = (c.tb ? c.K : c.N) + c.pad,
    ldc = c.N + c.pad;
  const a = new d.Arr(memory.buffer, PA, (c.ta ? c.K : c.M) * lda);
  const b = new d.Arr(memory.buffer, PB, (c.tb ? c.N : c.K) * ldb);
  const cm = new d.Arr(memory.buffer, PC, c.M * ldc);
  for (let i = 0; i < a.length; i++) a[i] = r();
  for (let i = 0; i < b.length; i++) b[i] = r();
  for (let i = 0; i < cm.length; i++) cm[i] = i % ldc < c.N ? r() : 12345;
  return { a, b, cm, lda, ldb, ldc };
}

/** Naive float64 reference plus a per-element error scale Σ|a·b| + |C0|. */
function reference(c: Case, s: ReturnType<typeof setup>) {
  const ref = new Float64Array(c.M * c.N),
    scale = new Float64Array(c.M * c.N);
  for (let i = 0; i < c.M; i++) {
    for (let j = 0; j < c.N; j++) {
      const c0 = c.acc ? s.cm[i * s.ldc + j] : 0;
      let sum = c0,
        mag = Math.abs(c0);
      for (let p = 0; p < c.K; p++) {
        const x = s.a[c.ta ? p * s.lda + i : i * s.lda + p] * s.b[c.tb ? j * s.ldb + p : p * s.ldb + j];
        sum += x;
        mag += Math.abs(x);
      }
      ref[i * c.N + j] = sum;
      scale[i * c.N + j] = mag;
    }
  }
  return { ref, scale };
}

function call(d: DType, c: Case, s: ReturnType<typeof setup>): void {
  d.fn()(PA, PB, PC, c.M, c.N, c.K, s.lda, s.ldb, s.ldc, c.ta, c.tb, c.acc);
}

/** Runs one case and returns the first mismatch description, or '' when it matches. */
function check(d: DType, c: Case, seed: number): string {
  const s = setup(d, c, seed);
  const { ref, scale } = reference(c, s);
  call(d, c, s);
  for (let i = 0; i < c.M; i++) {
    for (let j = 0; j < s.ldc; j++) {
      const got = s.cm[i * s.ldc + j];
      const bad = j < c.N ? !(Math.abs(got - ref[i * c.N + j]) <= d.tol * scale[i * c.N + j] + 1e-300) : got !== 12345;
      if (bad) return `${d.name} ${JSON.stringify(c)} at (${i},${j}): got ${got}, want ${j < c.N ? ref[i * c.N + j] : 12345}`;
    }
  }
  return '';
}

/** C after a call, copied out (to compare runs bit for bit). */
function run(d: DType, c: Case, seed: number): FloatArray {
  const s = setup(d, c, seed);
  call(d, c, s);
  return s.cm.slice();
}

/** '' when x and y are bit-identical element for element, else where they first differ (cheap to report, unlike toEqual on big arrays). */
function sameBits(x: FloatArray, y: FloatArray): string {
  if (x.length !== y.length) return `length ${x.length} vs ${y.length}`;
  for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return `element ${i}: ${x[i]} vs ${y[i]}`;
  return '';
}

const DIMS = [0, 1, 3, 4, 5, 7, 8, 9, 16, 17, 33];
const COMBOS = [
  [0, 0],
  [0, 1],
  [1, 0],
  [1, 1],
] as const;

describe.each(DTYPES)('gemm $name', (d) => {
  describe.each(COMBOS)('transA=%i transB=%i', (ta, tb) => {
    it('matches the reference for every small shape (edge tiles, K=0, padded strides)', () => {
      k.gemm_set_scratch(SCRATCH, SCRATCH_BYTES);
      const failures: string[] = [];
      let seed = 1;
      for (const M of DIMS)
        for (const N of DIMS)
          for (const K of DIMS) {
            const acc = (M + N + K) & 1,
              pad = (M * 7 + N * 3 + K) % 4;
            const msg = check(d, { M, N, K, ta, tb, acc, pad }, seed++);
            if (msg) failures.push(msg);
          }
      expect(failures.slice(0, 5)).toEqual([]);
    });

    it('without scratch takes the unpacked path and gives identical bits', () => {
      for (const [M, N, K] of [
        [5, 9, 17],
        [33, 16, 7],
        [4, 8, 1],
        [17, 33, 33],
      ]) {
        for (const acc of [0, 1]) {
          const c: Case = { M, N, K, ta, tb, acc, pad: 3 };
          k.gemm_set_scratch(0, 0);
          const msg = check(d, c, 99);
          const unpacked = run(d, c, 7);
          k.gemm_set_scratch(SCRATCH, SCRATCH_BYTES);
          const packed = run(d, c, 7);
          expect(msg).toBe('');
          expect(sameBits(packed, unpacked)).toBe('');
        }
      }
    });

    it('handles a large blocked case (K > KC, M > MC) with full, small and no scratch', () => {
      const big: Case = { M: 300, N: 257, K: 513, ta, tb, acc: 1, pad: 5 };
      k.gemm_set_scratch(SCRATCH, SCRATCH_BYTES);
      expect(check(d, big, 3)).toBe('');
      const full = run(d, big, 4);
      // Scratch sized for 64 columns (and misaligned by 4 bytes) forces several N panels.
      k.gemm_set_scratch(SCRATCH + 4, k.gemm_scratch_bytes(big.M, 64, big.K, d.bytes) - 4);
      const small = run(d, big, 4);
      k.gemm_set_scratch(SCRATCH, 64); // too small for one panel: unpacked fallback
      const tiny = run(d, big, 4);
      k.gemm_set_scratch(0, 0);
      const none = run(d, big, 4);
      k.gemm_set_scratch(SCRATCH, SCRATCH_BYTES);
      expect(sameBits(small, full)).toBe('');
      expect(sameBits(tiny, full)).toBe('');
      expect(sameBits(none, full)).toBe('');
    });
  });
});

describe('gemm_scratch_bytes', () => {
  it('is 0 for empty shapes and bounded for any shape', () => {
    expect(k.gemm_scratch_bytes(0, 5, 5, 4)).toBe(0);
    expect(k.gemm_scratch_bytes(8, 8, 8, 4)).toBeGreaterThan(0);
    expect(k.gemm_scratch_bytes(4096, 4096, 4096, 4)).toBeLessThanOrEqual(SCRATCH_BYTES);
    expect(SCRATCH_BYTES).toBeLessThan(4 << 20);
  });
});
