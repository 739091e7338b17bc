import { describe, it, expect } from 'vitest';
import { rng } from './rng.js';
import { constants, crc32, deflateRawSync, gzipSync } from 'node:zlib';
import { FormatError } from '../src/errors.js';
import { gunzip, isGzip } from '../src/io/inflate.js';

function randomBytes(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(r() * 256));
}

/** Compressible but not trivially so: words from a small vocabulary with random spacing. */
function textLike(n: number, seed: number): Uint8Array {
  const r = rng(seed);
  const words = ['tensor', 'gradient', 'adjoint', 'wasm', 'matmul', 'relu', 'softmax', '0.125', '\n'];
  let s = '';
  while (s.length < n) s += words[Math.floor(r() * words.length)] + (r() < 0.8 ? ' ' : ',');
  return new TextEncoder().encode(s.slice(0, n));
}

function repetitive(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i % 251) & (i >> 12));
}

/** Equality that stays fast on megabyte arrays (toEqual diffs element by element). */
function expectSame(actual: Uint8Array, expected: Uint8Array): void {
  expect(actual.length).toBe(expected.length);
  expect(Buffer.compare(Buffer.from(actual), Buffer.from(expected))).toBe(0);
}

function expectFormatError(f: () => unknown, message?: RegExp): void {
  let error: unknown;
  try {
    f();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(FormatError);
  if (message) expect((error as Error).message).toMatch(message);
}

/** Packs fields LSB-first as DEFLATE does; `huffman` fields are codes, stored most significant bit first. */
function packBits(fields: Array<[value: number, bits: number, huffman?: boolean]>): Uint8Array {
  const out: number[] = [];
  let n = 0;
  for (const [value, bits, huffman] of fields) {
    for (let i = 0; i < bits; i++) {
      const bit = huffman ? (value >> (bits - 1 - i)) & 1 : (value >> i) & 1;
      if (n % 8 === 0) out.push(0);
      out[out.length - 1] |= bit << (n % 8);
      n++;
    }
  }
  return Uint8Array.from(out);
}

/** A gzip member around `body`, with the optional header fields RFC 1952 allows. */
function gzipMember(data: Uint8Array, flags: number, extras: number[]): Uint8Array {
  const header = [0x1f, 0x8b, 8, flags, 1, 2, 3, 4, 0, 3, ...extras];
  if (flags & 2) {
    const crc = crc32(Uint8Array.from(header));
    header.push(crc & 0xff, (crc >>> 8) & 0xff);
  }
  const trailer = new Uint8Array(8);
  new DataView(trailer.buffer).setUint32(0, crc32(data), true);
  new DataView(trailer.buffer).setUint32(4, data.length, true);
  return Buffer.concat([Uint8Array.from(header), deflateRawSync(data), trailer]);
}

/** A raw DEFLATE stream in a minimal gzip member; the trailer describes `data` (empty when not given). */
function wrapRaw(raw: Uint8Array, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const trailer = new Uint8Array(8);
  new DataView(trailer.buffer).setUint32(0, crc32(data), true);
  new DataView(trailer.buffer).setUint32(4, data.length, true);
  return Buffer.concat([Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3), raw, trailer]);
}

/** Decodes a raw DEFLATE stream through gunzip. */
function inflateRaw(raw: Uint8Array, data?: Uint8Array, options?: { maxOutputBytes: number }): Uint8Array {
  return gunzip(wrapRaw(raw, data), options);
}

