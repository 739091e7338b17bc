// The f32x4 multiply-add ceiling of this CPU under V8: what a fused multiply-add
// (f32x4.relaxed_madd) can gain over a multiply then an add (the default build's madd), measured
// with hand-assembled wasm loops that do nothing else, so that no memory traffic, packing or
// loop overhead of the real GEMM hides the arithmetic.
//   node scripts/run-ts.mjs bench/fma-ceiling.ts [--quick]   (pins itself to the last core)
//
// Three families of loops, each in both forms (mul+add, fused):
//   chain N   register-only: N independent accumulators, acc = acc·x + y per step. Enough
//             chains hide the latency, so the rate is the arithmetic throughput.
//   tile R×V  the GEMM micro-kernel's loop on L1-resident data: per k, V vectors of B and R
//             pre-broadcast A vectors are loaded, and R·V accumulators get acc += a·b.
//   int       a dependent chain of 1-cycle integer ops: its rate estimates the clock, so the
//             GFLOP/s can be read as flops per cycle (4 lanes × 2 flops × madds per cycle).
// `--print-code` checks the machine code: the fused loops must hold vfmadd instructions.
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import v8 from 'node:v8';

// ---------------------------------------------------------------- a tiny wasm encoder

const leb = (v: number): number[] => {
  const out: number[] = [];
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
  return out;
};
const sleb = (v: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const b = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (b & 0x40) === 0) || (v === -1 && (b & 0x40) !== 0)) return [...out, b];
    out.push(b | 0x80);
  }
};
const f32c = (x: number): number[] => [0x43, ...new Uint8Array(new Float32Array([x]).buffer)];
const simd = (op: number, ...imm: number[]): number[] => [0xfd, ...leb(op), ...imm];
const get = (i: number) => [0x20, ...leb(i)];
const set = (i: number) => [0x21, ...leb(i)];
const I32 = 0x7f,
  F32 = 0x7d,
  V128 = 0x7b;
const OP = { splat: 0x13, lane: 0x1f, add: 0xe4, mul: 0xe6, fma: 0x105, load: 0x00 };

/** acc = form(a, b, acc): mul+add (two roundings) or relaxed_madd. */
const madd = (fused: boolean, a: number[], b: number[], acc: number[]) =>
  fused ? [...a, ...b, ...acc, ...simd(OP.fma)] : [...acc, ...a, ...b, ...simd(OP.mul), ...simd(OP.add)];

interface Fn {
  name: string;
  /** Locals after the two i32 params (n: iterations; the tile loops' B bytes per rep): [count, type] runs. */
  locals: [number, number][];
  body: number[];
  /** Flops per iteration (0 for the integer chain: ops per iteration go in `ops`). */
  flops: number;
  ops?: number;
  /** The second argument (tile loops: B bytes per rep). */
  param?: number;
  /** A function (ap, bp, end) -> () the body calls (its index is appended to the body's last byte, a call). */
  kernel?: { locals: [number, number][]; body: number[] };
}

/** Sums lane 0 of locals [from, from + n) to the f32 result, so no accumulator is dead. */
const sumLanes = (from: number, n: number) => {
  const out = [...f32c(0)];
  for (let i = 0; i < n; i++) out.push(...get(from + i), ...simd(OP.lane, 0), 0x92); // f32.add
  return out;
};
/** loop { body; n -= 1; br_if n != 0 }, the loop all functions share. */
const loop = (body: number[]) => [0x03, 0x40, ...body, ...get(0), 0x41, 1, 0x6b, 0x22, 0, 0x0d, 0, 0x0b];

