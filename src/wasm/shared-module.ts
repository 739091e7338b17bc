// The kernels for a shared memory, made from the ordinary build at run time. `asc --sharedMemory
// --enable threads` changes exactly one thing in our output: the memory import's limits become
// `shared` with a maximum (the kernels use no atomics, and their data segments are constant
// tables, so rewriting them when a worker instantiates is harmless). So instead of shipping and
// embedding a second binary, the import entry is rewritten here; test/threads.test.ts checks the
// result against asc's own --sharedMemory build byte for byte.

/** Most pages a wasm32 memory can have (4 GiB); the rewritten import accepts any maximum up to it. */
const MAX_PAGES = 65536;

function readU32(b: Uint8Array, at: number): [value: number, next: number] {
  let v = 0,
    shift = 0,
    i = at;
  for (;;) {
    const byte = b[i++];
    if (byte === undefined) throw new Error('truncated LEB128');
    v += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return [v, i];
    shift += 7;
  }
}

function u32(v: number): number[] {
  const out: number[] = [];
  do {
    let byte = v & 0x7f;
    v = Math.floor(v / 128);
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
}

const skipName = (b: Uint8Array, at: number): number => {
  const [len, next] = readU32(b, at);
  return next + len;
};

/** Past a limits entry (flags, min, and max when flags bit 0 is set). */
function skipLimits(b: Uint8Array, at: number): number {
  const flags = b[at];
  let i = readU32(b, at + 1)[1];
  if (flags & 1) i = readU32(b, i)[1];
  return i;
}

/**
 * The module bytes with their imported memory declared `shared` (max MAX_PAGES pages), or null
 * when the module imports no memory or is not a wasm binary. An already shared import is kept.
 */
export function sharedMemoryVariant(bytes: Uint8Array): Uint8Array | null {
  const b = bytes;
  if (b.length < 8 || b[0] !== 0 || b[1] !== 0x61 || b[2] !== 0x73 || b[3] !== 0x6d) return null;
  let i = 8;
  while (i < b.length) {
    const id = b[i];
    const [size, body] = readU32(b, i + 1);
    const end = body + size;
    if (id === 2) return rewriteImports(b, i, body, end);
    i = end;
  }
  return null;
}

function rewriteImports(b: Uint8Array, start: number, body: number, end: number): Uint8Array | null {
  let [count, i] = readU32(b, body);
  for (; count > 0; count--) {
    i = skipName(b, skipName(b, i));
    const kind = b[i++];
    if (kind === 0)
      i = readU32(b, i)[1]; // function: type index
    else if (kind === 1)
      i = skipLimits(b, i + 1); // table: reftype, limits
    else if (kind === 3)
      i += 2; // global: valtype, mutability
    else if (kind === 4)
      i = readU32(b, i + 1)[1]; // tag: attribute, type index
    else if (kind === 2) {
      const flags = b[i];
      if (flags & 0x04) return null; // memory64: not ours
      if (flags === 0x03) return b.slice();
      const min = readU32(b, i + 1)[0];
      const limits = [0x03, ...u32(min), ...u32(MAX_PAGES)];
      const after = skipLimits(b, i);
      const section = [...b.subarray(body, i), ...limits, ...b.subarray(after, end)];
      const out = new Uint8Array(start + 1 + u32(section.length).length + section.length + (b.length - end));
      out.set(b.subarray(0, start + 1));
      out.set(u32(section.length), start + 1);
      out.set(section, start + 1 + u32(section.length).length);
      out.set(b.subarray(end), out.length - (b.length - end));
      return out;
    } else return null;
  }
  return null;
}
