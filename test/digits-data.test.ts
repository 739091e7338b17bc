import { describe, it, expect } from 'vitest';
import { readFileSync, existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { digitsRaw } from '../src/data/digits.js';
import { DIGITS_COUNT } from '../src/data/digits-data.js';

/** The source the generated module was made from (repo root/../shared/data; CI lays shared/ beside the clone). */
const SOURCE = new URL('../../shared/data/digits.csv.gz', import.meta.url);
/** SHA-256 of the source's 1797×64 pixel bytes followed by its 1797 label bytes. */
const SOURCE_SHA256 = '87ff0c9e40dc7e2c0e34e7257799c2e3f3aec1a016363bb11cad869ec428a826';

function sourceRows(): number[][] {
  const csv = gunzipSync(readFileSync(SOURCE)).toString('latin1');
  return csv
    .trim()
    .split('\n')
    .map((line) => line.split(',').map(Number));
}

describe('embedded digits', () => {
  const { pixels, labels, count } = digitsRaw();

  it('has 1797 images of 64 pixels in 0..16 and 1797 labels', () => {
    expect(count).toBe(1797);
    expect(DIGITS_COUNT).toBe(1797);
    expect(pixels.length).toBe(1797 * 64);
    expect(labels.length).toBe(1797);
    expect(pixels.every((v) => v <= 16)).toBe(true);
  });

  it('has every label 0..9 roughly 180 times', () => {
    const histogram = new Array(10).fill(0);
    for (const label of labels) histogram[label]++;
    expect(histogram.reduce((a, b) => a + b)).toBe(1797);
    for (const n of histogram) {
      expect(n).toBeGreaterThan(170);
      expect(n).toBeLessThan(190);
    }
  });

  it('has the bytes of the source CSV (by digest)', () => {
    expect(createHash('sha256').update(pixels).update(labels).digest('hex')).toBe(SOURCE_SHA256);
  });

  it.runIf(existsSync(SOURCE))('matches the source CSV, first row and all others', () => {
    const rows = sourceRows();
    expect(rows.length).toBe(1797);
    expect([...pixels.subarray(0, 64), labels[0]]).toEqual(rows[0]);
    rows.forEach((row, i) => {
      if (row.slice(0, 64).some((v, j) => v !== pixels[i * 64 + j]) || row[64] !== labels[i]) {
        throw new Error(`row ${i} differs from the CSV`);
      }
    });
  });

  it('hands out fresh copies each call', () => {
    const a = digitsRaw();
    a.pixels[0] = 99;
    a.labels[0] = 99;
    const b = digitsRaw();
    expect(b.pixels[0]).toBe(pixels[0]);
    expect(b.labels[0]).toBe(labels[0]);
  });
});