describe('gunzip round-trips against node:zlib', () => {
  const inputs: Array<[string, Uint8Array]> = [
    ['empty', new Uint8Array(0)],
    ['one byte', Uint8Array.of(42)],
    ['random 100 KB', randomBytes(100_000, 1)],
    ['random 1 MB', randomBytes(1 << 20, 2)],
    ['text 300 KB', textLike(300_000, 3)],
    ['repetitive 1 MB', repetitive(1 << 20)],
    ['zeros 1 MB', new Uint8Array(1 << 20)],
  ];
  for (const level of [0, 1, 6, 9]) {
    for (const [name, data] of inputs) {
      it(`${name} at level ${level}`, () => {
        expectSame(gunzip(gzipSync(data, { level })), data);
        expectSame(inflateRaw(deflateRawSync(data, { level }), data), data);
      });
    }
  }

  it('fixed-Huffman, Huffman-only and RLE strategies', () => {
    const data = textLike(200_000, 4);
    for (const strategy of [constants.Z_FIXED, constants.Z_HUFFMAN_ONLY, constants.Z_RLE]) {
      expectSame(inflateRaw(deflateRawSync(data, { strategy }), data), data);
    }
  });

  it('stored blocks of every awkward size, including the 65535-byte maximum', () => {
    for (const n of [1, 65534, 65535, 65536, 200_000]) {
      const data = randomBytes(n, n);
      expectSame(inflateRaw(deflateRawSync(data, { level: 0 }), data), data);
    }
  });

  it('a hand-built stored block', () => {
    expect(inflateRaw(Uint8Array.of(0x01, 3, 0, 0xfc, 0xff, 7, 8, 9), Uint8Array.of(7, 8, 9))).toEqual(Uint8Array.of(7, 8, 9));
  });

  it('a hand-built fixed block with an overlapping match', () => {
    // 'a' (literal 0x61: 8-bit code 0x30 + 0x61), then length 3 (code 257: 7-bit 0000001) at distance 1, then end of block.
    const stream = packBits([
      [1, 1],
      [1, 2],
      [0x30 + 0x61, 8, true],
      [1, 7, true],
      [0, 5, true],
      [0, 7, true],
    ]);
    expect(new TextDecoder().decode(inflateRaw(stream, new TextEncoder().encode('aaaa')))).toBe('aaaa');
  });
});

describe('gzip container', () => {
  const data = textLike(5000, 5);

  it('isGzip looks at the magic number only', () => {
    expect(isGzip(gzipSync(data))).toBe(true);
    expect(isGzip(Uint8Array.of(0x1f))).toBe(false);
    expect(isGzip(Uint8Array.of(0, 0, 8, 1))).toBe(false);
  });

  it('skips FEXTRA, FNAME and FCOMMENT and checks FHCRC', () => {
    const extras = [4, 0, 1, 2, 3, 4, ...new TextEncoder().encode('name.txt\0comment\0')];
    expectSame(gunzip(gzipMember(data, 4 | 8 | 16 | 2, extras)), data);
    const bad = gzipMember(data, 8 | 2, [0x61, 0]);
    bad[12] ^= 1;
    expectFormatError(() => gunzip(bad), /header CRC16/);
  });

  it('concatenates multiple members and checks each one', () => {
    const members = [gzipSync(data), gzipSync(data.subarray(0, 10)), gzipMember(data.subarray(5, 50), 8 | 2, [0x61, 0])];
    expectSame(gunzip(Buffer.concat(members)), Buffer.concat([data, data.subarray(0, 10), data.subarray(5, 50)]));
    const badFirst = Buffer.concat(members);
    badFirst[members[0].length - 8] ^= 1;
    expectFormatError(() => gunzip(badFirst), /CRC32 mismatch/);
    const badHeader = Buffer.concat(members);
    badHeader[members[0].length + members[1].length + 3] |= 0x20;
    expectFormatError(() => gunzip(badHeader), /reserved header flag/);
  });

  it('rejects trailing garbage and zero padding after the last member', () => {
    expectFormatError(() => gunzip(Buffer.concat([gzipSync(data), Uint8Array.of(0, 7)])), /CRC32 mismatch/);
    expectFormatError(() => gunzip(Buffer.concat([gzipSync(data), Uint8Array.of(1, 2, 3, 4, 5)])), /invalid gzip data/);
    expectFormatError(() => gunzip(Buffer.concat([gzipSync(data), new Uint8Array(512)])));
  });

  it('verifies CRC32 and ISIZE', () => {
    const gz = gzipSync(data);
    const badCrc = Uint8Array.from(gz);
    badCrc[gz.length - 8] ^= 1;
    expectFormatError(() => gunzip(badCrc), /CRC32 mismatch/);
    const badSize = Uint8Array.from(gz);
    badSize[gz.length - 4] ^= 1;
    expectFormatError(() => gunzip(badSize), /ISIZE mismatch/);
  });

  it('rejects bad magic, method and reserved flags', () => {
    const gz = gzipSync(data);
    expectFormatError(() => gunzip(Uint8Array.of(1, 2, 3)), /too few for a gzip header/);
    expectFormatError(() => gunzip(Buffer.concat([Uint8Array.of(0x1f, 0x8c), gz.subarray(2)])), /magic number/);
    expectFormatError(() => gunzip(Buffer.concat([gz.subarray(0, 2), Uint8Array.of(7), gz.subarray(3)])), /compression method 7/);
    expectFormatError(() => gunzip(Buffer.concat([gz.subarray(0, 3), Uint8Array.of(0x20), gz.subarray(4)])), /reserved header flag/);
  });

  it('rejects every truncation', () => {
    const gz = gzipMember(data.subarray(0, 300), 8 | 2, [0x61, 0x62, 0]);
    for (let n = 0; n < gz.length; n++) expectFormatError(() => gunzip(gz.subarray(0, n)));
  });

  it('enforces maxOutputBytes', () => {
    const bomb = gzipSync(new Uint8Array(10 << 20));
    expectFormatError(() => gunzip(bomb, { maxOutputBytes: 1 << 20 }), /exceeds maxOutputBytes \(1048576\)/);
    expect(gunzip(gzipSync(data), { maxOutputBytes: data.length }).length).toBe(data.length);
    expectFormatError(() => gunzip(gzipSync(data), { maxOutputBytes: data.length - 1 }), /maxOutputBytes/);
  });
});

