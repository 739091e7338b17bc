import { describe, it, expect } from 'vitest';
import { rng } from './rng.js';
import { ArgumentError, DtypeError, FormatError, ShapeError } from '../src/errors.js';
import { decodeSafetensors, decodeSafetensorsFile, encodeSafetensors, type SafetensorsEntry } from '../src/io/safetensors-format.js';

function thrown(f: () => unknown): Error {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

function expectFormatError(f: () => unknown, message: RegExp): void {
  const e = thrown(f);
  expect(e).toBeInstanceOf(FormatError);
  expect(e.message).toMatch(message);
}

/** A file with this literal header text (unpadded) followed by `dataLen` bytes. */
function file(header: string, dataLen = 0): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + dataLen);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

const entry = (name: string, dtype: string, shape: unknown, offsets: unknown): string =>
  `${JSON.stringify(name)}:{"dtype":${JSON.stringify(dtype)},"shape":${JSON.stringify(shape)},"data_offsets":${JSON.stringify(offsets)}}`;

describe('encodeSafetensors / decodeSafetensors round-trip', () => {
  const tensors: SafetensorsEntry[] = [
    { name: 'weight', dtype: 'F32', shape: [2, 3], data: Float32Array.of(1, -2.5, 3e-41, Infinity, -0, NaN) },
    { name: 'bias', dtype: 'F64', shape: [3], data: Float64Array.of(Math.PI, -1e300, 5e-324) },
    { name: 'scalar', dtype: 'F64', shape: [], data: Float64Array.of(42) },
    { name: 'empty', dtype: 'F32', shape: [0], data: new Float32Array(0) },
    { name: 'empty2d', dtype: 'F64', shape: [3, 0], data: new Float64Array(0) },
  ];

  it('returns equal tensors in name order, with metadata', () => {
    const bytes = encodeSafetensors(tensors, { format: 'pt', note: 'héllo "quoted" \u{1f600}' });
    const { tensors: back, metadata } = decodeSafetensorsFile(bytes);
    const sorted = [...tensors].sort((a, b) => (a.name < b.name ? -1 : 1));
    expect(back.map((t) => t.name)).toEqual(sorted.map((t) => t.name));
    back.forEach((t, i) => {
      expect(t.dtype).toBe(sorted[i].dtype);
      expect(t.shape).toEqual(sorted[i].shape);
      expect(t.data).toBeInstanceOf(sorted[i].dtype === 'F32' ? Float32Array : Float64Array);
      expect(Array.from(t.data)).toEqual(Array.from(sorted[i].data)); // toEqual treats NaN as equal and tells -0 from 0
    });
    expect(metadata).toEqual({ format: 'pt', note: 'héllo "quoted" \u{1f600}' });
  });

  it('pads the header with spaces to a multiple of 8', () => {
    for (let n = 0; n < 12; n++) {
      const bytes = encodeSafetensors([{ name: 'x'.repeat(n), dtype: 'F32', shape: [1], data: Float32Array.of(n) }]);
      const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
      expect(headerLen % 8).toBe(0);
      expect(decodeSafetensors(bytes)[0].data[0]).toBe(n);
    }
  });

  it('an empty file list is just "{}" padded', () => {
    const bytes = encodeSafetensors([]);
    expect(Array.from(bytes)).toEqual([8, 0, 0, 0, 0, 0, 0, 0, 0x7b, 0x7d, 32, 32, 32, 32, 32, 32]);
    expect(decodeSafetensorsFile(bytes)).toEqual({ tensors: [], metadata: {} });
  });

  it('keeps integer-like names in string order', () => {
    const t = (name: string): SafetensorsEntry => ({ name, dtype: 'F32', shape: [1], data: Float32Array.of(Number(name)) });
    const back = decodeSafetensors(encodeSafetensors([t('2'), t('10'), t('1')]));
    expect(back.map((b) => [b.name, b.data[0]])).toEqual([
      ['1', 1],
      ['10', 10],
      ['2', 2],
    ]);
  });

  it('copies the data out of an unaligned view of a larger buffer', () => {
    const bytes = encodeSafetensors([tensors[1]]);
    const host = new Uint8Array(bytes.length + 3);
    host.set(bytes, 3);
    const [back] = decodeSafetensors(host.subarray(3));
    host.fill(0);
    expect(Array.from(back.data)).toEqual(Array.from(tensors[1].data));
  });
});

