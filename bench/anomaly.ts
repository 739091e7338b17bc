// The cost of anomaly mode: one training step (forward + backward) of an MLP, with and without
// detectAnomaly. Anomaly mode adds one count_nonfinite pass (a kernel call) over every
// primitive's output, forward and backward. On a loaded machine wall-clock differences are
// noisy, so besides interleaved timings (fastest round of each) the bench counts the outputs
// and elements checked per step and times exactly that much checking on its own.
// Run: node scripts/run-ts.mjs bench/anomaly.ts
import * as A from '../src/index.js';
import { anomalyChecks as checked } from '../src/testing.js';
import { kernel } from '../src/wasm/module.js';

export interface AnomalyCost {
  shape: string;
  offMs: number;
  onMs: number;
  /** Outputs and elements checked per step, and the time of that checking alone. */
  outputs: number;
  elements: number;
  checkMs: number;
}

/** Seconds per call of fn: fastest of `rounds` batches (batches of ≈ 5 ms). */
function fastest(fn: () => void, rounds: number): number {
  const per = (reps: number) => {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) fn();
    return (performance.now() - t0) / reps;
  };
  const reps = Math.max(1, Math.round(5 / per(1)));
  let best = Infinity;
  for (let r = 0; r < rounds; r++) best = Math.min(best, per(reps));
  return best;
}

/** Time of checking `outputs` buffers holding `elements` float32 values in all. */
function checkingMs(outputs: number, elements: number, rounds: number): number {
  const buf = A.zeros([Math.max(1, Math.ceil(elements / outputs))]);
  const f = kernel('count_nonfinite_f32');
  const ms = fastest(() => {
    for (let i = 0; i < outputs; i++) f(buf.ptr, buf.size);
  }, rounds);
  buf.dispose();
  return ms;
}

export function anomalyCost(batch: number, widths: readonly number[], rounds = 20): AnomalyCost {
  const ws = widths.slice(1).map((out, i) => A.tidy(() => A.randn([widths[i], out], { seed: i }).mul(0.1)));
  for (const w of ws) w.requiresGrad = true;
  const x = A.randn([batch, widths[0]], { seed: 99 });
  const labels = Int32Array.from({ length: batch }, (_, i) => i % widths[widths.length - 1]);
  const step = () =>
    A.tidy(() => {
      let h = x;
      ws.forEach((w, i) => (h = i < ws.length - 1 ? A.relu(A.matmul(h, w)) : A.matmul(h, w)));
      A.crossEntropy(h, labels).backward();
      for (const w of ws) {
        w.grad!.dispose();
        w.grad = null;
      }
    });
  const stepOn = () => A.withAnomalyDetection(step);
  const [o0, e0] = [checked.outputs, checked.elements];
  stepOn();
  const outputs = checked.outputs - o0,
    elements = checked.elements - e0;
  // Interleave the two so both see the same machine state.
  let offMs = Infinity,
    onMs = Infinity;
  for (let r = 0; r < rounds; r++) {
    offMs = Math.min(offMs, fastest(step, 1));
    onMs = Math.min(onMs, fastest(stepOn, 1));
  }
  for (const t of [...ws, x]) t.dispose();
  return { shape: `${batch}×[${widths.join('→')}]`, offMs, onMs, outputs, elements, checkMs: checkingMs(outputs, elements, rounds) };
}

export function printAnomalyCost(): void {
  console.log('anomaly mode cost per MLP training step (forward + backward, float32):');
  for (const [batch, widths] of [
    [32, [64, 128, 10]],
    [64, [784, 256, 128, 10]],
    [256, [784, 512, 512, 10]],
  ] as const) {
    const c = anomalyCost(batch, widths);
    const pct = (v: number) => `${((v / c.offMs) * 100).toFixed(1)}%`;
    console.log(
      `  ${c.shape.padEnd(24)} off ${c.offMs.toFixed(3)} ms, on ${c.onMs.toFixed(3)} ms (${pct(c.onMs - c.offMs)} measured); ` +
        `checks ${c.outputs} outputs / ${c.elements} elements = ${c.checkMs.toFixed(3)} ms alone (${pct(c.checkMs)})`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await A.init();
  printAnomalyCost();
}
