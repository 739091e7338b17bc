// Fashion-MNIST end to end: adjoint against TF.js training the same models from the same initial
// weights, on the same shuffled batches, with the same hyperparameters, in one Node process.
//
//   node scripts/run-ts.mjs bench/fashion.ts [--epochs N] [--model mlp|cnn|both]
//        [--peers tfjs-wasm,tfjs-cpu] [--seed N] [--cap SEC] [--probe STEPS] [--data DIR] [--out FILE]
//        [--threads N]   (adjoint's thread pool, default 1; the results are the same bits for any N)
//
// Models (src/cli/models.ts, what `adjoint train --dataset fashion-mnist` builds):
//   mlp  784-256-256-10, ReLU
//   cnn  conv 5×5 1→16 pad 2, ReLU, max-pool 2, conv 5×5 16→32 pad 2, ReLU, max-pool 2, linear 1568→10
// Adam lr 1e-3 (constant, betas 0.9/0.999, eps 1e-8), batch 128 (the last batch of an epoch has
// 96 rows), softmax cross-entropy (mean). Epoch e's order is data.permutation(60000, seed·1000 + e),
// used by both libraries. Without --epochs: MLP 5 epochs, CNN 1 epoch.
//
// Peers: tfjs-wasm (XNNPACK, 1 thread) for every model it can train. It has no
// Conv2DBackpropFilter kernel, so its CNN step fails: the error is printed and the CNN falls back
// to tfjs-cpu. tfjs-cpu runs only models tfjs-wasm cannot (or every model if tfjs-wasm is not in
// --peers). A run predicted to exceed --cap seconds per epoch (default 300) is stopped after
// --probe steps (default 10, after 1 warm-up step) and its epoch time is extrapolated from those
// steps: such rows are labelled "extrapolated" and have no accuracy.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { init, tidy, noGrad, crossEntropy, slice, optim, data, type Tensor, type nn } from '../src/index.js';
import { buildModel } from '../src/cli/models.js';
import { fcRowsNchwToNhwc, oihwToHwio } from './workloads.js';
import { versionOf } from './peers.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Kind = 'mlp' | 'cnn';
type PeerId = 'tfjs-wasm' | 'tfjs-cpu';

const require = createRequire(import.meta.url);
const BATCH = 128,
  LR = 1e-3,
  CLASSES = 10;

// ---------------------------------------------------------------- arguments

function parseArgs(argv: string[]) {
  const o = {
    epochs: null as number | null,
    models: ['mlp', 'cnn'] as Kind[],
    peers: ['tfjs-wasm', 'tfjs-cpu'] as PeerId[],
    seed: 0,
    cap: 300,
    probe: 10,
    data: '/usr/share/datasets/fashion-mnist',
    out: 'bench/fashion-results.json',
    threads: 1,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i],
      v = () => {
        const x = argv[++i];
        if (x === undefined) throw new Error(`${a} needs a value`);
        return x;
      };
    switch (a) {
      case '--epochs':
        o.epochs = Number(v());
        if (!(o.epochs >= 1)) throw new Error('--epochs must be ≥ 1');
        break;
      case '--model': {
        const m = v();
        if (!['mlp', 'cnn', 'both'].includes(m)) throw new Error(`--model mlp|cnn|both, got ${m}`);
        o.models = m === 'both' ? ['mlp', 'cnn'] : [m as Kind];
        break;
      }
      case '--peers': {
        const p = v();
        o.peers = p === '' || p === 'none' ? [] : (p.split(',') as PeerId[]);
        for (const q of o.peers) if (q !== 'tfjs-wasm' && q !== 'tfjs-cpu') throw new Error(`unknown peer ${q}`);
        break;
      }
      case '--seed':
        o.seed = Number(v());
        break;
      case '--cap':
        o.cap = Number(v());
        break;
      case '--probe':
        o.probe = Number(v());
        break;
      case '--data':
        o.data = v();
        break;
      case '--out':
        o.out = v();
        break;
      case '--threads':
        o.threads = Number(v());
        if (!(o.threads >= 1)) throw new Error('--threads must be ≥ 1');
        break;
      default:
        throw new Error(`unknown option ${a}`);
    }
  }
  return o;
}

// ---------------------------------------------------------------- results

