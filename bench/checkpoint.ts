// Activation memory against step time for gradient checkpointing (issue 5): tanh MLPs of depth
// 16, 64 and 256 (width 256, batch 64, float32), trained with SGD, without checkpointing, with
// 'sqrt' segments and with a memory budget. Prints, per depth and mode: the plan, the measured
// activation peak (memory().activationPeakBytes after resetPeak(), one step), the planned peak,
// the B·Σd_l·bytes estimate of an uncheckpointed step, and the median step time, each as a
// ratio to the uncheckpointed run.
//
// Run: node scripts/run-ts.mjs bench/checkpoint.ts [--quick] [--depths 16,64]
// Step times are process CPU time (user + system), the modes interleaved round by round; a
// time ratio is the median over rounds of (this mode's step / the uncheckpointed step of the
// same round), so load that drifts during the run hits both sides of each ratio. Memory numbers
// are exact and do not depend on load.
import * as A from '../src/index.js';
import { planSegments, minimumBudget, type CheckpointPlan } from '../src/autodiff/segments.js';
import { sequentialForward, type Layer } from '../src/nn/sequential.js';

const argv = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = argv.includes('--quick');
const depths = (opt('depths') ?? '16,64,256').split(',').map(Number);
const B = 64,
  WIDTH = 256,
  BYTES = 4;

await A.init();

interface Model {
  layers: Layer[];
  params: A.Tensor[];
}

/** L tanh layers h ← tanh(h·W + b), W ~ N(0, 1/width) so activations stay in tanh's linear-ish range. */
function mlp(L: number): Model {
  const params: A.Tensor[] = [];
  const layers = Array.from({ length: L }, (_, i) => {
    const W = A.keep(A.tidy(() => A.randn([WIDTH, WIDTH], { seed: 1000 + i }).mul(1 / Math.sqrt(WIDTH))));
    const b = A.keep(A.zeros([WIDTH]));
    W.requiresGrad = b.requiresGrad = true;
    params.push(W, b);
    // tidy: the layer's matmul and add outputs are freed on return (only tanh's output is saved).
    return { forward: (h: A.Tensor) => A.tidy(() => A.tanh(A.add(A.matmul(h, W), b))) };
  });
  return { layers, params };
}

interface Mode {
  label: string;
  plan: CheckpointPlan | undefined;
  /** Each mode gets its own layer array: plans are cached per array. */
  layers: Layer[];
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(2);

function bench(L: number): void {
  const { layers, params } = mlp(L);
  const sgd = new A.optim.SGD(params, { lr: 1e-3 });
  const x = A.keep(A.randn([B, WIDTH], { seed: 1 })),
    target = A.keep(A.randn([B, WIDTH], { seed: 2 }));
  const layerBytes = new Array<number>(L).fill(B * WIDTH * BYTES);
  const estimate = layerBytes.reduce((s, v) => s + v, 0); // B·Σd_l·bytes
  // Budgets: a quarter and a half of the uncheckpointed estimate (at least the least feasible budget).
  const budget = (fraction: number): Mode => {
    const maxBytes = Math.max(Math.floor(estimate * fraction), minimumBudget(layerBytes));
    return { label: `maxBytes ${mb(maxBytes)} MB`, plan: { maxBytes }, layers: [...layers] };
  };
  const modes: Mode[] = [
    { label: 'none', plan: undefined, layers: [...layers] },
    { label: "'sqrt'", plan: 'sqrt', layers: [...layers] },
    budget(1 / 4),
    budget(1 / 2),
  ];
  const step = (m: Mode): void => {
    sgd.zeroGrad();
    A.tidy(() => A.mseLoss(sequentialForward(m.layers, x, m.plan), target).backward());
    sgd.step();
  };
  for (const m of modes) for (let i = 0; i < 2; i++) step(m); // plans, optimizer state, warm code
  const peaks = modes.map((m) => {
    sgd.zeroGrad();
    A.resetPeak();
    step(m);
    return A.memory().activationPeakBytes;
  });
  const rounds = quick ? 3 : L >= 256 ? 9 : 21;
  const times = modes.map(() => [] as number[]);
  for (let r = 0; r < rounds; r++) {
    modes.forEach((m, j) => {
      const t0 = cpuMs();
      step(m);
      times[j].push(cpuMs() - t0);
    });
  }
  console.log(`\ndepth ${L}: width ${WIDTH}, batch ${B}, float32; B·Σd_l·bytes = ${mb(estimate)} MB`);
  console.log('mode                 segments  recomputed  planned MB  measured MB  peak ratio  step ms  time ratio');
  modes.forEach((m, j) => {
    const plan = m.plan === undefined ? null : planSegments(layerBytes, m.plan);
    const segs = plan === null ? '1' : String(plan.segments.length);
    const rec = plan === null ? 0 : plan.recomputed;
    const planned = plan === null ? estimate : plan.peakBytes;
    const t = median(times[j]);
    const ratio = median(times[j].map((v, r) => v / times[0][r]));
    console.log(
      `${m.label.padEnd(20)} ${segs.padStart(8)}  ${String(rec).padStart(10)}  ${mb(planned).padStart(10)}  ${mb(peaks[j]).padStart(11)}` +
        `  ${(peaks[0] / peaks[j]).toFixed(2).padStart(9)}x  ${t.toFixed(0).padStart(7)}  ${ratio.toFixed(2).padStart(9)}x`,
    );
  });
  console.log(
    "  (measured = memory().activationPeakBytes after resetPeak(): planned + the backward's transient buffers (a cotangent, the tanh VJP's three));",
  );
  console.log(
    '  (planned for "none" is the B·Σd_l·bytes estimate; time ratio = median over rounds of step CPU time / the same round\'s uncheckpointed step)',
  );
  for (const p of params) p.dispose();
  x.dispose();
  target.dispose();
  sgd.dispose();
}

for (const L of depths) bench(L);
