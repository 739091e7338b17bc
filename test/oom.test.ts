// Out of memory: init({ memory: { maximumBytes } }) caps the wasm memory; an allocation past it
// throws OutOfMemoryError (bytes requested and in use, the op named) and changes nothing, so
// after dispose()/tidy() the engine carries on. init() runs once per module instance, so this
// file (its own vitest worker) starts the engine itself, with a small cap.
import { describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { Arena, sizeClass } from '../src/wasm/arena.js';
import { OutOfMemoryError } from '../src/errors.js';

const MAX = 8 * 1024 * 1024;

function caught(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('init memory options', () => {
  it('rejects bad limits before starting, and the engine stays uninitialised', async () => {
    for (const memory of [{ maximumBytes: -5 }, { maximumBytes: NaN }, { maximumBytes: 1000 }, { initialBytes: 0 }]) {
      await expect(A.init({ memory })).rejects.toThrow(A.ArgumentError);
    }
    await expect(A.init({ memory: { maximumBytes: 65536 } })).rejects.toThrow(/leaves no room for tensors/);
    await expect(A.init({ memory: { initialBytes: 4 * MAX, maximumBytes: MAX } })).rejects.toThrow(
      /initialBytes .* exceeds memory.maximumBytes/,
    );
    expect(() => A.zeros([1])).toThrow(/not initialised.*await init\(\)/);
  });

  it('starts with the cap', async () => {
    await A.init({ memory: { maximumBytes: MAX } });
    expect(A.memory().wasmBytes).toBeLessThanOrEqual(MAX);
    // The GEMM packing scratch is reserved (never freed) on the first matmul; take it now, at
    // the bottom of the arena, so it cannot pin the top of memory in the middle of a test.
    A.tidy(() => void A.matmul(A.ones([2, 2]), A.ones([2, 2])));
  });
});

describe('allocations past maximumBytes', () => {
  it('throw OutOfMemoryError naming the function, the bytes requested and the bytes in use', () => {
    const keep = A.zeros([1000]);
    const e = caught(() => A.zeros([MAX / 4]));
    expect(e).toBeInstanceOf(A.OutOfMemoryError);
    expect(e).toBeInstanceOf(A.AdjointError);
    expect(e.name).toBe('OutOfMemoryError');
    expect(e.message).toMatch(/^zeros: alloc: cannot allocate 8388608 bytes: 4000 bytes in use/);
    expect(e.message).toContain(`memory.maximumBytes is ${MAX}`);
    expect((e as A.OutOfMemoryError).bytesRequested).toBe(MAX);
    expect((e as A.OutOfMemoryError).bytesInUse).toBe(4000);
    keep.dispose();
  });

  it('name the rounded block and the arena top when a request is rounded up to its size class', () => {
    const bytes = 7 * 2 ** 20 + 4; // 7 MiB is a class; 4 bytes more round up to the 8 MiB one, the whole cap
    const e = caught(() => A.zeros([bytes / 4]).dispose());
    expect(e).toBeInstanceOf(A.OutOfMemoryError);
    expect(e.message).toMatch(/cannot allocate 7340036 bytes \(a block of 8388608: sizes round up/);
    expect(e.message).toMatch(/the arena's top at \d+/);
  });

  it('report the live tensor count, the ops holding the most live bytes and the hint to use tidy or using', () => {
    const before = A.memory().tensors;
    const a = A.ones([256, 256]); // 256 KiB (created by ones, not an op)
    const held = [A.exp(a), A.exp(a), A.matmul(a, a), A.add(a, 1)]; // exp 512 KiB, matmul and add 256 KiB each
    const e = caught(() => A.zeros([MAX / 4]));
    expect(e).toBeInstanceOf(A.OutOfMemoryError);
    expect(e.message).toContain(`${before + 5} tensors are live`);
    expect(e.message).toMatch(
      /most live bytes were created by exp \(512\.0 KiB\), (matmul|add) \(256\.0 KiB\), (matmul|add) \(256\.0 KiB\)/,
    );
    expect(e.message).toMatch(/tidy\(/);
    expect(e.message).toMatch(/`using`/);
    for (const t of [a, ...held]) t.dispose();
    expect(caught(() => A.zeros([MAX / 4])).message).not.toMatch(/exp \(/); // freed bytes leave the report
  });

  it('name the op when an op allocates its output', () => {
    const a = A.ones([1024, 1]),
      b = A.ones([1, 1024]);
    const e = caught(() => A.tidy(() => A.mul(a, b).mul(a))); // 4 MiB, then a second 4 MiB
    expect(e).toBeInstanceOf(A.OutOfMemoryError);
    expect(e.message).toMatch(/^mul: alloc: cannot allocate 4194304 bytes/);
    a.dispose();
    b.dispose();
  });

  it('fill memory, fail, free, and the same memory serves again', () => {
    const base = A.memory();
    const held: A.Tensor[] = [];
    let error: unknown;
    try {
      for (;;) held.push(A.ones([64 * 1024])); // 256 KiB each
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(A.OutOfMemoryError);
    expect(held.length).toBeGreaterThan(10);
    expect(A.memory().wasmBytes).toBeLessThanOrEqual(MAX);
    const n = held.length;
    for (const t of held.splice(0)) t.dispose();
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
    expect(A.memory().tensors).toBe(base.tensors);
    for (let i = 0; i < n; i++) held.push(A.ones([64 * 1024]));
    expect(A.tidy(() => A.sum(held[n - 1]).item())).toBe(64 * 1024);
    for (const t of held) t.dispose();
  });

  it('failed ops leave nothing allocated, even outside tidy (seeded storm near the limit)', () => {
    let seed = 12345;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    // Each case is one public call on inputs made beforehand (x [r, c] and its view x3 [r, 1, c]),
    // (and xt, x viewed as [c, r]), so whatever is left allocated after a failure was leaked by the library, not by the test.
    const ops: [string, (x: A.Tensor, x3: A.Tensor, xt: A.Tensor) => A.Tensor][] = [
      ['exp', (x) => A.exp(x)],
      ['add', (x, x3) => A.add(x, x3)],
      ['sum over axes 0 and 2', (_x, x3) => A.sum(x3, [0, 2])],
      ['max over axes 0 and 2', (_x, x3) => A.max(x3, [0, 2], true)],
      ['mean', (_x, x3) => A.mean(x3, [0, 2])],
      [
        'gather',
        (x) =>
          A.gather(
            x,
            Array.from({ length: 3 * x.shape[0] }, (_, i) => i % x.shape[0]),
          ),
      ],
      ['transpose', (x) => A.transpose(x)],
      ['broadcastTo', (_x, x3) => A.broadcastTo(x3, [x3.shape[0], 3, x3.shape[2]])],
      ['concat', (x) => A.concat([x, x, x], 1)],
      ['slice', (x) => A.slice(x, [0, 0], [x.shape[0], 1])],
      ['matmul', (x, _x3, xt) => A.matmul(x, xt)],
      ['softmax', (x) => A.softmax(x, 0)],
      ['logsumexp', (x) => A.logsumexp(x, 0)],
      ['layerNorm', (x) => A.layerNorm(x)],
      [
        'crossEntropy',
        (x) =>
          A.crossEntropy(
            x,
            Array.from({ length: x.shape[0] }, () => 0),
          ),
      ],
      [
        'backward',
        (x) =>
          A.tidy(() => {
            const w = A.reshape(x, x.shape);
            w.requiresGrad = true;
            A.sum(A.mul(A.tanh(w), w)).backward();
            return w.grad!.share();
          }),
      ],
    ];
    const base = A.memory();
    const leaks = new Set<string>();
    let failures = 0;
    for (let it = 0; it < 400; it++) {
      const [name, op] = ops[Math.floor(rand() * ops.length)];
      const made: A.Tensor[] = [];
      try {
        made.push(A.ones([Math.floor((rand() * 6 * 1024 * 1024) / 4)])); // ballast up to 6 MiB
        const rows = 1 + Math.floor(rand() * 512),
          cols = 1 + Math.floor(rand() * 1024);
        made.push(A.randn([rows, cols], { seed: it }));
        made.push(A.reshape(made[1], [rows, 1, cols]));
        made.push(A.reshape(made[1], [cols, rows]));
        made.push(op(made[1], made[2], made[3]));
      } catch (e) {
        if (!(e instanceof A.OutOfMemoryError)) throw e;
        failures++;
      }
      for (const t of made) t.dispose();
      const now = A.memory();
      if (now.bytesInUse !== base.bytesInUse || now.tensors !== base.tensors) leaks.add(name);
      if (now.bytesInUse !== base.bytesInUse || now.tensors !== base.tensors) break;
    }
    expect([...leaks]).toEqual([]);
    expect(failures).toBeGreaterThan(40);
    expect(A.memory().wasmBytes).toBeLessThanOrEqual(MAX);
  }, 60_000);

  it('a training step that runs out of memory inside tidy leaves the engine able to train', () => {
    const w = A.randn([256, 64], { seed: 1, requiresGrad: true });
    const step = (batch: number) =>
      A.tidy(() => {
        const x = A.randn([batch, 256], { seed: batch });
        const loss = A.mean(A.square(A.tanh(A.matmul(x, w))));
        loss.backward();
        const v = loss.item();
        w.grad!.dispose();
        w.grad = null;
        return v;
      });
    const small = step(16);
    const base = A.memory();
    expect(() => step(4096)).toThrow(A.OutOfMemoryError); // 4 MiB of input, more for activations
    expect(w.grad).toBe(null);
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
    expect(A.memory().tensors).toBe(base.tensors);
    expect(step(16)).toBe(small);
    w.dispose();
  });

  it('running out of memory in the backward pass releases the graph and keeps .grad unchanged', () => {
    const w = A.ones([1024, 640], { requiresGrad: true }); // 2.5 MiB
    const base = A.memory();
    // Forward holds w and w·2 (5 MiB); backward adds the broadcast seed and g·2 (2.5 MiB each).
    const e = caught(() => A.tidy(() => A.sum(A.mul(w, 2)).backward()));
    expect(e.message).toMatch(/^(mul|broadcastTo): alloc/); // the seed's spread or the VJP's product
    expect(e).toBeInstanceOf(A.OutOfMemoryError);
    expect(w.grad).toBe(null);
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
    expect(A.memory().tensors).toBe(base.tensors);
    w.dispose();
  });
});

describe('the arena under a limit (fragmentation)', () => {
  const PAGE = 65536;
  const arena = (pages: number) => new Arena(new WebAssembly.Memory({ initial: 1, maximum: pages }), 0, pages * PAGE);

  it('memory freed in one size serves another once the limit is reached', () => {
    const a = arena(4);
    const small = Array.from({ length: 60 }, () => a.alloc(4000)); // ≈ 4 pages of 4 KiB-class blocks
    expect(() => a.alloc(100_000)).toThrow(OutOfMemoryError);
    for (const p of small) a.free(p, 4000);
    const big = a.alloc(100_000); // from the merged free space
    expect(big).toBeGreaterThanOrEqual(0);
    a.free(big, 100_000);
    // And the other way: a big block freed between live ones, small ones carved from it.
    const b = arena(4);
    const bigs = [b.alloc(60_000), b.alloc(60_000), b.alloc(60_000), b.alloc(60_000)]; // 64 KiB blocks: all 4 pages
    expect(() => b.alloc(4000)).toThrow(OutOfMemoryError);
    b.free(bigs[1], 60_000);
    const carved = Array.from({ length: 16 }, () => b.alloc(4000));
    expect(carved.every((p) => p >= bigs[1] && p < bigs[1] + 65536)).toBe(true);
    expect(() => b.alloc(4000)).toThrow(OutOfMemoryError);
  });

  it('random alloc/free sequences never hand out overlapping or out-of-range blocks', () => {
    let seed = 99;
    const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const pages = 16,
      a = arena(pages);
    const live = new Map<number, number>(); // ptr → bytes
    let failures = 0;
    for (let i = 0; i < 20_000; i++) {
      if (live.size > 0 && rand() < 0.5) {
        const keys = [...live.keys()];
        const p = keys[Math.floor(rand() * keys.length)];
        a.free(p, live.get(p)!);
        live.delete(p);
        continue;
      }
      const bytes = 1 + Math.floor(rand() ** 3 * 200_000);
      try {
        const p = a.alloc(bytes);
        expect(p % 64).toBe(0);
        expect(p + sizeClass(bytes)).toBeLessThanOrEqual(pages * PAGE);
        for (const [q, b] of live) if (p < q + sizeClass(b) && q < p + sizeClass(bytes)) throw new Error(`overlap at step ${i}`);
        live.set(p, bytes);
      } catch (e) {
        if (!(e instanceof OutOfMemoryError)) throw e;
        failures++;
        // With everything freed, any single request up to the limit must fit again.
        if (failures % 50 === 0) {
          for (const [q, b] of live) a.free(q, b);
          live.clear();
          const p = a.alloc(pages * PAGE - 64);
          a.free(p, pages * PAGE - 64);
        }
      }
    }
    expect(failures).toBeGreaterThan(100);
    expect(a.bytesInUse).toBe([...live.values()].reduce((s, b) => s + b, 0));
  });
});