describe('exact byte layout', () => {
  it('one F32 tensor', () => {
    const bytes = encodeSafetensors([{ name: 'a', dtype: 'F32', shape: [2], data: Float32Array.of(1, -2) }]);
    const header = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  '; // 54 bytes of JSON + 2 spaces
    const expected = [
      56,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      ...Array.from(header, (c) => c.charCodeAt(0)),
      0x00,
      0x00,
      0x80,
      0x3f, // 1.0f, little-endian
      0x00,
      0x00,
      0x00,
      0xc0, // -2.0f
    ];
    expect(Array.from(bytes)).toEqual(expected);
  });

  it('metadata first, then an F64 scalar', () => {
    const bytes = encodeSafetensors([{ name: 's', dtype: 'F64', shape: [], data: Float64Array.of(1.5) }], { k: 'v' });
    const header = '{"__metadata__":{"k":"v"},"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}  '; // 78 + 2
    const expected = [80, 0, 0, 0, 0, 0, 0, 0, ...Array.from(header, (c) => c.charCodeAt(0)), 0, 0, 0, 0, 0, 0, 0xf8, 0x3f];
    expect(Array.from(bytes)).toEqual(expected);
  });
});

describe('encodeSafetensors rejects bad arguments', () => {
  const f32 = Float32Array.of(1, 2);
  it('dtype and data disagree', () => {
    const e = thrown(() => encodeSafetensors([{ name: 'w', dtype: 'F64', shape: [2], data: f32 }]));
    expect(e).toBeInstanceOf(DtypeError);
    expect(e.message).toMatch(/tensor "w" has dtype F64 but its data is a Float32Array/);
  });
  it('unsupported dtype', () => {
    const bad = { name: 'w', dtype: 'F16', shape: [2], data: f32 } as unknown as SafetensorsEntry;
    expect(thrown(() => encodeSafetensors([bad]))).toBeInstanceOf(DtypeError);
  });
  it('shape and data length disagree', () => {
    const e = thrown(() => encodeSafetensors([{ name: 'w', dtype: 'F32', shape: [3], data: f32 }]));
    expect(e).toBeInstanceOf(ShapeError);
    expect(e.message).toMatch(/shape \[3\] holds 3 elements but data has 2/);
    expect(thrown(() => encodeSafetensors([{ name: 'w', dtype: 'F32', shape: [-1, -2], data: f32 }]))).toBeInstanceOf(ShapeError);
  });
  it('duplicate and reserved names, non-string metadata', () => {
    const t = { name: 'w', dtype: 'F32' as const, shape: [2], data: f32 };
    expect(thrown(() => encodeSafetensors([t, t])).message).toMatch(/"w" appears more than once/);
    expect(thrown(() => encodeSafetensors([{ ...t, name: '__metadata__' }]))).toBeInstanceOf(ArgumentError);
    const meta = { n: 3 } as unknown as Record<string, string>;
    expect(thrown(() => encodeSafetensors([t], meta)).message).toMatch(/key "n" holds 3/);
  });
});

