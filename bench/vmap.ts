// vmap in numbers, as ratios measured in one run:
//  1. Per-example gradient norms of the bench MLP (784-256-256-10, ReLU, float32, batch 128):
//     vmap(grad(loss), { inAxes: [null, 0, 0] }) over the parameters from functionalCall,
//     against one batched gradient of the mean loss (target ≤ 3×) and against the loop of 128
//     single-example gradients a user would write without vmap; jax-js vmap(grad) when it loads.
//  2. jacfwd at (n, m) = (1000, 1) and jacrev at (1, 1000) — one batched pass each — against
//     the per-row approach they replaced (n JVPs / m VJPs in a loop), target ≥ 20× faster.
// Times are process CPU time. The two sides of each ratio alternate round by round and the ratio
// is the median over rounds of (one side / the other in the same round), so load that drifts on
// the shared VM hits both sides of each ratio (as bench/second-order.ts does).
// Run: node scripts/run-ts.mjs bench/vmap.ts [--quick]
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

await A.init();
const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 3 : 7,
  B = 128;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const once = (f: () => void): number => {
  const t0 = cpuMs();
  A.tidy(f);
  return cpuMs() - t0;
};
/** [median ms of a, median ms of b, median per-round ratio a/b], a and b alternating. */
function ratio(a: () => void, b: () => void, rounds = ROUNDS): [number, number, number] {
  once(a), once(b); // warm-up
  const ta: number[] = [],
    tb: number[] = [],
    r: number[] = [];
  for (let i = 0; i < rounds; i++) {
    ta.push(once(a));
    tb.push(once(b));
    r.push(ta[i] / tb[i]);
  }
  return [median(ta), median(tb), median(r)];
}

// ---------------------------------------------------------------- per-example gradients
const model = new A.nn.Sequential(
  new A.nn.Linear(784, 256, { seed: 1 }),
  new A.nn.ReLU(),
  new A.nn.Linear(256, 256, { seed: 2 }),
  new A.nn.ReLU(),
  new A.nn.Linear(256, 10, { seed: 3 }),
);
const params = Object.fromEntries(model.namedParameters()) as Record<string, Tensor>;
const x = A.keep(A.rand([B, 784], { seed: 4 }));
const labels = Int32Array.from({ length: B }, (_, i) => (i * 7) % 10);
const onehot = A.keep(
  A.tensor(
    Array.from({ length: B * 10 }, (_, k) => (labels[Math.floor(k / 10)] === k % 10 ? 1 : 0)),
    { shape: [B, 10] },
  ),
);

/** Cross-entropy of one example (x [784], y one-hot [10]) under `p`. */
const loss = (p: Record<string, Tensor>, xi: Tensor, yi: Tensor): Tensor =>
  A.neg(A.sum(A.mul(A.logSoftmax(A.functionalCall(model, p, xi)), yi)));
/** ‖∂loss/∂θ‖ of one example. */
const gradNorm = (p: Record<string, Tensor>, xi: Tensor, yi: Tensor): Tensor => {
  const g = A.grad(loss)(p, xi, yi) as unknown as Record<string, Tensor>;
  return A.sqrt(
    Object.values(g)
      .map((t) => A.sum(A.square(t)))
      .reduce((a, b) => A.add(a, b)),
  );
};
const perExample = A.vmap(gradNorm, { inAxes: [null, 0, 0] });

const batched = () => void A.grad((p: Record<string, Tensor>) => A.crossEntropy(A.functionalCall(model, p, x), labels))(params);
const vmapped = () => void perExample(params, x, onehot).toArray();
const rows = (t: Tensor, i: number) => A.reshape(A.slice(t, [i, 0], [1, t.shape[1]]), [t.shape[1]]);
const loop = () => {
  for (let i = 0; i < B; i++) gradNorm(params, rows(x, i), rows(onehot, i)).item();
};

// The two agree: the vmapped norms against the loop's.
const agree = A.tidy(() => {
  const v = perExample(params, x, onehot).toArray();
  let worst = 0;
  for (let i = 0; i < 8; i++)
    worst = Math.max(worst, Math.abs(v[i] - gradNorm(params, rows(x, i), rows(onehot, i)).item()) / Math.abs(v[i]));
  return worst;
});

const [tVmap, tBatched, rVmap] = ratio(vmapped, batched);
const [tLoop, , rLoop] = ratio(loop, batched, quick ? 1 : 3);
console.log(`per-example gradient norms, MLP 784-256-256-10, batch ${B}, float32 (median CPU ms; ratio: median of per-round ratios)`);
console.log(`  one batched gradient           ${tBatched.toFixed(1).padStart(7)} ms   1.0x`);
console.log(
  `  vmap(grad) per-example norms   ${tVmap.toFixed(1).padStart(7)} ms   ${rVmap.toFixed(1)}x   (target ≤ 3x; max rel. diff vs loop ${agree.toExponential(1)})`,
);
console.log(`  loop of ${B} single gradients   ${tLoop.toFixed(1).padStart(7)} ms   ${rLoop.toFixed(1)}x`);

