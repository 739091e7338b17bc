// Entry for the command-line runtimes: `node|deno run|bun test/runtimes/cli.mjs [--threads=N] [--relaxed] [--weights]`
// (--relaxed: init({ relaxedSimd: true }); --weights: the final weights go into the result too).
// Prints the loss sequence and the weights' SHA-256, then one machine-readable line for the runner.
import { trainDigits } from './train-digits.mjs';

const argv = globalThis.Deno?.args ?? globalThis.process.argv.slice(2);
const threads = Number(argv.find((a) => a.startsWith('--threads='))?.slice(10) ?? 1);
const relaxed = argv.includes('--relaxed');
const r = await trainDigits({ ...(threads > 1 ? { threads } : {}), ...(relaxed ? { relaxedSimd: true } : {}) }, undefined, {
  weights: relaxed || argv.includes('--weights'),
});
console.log(`${r.runtime}: threads=${threads} kernels=${r.kernels} data=${r.data} optimizer=${r.optimizer} steps=${r.steps}`);
console.log(`losses: ${r.losses.map((l) => l.toFixed(6)).join(' ')}`);
console.log(`weights sha256: ${r.digest}`);
console.log(`ADJOINT_RESULT ${JSON.stringify(r)}`);
