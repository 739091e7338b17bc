// The relaxed-SIMD kernels are embedded as a delta against the default kernels' bytes (they
// differ only where assembly/madd.ts differs): scripts/embed-wasm.mjs writes it, this applies it.

function varint(d: Uint8Array, at: number): [value: number, next: number] {
  let v = 0,
    shift = 0,
    i = at;
  for (;;) {
    const b = d[i++];
    if (b === undefined) throw new Error('truncated delta');
    v += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [v, i];
    shift += 7;
  }
}

/** The bytes the delta's ops make from base: [0, offset, length] copies base[offset, offset + length), [1, length, ...bytes] inserts bytes. */
export function applyDelta(base: Uint8Array, delta: Uint8Array, length: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(length);
  let o = 0;
  for (let i = 0; i < delta.length; ) {
    const op = delta[i];
    const [a, j] = varint(delta, i + 1);
    if (op === 0) {
      const [n, k] = varint(delta, j);
      out.set(base.subarray(a, a + n), o);
      o += n;
      i = k;
    } else {
      out.set(delta.subarray(j, j + a), o);
      o += a;
      i = j + a;
    }
  }
  if (o !== length) throw new Error(`delta made ${o} bytes, expected ${length}`);
  return out;
}

/** 32-bit FNV-1a of the bytes (the check scripts/embed-wasm.mjs stores next to the delta). */
export function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193) >>> 0;
  return h;
}
