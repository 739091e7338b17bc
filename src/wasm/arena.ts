// The memory arena: JS owns one WebAssembly.Memory and hands out blocks of it. Blocks are
// rounded up to size classes (four per power of two, so at most 25 % slack) and freed blocks
// go onto per-class free lists for reuse; fresh space comes from a bump pointer that grows
// the memory when it runs out. Nothing here ever moves a block.
import { OutOfMemoryError } from '../errors.js';

/**
 * Appended to an OutOfMemoryError's message: the tensor layer sets it (src/tensor/lifetime.ts)
 * to name the live tensor count and the ops holding the most memory; this layer knows no tensors.
 */
export const oomReport: { explain: (() => string) | null } = { explain: null };

const ALIGN = 64; // a cache line: keeps every SIMD load aligned and tensors from sharing lines
const PAGE = 65536;

/** Size class of a request: the smallest of {4,5,6,7}·2^k ≥ bytes, in ALIGN units. */
export function sizeClass(bytes: number): number {
  const units = Math.max(1, Math.ceil(bytes / ALIGN));
  if (units <= 4) return units * ALIGN;
  const k = 31 - Math.clz32(units) - 2; // units = m·2^k with m in [4, 8)
  const m = Math.ceil(units / 2 ** k);
  return m * 2 ** k * ALIGN;
}

/**
 * Dense index of a size class (a sizeClass result): 1–4 units → 0–3, m·2^k units (m in 4..7)
 * → 4k + m. The free lists are an array indexed by it: a Map lookup per alloc and free showed
 * in per-op profiles.
 */
function classIndex(cls: number): number {
  const units = cls / ALIGN;
  if (units <= 4) return units - 1;
  const k = 31 - Math.clz32(units) - 2;
  return 4 * k + (units >>> k);
}

/** The size class with index i (inverse of classIndex). */
function classBytes(i: number): number {
  if (i < 4) return (i + 1) * ALIGN;
  return ((i & 3) + 4) * 2 ** ((i >> 2) - 1) * ALIGN;
}

export class Arena {
  readonly memory: WebAssembly.Memory;
  private top: number;
  private readonly freeLists: (number[] | undefined)[] = [];
  private readonly maxBytes: number;
  /** Logical bytes of live blocks (what callers asked for), its peak, and live block count. */
  bytesInUse = 0;
  peakBytes = 0;
  blocks = 0;
  /** Bytes of live blocks marked as gradients (leaf .grad buffers and what backward sums into them). */
  gradBytes = 0;
  /**
   * The most non-gradient bytes in use since resetPeak(), and their level then: the difference
   * is a training step's activation peak. Sampled just before each free (and when read), where
   * that level has its local maxima, so a buffer marked a gradient before anything is freed
   * (a weight's VJP output) counts as gradient memory from its allocation.
   */
  peakOtherBytes = 0;
  baseOtherBytes = 0;

  constructor(memory: WebAssembly.Memory, base: number, maxBytes: number) {
    this.memory = memory;
    this.top = Math.ceil(base / ALIGN) * ALIGN;
    this.maxBytes = maxBytes;
  }

  /** A block of at least `bytes`; returns its byte offset. Throws OutOfMemoryError, leaving state unchanged. */
  alloc(bytes: number): number {
    const cls = sizeClass(bytes);
    // A class above maxBytes was never freed (and its index could overflow): no list to look in.
    const list = cls <= this.maxBytes ? this.freeLists[classIndex(cls)] : undefined;
    let ptr = list !== undefined && list.length > 0 ? list.pop()! : -1;
    if (ptr < 0 && this.top + cls > this.maxBytes) ptr = this.reclaim(cls);
    if (ptr < 0) {
      this.ensure(this.top + cls, bytes, cls);
      ptr = this.top;
      this.top += cls;
    }
    this.blocks++;
    this.bytesInUse += bytes;
    if (this.bytesInUse > this.peakBytes) this.peakBytes = this.bytesInUse;
    return ptr;
  }

  /** Returns a block obtained from alloc(bytes) to its free list. */
  free(ptr: number, bytes: number, gradient = false): void {
    this.sampleOther();
    if (gradient) this.gradBytes -= bytes;
    this.listOf(sizeClass(bytes)).push(ptr);
    this.blocks--;
    this.bytesInUse -= bytes;
  }

