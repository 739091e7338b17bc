// The counter-based generator behind assembly/random.ts and attention's dropout: element i of a
// stream is a pure function of (seed, i), the SplitMix64 finaliser of seed ⊕ i·φ, so any element
// can be regenerated alone (dropout replay) on any thread. Not exported from the module.

@inline function mix(z: u64): u64 {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}
@inline export function bits(seedLo: u32, seedHi: u32, i: u64): u64 {
  const seed = (<u64>seedHi << 32) | <u64>seedLo;
  return mix(mix(seed) + (i + 1) * 0x9e3779b97f4a7c15);
}
/** A stream's start: bits(seed, i) = bitsNext(z) after i + 1 steps z += GOLDEN from z = streamStart(seed). */
@inline export function streamStart(seedLo: u32, seedHi: u32): u64 {
  return mix((<u64>seedHi << 32) | <u64>seedLo);
}
/** The counter step between consecutive elements of a stream. */
@inline export const GOLDEN: u64 = 0x9e3779b97f4a7c15;
/** The element at counter state z (see streamStart). */
@inline export function bitsAt(z: u64): u64 {
  return mix(z);
}
/** Uniform in [0, 1) with 53 random bits. */
@inline export function uniform(seedLo: u32, seedHi: u32, i: u64): f64 {
  return <f64>(bits(seedLo, seedHi, i) >> 11) * 1.1102230246251565e-16;
}
