// jacfwd vs jacrev on f: Rⁿ → Rᵐ, a small MLP-like composition, for (n, m) = (1000, 1) and
// (1, 1000). Forward mode needs n JVPs, reverse mode m VJPs (plus one taped forward pass), so
// reverse should win by a wide margin on the first shape and forward on the second.
// Run: node scripts/run-ts.mjs bench/jacobian.ts [--runs 5]
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

await A.init();

const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 5;
const HIDDEN = 32;

/** f(x) = W₂ · tanh(W₁ x + b₁), then a log-sum-exp when m = 1: Rⁿ → Rᵐ. */
function mlp(n: number, m: number): (x: Tensor) => Tensor {
  const w1 = A.keep(A.mul(A.randn([HIDDEN, n], { seed: 1 }), 1 / Math.sqrt(n)));
  const b1 = A.keep(A.randn([HIDDEN], { seed: 2 }));
  const w2 = A.keep(A.mul(A.randn([Math.max(m, 2), HIDDEN], { seed: 3 }), 1 / Math.sqrt(HIDDEN)));
  return (x) => {
    const y = A.matmul(w2, A.tanh(A.add(A.matmul(w1, x), b1)));
    return m === 1 ? A.reshape(A.logsumexp(y, 0, true), [1]) : y;
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median wall time (ms) of one Jacobian, after a warm-up; also returns the Jacobian's shape. */
function time(jac: (x: Tensor) => Tensor, x: Tensor): { ms: number; shape: readonly number[] } {
  let shape: readonly number[] = [];
  A.tidy(() => void (shape = jac(x).shape));
  const ms: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    A.tidy(() => void jac(x));
    ms.push(performance.now() - t0);
  }
  return { ms: median(ms), shape };
}

console.log(`jacfwd vs jacrev, f = W2·tanh(W1·x + b1) (hidden ${HIDDEN}), float32, median of ${RUNS} runs`);
for (const [n, m] of [
  [1000, 1],
  [1, 1000],
]) {
  const f = mlp(n, m);
  const x = A.randn([n], { seed: 4 });
  const fwd = time(A.jacfwd(f), x),
    rev = time(A.jacrev(f), x);
  const diff = A.tidy(() => A.max(A.abs(A.sub(A.jacfwd(f)(x), A.jacrev(f)(x)))).item());
  console.log(
    `n=${String(n).padStart(4)} m=${String(m).padStart(4)}  jacobian [${fwd.shape}]  ` +
      `jacfwd ${fwd.ms.toFixed(1)} ms  jacrev ${rev.ms.toFixed(1)} ms  ` +
      `jacfwd/jacrev = ${(fwd.ms / rev.ms).toPrecision(3)}  jacrev/jacfwd = ${(rev.ms / fwd.ms).toPrecision(3)}  ` +
      `(${fwd.ms > rev.ms ? 'reverse' : 'forward'} wins; max |jacfwd - jacrev| ${diff.toExponential(1)})`,
  );
  if (rev.shape.some((d, i) => d !== fwd.shape[i])) throw new Error('jacfwd and jacrev shapes differ');
}