interface Row {
  library: string;
  model: Kind;
  status: 'ok' | 'extrapolated' | 'unsupported' | 'failed';
  note?: string;
  /** Wall seconds per epoch (measured; for 'extrapolated', one projected epoch). */
  epochSec: number[];
  /** Process CPU seconds per epoch. */
  epochCpuSec: number[];
  testAccuracy: number[];
  meanLoss: number[];
  initialLoss?: number;
  probe?: { steps: number; secPerStep: number; stepsPerEpoch: number };
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const epochOrder = (n: number, seed: number, e: number) => data.permutation(n, seed * 1000 + e);
const stepsPerEpoch = (n: number) => Math.ceil(n / BATCH);

/** Decide after each step whether to keep going: past the warm-up step, a projected epoch longer
 * than the cap stops the run after `probe` timed steps. */
function capper(cap: number, probe: number, steps: number) {
  let tWarm = 0;
  return {
    afterStep(i: number, now: number, t0: number): { stop: boolean; secPerStep?: number } {
      if (i === 0) {
        tWarm = now;
        return { stop: false };
      }
      const timed = i; // steps 1..i since the end of step 0
      const perStep = (now - tWarm) / 1000 / timed;
      // Enough probe steps, or (for very slow steps) at least 2 timed steps and a minute of timing.
      if (perStep * steps > cap && (timed >= probe || (timed >= 2 && now - tWarm > 60_000))) return { stop: true, secPerStep: perStep };
      void t0;
      return { stop: false };
    },
  };
}

// ---------------------------------------------------------------- adjoint

interface Shared {
  xTrain: Float32Array;
  yTrain: Int32Array;
  xTest: Float32Array;
  yTest: Int32Array;
  nTrain: number;
  nTest: number;
}

function adjointAccuracy(model: nn.Module, x: Tensor, y: Int32Array): number {
  const n = x.shape[0];
  let correct = 0;
  for (let s = 0; s < n; s += 1000) {
    const m = Math.min(1000, n - s);
    const logits = tidy(() => noGrad(() => model.forward(slice(x, [s, 0], [m, x.shape[1]])).toArray()));
    for (let i = 0; i < m; i++) {
      let best = 0;
      for (let j = 1; j < CLASSES; j++) if (logits[i * CLASSES + j] > logits[i * CLASSES + best]) best = j;
      if (best === y[s + i]) correct++;
    }
  }
  return correct / n;
}

function runAdjoint(kind: Kind, epochs: number, seed: number, split: data.Split, cap: number, probe: number): Row {
  const model = buildModel('fashion-mnist', kind, seed);
  const opt = new optim.Adam(model.parameters(), { lr: LR });
  const n = split.xTrain.shape[0],
    steps = stepsPerEpoch(n);
  const row: Row = { library: 'adjoint', model: kind, status: 'ok', epochSec: [], epochCpuSec: [], testAccuracy: [], meanLoss: [] };
  // Initial loss on epoch 1's first batch: every library must print the same number.
  const idx0 = epochOrder(n, seed, 1).subarray(0, BATCH);
  row.initialLoss = tidy(() =>
    noGrad(() => {
      const x = data.batches(split.xTrain, split.yTrain, { batchSize: BATCH, seed: seed * 1000 + 1 }).next().value!;
      const l = crossEntropy(
        model.forward(x.x),
        Int32Array.from(idx0, (i) => split.yTrain[i]),
      ).item();
      return l;
    }),
  );
  for (let e = 1; e <= epochs; e++) {
    model.train();
    const c = capper(cap, probe, steps);
    const t0 = performance.now(),
      c0 = cpuNow();
    let lossSum = 0,
      i = 0,
      stopped: number | undefined;
    for (const b of data.batches(split.xTrain, split.yTrain, { batchSize: BATCH, seed: seed * 1000 + e })) {
      lossSum += tidy(() => {
        const loss = crossEntropy(model.forward(b.x), b.y);
        loss.backward();
        opt.step();
        opt.zeroGrad();
        return loss.item();
      });
      const r = c.afterStep(i, performance.now(), t0);
      i++;
      if (r.stop) {
        stopped = r.secPerStep;
        break;
      }
    }
    if (endEpoch(row, { t0, c0, i, lossSum, stopped, steps, cap })) break;
    model.eval();
    row.testAccuracy.push(adjointAccuracy(model, split.xTest, split.yTest));
    progress(row, e, epochs);
  }
  opt.dispose();
  model.dispose();
  return row;
}

/**
 * Books an epoch's times and mean loss into the row, or — when the cap stopped it after i steps
 * at `stopped` s/step — the extrapolated epoch time and a note; true then (the run ends there).
 */
function endEpoch(
  row: Row,
  e: { t0: number; c0: number; i: number; lossSum: number; stopped: number | undefined; steps: number; cap: number },
): boolean {
  const sec = (performance.now() - e.t0) / 1000,
    cpu = cpuNow() - e.c0;
  if (e.stopped !== undefined) {
    row.status = 'extrapolated';
    row.probe = { steps: e.i - 1, secPerStep: e.stopped, stepsPerEpoch: e.steps };
    row.epochSec.push(e.stopped * e.steps);
    row.epochCpuSec.push((cpu / e.i) * e.steps);
    row.note = `timed ${e.i - 1} steps after 1 warm-up step (${e.stopped.toFixed(2)} s/step) × ${e.steps} steps; projected epoch > cap ${e.cap} s`;
    return true;
  }
  row.epochSec.push(sec);
  row.epochCpuSec.push(cpu);
  row.meanLoss.push(e.lossSum / e.i);
  return false;
}

// ---------------------------------------------------------------- TF.js

async function loadTf(peers: PeerId[]): Promise<{ tf: any; notes: string[] }> {
  const tf: any = await import('@tensorflow/tfjs');
  await import('@tensorflow/tfjs-backend-cpu');
  const notes: string[] = [];
  if (peers.includes('tfjs-wasm')) {
    const wasm: any = await import('@tensorflow/tfjs-backend-wasm');
    const dist = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
    wasm.setThreadsCount(1);
    wasm.setWasmPaths(dist);
    notes.push('tfjs-wasm: setThreadsCount(1), SIMD build');
  }
  return { tf, notes };
}

/** adjoint's initial parameters in TF.js layouts: dense kernels [in, out], conv filters HWIO,
 * the fc rows permuted from NCHW to NHWC flattening. */
function tfInitial(kind: Kind, model: nn.Sequential): { values: Float32Array; shape: number[] }[] {
  const p = model.namedParameters().map(([name, t]) => ({ name, v: t.toArray() as Float32Array, shape: t.shape }));
  const transpose2d = (v: Float32Array, rows: number, cols: number) => {
    const out = new Float32Array(v.length);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = v[r * cols + c];
    return out;
  };
  return p.map(({ v, shape }, i) => {
    if (shape.length === 1) return { values: v, shape: [...shape] };
    if (shape.length === 4) {
      const [o, inC, kh, kw] = shape;
      return { values: oihwToHwio(v, o, inC, kh, kw), shape: [kh, kw, inC, o] };
    }
    const [out, inp] = shape;
    let w: Float32Array = transpose2d(v, out, inp); // [in, out]
    if (kind === 'cnn' && i === p.length - 2) w = fcRowsNchwToNhwc(w, 32, 7, 7, out);
    return { values: w, shape: [inp, out] };
  });
}

async function runTf(
  tf: any,
  backend: 'wasm' | 'cpu',
  kind: Kind,
  epochs: number,
  seed: number,
  sh: Shared,
  init0: { values: Float32Array; shape: number[] }[],
  cap: number,
  probe: number,
): Promise<Row> {
  const library = `tfjs-${backend}`;
  const row: Row = { library, model: kind, status: 'ok', epochSec: [], epochCpuSec: [], testAccuracy: [], meanLoss: [] };
  if (process.env.FASHION_DEBUG) console.log(`  setBackend(${backend})…`);
  if (!(await tf.setBackend(backend))) throw new Error(`setBackend('${backend}') returned false`);
  await tf.ready();
  if (process.env.FASHION_DEBUG) console.log(`  backend ${tf.getBackend()} ready`);
  const vars = init0.map((p) => tf.tidy(() => tf.variable(tf.tensor(p.values, p.shape))));
  const forward = (x: any) => {
    if (kind === 'mlp') {
      let h = tf.relu(tf.add(tf.matMul(x, vars[0]), vars[1]));
      h = tf.relu(tf.add(tf.matMul(h, vars[2]), vars[3]));
      return tf.add(tf.matMul(h, vars[4]), vars[5]);
    }
    let h = tf.reshape(x, [-1, 28, 28, 1]); // C = 1: NCHW and NHWC rows are the same bytes
    h = tf.maxPool(tf.relu(tf.add(tf.conv2d(h, vars[0], 1, 'same'), vars[1])), 2, 2, 'valid');
    h = tf.maxPool(tf.relu(tf.add(tf.conv2d(h, vars[2], 1, 'same'), vars[3])), 2, 2, 'valid');
    return tf.add(tf.matMul(tf.reshape(h, [-1, 7 * 7 * 32]), vars[4]), vars[5]);
  };
  const batchOf = (order: Int32Array, start: number) => {
    const idx = order.subarray(start, Math.min(order.length, start + BATCH)),
      m = idx.length;
    const xb = new Float32Array(m * 784),
      yb = new Int32Array(m);
    for (let r = 0; r < m; r++) {
      xb.set(sh.xTrain.subarray(idx[r] * 784, idx[r] * 784 + 784), r * 784);
      yb[r] = sh.yTrain[idx[r]];
    }
    return { x: tf.tensor2d(xb, [m, 784]), y: tf.tidy(() => tf.oneHot(tf.tensor1d(yb, 'int32'), CLASSES).toFloat()) };
  };
  const accuracy = () => {
    let correct = 0;
    for (let s = 0; s < sh.nTest; s += 1000) {
      const m = Math.min(1000, sh.nTest - s);
      const pred = tf.tidy(() => tf.argMax(forward(tf.tensor2d(sh.xTest.subarray(s * 784, (s + m) * 784), [m, 784])), 1).dataSync());
      for (let i = 0; i < m; i++) if (pred[i] === sh.yTest[s + i]) correct++;
    }
    return correct / sh.nTest;
  };
  const opt = tf.train.adam(LR, 0.9, 0.999, 1e-8);
  const steps = stepsPerEpoch(sh.nTrain);
  try {
    {
      // initial loss on epoch 1's first batch
      const b = batchOf(epochOrder(sh.nTrain, seed, 1), 0);
      row.initialLoss = tf.tidy(() => tf.losses.softmaxCrossEntropy(b.y, forward(b.x)).dataSync()[0]);
      b.x.dispose();
      b.y.dispose();
    }
    for (let e = 1; e <= epochs; e++) {
      const order = epochOrder(sh.nTrain, seed, e);
      const c = capper(cap, probe, steps);
      const t0 = performance.now(),
        c0 = cpuNow();
      let lossSum = 0,
        i = 0,
        stopped: number | undefined;
      for (let s = 0; s < sh.nTrain; s += BATCH) {
        const b = batchOf(order, s);
        const cost = opt.minimize(() => tf.losses.softmaxCrossEntropy(b.y, forward(b.x)), true, vars);
        lossSum += cost.dataSync()[0];
        cost.dispose();
        b.x.dispose();
        b.y.dispose();
        const r = c.afterStep(i, performance.now(), t0);
        i++;
        if (r.stop) {
          stopped = r.secPerStep;
          break;
        }
      }
      if (endEpoch(row, { t0, c0, i, lossSum, stopped, steps, cap })) break;
      row.testAccuracy.push(accuracy());
      progress(row, e, epochs);
    }
  } catch (err) {
    row.status = backend === 'wasm' ? 'unsupported' : 'failed';
    row.note = String((err as Error)?.message ?? err)
      .split('\n')[0]
      .slice(0, 200);
    console.log(`  ${library} ${kind}: ${row.status}: ${row.note}`);
  } finally {
    opt.dispose();
    vars.forEach((v: any) => v.dispose());
  }
  return row;
}

// ---------------------------------------------------------------- output

const pct = (a: number | undefined) => (a === undefined ? '—' : `${(a * 100).toFixed(2)} %`);
const secs = (s: number) => (s >= 100 ? s.toFixed(0) : s >= 10 ? s.toFixed(1) : s.toFixed(2));

function progress(row: Row, e: number, epochs: number) {
  const i = e - 1;
  console.log(
    `  ${row.library} ${row.model} epoch ${e}/${epochs}: ${secs(row.epochSec[i])} s wall, ${secs(row.epochCpuSec[i])} s cpu, loss ${row.meanLoss[i].toFixed(4)}, test ${pct(row.testAccuracy[i])}`,
  );
}

function table(rows: Row[]): string {
  const head = ['library', 'model', 's/epoch (wall)', 'epoch times, s', 'test acc. epoch 1', 'test acc. epoch 5', 'note'];
  const body = rows.map((r) => {
    const mean = r.epochSec.length ? r.epochSec.reduce((a, b) => a + b, 0) / r.epochSec.length : NaN;
    const status =
      r.status === 'extrapolated'
        ? `extrapolated: ${r.probe!.steps} steps × ${r.probe!.stepsPerEpoch}`
        : r.status === 'ok'
          ? ''
          : `${r.status}: ${r.note ?? ''}`;
    return [
      r.library,
      r.model,
      Number.isFinite(mean) ? (r.status === 'extrapolated' ? `~${secs(mean)}` : secs(mean)) : '—',
      r.status === 'ok' ? r.epochSec.map(secs).join(', ') : '—',
      pct(r.testAccuracy[0]),
      r.testAccuracy.length >= 5 ? pct(r.testAccuracy[4]) : '—',
      status.slice(0, 90),
    ];
  });
  const w = head.map((h, j) => Math.max(h.length, ...body.map((b) => b[j].length)));
  const line = (cells: string[]) => `| ${cells.map((c, j) => (j >= 2 && j <= 5 ? c.padStart(w[j]) : c.padEnd(w[j]))).join(' | ')} |`;
  return [
    line(head),
    `|${w.map((x, j) => (j >= 2 && j <= 5 ? `${'-'.repeat(x + 1)}:` : '-'.repeat(x + 2))).join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

// ---------------------------------------------------------------- main

async function main() {
  const args = parseArgs(process.argv.slice(2));
  await init({ threads: args.threads });
  const load0 = os.loadavg();
  const split = await data.fashionMnist(args.data);
  const sh: Shared = {
    xTrain: split.xTrain.toArray() as Float32Array,
    yTrain: split.yTrain,
    xTest: split.xTest.toArray() as Float32Array,
    yTest: split.yTest,
    nTrain: split.xTrain.shape[0],
    nTest: split.xTest.shape[0],
  };
  console.log(
    `Fashion-MNIST: ${sh.nTrain} train / ${sh.nTest} test; Adam lr ${LR} (constant), batch ${BATCH}, seed ${args.seed}, adjoint threads ${args.threads}; load average ${load0.map((x) => x.toFixed(2)).join(' ')}`,
  );
  let tf: any = null;
  const notes: string[] = [];
  if (args.peers.length) {
    try {
      const t = await loadTf(args.peers);
      tf = t.tf;
      notes.push(...t.notes);
    } catch (e) {
      console.log(`TF.js failed to load: ${(e as Error).message}`);
    }
  }
  const rows: Row[] = [];
  for (const kind of args.models) {
    const epochs = args.epochs ?? (kind === 'mlp' ? 5 : 1);
    console.log(`\n${kind}: ${epochs} epoch(s)`);
    const initModel = buildModel('fashion-mnist', kind, args.seed); // the same seeded weights runAdjoint builds
    const init0 = tfInitial(kind, initModel);
    initModel.dispose();
    rows.push(runAdjoint(kind, epochs, args.seed, split, args.cap, args.probe));
    if (tf === null) continue;
    let wasmOk = false;
    if (args.peers.includes('tfjs-wasm')) {
      const r = await runTf(tf, 'wasm', kind, epochs, args.seed, sh, init0, args.cap, args.probe);
      rows.push(r);
      wasmOk = r.status === 'ok' || r.status === 'extrapolated';
    }
    if (args.peers.includes('tfjs-cpu') && !wasmOk) {
      console.log(`  falling back to tfjs-cpu for ${kind}`);
      rows.push(await runTf(tf, 'cpu', kind, epochs, args.seed, sh, init0, args.cap, args.probe));
    }
  }
  const load1 = os.loadavg();
  console.log('\ninitial loss on the first batch (must agree across libraries):');
  for (const r of rows) if (r.initialLoss !== undefined) console.log(`  ${r.library} ${r.model}: ${r.initialLoss.toFixed(6)}`);
  console.log(`\n${table(rows)}\n`);
  console.log(
    `load average start ${load0.map((x) => x.toFixed(2)).join(' ')}, end ${load1.map((x) => x.toFixed(2)).join(' ')}; ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? '?'}`,
  );
  const out = {
    date: new Date().toISOString(),
    config: {
      batch: BATCH,
      lr: LR,
      optimizer: 'adam (constant lr)',
      seed: args.seed,
      capSec: args.cap,
      probeSteps: args.probe,
      adjointThreads: args.threads,
    },
    versions: {
      node: process.version,
      v8: process.versions.v8,
      tfjs: versionOf('@tensorflow/tfjs'),
      tfjsWasm: versionOf('@tensorflow/tfjs-backend-wasm'),
      tfjsCpu: versionOf('@tensorflow/tfjs-backend-cpu'),
    },
    machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadStart: load0, loadEnd: load1 },
    notes,
    reference: { pytorch1Thread: { mlp: { acc5: 0.875, secPerEpoch: 1.2 }, cnn: { acc5: 0.896, secPerEpoch: 11.9 } } },
    rows,
  };
  writeFileSync(args.out, JSON.stringify(out, null, 2) + '\n');
  console.log(`wrote ${args.out}`);
  split.xTrain.dispose();
  split.xTest.dispose();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