  /**
   * The slow path, when the bump pointer would pass maximumBytes. Free blocks sit in per-class
   * lists, so memory freed in one size can lie idle while another size runs out: merge adjacent
   * free blocks, hand a run ending at the top back to the bump region, and if that is not enough
   * carve the request from the smallest run that holds it (the rest goes back in class-sized
   * pieces). Returns the carved block, or -1 to use the (possibly lowered) bump pointer.
   */
  private reclaim(cls: number): number {
    const blocks: [number, number][] = [];
    this.freeLists.forEach((list, i) => list?.forEach((p) => blocks.push([p, classBytes(i)])));
    blocks.sort((a, b) => a[0] - b[0]);
    const runs: [number, number][] = []; // [start, end)
    for (const [p, c] of blocks) {
      const last = runs[runs.length - 1];
      if (last !== undefined && last[1] === p) last[1] = p + c;
      else runs.push([p, p + c]);
    }
    this.freeLists.length = 0;
    const tail = runs[runs.length - 1];
    if (tail !== undefined && tail[1] === this.top) {
      this.top = tail[0];
      runs.pop();
    }
    let ptr = -1;
    if (this.top + cls > this.maxBytes) {
      let best = -1;
      runs.forEach(([s, e], i) => {
        if (e - s >= cls && (best < 0 || e - s < runs[best][1] - runs[best][0])) best = i;
      });
      if (best >= 0) {
        ptr = runs[best][0];
        runs[best][0] += cls;
      }
    }
    for (const [s, e] of runs) this.putFree(s, e - s);
    return ptr;
  }

  /** Puts [ptr, ptr + bytes) on the free lists as the fewest class-sized blocks (bytes: a multiple of ALIGN). */
  private putFree(ptr: number, bytes: number): void {
    while (bytes > 0) {
      const units = bytes / ALIGN;
      const k = units < 8 ? 0 : 31 - Math.clz32(units) - 2;
      const cls = Math.floor(units / 2 ** k) * 2 ** k * ALIGN; // the largest size class ≤ bytes
      this.listOf(cls).push(ptr);
      ptr += cls;
      bytes -= cls;
    }
  }

  private listOf(cls: number): number[] {
    const i = classIndex(cls);
    return (this.freeLists[i] ??= []);
  }

  /** Counts `bytes` of a live block as gradient memory from now on. */
  markGradient(bytes: number): void {
    this.gradBytes += bytes;
  }

  sampleOther(): void {
    const other = this.bytesInUse - this.gradBytes;
    if (other > this.peakOtherBytes) this.peakOtherBytes = other;
  }

  resetPeak(): void {
    this.baseOtherBytes = this.peakOtherBytes = this.bytesInUse - this.gradBytes;
    this.peakBytes = this.bytesInUse;
  }

  /** Engine-internal space (thread control blocks, GEMM packing scratch): taken from the bump pointer, never freed, not counted as tensor bytes. */
  reserve(bytes: number): number {
    const size = Math.ceil(bytes / ALIGN) * ALIGN;
    this.ensure(this.top + size, bytes, size);
    const ptr = this.top;
    this.top += size;
    return ptr;
  }

  /** Grows the memory so that [0, end) is addressable, at least doubling to keep growth rare. */
  private ensure(end: number, requested: number, block: number): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    const want = Math.min(Math.max(end, have * 2), this.maxBytes);
    if (end > this.maxBytes) {
      // Name the block and the arena's top, not only the bytes in use: a request is rounded up to
      // its size class, and freed blocks of other classes (or the kernels' static data) count
      // against the cap too, so "in use + requested" alone can look as if it fits.
      const rounded = block > requested ? ` (a block of ${block}: sizes round up to one of four classes per power of two)` : '';
      throw new OutOfMemoryError(
        `alloc: cannot allocate ${requested} bytes${rounded}: ${this.bytesInUse} bytes in use, the arena's top at ${this.top} ` +
          `(static data, live blocks and freed blocks kept for reuse), so it would need ${end} bytes but memory.maximumBytes is ${this.maxBytes}${oomReport.explain?.() ?? ''}`,
        requested,
        this.bytesInUse,
      );
    }
    try {
      this.memory.grow(Math.ceil((want - have) / PAGE));
    } catch {
      throw new OutOfMemoryError(
        `alloc: cannot allocate ${requested} bytes: ${this.bytesInUse} bytes in use and the engine refused to grow memory to ${want} bytes${oomReport.explain?.() ?? ''}`,
        requested,
        this.bytesInUse,
      );
    }
  }
}
