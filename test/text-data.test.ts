// Character-level text data: the vendored tiny-Shakespeare file and the published char-level
// conventions (65 sorted characters, a 1 003 854 / 111 540 split, the well-known first ids),
// the tokenizer's round trip and errors, and seeded lmBatches windows.
import { describe, it, expect, beforeAll } from 'vitest';
import { readFileSync } from 'node:fs';
import * as A from '../src/index.js';

const { data } = A;
let text = '';

beforeAll(async () => {
  await A.init();
  text = await data.shakespeare();
});

describe('shakespeare + CharTokenizer: the published setup', () => {
  it('reads the vendored file: 1 115 394 characters, 65 distinct, sorted by code point', () => {
    expect(text.length).toBe(1115394);
    expect(text.startsWith('First Citizen:\nBefore we proceed any further, hear me speak.')).toBe(true);
    const tok = data.CharTokenizer.fromText(text);
    expect(tok.vocabSize).toBe(65);
    expect(tok.vocab.join('')).toBe("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  });

  it('encodes "First Citizen" as the published ids; splits 90/10 into 1 003 854 / 111 540', () => {
    const tok = data.CharTokenizer.fromText(text);
    const ids = tok.encode(text);
    expect(Array.from(ids.subarray(0, 13))).toEqual([18, 47, 56, 57, 58, 1, 15, 47, 58, 47, 64, 43, 52]);
    const { train, val } = data.splitText(ids, 0.9);
    expect([train.length, val.length]).toEqual([1003854, 111540]);
    expect(val[0]).toBe(ids[1003854]);
    expect(tok.decode(val.subarray(0, 12))).toBe(text.slice(1003854, 1003866));
    // The default fraction is 0.9, and strings split the same way.
    expect(data.splitText(text).val.length).toBe(111540);
  });

  it('splitText cuts a string between characters, where its ids are cut (never inside a surrogate pair)', () => {
    const text = 'ab😀cd'; // 5 characters, 6 UTF-16 units
    const tok = data.CharTokenizer.fromText(text);
    const s = data.splitText(text, 0.5);
    const ids = data.splitText(tok.encode(text), 0.5);
    expect([s.train, s.val]).toEqual(['ab', '😀cd']);
    expect([tok.decode(ids.train), tok.decode(ids.val)]).toEqual([s.train, s.val]);
    expect(data.splitText('😀😀😀x', 0.75)).toEqual({ train: '😀😀😀', val: 'x' });
  });

  it('reads a path, gzipped or not, and bytes (as a browser would pass them)', async () => {
    const gz = readFileSync('data/tinyshakespeare.txt.gz');
    expect(await data.shakespeare('data/tinyshakespeare.txt.gz')).toBe(text);
    expect(await data.shakespeare(new Uint8Array(gz))).toBe(text);
    expect(await data.shakespeare(new TextEncoder().encode('plain text'))).toBe('plain text');
    await expect(data.shakespeare('no/such/file.txt')).rejects.toThrow(/cannot read no\/such\/file\.txt \(ENOENT\)/);
    await expect(data.shakespeare(new Uint8Array([0xff, 0xfe, 0xfd]))).rejects.toThrow(A.FormatError);
  });
});

describe('CharTokenizer', () => {
  it('round-trips text, counts a surrogate pair as one character, rebuilds from its vocab', () => {
    const tok = data.CharTokenizer.fromText('héllo 🎭 world');
    expect(tok.vocab).toEqual([' ', 'd', 'h', 'l', 'o', 'r', 'w', 'é', '🎭']);
    const ids = tok.encode('hé 🎭 world');
    expect(Array.from(ids)).toEqual([2, 7, 0, 8, 0, 6, 4, 5, 3, 1]);
    expect(tok.decode(ids)).toBe('hé 🎭 world');
    const again = new data.CharTokenizer(tok.vocab.join(''));
    expect(Array.from(again.encode('world'))).toEqual(Array.from(tok.encode('world')));
    expect(tok.decode([1, 2])).toBe(tok.vocab[1] + tok.vocab[2]);
  });

  it.each([
    [
      'an unknown character',
      () => data.CharTokenizer.fromText('abc').encode('abz'),
      /character "z" at position 2 is not in the vocabulary of 3/,
    ],
    ['an id out of range', () => data.CharTokenizer.fromText('abc').decode([0, 3]), /ids\[1\] = 3 is not in \[0, 3\)/],
    ['a repeated character', () => new data.CharTokenizer(['a', 'b', 'a']), /"a" appears twice in the vocabulary \(at 0 and 2\)/],
    ['an empty text', () => data.CharTokenizer.fromText(''), /expected a non-empty string, got an empty string/],
    ['a bad split fraction', () => data.splitText(new Int32Array(4), 1), /fraction must be in \(0, 1\), got 1/],
  ])('%s is refused with a clear ArgumentError', (_n, f, message) => {
    expect(f).toThrow(A.ArgumentError);
    expect(f).toThrow(message);
  });
});

describe('lmBatches', () => {
  const ids = Int32Array.from({ length: 100 }, (_, i) => i * 3);

  it('yields [batchSize, blockSize] windows with y shifted by one', () => {
    const { value: b } = data.lmBatches(ids, { batchSize: 4, blockSize: 8, seed: 7 }).next();
    for (const t of [b.x, b.y]) {
      expect(t.dtype).toBe('int32');
      expect(t.shape).toEqual([4, 8]);
    }
    const x = b.x.toArray(),
      y = b.y.toArray();
    for (let r = 0; r < 4; r++) {
      const s = b.starts[r];
      expect(s).toBeGreaterThanOrEqual(0);
      expect(s).toBeLessThan(100 - 8);
      expect(Array.from(x.subarray(r * 8, r * 8 + 8))).toEqual(Array.from(ids.subarray(s, s + 8)));
      expect(Array.from(y.subarray(r * 8, r * 8 + 8))).toEqual(Array.from(ids.subarray(s + 1, s + 9)));
    }
    b.x.dispose();
    b.y.dispose();
  });

  it('is seeded: the same seed gives the same stream (pinned starts), another seed another', () => {
    const starts = (seed: number) => {
      const it = data.lmBatches(ids, { batchSize: 3, blockSize: 4, seed });
      return [it.next().value.starts, it.next().value.starts].flatMap((s) => Array.from(s));
    };
    expect(starts(0)).toEqual(starts(0));
    expect(starts(0)).not.toEqual(starts(1));
    // Integer arithmetic only: these are the same in every runtime.
    expect(starts(0)).toEqual(PINNED_SEED0);
  });

  it('covers every start of a short sequence, uniformly enough', () => {
    const counts = new Array(6).fill(0);
    const it = data.lmBatches(
      Int32Array.from({ length: 10 }, (_, i) => i),
      { batchSize: 6000, blockSize: 4, seed: 2 },
    );
    for (const s of it.next().value.starts) counts[s]++;
    for (const c of counts) expect(Math.abs(c - 1000)).toBeLessThan(150);
  });

  it.each([
    [
      'a sequence shorter than a window',
      () => data.lmBatches(new Int32Array(8), { batchSize: 1, blockSize: 8 }).next(),
      /a window needs blockSize \+ 1 = 9 ids, but ids has 8/,
    ],
    [
      'a zero batch size',
      () => data.lmBatches(new Int32Array(20), { batchSize: 0, blockSize: 4 }).next(),
      /batchSize must be a positive integer, got 0/,
    ],
    [
      'plain numbers instead of ids',
      () => data.lmBatches([1, 2, 3] as never, { batchSize: 1, blockSize: 1 }).next(),
      /ids must be an Int32Array/,
    ],
  ])('%s is refused with a clear ArgumentError', (_n, f, message) => {
    expect(f).toThrow(A.ArgumentError);
    expect(f).toThrow(message);
  });
});

const PINNED_SEED0 = [46, 51, 76, 31, 43, 61];
