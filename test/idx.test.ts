import { describe, it, expect } from 'vitest';
import { gzipSync } from 'node:zlib';
import { FormatError } from '../src/errors.js';
import { loadIdx } from '../src/data/idx.js';
import { idxFile } from './fuzz-files.js';

/** An IDX file of `dims` (unsigned bytes unless `type` says otherwise). */
const idx = (dims: number[], data: ArrayLike<number>, type = 0x08): Uint8Array => idxFile(type, dims, data);

function expectFormatError(f: () => unknown, message: RegExp): void {
  let error: unknown;
  try {
    f();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(FormatError);
  expect((error as Error).message).toMatch(message);
}

describe('loadIdx', () => {
  const pixels = Array.from({ length: 2 * 3 * 4 }, (_, i) => (i * 37) & 0xff);

  it('reads an images-style file (3 dims)', () => {
    const file = idx([2, 3, 4], pixels);
    expect(Array.from(file.subarray(0, 8))).toEqual([0, 0, 8, 3, 0, 0, 0, 2]);
    const { shape, data } = loadIdx(file);
    expect(shape).toEqual([2, 3, 4]);
    expect(Array.from(data)).toEqual(pixels);
  });

  it('reads a labels-style file (1 dim) and big dims as big-endian', () => {
    const labels = Array.from({ length: 300 }, (_, i) => i % 10);
    const { shape, data } = loadIdx(idx([300], labels));
    expect(shape).toEqual([300]);
    expect(Array.from(data)).toEqual(labels);
  });

  it('reads gzipped files the same way', () => {
    const file = idx([2, 3, 4], pixels);
    expect(loadIdx(gzipSync(file))).toEqual(loadIdx(file));
  });

  it('returns data that does not alias the input', () => {
    const file = idx([4], [1, 2, 3, 4]);
    const { data } = loadIdx(file);
    file.fill(0);
    expect(Array.from(data)).toEqual([1, 2, 3, 4]);
  });

  it('accepts zero-sized dims', () => {
    expect(loadIdx(idx([0, 28, 28], []))).toEqual({ shape: [0, 28, 28], data: new Uint8Array(0) });
  });

  it('rejects short files and a bad magic number', () => {
    expectFormatError(() => loadIdx(Uint8Array.of(0, 0, 8)), /file is 3 bytes, too short for the 4-byte magic/);
    expectFormatError(() => loadIdx(Uint8Array.of(1, 0, 8, 1, 0, 0, 0, 0)), /two zero bytes, got 1 0/);
  });

  it('rejects types other than unsigned byte, naming them', () => {
    expectFormatError(() => loadIdx(idx([1], [0, 0, 0, 0], 0x0d)), /data type 0x0d \(float32\) is not supported; only 0x08/);
    expectFormatError(() => loadIdx(idx([1], [0], 0x42)), /data type 0x42 \(unknown\)/);
  });

  it('rejects a zero dims count and dims cut short', () => {
    expectFormatError(() => loadIdx(Uint8Array.of(0, 0, 8, 0)), /dims count is 0/);
    expectFormatError(() => loadIdx(idx([2, 3, 4], pixels).subarray(0, 10)), /too short for 3 dims \(16 header bytes\)/);
  });

  it('rejects truncated data and trailing bytes with expected vs actual', () => {
    const file = idx([2, 3, 4], pixels);
    expectFormatError(
      () => loadIdx(file.subarray(0, file.length - 1)),
      /dims \[2, 3, 4\] need 24 data bytes but the file has 23 \(truncated\)/,
    );
    expectFormatError(() => loadIdx(gzipSync(file.subarray(0, 20))), /need 24 data bytes but the file has 4 \(truncated\)/);
    expectFormatError(() => loadIdx(idx([2], [1, 2, 3])), /need 2 data bytes but the file has 3 \(trailing bytes\)/);
    expectFormatError(() => loadIdx(idx([65536, 65536, 65536], [])), /need 281474976710656 data bytes but the file has 0/);
  });

  it('reports a corrupt gzip wrapper as a loadIdx error', () => {
    const gz = gzipSync(idx([2, 3, 4], pixels));
    expectFormatError(() => loadIdx(gz.subarray(0, gz.length - 3)), /^loadIdx: gunzip: CRC32 mismatch/);
  });
});
