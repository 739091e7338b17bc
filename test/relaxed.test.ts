// The relaxed-SIMD kernel build (assembly/madd.ts) and init({ relaxedSimd }): the relaxed GEMM
// stays within f32/f64 rounding of the default one and really fuses (on a CPU with FMA), its
// packed and unpacked paths agree bit for bit, init loads it only where the engine validates
// relaxed SIMD, workers run the same build (same bits for 1 and 2 threads), and a training run
// stays close to the default kernels'. Node 20 has relaxed SIMD behind a V8 flag, which this
// file sets for itself; child processes get it (or its negation) on the command line.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { hasRelaxedSimd, relaxedKernelBytes } from '../src/wasm/relaxed.js';
import { childBundle } from './helpers.js';

v8.setFlagsFromString('--experimental-wasm-relaxed-simd'); // default from Node 22 (V8 11.4) on
const root = fileURLToPath(new URL('..', import.meta.url));
const FLAG_ON = '--experimental-wasm-relaxed-simd',
  FLAG_OFF = '--no-experimental-wasm-relaxed-simd';

type Gemm = (
  a: number,
  b: number,
  c: number,
  M: number,
  N: number,
  K: number,
  lda: number,
  ldb: number,
  ldc: number,
  ta: number,
  tb: number,
  acc: number,
) => void;
interface Kernels {
  heap_base(): number;
  gemm_scratch_bytes(M: number, N: number, K: number, e: number): number;
  gemm_set_scratch(p: number, b: number): void;
  gemm_f32: Gemm;
  gemm_f64: Gemm;
  gemm_bias_act_f32(
    a: number,
    b: number,
    c: number,
    bias: number,
    M: number,
    N: number,
    K: number,
    lda: number,
    ldb: number,
    ldc: number,
    ta: number,
    tb: number,
    act: number,
  ): void;
  kernels_relaxed(): number;
}

/** One build's kernels on a memory of their own, with the packing scratch registered; A, B, C regions of 4 MB each. */
async function load(file: string) {
  const memory = new WebAssembly.Memory({ initial: 512 });
  const { instance } = await WebAssembly.instantiate(readFileSync(join(root, 'build', file)), { env: { memory } });
  const k = instance.exports as unknown as Kernels;
  const scratch = (k.heap_base() + 63) & ~63,
    bytes = k.gemm_scratch_bytes(1 << 30, 1 << 30, 1 << 30, 8);
  k.gemm_set_scratch(scratch, bytes);
  const base = (scratch + bytes + 63) & ~63;
  return { k, memory, scratch, bytes, pa: base, pb: base + (4 << 20), pc: base + (8 << 20) };
}
type Loaded = Awaited<ReturnType<typeof load>>;

/** Runs C = op(A)·op(B) (M×N, depth K) on `m` with the given operands; returns C. */
function gemm(
  m: Loaded,
  f64: boolean,
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  M: number,
  N: number,
  K: number,
  ta: boolean,
  tb: boolean,
  acc = false,
): Float32Array | Float64Array {
  const Arr = f64 ? Float64Array : Float32Array;
  new Arr(m.memory.buffer, m.pa, a.length).set(a);
  new Arr(m.memory.buffer, m.pb, b.length).set(b);
  (f64 ? m.k.gemm_f64 : m.k.gemm_f32)(m.pa, m.pb, m.pc, M, N, K, ta ? M : K, tb ? K : N, N, ta ? 1 : 0, tb ? 1 : 0, acc ? 1 : 0);
  return new Arr(m.memory.buffer, m.pc, M * N).slice();
}

/** C (+)= op(A)·op(B) on `m` with C starting as c0 (accumulate) or overwritten; returns C. */
function gemmInto(
  m: Loaded,
  f64: boolean,
  a: number[],
  b: number[],
  c0: number[],
  M: number,
  N: number,
  K: number,
  ta: boolean,
  tb: boolean,
  acc: boolean,
) {
  const Arr = f64 ? Float64Array : Float32Array;
  new Arr(m.memory.buffer, m.pc, M * N).set(c0);
  return gemm(m, f64, a, b, M, N, K, ta, tb, acc);
}

/** Deterministic values in [-1, 1) (mulberry32). */
function rand(n: number, seed: number): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return (((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * 2 - 1;
  });
}

const hasFma = (): boolean => {
  if (process.arch === 'arm64') return true;
  try {
    return process.arch === 'x64' && /\bfma\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return false;
  }
};

let def: Loaded, rel: Loaded;
beforeAll(async () => {
  if (!existsSync(join(root, 'build/adjoint-relaxed.wasm')))
    throw new Error('build/adjoint-relaxed.wasm is missing: run `npm run asbuild`');
  [def, rel] = await Promise.all([load('adjoint.wasm'), load('adjoint-relaxed.wasm')]);
});