/** N chains acc_i = acc_i·x + y (x = 0.5, y = 1: converges to 2, no denormals), unrolled U times. */
function chain(n: number, fused: boolean, unroll: number): Fn {
  const x = 2,
    y = 3,
    acc = 4; // locals: 0 = n, 1 = unused param, 2 = x, 3 = y, 4.. = accumulators
  const init = [...f32c(0.5), ...simd(OP.splat), ...set(x), ...f32c(1), ...simd(OP.splat), ...set(y)];
  const stepMulAdd: number[] = [];
  for (let u = 0; u < unroll; u++)
    for (let i = 0; i < n; i++) stepMulAdd.push(...get(acc + i), ...get(x), ...simd(OP.mul), ...get(y), ...simd(OP.add), ...set(acc + i));
  const stepFused: number[] = [];
  for (let u = 0; u < unroll; u++)
    for (let i = 0; i < n; i++) stepFused.push(...get(acc + i), ...get(x), ...get(y), ...simd(OP.fma), ...set(acc + i));
  return {
    name: `chain ${n}${fused ? ' fused' : ' mul+add'}`,
    locals: [[2 + n, V128]],
    body: [...init, ...loop(fused ? stepFused : stepMulAdd), ...sumLanes(acc, n)],
    flops: unroll * n * 8,
  };
}

/** N chains acc_i = acc_i + x·y: the product does not depend on acc, so only the add (or the FMA) is on the chain; TurboFan keeps the loop-invariant multiply in the loop (no hoisting: checked with --print-wasm-code). */
function indep(n: number, fused: boolean, unroll: number): Fn {
  const x = 2,
    y = 3,
    acc = 4;
  const init = [...f32c(1e-3), ...simd(OP.splat), ...set(x), ...f32c(0.5), ...simd(OP.splat), ...set(y)];
  const step: number[] = [];
  for (let u = 0; u < unroll; u++) for (let i = 0; i < n; i++) step.push(...madd(fused, get(x), get(y), get(acc + i)), ...set(acc + i));
  return {
    name: `indep ${n}${fused ? ' fused' : ' mul+add'}`,
    locals: [[2 + n, V128]],
    body: [...init, ...loop(step), ...sumLanes(acc, n)],
    flops: unroll * n * 8,
  };
}

/**
 * The micro-kernel loop, as gemmtile.ts's kernels are compiled: a function of its own (kernel(ap, bp,
 * end)) whose loop has AssemblyScript's `while` shape and a data-dependent end, with the
 * accumulators stored to C after the loop. Per k it loads V B vectors and R pre-broadcast A
 * vectors, and acc[r][v] += a[r]·b[v]. The exported driver calls it n times on the same
 * L1-resident blocks. The shape matters to TurboFan: written inline in the driver's loop, the
 * first iteration is peeled with all its loads hoisted, and spills. `addC` stores C + acc (loads
 * C after the loop), as the default kernel_4x2v does: TurboFan then hoists all loads of an
 * iteration above the first multiply (4 A + 2 B + 8 accumulators + 1 product = 15 registers for
 * 4×8 mul+add); without it each A is loaded just before its row (kernel_6x2v).
 * Kernel locals: 0 = ap, 1 = bp, 2 = end, 3.. = V b's, then R·V accumulators, then A.
 */
function tile(r: number, v: number, fused: boolean, kc: number, addC = false, splat = false): Fn {
  const AP = 0,
    BP = 1,
    END = 2,
    B0 = 3,
    ACC = 3 + v,
    A = ACC + r * v;
  const aBytes = r * (splat ? 4 : 16),
    bBytes = v * 16;
  const load = (ptr: number, offset: number) => [...get(ptr), ...simd(OP.load, 4, ...leb(offset))];
  const kstep: number[] = [];
  for (let j = 0; j < v; j++) kstep.push(...load(BP, j * 16), ...set(B0 + j));
  for (let i = 0; i < r; i++) {
    kstep.push(...(splat ? [...get(AP), ...simd(0x09, 2, ...leb(i * 4))] : load(AP, i * 16)), ...set(A)); // v128.load32_splat
    for (let j = 0; j < v; j++) kstep.push(...madd(fused, get(A), get(B0 + j), get(ACC + i * v + j)), ...set(ACC + i * v + j));
  }
  // ap += aBytes; bp += bBytes; br 1 (to the loop), while end > bp
  kstep.push(...get(AP), 0x41, ...sleb(aBytes), 0x6a, ...set(AP), ...get(BP), 0x41, ...sleb(bBytes), 0x6a, ...set(BP), 0x0c, 1);
  const kernel = [0x03, 0x40, ...get(END), ...get(BP), 0x4b, 0x04, 0x40, ...kstep, 0x0b, 0x0b]; // i32.gt_u
  // Then C (at 32 KB, after the A and B blocks) = the accumulators (addC: C + the accumulators).
  for (let i = 0; i < r * v; i++) {
    const at = [0x41, ...sleb(32768 + i * 16)];
    const value = addC ? [...at, ...simd(OP.load, 4, 0), ...get(ACC + i), ...simd(OP.add)] : get(ACC + i);
    kernel.push(...at, ...value, ...simd(0x0b, 4, 0)); // v128.store
  }
  // Driver: n times kernel(0, kc·aBytes, kc·aBytes + the second argument), then C[0] as the result.
  const call = [0x41, 0, 0x41, ...sleb(kc * aBytes), 0x41, ...sleb(kc * aBytes), ...get(1), 0x6a, 0x10];
  return {
    name: `tile ${r}×${v * 4}${fused ? ' fused' : ' mul+add'}${addC ? ', C + acc' : ''}${splat ? ', A load_splat' : ''}`,
    locals: [],
    body: [...loop(call), 0x41, 0, 0x2a, 2, ...sleb(32768)], // f32.load
    flops: kc * r * v * 8,
    param: kc * bBytes,
    kernel: { locals: [[v + r * v + 1, V128]], body: kernel },
  };
}

