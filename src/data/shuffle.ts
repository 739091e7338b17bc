// Seeded permutations with integer arithmetic only (SplitMix32-style mixing, Math.imul), so a
// seed gives the same order in every runtime. Fisher–Yates; the modulo bias (< n/2³²) is
// irrelevant at data-set sizes.
import { ArgumentError } from '../errors.js';
import { describe, tooMany } from '../args.js';

function checkSeed(op: string, seed: number): number {
  if (!Number.isSafeInteger(seed)) throw new ArgumentError(`${op}: seed must be a safe integer, got ${describe(seed)}`);
  // Fold the high bits in, so seeds differing above bit 31 still give different streams.
  return (seed ^ Math.floor(seed / 2 ** 32)) >>> 0;
}

/** A generator of uniform u32 values from a seed. */
export function integerStream(seed: number): () => number {
  let s = checkSeed('integerStream', seed);
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
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
  checkSeed('permutation', seed);
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  return shuffleInPlace(a, integerStream(seed));
}
