// The tests' seeded random stream (mulberry32), one copy for every file that needs one.

/** Deterministic uniform [0, 1) stream (mulberry32), so failures reproduce. */
export function rng(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The same stream mapped to [-1, 1). */
export function signedRng(seed: number): () => number {
  const r = rng(seed);
  return () => r() * 2 - 1;
}
