// Every public export of the package carries a TSDoc comment (/** … */) at its declaration:
// what src/index.ts exports, and the members of the namespaces it re-exports (nn, optim, io,
// data, autograd, and the namespaces inside them). A plain text walk over the sources: each
// name is followed through `export { … } from`, `export * from` and `export * as` to the line
// that declares it, and the lines just above that must end a /** … */ block.
import { readFileSync, existsSync } from 'node:fs';
import { dirname, resolve, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const entry = resolve(root, 'src/index.ts');

const cache = new Map<string, string>();
const read = (file: string): string => {
  let s = cache.get(file);
  if (s === undefined) cache.set(file, (s = readFileSync(file, 'utf8')));
  return s;
};

/** './x.js' seen from `from` → the .ts file (or the folder's index.ts). */
function target(from: string, spec: string): string {
  const base = resolve(dirname(from), spec.replace(/\.js$/, ''));
  for (const f of [`${base}.ts`, `${base}/index.ts`]) if (existsSync(f)) return f;
  throw new Error(`${relative(root, from)}: cannot resolve '${spec}'`);
}

/** The source without comments' contents (kept line for line), so commented-out exports do not count. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');
}

interface ReExport {
  names: { exported: string; local: string }[] | null;
  namespace: string | null;
  from: string;
}

/** The `export … from` statements of a file: named lists, `*`, and `* as ns`. */
function reExports(file: string): ReExport[] {
  const out: ReExport[] = [];
  const re = /export\s+(type\s+)?(\*\s+as\s+(\w+)|\*|\{([^}]*)\})\s+from\s+['"]([^'"]+)['"]/g;
  for (const m of code(read(file)).matchAll(re)) {
    const from = target(file, m[5]);
    if (m[3] !== undefined) out.push({ names: null, namespace: m[3], from });
    else if (m[4] === undefined) out.push({ names: null, namespace: null, from });
    else {
      const names = m[4]
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .map((s) => {
          const [local, exported = local] = s
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)
            .map((x) => x.trim());
          return { exported, local };
        });
      out.push({ names, namespace: null, from });
    }
  }
  return out;
}

const DECL = (name: string) =>
  new RegExp(
    `^[ \\t]*export\\s+(?:declare\\s+)?(?:default\\s+)?(?:abstract\\s+)?(?:async\\s+)?` +
      `(?:function\\*?|class|const|let|var|interface|type|enum|namespace)\\s+${name}\\b`,
    'm',
  );

/** The file and line that declare `name`, following re-exports. */
function declaration(file: string, name: string, seen = new Set<string>()): { file: string; line: number } | null {
  const key = `${file}#${name}`;
  if (seen.has(key)) return null;
  seen.add(key);
  const text = code(read(file));
  const m = DECL(name).exec(text);
  if (m !== null) return { file, line: text.slice(0, m.index).split('\n').length - 1 };
  for (const r of reExports(file)) {
    if (r.namespace !== null) continue;
    if (r.names === null) {
      const d = declaration(r.from, name, seen);
      if (d !== null) return d;
    } else {
      const hit = r.names.find((n) => n.exported === name);
      if (hit !== undefined) return declaration(r.from, hit.local, seen);
    }
  }
  return null;
}

/** Whether the lines above `line` (skipping blank lines and // comments) end a /** … *\/ block. */
function documented(file: string, line: number): boolean {
  const lines = read(file).split('\n');
  let i = line - 1;
  while (i >= 0 && (lines[i].trim() === '' || lines[i].trim().startsWith('//'))) i--;
  if (i < 0 || !lines[i].trimEnd().endsWith('*/')) return false;
  while (i >= 0 && !lines[i].includes('/*')) i--;
  return i >= 0 && /\/\*\*(?!\/)/.test(lines[i]);
}

/** Every public name reachable from `file`: [dotted name, the file it is exported from]. */
function publicNames(file: string, prefix = '', seen = new Set<string>()): [string, string][] {
  if (seen.has(file)) return [];
  seen.add(file);
  const out: [string, string][] = [];
  const text = code(read(file));
  for (const m of text.matchAll(
    /^[ \t]*export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(?:function\*?|class|const|let|var|interface|type|enum)\s+(\w+)/gm,
  )) {
    out.push([prefix + m[1], file]);
  }
  for (const r of reExports(file)) {
    if (r.namespace !== null) out.push(...publicNames(r.from, `${prefix}${r.namespace}.`, new Set(seen)));
    else if (r.names === null) out.push(...publicNames(r.from, prefix, seen));
    else for (const n of r.names) out.push([prefix + n.exported, file]);
  }
  return out;
}

describe('TSDoc on the public API', () => {
  const names = publicNames(entry);

  it('finds the public surface (a broken walk would pass vacuously)', () => {
    const flat = names.map(([n]) => n);
    for (const n of [
      'init',
      'tensor',
      'Tensor',
      'grad',
      'nn.Linear',
      'optim.AdamW',
      'io.saveSafetensors',
      'data.digits',
      'autograd.grad',
    ]) {
      expect(flat).toContain(n);
    }
  });

  it('every export has a /** … */ comment at its declaration', () => {
    const missing: string[] = [];
    for (const [dotted, file] of names) {
      const name = dotted.slice(dotted.lastIndexOf('.') + 1);
      const d = declaration(file, name);
      if (d === null) missing.push(`${dotted}: declaration not found from ${relative(root, file)}`);
      else if (!documented(d.file, d.line)) missing.push(`${dotted} (${relative(root, d.file)}:${d.line + 1})`);
    }
    expect(missing, `exports without a TSDoc comment:\n${missing.join('\n')}`).toEqual([]);
  });
});
