// Pointer references of a trace (src/compile/refs.ts): which buffer a ref points into, and
// offsets between refs, for every kind of ref (the compile passes that cut launches use them).
import { describe, expect, it } from 'vitest';
import { sameBuffer, shiftRef, shifted } from '../src/compile/refs.js';
import type { Ref } from '../src/compile/trace.js';
import type { Storage } from '../src/tensor/tensor.js';

const s1 = {} as Storage,
  s2 = {} as Storage;
const block = (b: number, off: number): Ref => ({ k: 'block', block: b, off });
const input = (i: number, off: number): Ref => ({ k: 'input', input: i, off });
const ext = (s: Storage, off: number): Ref => ({ k: 'ext', storage: s, off });
const abs = (ptr: number): Ref => ({ k: 'abs', ptr });

describe('refs', () => {
  it('one buffer: the same block, input or storage at any offset; static memory is one buffer', () => {
    expect(sameBuffer(block(1, 0), block(1, 64))).toBe(true);
    expect(sameBuffer(block(1, 0), block(2, 0))).toBe(false);
    expect(sameBuffer(input(0, 0), input(0, 8))).toBe(true);
    expect(sameBuffer(input(0, 0), input(1, 0))).toBe(false);
    expect(sameBuffer(ext(s1, 0), ext(s1, 4))).toBe(true);
    expect(sameBuffer(ext(s1, 0), ext(s2, 0))).toBe(false);
    expect(sameBuffer(abs(16), abs(4096))).toBe(true);
    expect(sameBuffer(block(0, 0), input(0, 0))).toBe(false);
    expect(sameBuffer(null, abs(0))).toBe(false);
  });

  it('shifted: `by` bytes past, in the same buffer; shiftRef moves a ref on', () => {
    expect(shifted(input(2, 48), input(2, 16), 32)).toBe(true);
    expect(shifted(input(2, 48), input(2, 16), 16)).toBe(false);
    expect(shifted(ext(s1, 40), ext(s2, 8), 32)).toBe(false);
    expect(shifted(abs(100), abs(60), 40)).toBe(true);
    expect(shifted(null, abs(60), 40)).toBe(false);
    expect(shiftRef(block(3, 8), 24)).toEqual(block(3, 32));
    expect(shiftRef(abs(8), 24)).toEqual(abs(32));
    expect(shiftRef(null, 24)).toBeNull();
  });
});