/** 16 dependent 1-cycle integer ops per iteration (add and xor alternating): about one per clock cycle. */
function intChain(): Fn {
  const step: number[] = [];
  for (let i = 0; i < 8; i++) step.push(...get(2), ...get(0), 0x6a, 0x41, ...sleb(0x5bd1e995), 0x73, ...set(2));
  return { name: 'int chain', locals: [[1, I32]], body: [...loop(step), ...get(2), 0xb2], flops: 0, ops: 16 }; // f32.convert_i32_s
}

function moduleBytes(fns: Fn[]): Uint8Array {
  const section = (id: number, payload: number[]) => [id, ...leb(payload.length), ...payload];
  const vec = (items: number[][]) => [...leb(items.length), ...items.flat()];
  const str = (s: string) => [...leb(s.length), ...Buffer.from(s)];
  // Type 0: the exported (n, B bytes per rep) -> f32; type 1: kernel (ap, bp, end) -> ().
  const types = section(
    1,
    vec([
      [0x60, 2, I32, I32, 1, F32],
      [0x60, 3, I32, I32, I32, 0],
    ]),
  );
  const kernels: { locals: [number, number][]; body: number[] }[] = [];
  const bodies = fns.map((f) => {
    if (f.kernel === undefined) return f;
    const i = fns.length + kernels.push(f.kernel) - 1;
    // The call sits inside the loop of the body's head: splice the index in after the call opcode.
    const at = f.body.indexOf(0x10);
    return { ...f, body: [...f.body.slice(0, at + 1), ...leb(i), ...f.body.slice(at + 1)] };
  });
  const funcs = section(3, vec([...fns.map(() => [0]), ...kernels.map(() => [1])]));
  const memory = section(5, vec([[0, 1]])); // one page: the tile loops' A, B and C blocks
  const exports = section(7, vec(fns.map((_, i) => [...str(`f${i}`), 0, ...leb(i)])));
  const code = section(
    10,
    vec(
      [...bodies, ...kernels].map((f) => {
        const body = [...vec(f.locals.map(([n, t]) => [...leb(n), t])), ...f.body, 0x0b];
        return [...leb(body.length), ...body];
      }),
    ),
  );
  return new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, ...types, ...funcs, ...memory, ...exports, ...code]);
}

// ---------------------------------------------------------------- measuring

