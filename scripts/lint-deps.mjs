// `npm run lint:deps`: checks the runtime import graph of src/ against .dependency-cruiser.cjs.
// dependency-cruiser cannot tell type-only imports apart here (TypeScript 7 has no JavaScript API,
// and its swc parser does not mark them), so src/ is first transpiled with esbuild, which drops
// every import that only types use: what is cruised is exactly what the bundle imports.
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { transformSync } from 'esbuild';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const out = mkdtempSync(join(tmpdir(), 'adjoint-deps-'));
try {
  const walk = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
  for (const file of walk(join(root, 'src')).filter((f) => f.endsWith('.ts'))) {
    const { code } = transformSync(readFileSync(file, 'utf8'), {
      loader: 'ts',
      format: 'esm',
      target: 'es2022',
      tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: false } },
    });
    const dest = join(out, relative(root, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, code);
  }
  copyFileSync(join(root, '.dependency-cruiser.cjs'), join(out, '.dependency-cruiser.cjs'));
  const bin = join(root, 'node_modules', '.bin', 'depcruise');
  const args = ['src', '--config', '.dependency-cruiser.cjs', '--output-type', process.argv[2] ?? 'err'];
  const r = spawnSync(bin, args, { cwd: out, stdio: 'inherit', env: { ...process.env, ADJOINT_DEPS_JS: '1' } });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
