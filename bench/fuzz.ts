// Fuzzing the file loaders: 100,000+ seeded hostile files (test/fuzz-files.ts) through
// io.loadSafetensors and data.loadIdx. Every file must decode or throw FormatError; prints the
// counts (decoded / FormatError / other: other must be 0), the time, the slowest file and the
// most common rejection reasons. Exits 1 on any 'other'.
// Run: node scripts/run-ts.mjs bench/fuzz.ts [filesPerFormat=60000] [seed=1]
import * as A from '../src/index.js';
import { Rng, hostileFile, idxSeeds, safetensorsSeeds, verdict, type Outcome } from '../test/fuzz-files.js';

interface Report {
  format: string;
  counts: Record<Outcome, number>;
  ms: number;
  slowestMs: number;
  problems: string[];
  reasons: Map<string, number>;
}

/** A FormatError message with numbers and quoted names blanked, so rejections group by reason. */
function reasonOf(format: 'safetensors' | 'idx', bytes: Uint8Array): string {
  try {
    if (format === 'safetensors') for (const t of Object.values(A.io.loadSafetensors(bytes))) t.dispose();
    else A.data.loadIdx(bytes);
    return 'decoded';
  } catch (e) {
    return (e as Error).message
      .replace(/"[^"]*"/g, '"…"')
      .replace(/(?<![A-Za-z])-?\d[\d.e+]*/g, 'N')
      .replace(/\[[^\]]*\]/g, '[…]')
      .slice(0, 90);
  }
}

function run(format: 'safetensors' | 'idx', count: number, seed: number): Report {
  const seeds = format === 'safetensors' ? safetensorsSeeds() : idxSeeds();
  const rng = new Rng(seed);
  const counts: Record<Outcome, number> = { decoded: 0, FormatError: 0, other: 0 };
  const problems: string[] = [];
  const reasons = new Map<string, number>();
  let slowestMs = 0;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const file = hostileFile(format, seeds, rng);
    const t = performance.now();
    const v = verdict(format, file);
    slowestMs = Math.max(slowestMs, performance.now() - t);
    counts[v.outcome]++;
    if (v.problem !== undefined && problems.length < 10) problems.push(`file ${i} (${file.length} bytes): ${v.problem}`);
    if (i % 50 === 0) {
      const r = reasonOf(format, file);
      reasons.set(r, (reasons.get(r) ?? 0) + 1);
    }
  }
  return { format, counts, ms: performance.now() - t0, slowestMs, problems, reasons };
}

await A.init();
const perFormat = Number(process.argv[2] ?? 60_000);
const seed = Number(process.argv[3] ?? 1);
const before = A.memory();
const reports = [run('safetensors', perFormat, seed), run('idx', perFormat, seed + 1)];
let total = 0,
  other = 0;
console.log(`fuzz: ${perFormat} mutated files per format, seed ${seed}`);
for (const r of reports) {
  const n = r.counts.decoded + r.counts.FormatError + r.counts.other;
  total += n;
  other += r.counts.other;
  console.log(
    `  ${r.format.padEnd(12)} ${n} files: decoded ${r.counts.decoded}, FormatError ${r.counts.FormatError}, other ${r.counts.other}` +
      `  (${(r.ms / 1000).toFixed(1)} s, ${((r.ms * 1000) / n).toFixed(0)} µs/file, slowest ${r.slowestMs.toFixed(1)} ms)`,
  );
  const top = [...r.reasons].sort((a, b) => b[1] - a[1]).slice(0, 8);
  console.log(`    ${r.reasons.size} distinct outcomes in a 1-in-50 sample; most common:`);
  for (const [reason, k] of top) console.log(`      ${String(k).padStart(5)}  ${reason}`);
  for (const p of r.problems) console.log(`    OTHER: ${p}`);
}
const after = A.memory();
console.log(
  `total ${total} files, other ${other}; tensors ${before.tensors} → ${after.tensors}, bytesInUse ${before.bytesInUse} → ${after.bytesInUse}`,
);
if (other > 0 || after.tensors !== before.tensors || after.bytesInUse !== before.bytesInUse) process.exit(1);
