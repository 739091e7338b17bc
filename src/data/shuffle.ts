// Seeded permutations with integer arithmetic only (SplitMix32-style mixing, Math.imul), so a
// seed gives the same order in every runtime. Fisher–Yates; the modulo bias (< n/2³²) is
// irrelevant at data-set sizes.
import { ArgumentError } from '../errors.js';
import { describe, tooMany } from '../args.js';

/** A seed must be a safe integer; `op` is the public function the caller used, for the message. */
export function checkSeed(op: string, seed: number): void {
  if (!Number.isSafeInteger(seed)) throw new ArgumentError(`${op}: seed must be a safe integer, got ${describe(seed)}`);
}

/** SplitMix32's output function. */
function mix(x: number): number {
  let z = x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * A generator of uniform u32 values from a seed. The seed's low 32 bits start the state and its
 * high bits choose the step (odd, so every stream has period 2³²): seeds 0 … 2³² − 1 keep the
 * golden-ratio step they always had, and a negative or larger seed gets a stream of its own
 * (folding the high bits into the state made s and −(s + 1) give the same permutation). A bad
 * seed is an ArgumentError naming `op`, the public function that passed it.
 */
export function integerStream(op: string, seed: number): () => number {
  checkSeed(op, seed);
  let s = seed >>> 0;
  const hi = Math.floor(seed / 2 ** 32) >>> 0;
  const step = hi === 0 ? 0x9e3779b9 : (mix(hi ^ 0x9e3779b9) | 1) >>> 0;
  return () => {
    s = (s + step) >>> 0;
    return mix(s);
  };
}

/** Shuffles `a` in place with the given stream. */
export function shuffleInPlace(a: Int32Array, next: () => number): Int32Array {
  for (let i = a.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  return a;
}

/** A seeded random permutation of 0..n−1. */
export function permutation(n: number, seed = 0): Int32Array {
  if (arguments.length > 2) throw tooMany('data.permutation', 2, arguments.length);
  if (!Number.isInteger(n) || n < 0 || n > 2 ** 31 - 1) {
    throw new ArgumentError(`permutation: n must be a non-negative integer below 2³¹ (indices are int32), got ${describe(n)}`);
  }
  const next = integerStream('permutation', seed);
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  return shuffleInPlace(a, next);
}
