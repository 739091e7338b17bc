// vmap in numbers, as ratios measured in one run:
//  1. Per-example gradient norms of the bench MLP (784-256-256-10, ReLU, float32, batch 128),
//     each against one batched gradient of the mean loss (target ≤ 3×): the general path,
//     vmap(grad(loss), { inAxes: [null, 0, 0] }) over the parameters from functionalCall, then
//     the norms; the path without per-example gradients (optim.perExampleGradNorms: ‖δ‖²‖a‖² per
//     Linear); the loop of 128 single-example gradients a user would write without vmap; and
//     jax-js jit(vmap(grad)) when it loads. Then one DP-SGD gradient (optim.dpGradients) by
//     each method against the same batched gradient.
//  2. jacfwd at (n, m) = (1000, 1) and jacrev at (1, 1000) — one batched pass each — against
//     the per-row approach they replaced (n JVPs / m VJPs in a loop), target ≥ 20× faster.
// Times are process CPU time. The two sides of each ratio alternate round by round and the ratio
// is the median over rounds of (one side / the other in the same round), so load that drifts on
// the shared VM hits both sides of each ratio (as bench/second-order.ts does).
// `npm run bench` runs it (bench/run.ts, group vmap; rows in bench/results.json under "vmap").
// Alone: node scripts/run-ts.mjs bench/vmap.ts [--quick]
import path from 'node:path';
import os from 'node:os';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

/** One measured row: median CPU ms of each side and the median per-round ratio. */
export interface VmapRow {
  readonly name: string;
  /** Median ms of this workload. */
  readonly ms: number;
  /** Median ms of what it is compared with (the batched gradient, or the per-row Jacobian loop). */
  readonly baseMs: number;
  /** For the gradient rows: this / one batched gradient; for the Jacobian rows: per-row loop / one batched pass. */
  readonly ratio: number;
  readonly target?: string;
  readonly met?: boolean;
  readonly note?: string;
}
export interface VmapResult {
  readonly date: string;
  readonly loadavg: readonly number[];
  readonly rounds: number;
  readonly rows: VmapRow[];
}

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
function ratio(a: () => void, b: () => void, rounds: number): [number, number, number] {
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
const B = 128;

/** The per-example gradient rows (and the jax-js one when it loads). */
async function perExampleRows(rounds: number, quick: boolean): Promise<VmapRow[]> {
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
  const ghost = () => void A.optim.perExampleGradNorms(model, x, labels, 10).toArray();
  const dp = (method: 'ghost' | 'vmap') => () => void A.optim.dpGradients(model, x, labels, 10, { clip: 1, noise: 1, seed: 5, method });
  const rows = (t: Tensor, i: number) => A.reshape(A.slice(t, [i, 0], [1, t.shape[1]]), [t.shape[1]]);
  const loop = () => {
    for (let i = 0; i < B; i++) gradNorm(params, rows(x, i), rows(onehot, i)).item();
  };

  // The paths agree: the vmapped norms against the loop's (8 examples) and the ghost norms against the vmapped ones (all).
  const [agreeLoop, agreeGhost] = A.tidy(() => {
    const v = perExample(params, x, onehot).toArray();
    const g = A.optim.perExampleGradNorms(model, x, labels, 10).toArray();
    let worst = 0,
      ghostWorst = 0;
    for (let i = 0; i < 8; i++)
      worst = Math.max(worst, Math.abs(v[i] - gradNorm(params, rows(x, i), rows(onehot, i)).item()) / Math.abs(v[i]));
    for (let i = 0; i < B; i++) ghostWorst = Math.max(ghostWorst, Math.abs(v[i] - g[i]) / Math.abs(v[i]));
    return [worst, ghostWorst];
  });

  const out: VmapRow[] = [];
  const push = (name: string, [ms, baseMs, r]: [number, number, number], note?: string, target = true) =>
    out.push({ name, ms, baseMs, ratio: r, ...(target ? { target: '≤ 3×', met: r <= 3 } : {}), ...(note ? { note } : {}) });
  push('per-example grad norms, vmap(grad)', ratio(vmapped, batched, rounds), `max rel. diff vs loop ${agreeLoop.toExponential(1)}`);
  push(
    'per-example grad norms, without per-example grads',
    ratio(ghost, batched, rounds),
    `optim.perExampleGradNorms; max rel. diff vs vmap(grad) ${agreeGhost.toExponential(1)}`,
  );
  push(`per-example grad norms, loop of ${B} grads`, ratio(loop, batched, quick ? 1 : 3), undefined, false);
  push('DP-SGD gradient, ghost clipping', ratio(dp('ghost'), batched, rounds), 'optim.dpGradients method ghost', false);
  push('DP-SGD gradient, vmap', ratio(dp('vmap'), batched, rounds), 'optim.dpGradients method vmap', false);
  for (const p of model.parameters()) p.grad?.dispose(), (p.grad = null);
  out.push(await jaxRow(x, onehot, batched, rounds));
  return out;
}

/** jax-js jit(vmap(grad)) on the same MLP (its own weights, same shapes) against our batched gradient, when the package loads. */
async function jaxRow(x: Tensor, onehot: Tensor, batched: () => void, rounds: number): Promise<VmapRow> {
  const name = 'per-example grads, jax-js jit(vmap(grad))';
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
      base: number[] = [],
      r: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const t0 = cpuMs();
      await run();
      ms.push(cpuMs() - t0);
      base.push(once(batched));
      r.push(ms[i] / base[i]);
    }
    return { name, ms: median(ms), baseMs: median(base), ratio: median(r), note: 'gradients only (no norms), wasm device' };
  } catch (e) {
    return {
      name,
      ms: Number.NaN,
      baseMs: Number.NaN,
      ratio: Number.NaN,
      note: `did not run here: ${(e as Error).message.split('\n')[0]}`,
    };
  }
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

