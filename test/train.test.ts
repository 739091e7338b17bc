// The data namespace (digits split, IDX and Fashion-MNIST loading, seeded batching) and an
// end-to-end training run on the digits through the public API, with flat memory.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { accuracy } from '../src/cli/train.js';

const { nn, optim, data } = A;

beforeAll(async () => {
  await A.init();
});

const counts = (y: Int32Array) => Array.from({ length: 10 }, (_, c) => y.filter((v) => v === c).length);

describe('data.digits', () => {
  it('splits 1797 images per class into [N, 64] float32 in [0, 1] and Int32 labels', () => {
    const d = data.digits();
    expect(d.xTrain.shape[0] + d.xTest.shape[0]).toBe(1797);
    expect(d.xTrain.shape[1]).toBe(64);
    expect(d.xTrain.dtype).toBe('float32');
    expect(d.yTrain).toBeInstanceOf(Int32Array);
    expect(d.yTrain.length).toBe(d.xTrain.shape[0]);
    const x = d.xTrain.toArray();
    expect(Math.min(...x)).toBe(0);
    expect(Math.max(...x)).toBe(1);
    expect(x.every((v) => Number.isInteger(v * 16))).toBe(true);
    // Stratified: every class holds out round(0.2·count).
    const all = counts(d.yTrain).map((c, i) => c + counts(d.yTest)[i]);
    expect(counts(d.yTest)).toEqual(all.map((c) => Math.round(0.2 * c)));
  });

  it('is a partition of the data set, reproducible per seed', () => {
    const raw = data.digitsRaw();
    const a = data.digits({ seed: 3, testFraction: 0.5 }),
      b = data.digits({ seed: 3, testFraction: 0.5 }),
      c = data.digits({ seed: 4, testFraction: 0.5 });
    expect(Array.from(a.xTest.toArray())).toEqual(Array.from(b.xTest.toArray()));
    expect(Array.from(a.yTrain)).toEqual(Array.from(b.yTrain));
    expect(Array.from(a.yTrain)).not.toEqual(Array.from(c.yTrain));
    // Every image appears exactly once across the two parts (matched by pixel rows + label).
    const key = (px: ArrayLike<number>, label: number) => `${Array.from(px).join(',')}|${label}`;
    const want = new Map<string, number>();
    for (let i = 0; i < raw.count; i++) {
      const k = key(raw.pixels.subarray(i * 64, i * 64 + 64), raw.labels[i]);
      want.set(k, (want.get(k) ?? 0) + 1);
    }
    for (const [x, y] of [
      [a.xTrain, a.yTrain],
      [a.xTest, a.yTest],
    ] as const) {
      const v = x.toArray();
      for (let i = 0; i < y.length; i++) {
        const k = key(
          Array.from(v.subarray(i * 64, i * 64 + 64), (p) => p * 16),
          y[i],
        );
        want.set(k, want.get(k)! - 1);
      }
    }
    expect([...want.values()].every((n) => n === 0)).toBe(true);
  });

  it('refuses a bad testFraction', () => {
    expect(() => data.digits({ testFraction: 1 })).toThrow(/testFraction must be in \(0, 1\), got 1/);
  });
});

