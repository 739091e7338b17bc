// The model behind the edge worker: a 64-32-10 MLP for 8×8 digit images (64 pixels in [0, 1]),
// kept in memory and trained online with SGD + momentum, one step per POST /train.
// Plain adjoint API, no HTTP here, so the same file runs in Node, Deno, Bun or a browser.
import { nn, optim, tensor, tidy, noGrad, softmax, crossEntropy, AdjointError } from 'adjoint';

export const FEATURES = 64;
export const CLASSES = 10;

/** A request the model cannot use; the worker answers 400 with its message. */
export class BadInput extends Error {}

function rows(x, name = 'x') {
  if (!Array.isArray(x) || x.length === 0 || x.length > 1024) throw new BadInput(`${name} must be a non-empty array of at most 1024 rows`);
  const flat = new Float32Array(x.length * FEATURES);
  x.forEach((row, i) => {
    if (!Array.isArray(row) || row.length !== FEATURES) throw new BadInput(`${name}[${i}] must be an array of ${FEATURES} numbers`);
    row.forEach((v, j) => {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new BadInput(`${name}[${i}][${j}] must be a finite number`);
      flat[i * FEATURES + j] = v;
    });
  });
  return flat;
}

function labels(y, n) {
  if (!Array.isArray(y) || y.length !== n) throw new BadInput(`y must be an array of ${n} labels (one per row of x)`);
  y.forEach((c, i) => {
    if (!Number.isInteger(c) || c < 0 || c >= CLASSES) throw new BadInput(`y[${i}] must be an integer class in 0..${CLASSES - 1}`);
  });
  return Int32Array.from(y);
}

/** Call after `await init(...)`. Same seed, same requests → bit-identical weights in every runtime. */
export function createModel({ hidden = 32, seed = 1, lr = 0.05, momentum = 0.9 } = {}) {
  const net = new nn.Sequential(
    new nn.Linear(FEATURES, hidden, { seed }),
    new nn.Tanh(),
    new nn.Linear(hidden, CLASSES, { seed: seed + 1 }),
  );
  const opt = new optim.SGD(net.parameters(), { lr, momentum });
  let steps = 0;

  return {
    /** { x: number[][] } → { classes: number[], probs: number[][] } */
    predict({ x }) {
      const flat = rows(x);
      const n = flat.length / FEATURES;
      const probs = tidy(() => noGrad(() => softmax(net.forward(tensor(flat, { shape: [n, FEATURES] }))).toArray()));
      const out = Array.from({ length: n }, (_, i) => Array.from(probs.subarray(i * CLASSES, (i + 1) * CLASSES)));
      return { classes: out.map((p) => p.indexOf(Math.max(...p))), probs: out };
    },
    /** { x: number[][], y: number[] } → { loss, steps }: one optimizer step on that batch. */
    train({ x, y }) {
      const flat = rows(x);
      const n = flat.length / FEATURES;
      const target = labels(y, n);
      const loss = tidy(() => {
        const l = crossEntropy(net.forward(tensor(flat, { shape: [n, FEATURES] })), target);
        l.backward();
        return l.item();
      });
      opt.step();
      opt.zeroGrad();
      steps++;
      return { loss, steps };
    },
    info() {
      return { features: FEATURES, hidden, classes: CLASSES, parameters: net.parameters().reduce((s, p) => s + p.size, 0), steps };
    },
    /** The weights (for checks and saving), as float32 arrays by PyTorch-style name. */
    weights() {
      return Object.fromEntries(net.namedParameters().map(([k, t]) => [k, t.toArray()]));
    },
  };
}

export const isBadInput = (e) => e instanceof BadInput || e instanceof AdjointError;
