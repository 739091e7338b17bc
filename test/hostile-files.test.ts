// Hostile files: thousands of seeded mutations of valid safetensors and IDX files (truncated,
// header length past the end or absurd, offsets out of range or overlapping, unknown dtypes,
// shape/size mismatches, huge dims, broken UTF-8, deep JSON nesting, gzip damage) go through
// the public loaders. Each must decode or throw FormatError: no other exception, no hang, no
// output larger than the file implies. bench/fuzz.ts runs the same generator at 100,000+ files.
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { Rng, assemble, hostileFile, idxSeeds, safetensorsSeeds, verdict, type Outcome } from './fuzz-files.js';

beforeAll(async () => {
  await A.init();
});

function fuzz(format: 'safetensors' | 'idx', count: number, seed: number) {
  const seeds = format === 'safetensors' ? safetensorsSeeds() : idxSeeds();
  const rng = new Rng(seed);
  const counts: Record<Outcome, number> = { decoded: 0, FormatError: 0, other: 0 };
  const problems: string[] = [];
  let slowest = 0;
  for (let i = 0; i < count; i++) {
    const file = hostileFile(format, seeds, rng);
    const t0 = performance.now();
    const v = verdict(format, file);
    slowest = Math.max(slowest, performance.now() - t0);
    counts[v.outcome]++;
    if (v.problem !== undefined && problems.length < 5) problems.push(`file ${i} (${file.length} bytes): ${v.problem}`);
  }
  return { counts, problems, slowest };
}

describe.each([
  ['safetensors', 3000],
  ['idx', 3000],
] as const)('%s loader under %i mutated files', (format, count) => {
  it('each decodes or throws FormatError, quickly, within what the file implies', () => {
    const base = A.memory();
    const { counts, problems, slowest } = fuzz(format, count, 7);
    expect(problems).toEqual([]);
    expect(counts.other).toBe(0);
    // The mutations must exercise both paths, not just bounce off the first check.
    expect(counts.FormatError).toBeGreaterThan(count / 4);
    expect(counts.decoded).toBeGreaterThan(count / 100);
    expect(slowest).toBeLessThan(2000);
    expect(A.memory().tensors).toBe(base.tensors);
    expect(A.memory().bytesInUse).toBe(base.bytesInUse);
  });
});

describe('specific hostile safetensors files', () => {
  const data8 = new Uint8Array(8);
  const cases: [string, Uint8Array][] = [
    ['empty file', new Uint8Array(0)],
    ['header length beyond the file', assemble('{}', data8, 100)],
    [
      'header length 2^64 − 1',
      (() => {
        const f = assemble('{}', data8);
        new DataView(f.buffer).setBigUint64(0, 2n ** 64n - 1n, true);
        return f;
      })(),
    ],
    ['offsets past the data', assemble('{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', new Uint8Array(4))],
    [
      'overlapping tensors',
      assemble('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', data8),
    ],
    ['unknown dtype', assemble('{"t":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}', data8)],
    ['shape/size mismatch', assemble('{"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', data8)],
    ['huge declared shape', assemble('{"t":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}', data8)],
    [
      'shape whose product overflows to a small number in 32 bits',
      assemble('{"t":{"dtype":"F32","shape":[65536,65536,2],"data_offsets":[0,8]}}', data8),
    ],
    ['non-UTF-8 header', assemble(Uint8Array.of(0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d), data8)],
    ['deeply nested JSON (100,000 levels)', assemble('['.repeat(100_000) + ']'.repeat(100_000), new Uint8Array(0))],
    ['header is an array', assemble('[]', new Uint8Array(0))],
    ['metadata with a non-string value', assemble('{"__metadata__":{"a":1}}', new Uint8Array(0))],
  ];
  it.each(cases)('%s → FormatError', (_name, file) => {
    expect(verdict('safetensors', file)).toEqual({ outcome: 'FormatError' });
  });
});

describe('specific hostile IDX files', () => {
  const idx = (type: number, dims: number[], data: number[] = []) => {
    const f = new Uint8Array(4 + 4 * dims.length + data.length);
    f.set([0, 0, type, dims.length]);
    dims.forEach((d, i) => new DataView(f.buffer).setUint32(4 + 4 * i, d, false));
    f.set(data, 4 + 4 * dims.length);
    return f;
  };
  const cases: [string, Uint8Array][] = [
    ['empty file', new Uint8Array(0)],
    ['dims beyond the file', Uint8Array.of(0, 0, 8, 200, 0, 0, 0, 1)],
    ['huge dims, few bytes', idx(8, [0xffffffff, 0xffffffff, 0xffffffff], [1, 2, 3])],
    ['dims product overflowing 2^53', idx(8, [2 ** 32 - 1, 2 ** 32 - 1, 2 ** 32 - 1, 2 ** 32 - 1])],
    ['int32 data type', idx(0x0c, [1], [0, 0, 0, 1])],
    ['truncated data', idx(8, [10], [1, 2, 3])],
    ['trailing bytes', idx(8, [1], [1, 2])],
    ['zero dims', Uint8Array.of(0, 0, 8, 0)],
    ['gzip magic then garbage', Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff)],
  ];
  it.each(cases)('%s → FormatError', (_name, file) => {
    expect(verdict('idx', file)).toEqual({ outcome: 'FormatError' });
  });
});
