// Entry for the command-line runtimes: `node|deno run|bun test/runtimes/cli.mjs [--threads=N]`.
// Prints the loss sequence and the weights' SHA-256, then one machine-readable line for the runner.
import { trainDigits } from './train-digits.mjs';

const argv = globalThis.Deno?.args ?? globalThis.process.argv.slice(2);
const threads = Number(argv.find((a) => a.startsWith('--threads='))?.slice(10) ?? 1);
const r = await trainDigits(threads > 1 ? { threads } : {});
console.log(`${r.runtime}: threads=${threads} data=${r.data} optimizer=${r.optimizer} steps=${r.steps}`);
console.log(`losses: ${r.losses.map((l) => l.toFixed(6)).join(' ')}`);
console.log(`weights sha256: ${r.digest}`);
console.log(`ADJOINT_RESULT ${JSON.stringify(r)}`);