describe('relaxed kernels: GEMM', () => {
  it('are embedded as a delta that rebuilds build/adjoint-relaxed.wasm byte for byte', () => {
    expect(Buffer.from(relaxedKernelBytes()).equals(readFileSync(join(root, 'build/adjoint-relaxed.wasm')))).toBe(true);
  });

  it('are the relaxed build (kernels_relaxed) and the default is not', () => {
    expect(hasRelaxedSimd()).toBe(true);
    expect([def.k.kernels_relaxed(), rel.k.kernels_relaxed()]).toEqual([0, 1]);
  });

  it('fuse the multiply-add: c + a·b rounded once where the CPU has FMA, twice in the default build', () => {
    // x·x = 1 + 2⁻¹¹ + 2⁻²⁴ exactly; rounded to f32 it is 1 + 2⁻¹¹ (a tie, to even). The sum
    // −(1 + 2⁻¹¹) + x·x is therefore 0 with mul then add, 2⁻²⁴ fused. K = 2, one full 4×8 tile.
    const x = 1 + 2 ** -12,
      M = 4,
      N = 8;
    const a = Array.from({ length: M * 2 }, (_, i) => (i % 2 === 0 ? 1 : x));
    const b = [...Array(N).fill(-(1 + 2 ** -11)), ...Array(N).fill(x)];
    expect(Array.from(gemm(def, false, a, b, M, N, 2, false, false))).toEqual(Array(M * N).fill(0));
    const r = Array.from(gemm(rel, false, a, b, M, N, 2, false, false));
    expect(r).toEqual(Array(M * N).fill(hasFma() ? 2 ** -24 : 0));
  });

  it('stay within f32 and f64 rounding of the default build for every transpose combination and edge tiles', () => {
    for (const f64 of [false, true]) {
      const eps = f64 ? 2 ** -53 : 2 ** -24;
      for (const [M, N, K] of [
        [37, 29, 300],
        [4, 8, 1],
        [65, 130, 513],
        [73, 17, 257], // the relaxed build's 6×8 tiles: 12 full row tiles + a 1-row edge, across its 72-row A block
        [6, 8, 256],
      ]) {
        for (const [ta, tb] of [
          [false, false],
          [true, false],
          [false, true],
          [true, true],
        ]) {
          const a = rand(M * K, M + K),
            b = rand(K * N, N * 3 + K);
          const d = gemm(def, f64, a, b, M, N, K, ta, tb),
            r = gemm(rel, f64, a, b, M, N, K, ta, tb);
          let worst = 0;
          for (let i = 0; i < M; i++) {
            for (let j = 0; j < N; j++) {
              // Both are within K·eps·Σ|a·b| of the exact sum (standard bound), so of each other within twice that.
              let mag = 0;
              for (let k = 0; k < K; k++) mag += Math.abs((ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]));
              worst = Math.max(worst, Math.abs(r[i * N + j] - d[i * N + j]) / (2 * K * eps * mag));
            }
          }
          expect(worst, `${f64 ? 'f64' : 'f32'} ${M}×${N}×${K} ta=${ta} tb=${tb}`).toBeLessThanOrEqual(1);
        }
      }
    }
  });

  it('give the same bits on the packed path and the unpacked (no scratch) path', () => {
    for (const f64 of [false, true]) {
      const [M, N, K] = [23, 19, 290],
        a = rand(M * K, 5),
        b = rand(K * N, 6);
      const packed = gemm(rel, f64, a, b, M, N, K, false, true);
      rel.k.gemm_set_scratch(0, 0);
      const unpacked = gemm(rel, f64, a, b, M, N, K, false, true);
      rel.k.gemm_set_scratch(rel.scratch, rel.bytes);
      expect(unpacked).toEqual(packed);
    }
  });
});

describe('relaxed kernels: the 6×8 micro-kernel (relaxed build only)', () => {
  // The packed path runs kernel_6x2v on full tiles and on a scratch tile for the edges, and adds
  // to C after it (K blocks past the first, accumulate); the unpacked path (no scratch) is a
  // scalar loop with the same per-element order, so any tiling or edge error shows as other bits.
  const Ms = [1, 5, 6, 7, 13, 72, 73, 150],
    Ns = [1, 7, 8, 9, 17],
    Ks = [1, 3, 256, 257, 520];
  it('gives the unpacked path’s bits for M, N, K around its tiles, both transposes, overwrite and accumulate, f32 and f64', () => {
    let n = 0;
    for (const f64 of [false, true])
      for (const M of Ms)
        for (const N of Ns)
          for (const K of Ks) {
            n++;
            const ta = n % 2 === 1,
              tb = n % 4 >= 2,
              acc = n % 3 === 0;
            const a = rand(M * K, n),
              b = rand(K * N, n + 1000),
              c0 = rand(M * N, n + 2000);
            const packed = gemmInto(rel, f64, a, b, c0, M, N, K, ta, tb, acc);
            rel.k.gemm_set_scratch(0, 0);
            const unpacked = gemmInto(rel, f64, a, b, c0, M, N, K, ta, tb, acc);
            rel.k.gemm_set_scratch(rel.scratch, rel.bytes);
            expect(packed, `${f64 ? 'f64' : 'f32'} ${M}×${N}×${K} ta=${ta} tb=${tb} acc=${acc}`).toEqual(unpacked);
          }
  });

  it('adds the bias and applies relu after the finished sum (gemm_bias_act), as a separate add would', () => {
    for (const [M, N, K] of [
      [13, 17, 257],
      [72, 9, 3],
    ]) {
      const a = rand(M * K, 7),
        b = rand(K * N, 8),
        bias = rand(N, 9);
      const sum = gemm(rel, false, a, b, M, N, K, false, true);
      new Float32Array(rel.memory.buffer, rel.pb + (2 << 20), N).set(bias);
      rel.k.gemm_bias_act_f32(rel.pa, rel.pb, rel.pc, rel.pb + (2 << 20), M, N, K, K, K, N, 0, 1, 1);
      const got = new Float32Array(rel.memory.buffer, rel.pc, M * N);
      const want = Array.from(sum, (v, i) => Math.max(0, Math.fround(v + Math.fround(bias[i % N]))));
      expect(Array.from(got), `${M}×${N}×${K}`).toEqual(want);
    }
  });
});