describe('decodeSafetensors rejects malformed files', () => {
  const ok = (name = 'w', offsets = [0, 8]): string => entry(name, 'F32', [2], offsets);

  it('too short, header length beyond the file, absurd header length', () => {
    expectFormatError(() => decodeSafetensors(new Uint8Array(5)), /file is 5 bytes, too short/);
    const long = file('{}');
    long[0] = 200;
    expectFormatError(() => decodeSafetensors(long), /header length 200 exceeds the 2 bytes/);
    const huge = file('{}');
    huge[5] = 1;
    expectFormatError(() => decodeSafetensors(huge), /header length 1099511627778 is absurdly large/);
  });

  it('invalid UTF-8, invalid JSON, deep nesting, non-object header', () => {
    const bad = file('{"\u00e9":1}');
    bad[10] = 0xff;
    expectFormatError(() => decodeSafetensors(bad), /header is not valid UTF-8/);
    expectFormatError(() => decodeSafetensors(file('{"w":')), /header is not valid JSON/);
    expectFormatError(() => decodeSafetensors(file(`{"w":${'['.repeat(100_000)}`)), /nests deeper than 64/);
    expectFormatError(() => decodeSafetensors(file('[]')), /header must be a JSON object, got \[\]/);
    expectFormatError(() => decodeSafetensors(file('\ufeff{}')), /not valid JSON/);
  });

  it('brackets inside strings do not count as nesting', () => {
    const name = `${'['.repeat(100)}"{\\`; // JSON-escaped as \" and \\ in the header
    expect(decodeSafetensors(file(`{${entry(name, 'F32', [0], [0, 0])}}`))[0].name).toBe(name);
  });

  it('non-object entries and unsupported dtypes name the tensor', () => {
    expectFormatError(() => decodeSafetensors(file('{"w":[1]}')), /tensor "w" must be an object/);
    expectFormatError(
      () => decodeSafetensors(file(`{${entry('w', 'F16', [2], [0, 4])}}`, 4)),
      /tensor "w" has dtype "F16"; only F32, F64 and I32/,
    );
    expectFormatError(() => decodeSafetensors(file(`{${entry('w', 'I64', [1], [0, 8])}}`, 8)), /tensor "w" has dtype "I64"/);
  });

  it('bad shapes', () => {
    for (const shape of [2, [-1], [1.5], ['2'], null, [2 ** 53]]) {
      expectFormatError(
        () => decodeSafetensors(file(`{${entry('w', 'F32', shape, [0, 8])}}`, 8)),
        /tensor "w" shape must be an array of non-negative integers/,
      );
    }
  });

  it('bad data_offsets', () => {
    for (const offsets of [[0], [0, 8, 9], [-8, 0], [0, '8'], null]) {
      expectFormatError(
        () => decodeSafetensors(file(`{${ok('w', offsets as number[])}}`, 8)),
        /tensor "w" data_offsets must be \[begin, end\]/,
      );
    }
    expectFormatError(() => decodeSafetensors(file(`{${ok('w', [8, 0])}}`, 8)), /data_offsets \[8, 0\] end before they begin/);
    expectFormatError(
      () => decodeSafetensors(file(`{${entry('w', 'F32', [100], [0, 400])}}`, 256)),
      /tensor "w" data_offsets \[0, 400\] exceed the data section \(256 bytes\)/,
    );
  });

  it('shape and byte span disagree, overflowing shapes included', () => {
    expectFormatError(
      () => decodeSafetensors(file(`{${entry('w', 'F64', [2], [0, 8])}}`, 8)),
      /shape \[2\] of F64 needs 16 bytes but data_offsets \[0, 8\] span 8/,
    );
    const huge = [2 ** 40, 2 ** 40, 2 ** 40];
    expectFormatError(() => decodeSafetensors(file(`{${entry('w', 'F32', huge, [0, 8])}}`, 8)), /needs .* bytes but/);
  });

  it('gaps, overlaps and uncovered trailing bytes', () => {
    expectFormatError(
      () => decodeSafetensors(file(`{${ok('a', [0, 8])},${ok('b', [12, 20])}}`, 20)),
      /"b" data_offsets \[12, 20\] leave a gap: bytes \[8, 12\]/,
    );
    expectFormatError(
      () => decodeSafetensors(file(`{${ok('a', [0, 8])},${ok('b', [4, 12])}}`, 12)),
      /"b" data_offsets \[4, 12\] overlap tensor "a", which ends at 8/,
    );
    expectFormatError(() => decodeSafetensors(file(`{${ok('a', [0, 8])}}`, 12)), /cover 8 bytes but the data section has 12/);
    expectFormatError(() => decodeSafetensors(file(`{${ok('a', [4, 12])}}`, 12)), /leave a gap: bytes \[0, 4\]/);
  });

  it('metadata must map strings to strings', () => {
    expectFormatError(
      () => decodeSafetensors(file('{"__metadata__":{"a":1}}')),
      /__metadata__ must map strings to strings, but key "a" holds 1/,
    );
    expectFormatError(() => decodeSafetensors(file('{"__metadata__":"x"}')), /__metadata__ must be an object/);
  });

  it('accepts a "__proto__" tensor name without touching prototypes', () => {
    const [t] = decodeSafetensors(file(`{${entry('__proto__', 'F32', [0], [0, 0])}}`));
    expect(t.name).toBe('__proto__');
  });
});

describe('seeded mutation fuzz', () => {
  it('each of 4000 mutated files decodes or throws FormatError', () => {
    const r = rng(2024);
    const valid = encodeSafetensors(
      [
        { name: 'w', dtype: 'F32', shape: [2, 3], data: Float32Array.of(1, 2, 3, 4, 5, 6) },
        { name: 'b', dtype: 'F64', shape: [3], data: Float64Array.of(7, 8, 9) },
        { name: 'z', dtype: 'F32', shape: [0], data: new Float32Array(0) },
      ],
      { a: 'b' },
    );
    const headerEnd = 8 + Number(new DataView(valid.buffer).getBigUint64(0, true));
    const digits = new TextEncoder().encode('0123456789[]{}",:-.e');
    let decoded = 0;
    for (let i = 0; i < 4000; i++) {
      const bytes = Uint8Array.from(valid);
      const edits = 1 + Math.floor(r() * 3);
      for (let k = 0; k < edits; k++) {
        // Mostly hit the header with JSON-ish characters, where the interesting validation lives.
        const p = r() < 0.9 ? Math.floor(r() * headerEnd) : Math.floor(r() * bytes.length);
        bytes[p] = r() < 0.6 ? digits[Math.floor(r() * digits.length)] : Math.floor(r() * 256);
      }
      const input = r() < 0.1 ? bytes.subarray(0, Math.floor(r() * bytes.length)) : bytes;
      try {
        decodeSafetensors(input);
        decoded++;
      } catch (e) {
        if (!(e instanceof FormatError)) throw e;
      }
    }
    expect(decoded).toBeGreaterThan(0); // some mutations (metadata text, data bytes) stay valid
  });
});