function jacobianRows(quick: boolean): VmapRow[] {
  const out: VmapRow[] = [];
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
    out.push({
      name: `${name} (${n} → ${m}), one batched pass vs per-row loop`,
      ms: tNow,
      baseMs: tOld,
      ratio: speedup,
      target: '≥ 20× faster',
      met: speedup >= 20,
      note: `max abs. diff ${diff.toExponential(1)}`,
    });
  }
  return out;
}

/** Every row of this bench (the library must be initialised). */
export async function vmapComparison({ quick = false } = {}): Promise<VmapResult> {
  const rounds = quick ? 3 : 7;
  const rows = [...(await perExampleRows(rounds, quick)), ...jacobianRows(quick)];
  return { date: new Date().toISOString(), loadavg: os.loadavg().map((l) => +l.toFixed(2)), rounds, rows };
}

/** The table npm run bench prints. */
export function vmapTable(res: VmapResult): string {
  const f = (v: number) => (Number.isNaN(v) ? '—' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  const lines = [
    `\n### vmap: per-example gradients (MLP 784-256-256-10, batch ${B}, float32) and Jacobians (median process CPU ms; ratio = median of per-round ratios, sides alternating)\n`,
    '| workload | ms | compared with, ms | ratio | target | note |',
    '|---|--:|--:|--:|---|---|',
  ];
  for (const r of res.rows)
    lines.push(
      `| ${r.name} | ${f(r.ms)} | ${f(r.baseMs)} | ${f(r.ratio)}× | ${r.target === undefined ? '' : `${r.target}: ${r.met ? 'met' : 'missed'}`} | ${r.note ?? ''} |`,
    );
  return lines.join('\n');
}

// Alone (run-ts bundles this file to build/run/vmap.mjs); inside bench/run.ts's bundle this does not run.
if (path.basename(process.argv[1] ?? '') === 'vmap.mjs') {
  await A.init();
  console.log(vmapTable(await vmapComparison({ quick: process.argv.includes('--quick') })));
}