describe('init({ relaxedSimd })', () => {
  it('rejects a non-boolean relaxedSimd', async () => {
    await expect(A.init({ relaxedSimd: 'yes' as unknown as boolean })).rejects.toThrow(/relaxedSimd must be true or false, got 'yes'/);
  });

  it('loads the relaxed kernels where the engine has relaxed SIMD; conv2d and its gradients stay within f32 rounding', async () => {
    await A.init({ relaxedSimd: true });
    expect(A.backend()).toEqual({ kernels: 'relaxed', relaxedSimdAvailable: true, threads: 1, shares: [1] });
    A.tidy(() => {
      const x = A.randn([3, 4, 12, 10], { seed: 1 }),
        w = A.randn([6, 4, 3, 3], { seed: 2 });
      const f = (xx: A.Tensor, ww: A.Tensor) => A.conv2d(xx, ww, undefined, { stride: 2, padding: 1 });
      const [x64, w64] = [x.astype('float64'), w.astype('float64')];
      const g = A.randn(f(x, w).shape as number[], { seed: 3 });
      const [dx, dw] = A.vjp(f, x, w)[1](g),
        [dx64, dw64] = A.vjp(f, x64, w64)[1](g.astype('float64'));
      const pairs: [A.Tensor, A.Tensor, number][] = [
        [f(x, w), f(x64, w64), 36],
        [dx, dx64, 6],
        [dw, dw64, 3 * 6 * 5],
      ];
      for (const [lo, hi, K] of pairs) {
        const l = lo.toArray(),
          h = hi.toArray();
        const scale = Math.max(...Array.from(h, Math.abs));
        for (let i = 0; i < l.length; i++) expect(Math.abs(l[i] - h[i])).toBeLessThan(2 * K * 2 ** -24 * scale * 4);
      }
    });
  });
});

describe('relaxed kernels in child processes', () => {
  const { file: bundle, build: buildBundle } = childBundle('relaxed-child');
  beforeAll(buildBundle, 60_000);
  function child(nodeFlag: string, ...args: string[]): Record<string, unknown> & { weights: Record<string, number[]> } {
    const p = spawnSync(process.execPath, [nodeFlag, bundle, ...args], { encoding: 'utf8', timeout: 120_000, cwd: root });
    const line = p.stdout.trim().split('\n').pop() ?? '';
    if (p.status !== 0 || !line.startsWith('{'))
      throw new Error(`child ${args.join(' ')} failed (${p.status ?? p.signal}):\n${p.stdout}\n${p.stderr}`);
    return JSON.parse(line);
  }

  it('load the default kernels where the engine has no relaxed SIMD, with the same bits as never asking', () => {
    const asked = child(FLAG_OFF, '--relaxed'),
      plain = child(FLAG_OFF);
    expect(asked).toMatchObject({ kernels: 'default', relaxedSimdAvailable: false, threads: 1 });
    expect([asked.f32, asked.f64]).toEqual([plain.f32, plain.f64]);
  }, 120_000);

  it('run the same build on the workers: the same bits on 2 threads as on 1, close to the default kernels', () => {
    const one = child(FLAG_ON, '--relaxed'),
      two = child(FLAG_ON, '--relaxed', '--threads', '2'),
      def1 = child(FLAG_ON);
    expect(one).toMatchObject({ kernels: 'relaxed', threads: 1 });
    expect(two).toMatchObject({ kernels: 'relaxed', threads: 2 });
    expect(def1).toMatchObject({ kernels: 'default', relaxedSimdAvailable: true });
    expect(two.dispatches).toBeGreaterThan(0);
    expect([two.f32, two.f64]).toEqual([one.f32, one.f64]);
    if (hasFma()) expect(one.f32).not.toBe(def1.f32); // the fused kernels really ran
    for (const dtype of ['float32', 'float64']) {
      const r = one.weights[dtype],
        d = def1.weights[dtype],
        tol = dtype === 'float32' ? 1e-5 : 1e-13;
      const scale = Math.max(...d.map(Math.abs));
      expect(Math.max(...r.map((v, i) => Math.abs(v - d[i]))), dtype).toBeLessThan(tol * scale);
    }
  }, 240_000);
});
