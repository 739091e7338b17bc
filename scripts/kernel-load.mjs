// A kernel build instantiated alone, for the scripts that race two builds in one process
// (scripts/kernel-ab.mjs, bench/gemm-shapes.mjs): its own fixed memory of `pages` 64 KiB pages,
// a bump allocator from the build's heap base (64-byte aligned), and GEMM scratch for any shape.
import { readFileSync } from 'node:fs';

/** { k: the exports, memory, alloc(bytes) → pointer }; alloc throws when the memory is full. */
export async function loadKernels(file, pages) {
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  const { instance } = await WebAssembly.instantiate(readFileSync(file), { env: { memory } });
  const k = instance.exports;
  let top = (Number(k.heap_base()) + 63) & ~63;
  const alloc = (bytes) => {
    const p = top;
    top = (top + bytes + 63) & ~63;
    if (top > pages * 65536) throw new Error(`${file}: out of memory`);
    return p;
  };
  const scratch = k.gemm_scratch_bytes(2 ** 30, 2 ** 30, 2 ** 30, 8);
  k.gemm_set_scratch(alloc(scratch), scratch);
  return { k, memory, alloc };
}
