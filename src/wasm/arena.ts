// The memory arena: JS owns one WebAssembly.Memory and hands out blocks of it. Blocks are
// rounded up to size classes (four per power of two, so at most 25 % slack) and freed blocks
// go onto per-class free lists for reuse; fresh space comes from a bump pointer that grows
// the memory when it runs out. Nothing here ever moves a block.
import { OutOfMemoryError } from '../errors.js';

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

export class Arena {
  readonly memory: WebAssembly.Memory;
  private top: number;
  private readonly freeLists = new Map<number, number[]>();
  private readonly maxBytes: number;
  /** Logical bytes of live blocks (what callers asked for), its peak, and live block count. */
  bytesInUse = 0;
  peakBytes = 0;
  blocks = 0;

  constructor(memory: WebAssembly.Memory, base: number, maxBytes: number) {
    this.memory = memory;
    this.top = Math.ceil(base / ALIGN) * ALIGN;
    this.maxBytes = maxBytes;
  }

  /** A block of at least `bytes`; returns its byte offset. Throws OutOfMemoryError, leaving state unchanged. */
  alloc(bytes: number): number {
    const cls = sizeClass(bytes);
    const list = this.freeLists.get(cls);
    let ptr = list !== undefined && list.length > 0 ? list.pop()! : -1;
    if (ptr < 0) {
      this.ensure(this.top + cls, bytes);
      ptr = this.top;
      this.top += cls;
    }
    this.blocks++;
    this.bytesInUse += bytes;
    if (this.bytesInUse > this.peakBytes) this.peakBytes = this.bytesInUse;
    return ptr;
  }

  /** Returns a block obtained from alloc(bytes) to its free list. */
  free(ptr: number, bytes: number): void {
    const cls = sizeClass(bytes);
    let list = this.freeLists.get(cls);
    if (list === undefined) this.freeLists.set(cls, (list = []));
    list.push(ptr);
    this.blocks--;
    this.bytesInUse -= bytes;
  }

  resetPeak(): void {
    this.peakBytes = this.bytesInUse;
  }

  /** Grows the memory so that [0, end) is addressable, at least doubling to keep growth rare. */
  private ensure(end: number, requested: number): void {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return;
    const want = Math.min(Math.max(end, have * 2), this.maxBytes);
    if (end > this.maxBytes) {
      throw new OutOfMemoryError(
        `alloc: cannot allocate ${requested} bytes: ${this.bytesInUse} bytes in use, ` +
          `the arena would need ${end} bytes but memory.maximumBytes is ${this.maxBytes}`,
      );
    }
    try {
      this.memory.grow(Math.ceil((want - have) / PAGE));
    } catch {
      throw new OutOfMemoryError(
        `alloc: cannot allocate ${requested} bytes: ${this.bytesInUse} bytes in use and the engine refused to grow memory to ${want} bytes`,
      );
    }
  }
}