describe('data.batches', () => {
  const x = () => A.arange(10).reshape([5, 2]);
  const y = Int32Array.from([0, 1, 2, 3, 4]);

  it('visits every row once per pass, in a seeded order', () => {
    const rows = (seed: number) => {
      const out: number[][][] = [];
      for (const b of data.batches(x(), y, { batchSize: 2, seed })) out.push([Array.from(b.y), Array.from(b.x.toArray())]);
      return out;
    };
    const a = rows(1);
    expect(a.map(([l]) => l.length)).toEqual([2, 2, 1]);
    expect(a.flatMap(([l]) => l).sort()).toEqual([0, 1, 2, 3, 4]);
    for (const [l, v] of a) expect(v).toEqual(l.flatMap((i) => [2 * i, 2 * i + 1]));
    expect(rows(1)).toEqual(a);
    expect(rows(2)).not.toEqual(a);
    const plain = [...data.batches(x(), y, { batchSize: 2, shuffle: false, dropLast: true })].map((b) => Array.from(b.y));
    expect(plain).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it('frees each batch when the next is drawn and when the loop ends or breaks', () => {
    const xs = x();
    const before = A.memory().tensors;
    for (const b of data.batches(xs, y, { batchSize: 2 })) expect(b.x.disposed).toBe(false);
    expect(A.memory().tensors).toBe(before);
    for (const b of data.batches(xs, y, { batchSize: 1 })) if (b.y[0] >= 0) break;
    expect(A.memory().tensors).toBe(before);
  });

  it('checks its arguments', () => {
    expect(() => [...data.batches(x(), y, { batchSize: 0 })]).toThrow(/batchSize must be a positive integer/);
    expect(() => [...data.batches(x(), Int32Array.from([1]), { batchSize: 2 })]).toThrow(/1 labels for 5 rows/);
  });
});

describe('IDX files and Fashion-MNIST', () => {
  let dir = '';
  /** An IDX file of unsigned bytes. */
  const idx = (shape: number[], values: number[]) => {
    const head = new Uint8Array(4 + 4 * shape.length);
    head[2] = 0x08;
    head[3] = shape.length;
    shape.forEach((d, i) => new DataView(head.buffer).setUint32(4 + 4 * i, d, false));
    return new Uint8Array([...head, ...values]);
  };
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'adjoint-fmnist-'));
    const image = (n: number) => Array.from({ length: n * 784 }, (_, i) => (i * 7) % 256);
    writeFileSync(join(dir, 'train-images-idx3-ubyte.gz'), gzipSync(idx([3, 28, 28], image(3))));
    writeFileSync(join(dir, 'train-labels-idx1-ubyte'), idx([3], [9, 0, 4]));
    writeFileSync(join(dir, 't10k-images-idx3-ubyte'), idx([2, 28, 28], image(2)));
    writeFileSync(join(dir, 't10k-labels-idx1-ubyte.gz'), gzipSync(idx([2], [1, 2])));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('data.loadIdx reads plain and gzipped files', () => {
    expect(data.loadIdx(idx([2, 2], [1, 2, 3, 4]))).toEqual({ shape: [2, 2], data: Uint8Array.from([1, 2, 3, 4]) });
    expect(data.loadIdx(gzipSync(idx([3], [7, 8, 9]))).shape).toEqual([3]);
  });

  it('data.fashionMnist reads the four files (gzipped or not), x scaled by 1/255', async () => {
    const d = await data.fashionMnist(dir);
    expect(d.xTrain.shape).toEqual([3, 784]);
    expect(d.xTest.shape).toEqual([2, 784]);
    expect(Array.from(d.yTrain)).toEqual([9, 0, 4]);
    expect(Array.from(d.yTest)).toEqual([1, 2]);
    const v = d.xTrain.toArray();
    expect(v[1]).toBe(Math.fround(7 / 255));
    expect(Math.max(...v)).toBe(Math.fround(255 / 255));
  });

  it('a missing directory or file is a one-line ArgumentError', async () => {
    await expect(data.fashionMnist(join(dir, 'nope'))).rejects.toThrow(/fashionMnist: cannot read data directory .*nope \(ENOENT\)/);
    const half = mkdtempSync(join(tmpdir(), 'adjoint-half-'));
    writeFileSync(join(half, 'train-labels-idx1-ubyte'), idx([1], [3]));
    await expect(data.fashionMnist(half)).rejects.toThrow(A.ArgumentError);
    await expect(data.fashionMnist(half)).rejects.toThrow(/has no train-images-idx3-ubyte or train-images-idx3-ubyte.gz/);
    rmSync(half, { recursive: true, force: true });
  });

  it('a label outside 0..9 is a FormatError naming the file', async () => {
    const bad = mkdtempSync(join(tmpdir(), 'adjoint-bad-'));
    for (const f of ['train-images-idx3-ubyte', 't10k-images-idx3-ubyte'])
      writeFileSync(join(bad, f), idx([1, 28, 28], new Array(784).fill(0)));
    writeFileSync(join(bad, 'train-labels-idx1-ubyte'), idx([1], [12]));
    writeFileSync(join(bad, 't10k-labels-idx1-ubyte'), idx([1], [1]));
    await expect(data.fashionMnist(bad)).rejects.toThrow(/train-labels-idx1-ubyte: label 12 at position 0 is outside 0..9/);
    rmSync(bad, { recursive: true, force: true });
  });

  const FASHION = '/usr/share/datasets/fashion-mnist';
  it.skipIf(!existsSync(FASHION))(
    'loads the real Fashion-MNIST (60 000 / 10 000)',
    async () => {
      const d = await data.fashionMnist(FASHION);
      expect(d.xTrain.shape).toEqual([60000, 784]);
      expect(d.xTest.shape).toEqual([10000, 784]);
      expect(counts(d.yTest)).toEqual(new Array(10).fill(1000));
      d.xTrain.dispose();
      d.xTest.dispose();
    },
    60_000,
  );
});

describe('training on the digits', () => {
  it('an MLP reaches ≥ 95 % test accuracy in a few epochs, with flat memory', () => {
    const d = data.digits({ seed: 0 });
    const model = new nn.Sequential(new nn.Linear(64, 128, { seed: 1 }), new nn.ReLU(), new nn.Linear(128, 10, { seed: 2 }));
    const opt = new optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9, nesterov: true });
    const live: number[] = [];
    for (let epoch = 0; epoch < 15; epoch++) {
      for (const b of data.batches(d.xTrain, d.yTrain, { batchSize: 32, seed: epoch })) {
        A.tidy(() => {
          const loss: Tensor = A.crossEntropy(model.forward(b.x), b.y);
          loss.backward();
          A.clipGradNorm(model.parameters(), 5);
          opt.step();
          opt.zeroGrad();
        });
      }
      live.push(A.memory().tensors);
    }
    // After the first step allocated the momentum buffers, the live tensor count never changes.
    expect(new Set(live).size).toBe(1);
    model.eval();
    const acc = accuracy(model, d.xTest, d.yTest);
    expect(acc).toBeGreaterThanOrEqual(0.95);
    expect(accuracy(model, d.xTrain, d.yTrain)).toBeGreaterThan(acc - 0.05);
  }, 20_000);
});
