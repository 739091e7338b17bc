// Per-kernel profile of the two steps bench/step-bounds.ts holds against the GEMM rate, one
// thread: the deep 32×256 tanh step (as the training table runs it: eager ops and optim.SGD, and
// compiled with nn.Sequential's fused dense layers) and the digits MLP's compiled step. Every
// kernel export is wrapped to add its process-CPU time per launch (bench/gpt-profile.ts's
// method), GEMMs keyed by shape with their GFLOP/s; the sum of the kernels against the step's CPU
// time gives the JS share (dispatch, or the replay loop).
//
//   node scripts/run-ts.mjs bench/step-profile.ts [gemm|deep|deepc|deeps|digits ...]
import * as A from '../src/index.js';
import { timeKernels } from './kernel-times.js';
import { adjointSuite } from './adjoint-suite.js';
import { deepCompiledStep, digitsStep } from './step-bounds.js';
import { DEEP } from './workloads.js';

await A.init({ threads: 1 });
const times = timeKernels();
const { acc, flops } = times;

function profile(name: string, run: () => void, N: number): void {
  for (let i = 0; i < 5; i++) run();
  acc.clear();
  // Unwrapped-timing pass first (the wrapper's own cost excluded), then the profiled pass.
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) run();
  const c1 = process.cpuUsage(c0);
  times.on = true;
  for (let i = 0; i < N; i++) run();
  times.on = false;
  const rows = [...acc].sort((a, b) => b[1].ms - a[1].ms);
  const ksum = rows.reduce((s, [, e]) => s + e.ms, 0);
  const launches = rows.reduce((s, [, e]) => s + e.n, 0);
  console.log(
    `\n${name}: step cpu ${((c1.user + c1.system) / 1000 / N).toFixed(3)} ms (unwrapped), kernels ${(ksum / N).toFixed(3)} ms, ${(launches / N).toFixed(0)} launches`,
  );
  for (const [n, e] of rows.slice(0, 24))
    console.log(
      `  ${n.padEnd(40)} ${(e.ms / N).toFixed(3).padStart(8)} ms ${(e.n / N).toFixed(0).padStart(5)} calls  ${((100 * e.ms) / ksum).toFixed(1).padStart(5)}%  ${flops.has(n) ? `${((flops.get(n)! * e.n) / e.ms / 1e6).toFixed(1)} GFLOP/s` : ''}`,
    );
}

const which = process.argv.slice(2);
const want = (k: string) => which.length === 0 || which.includes(k);

if (want('gemm')) {
  const a = A.randn([512, 512], { seed: 1 }),
    b = A.randn([512, 512], { seed: 2 });
  profile('gemm 512³ matmul', () => A.tidy(() => void A.matmul(a, b)), 30);
  a.dispose(), b.dispose();
}

if (want('deep')) {
  const suite = await adjointSuite('dev');
  const r = (await suite.make({ kind: 'deep', mode: 'step' })) as { run: () => void; dispose?: () => void };
  profile('deep step, bench (eager ops + optim.SGD)', r.run, 20);
  r.dispose?.();
}

if (want('deepc')) {
  const s = deepCompiledStep();
  profile('deep step, compiled (the bounds row: bench ops + optim.SGD)', s.run, 20);
  console.log('  stats', JSON.stringify(s.stats()));
  s.dispose();
}

if (want('deeps')) {
  const layers = Array.from({ length: DEEP.depth }, (_, i) => [
    new A.nn.Linear(DEEP.width, DEEP.width, { seed: 10 + i }),
    new A.nn.Tanh(),
  ]).flat();
  const model = new A.nn.Sequential(...layers);
  const x = A.rand([DEEP.batch, DEEP.width], { seed: 3 }),
    target = A.rand([DEEP.batch, DEEP.width], { seed: 4 });
  const opt = new A.optim.SGD(model.parameters(), { lr: DEEP.lr });
  const step = A.compile((x: A.Tensor, t: A.Tensor) => {
    const loss = A.mseLoss(model.forward(x), t);
    loss.backward();
    opt.step();
    opt.zeroGrad();
    return loss;
  });
  profile('deep step, compiled nn.Sequential + SGD', () => step(x, target).dispose(), 20);
  console.log('  stats', JSON.stringify(step.stats));
}

if (want('digits')) {
  const s = digitsStep();
  profile('digits compiled step', s.run, 400);
  console.log('  stats', JSON.stringify(s.stats()));
  s.dispose();
}
