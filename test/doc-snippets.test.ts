// Every complete example in the README and docs/ runs, and every TSDoc @example in src/. A fenced
// js or ts block that imports from 'adjoint' and calls init() is a program: it is written out with
// the import pointed at src/ and run in its own Node process (scripts/run-ts.mjs), and must exit 0
// within the time limit. A block whose fence says `fragment` (code using names the page defines
// around it) is skipped. An @example runs with every export of the package in scope, after init().
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as A from '../src/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

interface Snippet {
  page: string;
  line: number;
  code: string;
}

/** The complete programs of a page: fenced js/ts blocks importing 'adjoint' and calling init(), not marked fragment. */
function programs(page: string): Snippet[] {
  const text = readFileSync(join(root, page), 'utf8');
  const out: Snippet[] = [];
  for (const m of text.matchAll(/^```(js|ts|javascript|typescript)([^\n]*)\n([\s\S]*?)^```/gm)) {
    const [, , info, code] = m;
    if (info.includes('fragment') || !code.includes("from 'adjoint'") || !code.includes('init(')) continue;
    out.push({ page, line: text.slice(0, m.index).split('\n').length, code });
  }
  return out;
}

/** The TSDoc `@example` blocks of src/: the page is the source file; each runs with every export of the package in scope, after init(). */
function tsdocExamples(dir: string): Snippet[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e): Snippet[] => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return tsdocExamples(path);
    if (!e.name.endsWith('.ts')) return [];
    const text = readFileSync(join(root, path), 'utf8');
    return [...text.matchAll(/@example\n\s*\* ```ts\n([\s\S]*?)\n\s*\* ```/g)].map((m) => ({
      page: path,
      line: text.slice(0, m.index).split('\n').length,
      code: m[1].replace(/^\s*\* ?/gm, ''),
    }));
  });
}

/** What an @example sees: the package's exports by name, initialised (a block that imports 'adjoint' itself keeps its import). */
function tsdocProgram(s: Snippet): Snippet {
  if (s.code.includes("from 'adjoint'")) return s;
  const names = Object.keys(A).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k));
  return { ...s, code: `import * as A from 'adjoint';\nconst { ${names.join(', ')} } = A;\nawait init();\n${s.code}` };
}

const all = [...pages.flatMap(programs), ...tsdocExamples('src').map(tsdocProgram)];
// Under build/ (gitignored, outside tsconfig's include: the snippets are not type-checked as tests).
const dir = join(root, 'build/snippets');

describe('the examples in the README and docs run', () => {
  it('finds them (a change to the fence or import convention would otherwise skip them all)', () => {
    expect(all.length).toBeGreaterThanOrEqual(15);
    expect(all.map((s) => s.page)).toContain('README.md');
    expect(all.filter((s) => s.page.startsWith('src/')).length).toBeGreaterThanOrEqual(6);
  });

  it.each(all.map((s) => [`${s.page}:${s.line}`, s] as const))(
    '%s',
    (_, s) => {
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${s.page.replace(/[/.]/g, '-')}-${s.line}.ts`);
      // The program ends when its code does: an engine thread pool or a pending timer would keep Node alive.
      writeFileSync(file, `${s.code.replaceAll("from 'adjoint'", "from '../../src/index.js'")}\nprocess.exit(0);\n`);
      const r = spawnSync(process.execPath, ['scripts/run-ts.mjs', file], { cwd: root, encoding: 'utf8', timeout: 120_000 });
      expect(r.status, `${s.page}:${s.line} exited ${r.status}:\n${(r.stderr ?? '').trim().split('\n').slice(-6).join('\n')}`).toBe(0);
    },
    150_000,
  );
});