const KC = 128; // A 128·R·16 B + B 128·V·16 B: at most 20 KB, L1-resident (C at 32 KB)
/** The loops, and for each the index of the loop its ratio is taken against (its mul+add twin; for tiles the default kernel's shape). */
const FNS: Fn[] = [intChain()];
const BASE: number[] = [0];
const add = (f: Fn, base: number) => {
  FNS.push(f);
  BASE.push(base);
};
for (const n of [4, 6, 8, 10, 12, 13]) {
  add(chain(n, false, 2), FNS.length);
  add(chain(n, true, 2), FNS.length - 1);
}
for (const n of [8, 12]) {
  add(indep(n, false, 2), FNS.length);
  add(indep(n, true, 2), FNS.length - 1);
}
const DEFAULT_TILE = FNS.length;
add(tile(4, 2, false, KC, true), DEFAULT_TILE); // kernel_4x2v, default build
add(tile(4, 2, false, KC), DEFAULT_TILE);
add(tile(5, 2, false, KC), DEFAULT_TILE);
add(tile(5, 2, false, KC, true), DEFAULT_TILE);
add(tile(4, 2, true, KC, true), DEFAULT_TILE); // kernel_4x2v, relaxed build before kernel_6x2v
add(tile(4, 2, true, KC), DEFAULT_TILE);
add(tile(5, 2, true, KC), DEFAULT_TILE);
add(tile(6, 2, true, KC), DEFAULT_TILE); // kernel_6x2v, relaxed build
add(tile(6, 2, true, KC, true), DEFAULT_TILE);
add(tile(6, 2, true, KC, false, true), DEFAULT_TILE);
add(tile(4, 3, true, KC), DEFAULT_TILE);
add(tile(3, 4, true, KC), DEFAULT_TILE);

const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const core = String(os.cpus().length - 1);
const pinned =
  process.platform === 'linux' && spawnSync('taskset', ['-p', '-c', core, String(process.pid)], { stdio: 'ignore' }).status === 0;
v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
const bytes = moduleBytes(FNS);
const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>));
const fns = FNS.map((_, i) => instance.exports[`f${i}`] as (n: number, p: number) => number);

/** CPU seconds per call of fns[i](n): process CPU time, so the time other jobs hold our core is not counted (the process's other threads are idle once the code is compiled). */
const timeOne = (i: number, n: number, calls: number): number => {
  const u0 = process.cpuUsage();
  for (let c = 0; c < calls; c++) fns[i](n, FNS[i].param ?? 0);
  const u = process.cpuUsage(u0);
  return (u.user + u.system) / 1e6 / calls;
};
// Iterations per call so that each call runs ~2 ms (tile loops: the outer count is reps of KC steps).
const work = (f: Fn) => f.flops || (f.ops ?? 0) * 8;
const iters = FNS.map((f) => Math.max(1, Math.round(2e-3 / (work(f) / 40e9))));
for (let w = 0; w < 3; w++) for (let i = 0; i < FNS.length; i++) timeOne(i, iters[i], 20); // TurboFan tier-up
const load0 = os.loadavg()[0];
const rounds = quick ? 5 : 15;
const rates: number[][] = FNS.map(() => []);
for (let r = 0; r < rounds; r++)
  for (let i = 0; i < FNS.length; i++) {
    const s = timeOne(i, iters[i], 10);
    rates[i].push(((FNS[i].flops || FNS[i].ops || 0) * iters[i]) / s / 1e9);
  }
const best = (xs: number[]) => Math.max(...xs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `FMA ceiling (f32x4, one core, node ${process.version}, process CPU time); load ${load0.toFixed(2)} → ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores; ${pinned ? `pinned to core ${core}` : 'not pinned'}; ${rounds} rounds`,
);
console.log(`int chain: ${median(rates[0]).toFixed(2)} G ops/s median, ${best(rates[0]).toFixed(2)} best ≈ the clock in GHz\n`);
console.log(
  '| loop | GFLOP/s median | best | flops/cycle (median of per-round rate / int-chain rate) | ratio to | median of per-round ratios |',
);
console.log('|---|--:|--:|--:|---|--:|');
for (let i = 1; i < FNS.length; i++) {
  const b = BASE[i];
  const q = b === i ? '' : `${median(rates[i].map((x, r) => x / rates[b][r])).toFixed(3)}×`;
  const perCycle = median(rates[i].map((x, r) => x / rates[0][r])).toFixed(1);
  console.log(
    `| ${FNS[i].name} | ${median(rates[i]).toFixed(1)} | ${best(rates[i]).toFixed(1)} | ${perCycle} | ${b === i ? '' : FNS[b].name} | ${q} |`,
  );
}
