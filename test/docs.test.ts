// The documentation's own checks: measured tables equal what scripts/bench-tables.mjs writes from
// the committed results, the README stays short, user-facing pages carry no tracker references,
// and every relative link resolves to a file in the repository.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FILES, applyRegions, loadResults, renderAll } from '../scripts/bench-tables.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');
const docPages = readdirSync(join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const allPages = ['README.md', ...docPages];
const userPages = allPages.filter((p) => p !== 'docs/CONTRIBUTING.md');

/** The text a reader sees as prose: fenced code blocks and inline code spans removed. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

describe('measured tables', () => {
  const tables = loadResults(root);

  it.each(FILES)('%s equals what bench-tables writes from the committed results', (file) => {
    const text = read(file);
    expect(text).toContain('<!-- bench:');
    expect(applyRegions(text, tables, file)).toBe(text);
  });

  it('every table the script renders appears in some file, so none is silently dropped', () => {
    const all = FILES.map(read).join('\n');
    for (const name of Object.keys(tables)) expect(all, name).toContain(`<!-- bench:${name} -->`);
  });

  it('the tables follow the results: a changed number changes the table', () => {
    const results = JSON.parse(read('bench/results.json'));
    const fashion = JSON.parse(read('bench/fashion-results.json'));
    const row = results.rows.find((r: { name: string }) => r.name === 'MLP 784-256-256-10 b128 train step');
    row.cells.adjoint.value = 99.5;
    const changed = renderAll(results, fashion);
    expect(changed.headline).toContain('| MLP 784-256-256-10 b128 train step | ms | 99.5 |');
    expect(changed.targets).toMatch(/MLP train step, eager \| ≤ 5\.3 ms \| 99\.5 ms \| missed/);
    expect(applyRegions(read('README.md'), changed)).not.toBe(read('README.md'));
  });

  it('rejects an unclosed or unknown region', () => {
    expect(() => applyRegions('<!-- bench:gemm -->\n', { gemm: 'x' })).toThrow(/not closed/);
    expect(() => applyRegions('<!-- bench:nope -->\n<!-- /bench:nope -->', { gemm: 'x' })).toThrow(/unknown region nope/);
  });
});

describe('README', () => {
  it('is at most 250 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });
});

describe('user-facing pages', () => {
  // "issue 6", "issues 3 and 4", "PR 12", "#12" (not inside code, where "#4" names a tensor in an error message).
  const tracker = [/\b(issues?|PRs?|pull requests?|tickets?|bugs?)\s*#?\s*\d+/i, /(^|[^\w&/])#\d+\b/m];

  it.each(userPages)('%s has no tracker references', (page) => {
    const text = prose(read(page));
    for (const re of tracker) expect(text.match(re)?.[0] ?? null, `${page}: ${re}`).toBeNull();
  });

  it('the tracker check catches what it is meant to catch', () => {
    expect(tracker.some((re) => re.test(prose('as issue 6 asked')))).toBe(true);
    expect(tracker.some((re) => re.test(prose('fixed in #12.')))).toBe(true);
    expect(tracker.some((re) => re.test(prose('error: `tensor #4 was disposed`')))).toBe(false);
  });
});

describe('links', () => {
  const linkRe = /!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;

  it.each(allPages)('every relative link in %s points at an existing file', (page) => {
    const missing: string[] = [];
    for (const m of prose(read(page)).matchAll(linkRe)) {
      const target = m[1];
      if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue; // external, or within the page
      const path = decodeURIComponent(target.split('#')[0]);
      if (!existsSync(resolve(root, dirname(page), path))) missing.push(target);
    }
    expect(missing).toEqual([]);
  });
});