// jax-js vmap(grad), when the package loads here.
try {
  const jax: any = await import('@jax-js/jax');
  const { numpy: np, vmap, grad, nn, jit } = jax;
  // Node: a bare init() probes `navigator` and throws; the wasm device alone works (bench/peers.ts).
  const devices = await jax.init('wasm');
  if (!devices.includes('wasm')) throw new Error(`jax-js init('wasm') returned [${devices}]`);
  jax.defaultDevice('wasm');
  const W = [
    [784, 256],
    [256, 256],
    [256, 10],
  ].map(([i, o], k) =>
    np.array(A.tidy(() => A.mul(A.randn([i, o], { seed: 10 + k }), 1 / Math.sqrt(i)).toArray()) as Float32Array).reshape([i, o]),
  );
  const lossJ = (ws: any[], xi: any, yi: any) => {
    let h = xi;
    ws.forEach((w: any, k: number) => {
      h = np.matmul(h, w.ref);
      if (k < 2) h = nn.relu(h);
    });
    return np.negative(np.sum(np.multiply(nn.logSoftmax(h), yi)));
  };
  const xj = np.array(x.toArray() as Float32Array).reshape([B, 784]);
  const yj = np.array(onehot.toArray() as Float32Array).reshape([B, 10]);
  const perEx = jit(vmap(grad(lossJ), [null, 0, 0]));
  const run = async () => {
    const g = perEx(
      W.map((w: any) => w.ref),
      xj.ref,
      yj.ref,
    );
    await jax.blockUntilReady(g);
    for (const t of g) t.dispose?.();
  };
  await run();
  const ms: number[] = [],
    r: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = cpuMs();
    await run();
    ms.push(cpuMs() - t0);
    r.push(ms[i] / once(batched));
  }
  console.log(`  jax-js vmap(grad) (gradients)  ${median(ms).toFixed(1).padStart(7)} ms   ${median(r).toFixed(1)}x`);
} catch (e) {
  console.log(`  jax-js vmap(grad): did not run here (${(e as Error).message.split('\n')[0]})`);
}

// ---------------------------------------------------------------- Jacobians
const HIDDEN = 32;
/** f(x) = W₂ · tanh(W₁ x + b₁), then a log-sum-exp when m = 1 (bench/jacobian.ts's function). */
function mlp(n: number, m: number): (x: Tensor) => Tensor {
  const w1 = A.keep(A.mul(A.randn([HIDDEN, n], { seed: 1 }), 1 / Math.sqrt(n)));
  const b1 = A.keep(A.randn([HIDDEN], { seed: 2 }));
  const w2 = A.keep(A.mul(A.randn([Math.max(m, 2), HIDDEN], { seed: 3 }), 1 / Math.sqrt(HIDDEN)));
  return (v) => {
    const y = A.matmul(w2, A.tanh(A.add(A.matmul(w1, v), b1)));
    return m === 1 ? A.reshape(A.logsumexp(y, 0, true), [1]) : y;
  };
}
const onehotAt = (n: number, i: number) => A.tensor(Array.from({ length: n }, (_, k) => (k === i ? 1 : 0)));
/** The per-row approach jacfwd and jacrev used before: one JVP per input direction, one VJP per output direction. */
const jacfwdRows = (f: (v: Tensor) => Tensor) => (v: Tensor) =>
  A.concat(
    Array.from({ length: v.size }, (_, i) => A.reshape(A.jvp(f, [v], [onehotAt(v.size, i)])[1], [-1, 1])),
    1,
  );
const jacrevRows = (f: (v: Tensor) => Tensor) => (v: Tensor) => {
  const [y, back] = A.vjp(f, v);
  try {
    return A.concat(
      Array.from({ length: y.size }, (_, j) => A.reshape(back(onehotAt(y.size, j))[0], [1, -1])),
      0,
    );
  } finally {
    back.release();
  }
};
console.log('Jacobians of f = W2·tanh(W1·x + b1) (hidden 32), float32 (median CPU ms)');
for (const [n, m, name] of [
  [1000, 1, 'jacfwd'],
  [1, 1000, 'jacrev'],
] as const) {
  const f = mlp(n, m),
    v = A.keep(A.randn([n], { seed: 4 }));
  const now = name === 'jacfwd' ? A.jacfwd(f) : A.jacrev(f),
    old = name === 'jacfwd' ? jacfwdRows(f) : jacrevRows(f);
  const diff = A.tidy(() => A.max(A.abs(A.sub(A.reshape(now(v), [m, n]), old(v)))).item());
  const [tOld, tNow, speedup] = ratio(
    () => void old(v).toArray(),
    () => void now(v).toArray(),
    quick ? 1 : 3,
  );
  console.log(
    `  ${name} (${n} → ${m}): one batched pass ${tNow.toFixed(2).padStart(7)} ms, per-row ${tOld.toFixed(1).padStart(7)} ms: ${speedup.toFixed(0)}x faster (target ≥ 20x; max |diff| ${diff.toExponential(1)})`,
  );
}
