// `node scripts/wasm-sizes.mjs [build/adjoint.wasm] [--top N] [--no-gzip]`: where the kernel bytes go.
// Prints each function's body size (raw bytes) and, roughly, what gzip of the whole module loses
// when that body is removed (the gzip delta: shared patterns make it smaller than raw/compression
// ratio suggests), then the sums by kernel family (the assembly/ file) and by dtype (f32, f64,
// other). Names come from the name section when the module has one, else from the `.wat` that
// `npm run asbuild` writes next to it (same function order). Used to pick size cuts and to
// explain the kernel budget in docs/packaging.md.
import { existsSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args[topAt + 1]) : 40;
const file = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--top') ?? 'build/adjoint.wasm';
const bytes = readFileSync(file);

let pos = 8;
const leb = () => {
  let result = 0;
  let shift = 0;
  let b;
  do {
    b = bytes[pos++];
    result += (b & 127) * 2 ** shift;
    shift += 7;
  } while (b & 128);
  return result;
};
const str = () => {
  const n = leb();
  const s = bytes.subarray(pos, pos + n).toString('utf8');
  pos += n;
  return s;
};

/** Sections, the imported function count, the code bodies and any names. */
let importedFuncs = 0;
const bodies = [];
const names = new Map();
const exported = new Map();
let codeSection = null;
while (pos < bytes.length) {
  const id = bytes[pos++];
  const size = leb();
  const end = pos + size;
  if (id === 2) {
    for (let n = leb(); n > 0; n--) {
      str();
      str();
      const kind = bytes[pos++];
      if (kind === 0) leb(), importedFuncs++;
      else if (kind === 1) pos++, leb() & 1 ? (leb(), leb()) : leb();
      else if (kind === 2) leb() & 1 ? (leb(), leb()) : leb();
      else if (kind === 3) pos += 2;
    }
  } else if (id === 7) {
    for (let n = leb(); n > 0; n--) {
      const name = str();
      const kind = bytes[pos++];
      const index = leb();
      if (kind === 0) exported.set(index, [...(exported.get(index) ?? []), name]);
    }
  } else if (id === 10) {
    codeSection = { start: pos, end };
    for (let n = leb(); n > 0; n--) {
      const len = leb();
      bodies.push({ start: pos, end: pos + len });
      pos += len;
    }
  } else if (id === 0 && str() === 'name') {
    while (pos < end) {
      const sub = bytes[pos++];
      const subEnd = pos + leb();
      if (sub === 1) for (let n = leb(); n > 0; n--) names.set(leb(), str());
      pos = subEnd;
    }
  }
  pos = end;
}
if (!codeSection) throw new Error(`${file}: no code section`);

// Without a name section, the .wat lists the defined functions in the same order.
const wat = file.replace(/\.wasm$/, '.wat');
if (names.size === 0 && existsSync(wat)) {
  const funcs = [...readFileSync(wat, 'utf8').matchAll(/^ \(func \$(\S+)/gm)].map((m) => m[1]);
  if (funcs.length === bodies.length) funcs.forEach((n, i) => names.set(importedFuncs + i, n));
  else console.warn(`${wat}: ${funcs.length} functions, the module has ${bodies.length}; names left out`);
}

const gz = (b) => gzipSync(b, { level: 9 }).length;
const whole = gz(bytes);
const withGzip = !flag('--no-gzip');
const rows = bodies.map((b, i) => {
  const index = importedFuncs + i;
  const name = names.get(index) ?? exported.get(index)?.[0] ?? `func${index}`;
  const raw = b.end - b.start;
  const without = withGzip ? whole - gz(Buffer.concat([bytes.subarray(0, b.start), bytes.subarray(b.end)])) : 0;
  const family = /^assembly\/([^/]+)\//.exec(name)?.[1] ?? (name.startsWith('~lib/') ? '~lib' : 'other');
  const dtype = /f64|F64|double/.test(name) ? 'f64' : /f32|F32|float/.test(name) ? 'f32' : 'other';
  return { name, raw, gzip: without, family, dtype, exports: exported.get(index)?.length ?? 0 };
});

const kb = (n) => (n / 1000).toFixed(1).padStart(6);
console.log(
  `${file}: ${kb(bytes.length)} kB raw, ${kb(whole)} kB gzip -9; code section ${kb(codeSection.end - codeSection.start)} kB, ${bodies.length} functions`,
);
console.log(`\nlargest ${top} functions (raw bytes, gzip bytes lost when removed, exports):`);
for (const r of [...rows].sort((a, b) => b.raw - a.raw).slice(0, top)) {
  console.log(`${String(r.raw).padStart(7)} ${String(r.gzip).padStart(6)}  ${r.name}${r.exports ? '' : '  (internal)'}`);
}
const groups = (key) => {
  const m = new Map();
  for (const r of rows) {
    const g = m.get(r[key]) ?? { raw: 0, gzip: 0, n: 0 };
    g.raw += r.raw;
    g.gzip += r.gzip;
    g.n++;
    m.set(r[key], g);
  }
  return [...m].sort((a, b) => b[1].raw - a[1].raw);
};
for (const key of ['family', 'dtype']) {
  console.log(`\nby ${key} (raw kB, sum of gzip deltas kB, functions):`);
  for (const [k, g] of groups(key)) console.log(`${kb(g.raw)} ${kb(g.gzip)} ${String(g.n).padStart(4)}  ${k}`);
}
console.log(`\nby family and dtype (raw kB, gzip-delta kB):`);
const fd = new Map();
for (const r of rows) {
  const k = `${r.family} ${r.dtype}`;
  const g = fd.get(k) ?? { raw: 0, gzip: 0 };
  g.raw += r.raw;
  g.gzip += r.gzip;
  fd.set(k, g);
}
for (const [k, g] of [...fd].sort((a, b) => b[1].raw - a[1].raw)) console.log(`${kb(g.raw)} ${kb(g.gzip)}  ${k}`);