describe('malformed deflate streams', () => {
  it('block type 3', () => expectFormatError(() => inflateRaw(Uint8Array.of(0x07)), /invalid block type/));

  // fflate does not check a stored block's NLEN; the output then disagrees with the trailer.
  it('stored length without its complement', () => {
    expectFormatError(() => inflateRaw(Uint8Array.of(0x01, 5, 0, 0, 0, 1, 2, 3, 4, 5)), /CRC32 mismatch/);
  });

  it('a distance before the start of the output', () => {
    const stream = packBits([
      [1, 1],
      [1, 2],
      [1, 7, true],
      [0, 5, true],
      [0, 7, true],
    ]);
    expectFormatError(() => inflateRaw(stream), /invalid distance/);
  });

  it('fixed-code length symbol 286 and distance symbol 30', () => {
    // Symbols 280..287 have 8-bit codes 0xc0..0xc7; distance codes are the 5-bit symbol numbers.
    expectFormatError(
      () =>
        inflateRaw(
          packBits([
            [1, 1],
            [1, 2],
            [0xc6, 8, true],
          ]),
        ),
      /invalid distance|unexpected EOF/,
    );
    const dist30 = packBits([
      [1, 1],
      [1, 2],
      [0x30 + 0x61, 8, true],
      [1, 7, true],
      [30, 5, true],
    ]);
    expectFormatError(() => inflateRaw(dist30), /invalid distance|unexpected EOF/);
  });

  /** A dynamic block header: final flag, type 2, HLIT, HDIST, HCLEN and the code-length code lengths. */
  function dynamicHeader(nlit: number, ndist: number, clLengths: number[]): Array<[number, number]> {
    return [[1, 1], [2, 2], [nlit - 257, 5], [ndist - 1, 5], [clLengths.length - 4, 4], ...clLengths.map((l): [number, number] => [l, 3])];
  }

  it('too many literal/length codes', () => {
    expectFormatError(
      () =>
        inflateRaw(
          packBits([
            [1, 1],
            [2, 2],
            [30, 5],
            [0, 5],
            [0, 4],
          ]),
        ),
      /invalid length\/literal/,
    );
  });

  it('over-subscribed and incomplete code-length codes', () => {
    expectFormatError(() => inflateRaw(packBits(dynamicHeader(257, 1, new Array(19).fill(1)))), /in or after the member at offset 0/);
    expectFormatError(() => inflateRaw(packBits(dynamicHeader(257, 1, [2, 0, 0, 0]))), /in or after the member at offset 0/);
  });

  // Code-length code lengths in RFC order 16,17,18,0,8,...,1: symbols 18 and 1 get one bit each (1 → 0, 18 → 1).
  const cl18and1 = [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

  it('no end-of-block code', () => {
    // 138 + 119 zero lengths cover all 257 literal/length codes, then one distance code of length 1.
    const fields: Array<[number, number, boolean?]> = [
      ...dynamicHeader(257, 1, cl18and1),
      [1, 1],
      [127, 7],
      [1, 1],
      [108, 7],
      [0, 1, true],
    ];
    expectFormatError(() => inflateRaw(packBits(fields)), /in or after the member at offset 0/);
  });

  it('a repeat that runs past the declared codes', () => {
    const fields: Array<[number, number, boolean?]> = [...dynamicHeader(257, 1, cl18and1), [1, 1], [127, 7], [1, 1], [127, 7]];
    expectFormatError(() => inflateRaw(packBits(fields)), /in or after the member at offset 0/);
  });

  it('repeat-previous with nothing before it', () => {
    // Symbols 16 and 0 get one bit each (0 → 0, 16 → 1).
    const fields: Array<[number, number, boolean?]> = [...dynamicHeader(257, 1, [1, 0, 0, 1]), [1, 1], [0, 2]];
    expectFormatError(() => inflateRaw(packBits(fields)), /in or after the member at offset 0/);
  });

  // fflate does not say where a deflate stream ended, so up to 3 stray bytes before the last
  // trailer go unnoticed (the output is still checked against CRC32 and ISIZE); 4 or more do not.
  it('bytes between the end of the deflate stream and the trailer', () => {
    const data = Uint8Array.of(1, 2);
    expect(inflateRaw(Buffer.concat([deflateRawSync(data), Uint8Array.of(0)]), data)).toEqual(data);
    expectFormatError(() => inflateRaw(Buffer.concat([deflateRawSync(data), Uint8Array.of(0, 0, 0, 0)]), data), /invalid gzip data/);
  });
});

describe('hostile input never hangs or escapes as another error', () => {
  function decodesOrFormatError(f: () => unknown): void {
    try {
      f();
    } catch (e) {
      if (!(e instanceof FormatError)) throw e;
    }
  }

  function mutate(src: Uint8Array, r: () => number): Uint8Array {
    const bytes = Uint8Array.from(src);
    const kind = Math.floor(r() * 4);
    const at = Math.floor(r() * bytes.length);
    if (kind === 0) return bytes.subarray(0, at);
    const edits = 1 + Math.floor(r() * 4);
    for (let i = 0; i < edits; i++) {
      const p = kind === 3 ? at : Math.floor(r() * bytes.length);
      if (kind === 1) bytes[p] ^= 1 << Math.floor(r() * 8);
      else bytes[p] = Math.floor(r() * 256);
    }
    return bytes;
  }

  it('2000 mutations and truncations of a valid gzip file', () => {
    const r = rng(99);
    const sources = [gzipSync(textLike(4000, 6), { level: 9 }), gzipSync(randomBytes(3000, 7), { level: 0 })];
    for (let i = 0; i < 2000; i++) {
      const bad = mutate(sources[i % 2], r);
      decodesOrFormatError(() => gunzip(bad, { maxOutputBytes: 1 << 22 }));
    }
  });

  it('2000 mutated deflate streams and random bytes in a gzip wrapper', () => {
    const r = rng(7);
    const src = deflateRawSync(textLike(4000, 8), { level: 6 });
    for (let i = 0; i < 2000; i++) {
      decodesOrFormatError(() => inflateRaw(mutate(src, r), undefined, { maxOutputBytes: 1 << 22 }));
      decodesOrFormatError(() => inflateRaw(randomBytes(1 + (i % 300), i), undefined, { maxOutputBytes: 1 << 22 }));
    }
  });
});
