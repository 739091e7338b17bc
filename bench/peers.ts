// The peers, each behind the same Suite interface as adjoint: TF.js on its wasm backend (XNNPACK,
// one thread) and its plain-JS cpu backend, and jax-js on its wasm device (jit where it has it).
// Every peer is loaded with a dynamic import inside try/catch: a peer that fails to load is
// reported with the reason and the run goes on without it.
//
// Clock stops only on computed results: TF.js `dataSync()` (the wasm and cpu backends also run
// kernels synchronously), jax-js `blockUntilReady()` or `dataSync()` (its ops are lazy).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { randomValues } from './timing.js';
import {
  CNN,
  DEEP,
  MLP,
  cnnData,
  deepData,
  mlpData,
  OP_CHAIN,
  cnnOut2,
  nchwToNhwc,
  oihwToHwio,
  fcRowsNchwToNhwc,
  type Layer,
  type Made,
  type Suite,
  type Workload,
} from './workloads.js';

const require = createRequire(import.meta.url);

/** A package's version: from its package.json, found by walking up from its entry point when
 * its `exports` map hides package.json (jax-js). */
export function versionOf(pkg: string): string {
  try {
    return (require(`${pkg}/package.json`) as { version: string }).version;
  } catch {
    /* not exported: walk up */
  }
  try {
    let dir = path.dirname(require.resolve(pkg));
    for (let i = 0; i < 5; i++, dir = path.dirname(dir)) {
      const file = path.join(dir, 'package.json');
      if (!existsSync(file)) continue;
      const json = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (json.name === pkg) return json.version ?? '?';
    }
  } catch {
    /* unresolvable */
  }
  return '?';
}

export interface Loaded {
  suites: Suite[];
  notes: { id: string; note: string }[];
}

// ---------------------------------------------------------------- TF.js (wasm and cpu backends)

/* eslint-disable @typescript-eslint/no-explicit-any */
type TF = any;

async function loadTf(): Promise<{ tf: TF; wasm: any }> {
  const tf = await import('@tensorflow/tfjs'); // core + layers + gradients for every op
  await import('@tensorflow/tfjs-backend-cpu');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  return { tf, wasm };
}

function tfSuite(tf: TF, backend: 'wasm' | 'cpu', pkg: string): Suite {
  const disposeAll = (ts: any[]) => ts.forEach((t) => t.dispose());
  // tidy: the initial-value tensors go, the variables (never tracked by tidy) stay.
  const variable = (make: () => any) => tf.tidy(() => tf.variable(make()));
  const oneHot = (labels: Int32Array, classes: number) => tf.tidy(() => tf.oneHot(tf.tensor1d(labels, 'int32'), classes).toFloat());
  const vars = (layers: Layer[]) =>
    layers.flatMap((l) => [variable(() => tf.tensor2d(l.w, [l.fanIn, l.fanOut])), variable(() => tf.tensor1d(l.b))]);
  const dense = (x: any, ps: any[], act: (t: any) => any, actLast: boolean) => {
    let h = x;
    for (let i = 0; i < ps.length; i += 2) {
      h = tf.add(tf.matMul(h, ps[i]), ps[i + 1]);
      if (actLast || i + 2 < ps.length) h = act(h);
    }
    return h;
  };
  /** step: optimizer.minimize (gradients via tf.variableGrads, SGD update), cost read back; forward: loss only. */
  const trainer = (ps: any[], lr: number, loss: () => any, extra: any[], mode: 'step' | 'forward'): Made => {
    const opt = tf.train.sgd(lr);
    return {
      run:
        mode === 'step'
          ? () => {
              const c = opt.minimize(loss, true, ps);
              c.dataSync();
              c.dispose();
            }
          : () =>
              tf.tidy(() => {
                loss().dataSync();
              }),
      dispose: () => {
        disposeAll([...ps, ...extra]);
        opt.dispose();
      },
      loss: () => tf.tidy(() => loss().dataSync()[0]),
    };
  };

  const make = (w: Workload): Made => {
    switch (w.kind) {
      case 'gemm': {
        if (w.dtype !== 'float32') return null; // TF.js has no float64
        if (w.level !== 'api') return null;
        const a = tf.tensor2d(randomValues(w.n * w.n, 11), [w.n, w.n]),
          b = tf.tensor2d(randomValues(w.n * w.n, 12), [w.n, w.n]);
        return {
          run: () => {
            const c = tf.matMul(a, b, w.ta, w.tb);
            c.dataSync();
            c.dispose();
          },
          dispose: () => disposeAll([a, b]),
        };
      }
      case 'op': {
        const a = tf.tensor1d([0.1, 0.2, 0.3, 0.4]),
          b = tf.tensor1d([0.01, 0.01, 0.01, 0.01]);
        const m = tf.tensor2d(
          Array.from({ length: 16 }, (_, i) => (i % 5) * 0.1),
          [4, 4],
        );
        const base = { perCall: OP_CHAIN, dispose: () => disposeAll([a, b, m]) };
        switch (w.op) {
          case 'add':
            return {
              ...base,
              run: () => {
                for (let i = 0; i < OP_CHAIN; i++) tf.add(a, b).dispose();
              },
            };
          case 'tanh':
            return {
              ...base,
              run: () => {
                for (let i = 0; i < OP_CHAIN; i++) tf.tanh(a).dispose();
              },
            };
          case 'matmul4':
            return {
              ...base,
              run: () => {
                for (let i = 0; i < OP_CHAIN; i++) tf.matMul(m, m).dispose();
              },
            };
          case 'addChain':
            return {
              ...base,
              run: () => {
                let y = tf.add(a, b);
                for (let i = 1; i < OP_CHAIN; i++) {
                  const z = tf.add(y, b);
                  y.dispose();
                  y = z;
                }
                y.dataSync();
                y.dispose();
              },
            };
          default:
            base.dispose();
            return null; // no recording outside tf.grad, no compiled functions
        }
      }
      case 'mlp': {
        const d = mlpData();
        const x = tf.tensor2d(d.x, [MLP.batch, MLP.layers[0]]);
        const y = oneHot(d.labels, MLP.layers[MLP.layers.length - 1]);
        const ps = vars(d.layers);
        const loss = () => tf.losses.softmaxCrossEntropy(y, dense(x, ps, tf.relu, false));
        return trainer(ps, MLP.lr, loss, [x, y], w.mode);
      }
      case 'deep': {
        const d = deepData();
        const x = tf.tensor2d(d.x, [DEEP.batch, DEEP.width]),
          t = tf.tensor2d(d.target, [DEEP.batch, DEEP.width]);
        const ps = vars(d.layers);
        const loss = () => tf.losses.meanSquaredError(t, dense(x, ps, tf.tanh, true));
        return trainer(ps, DEEP.lr, loss, [x, t], w.mode);
      }
      case 'cnn': {
        const d = cnnData();
        const { batch, hw, c1, c2, k, stride, pad, classes } = CNN;
        const x = tf.tensor4d(nchwToNhwc(d.x, batch, 1, hw, hw), [batch, hw, hw, 1]);
        const y = oneHot(d.labels, classes);
        const fcW = fcRowsNchwToNhwc(d.fc.w, c2, cnnOut2, cnnOut2, classes);
        const ps = [
          variable(() => tf.tensor4d(oihwToHwio(d.w1, c1, 1, k, k), [k, k, 1, c1])),
          variable(() => tf.tensor1d(d.b1)),
          variable(() => tf.tensor4d(oihwToHwio(d.w2, c2, c1, k, k), [k, k, c1, c2])),
          variable(() => tf.tensor1d(d.b2)),
          variable(() => tf.tensor2d(fcW, [d.fc.fanIn, classes])),
          variable(() => tf.tensor1d(d.fc.b)),
        ];
        const loss = () => {
          let h = tf.relu(tf.add(tf.conv2d(x, ps[0], stride, pad), ps[1]));
          h = tf.relu(tf.add(tf.conv2d(h, ps[2], stride, pad), ps[3]));
          return tf.losses.softmaxCrossEntropy(y, tf.add(tf.matMul(tf.reshape(h, [batch, -1]), ps[4]), ps[5]));
        };
        return trainer(ps, CNN.lr, loss, [x, y], w.mode);
      }
    }
  };
  return {
    id: `tfjs-${backend}`,
    label: backend === 'wasm' ? 'tfjs-wasm' : 'tfjs-cpu',
    version: versionOf(pkg),
    activate: async () => {
      if (tf.getBackend() !== backend) await tf.setBackend(backend);
      await tf.ready();
    },
    make,
  };
}

// ---------------------------------------------------------------- jax-js (wasm device)

const JAX_OP_CHAIN = 250; // its eager ops cost tens of µs here: a shorter loop keeps the run short

function jaxSuite(jax: any): Suite {
  const { numpy: np, nn, lax, jit, valueAndGrad, tree } = jax;
  // float64 arrays are made by astype: np.array(Float64Array) trips over the missing
  // Float16Array global in Node 20.
  const arr = (v: Float32Array, shape: number[], dtype = np.float32) => {
    const a = np.array(v).reshape(shape);
    return dtype === np.float64 ? a.astype(np.float64) : a;
  };
  const params = (layers: Layer[]) => layers.flatMap((l) => [arr(l.w, [l.fanIn, l.fanOut]), arr(l.b, [l.fanOut])]);
  const dense = (x: any, p: any[], act: (t: any) => any, actLast: boolean) => {
    let h = x;
    for (let i = 0; i < p.length; i += 2) {
      h = np.add(np.matmul(h, p[i]), p[i + 1]);
      if (actLast || i + 2 < p.length) h = act(h);
    }
    return h;
  };
  const xent = (logits: any, onehot: any, n: number) => np.multiply(np.sum(np.multiply(nn.logSoftmax(logits, -1), onehot)), -1 / n);
  const mse = (pred: any, target: any) => np.mean(np.square(np.subtract(pred, target)));

  /**
   * jit-compiled SGD step (value_and_grad + update in one traced function) and jit-compiled
   * forward; parameters are threaded through by ownership (.ref) as jax-js requires.
   */
  const trainer = (p0: any[], lr: number, loss: (p: any[], ...data: any[]) => any, data: any[], mode: 'step' | 'forward'): Made => {
    let p = p0;
    const step = jit((ps: any[], ...dd: any[]) => {
      const [l, g] = valueAndGrad((q: any[]) => loss(q, ...dd))(tree.ref(ps));
      return [l, ps.map((w: any, i: number) => np.subtract(w, np.multiply(g[i], lr)))];
    });
    const fwd = jit((ps: any[], ...dd: any[]) => loss(ps, ...dd));
    const dataRefs = () => data.map((t) => t.ref);
    return {
      run:
        mode === 'step'
          ? async () => {
              const [l, next] = step(p, ...dataRefs());
              p = next;
              await jax.blockUntilReady([l, p]);
              l.dispose();
            }
          : async () => {
              const l = fwd(tree.ref(p), ...dataRefs());
              await l.blockUntilReady();
              l.dispose();
            },
      dispose: () => {
        tree.dispose(p);
        data.forEach((t) => t.dispose());
        step.dispose?.();
        fwd.dispose?.();
      },
      loss: () => fwd(tree.ref(p), ...dataRefs()).dataSync()[0],
    };
  };

  const make = (w: Workload): Made => {
    switch (w.kind) {
      case 'gemm': {
        if (w.level !== 'api') return null;
        const dt = w.dtype === 'float64' ? np.float64 : np.float32;
        const a = arr(randomValues(w.n * w.n, 11), [w.n, w.n], dt),
          b = arr(randomValues(w.n * w.n, 12), [w.n, w.n], dt);
        const f = jit((x: any, y: any) => np.matmul(w.ta ? np.transpose(x) : x, w.tb ? np.transpose(y) : y));
        return {
          run: async () => {
            const c = f(a.ref, b.ref);
            await c.blockUntilReady();
            c.dispose();
          },
          dispose: () => {
            a.dispose();
            b.dispose();
            f.dispose?.();
          },
        };
      }
      case 'op': {
        const a = arr(new Float32Array([0.1, 0.2, 0.3, 0.4]), [4]),
          b = arr(new Float32Array([0.01, 0.01, 0.01, 0.01]), [4]);
        const m = arr(
          Float32Array.from({ length: 16 }, (_, i) => (i % 5) * 0.1),
          [4, 4],
        );
        const n = JAX_OP_CHAIN;
        const base = {
          perCall: n,
          dispose: () => {
            a.dispose();
            b.dispose();
            m.dispose();
          },
        };
        // Eager ops are lazy: dataSync() forces each result (and consumes it).
        switch (w.op) {
          case 'add':
            return {
              ...base,
              run: () => {
                for (let i = 0; i < n; i++) np.add(a.ref, b.ref).dataSync();
              },
            };
          case 'tanh':
            return {
              ...base,
              run: () => {
                for (let i = 0; i < n; i++) np.tanh(a.ref).dataSync();
              },
            };
          case 'matmul4':
            return {
              ...base,
              run: () => {
                for (let i = 0; i < n; i++) np.matmul(m.ref, m.ref).dataSync();
              },
            };
          case 'addChain':
            return {
              ...base,
              run: () => {
                let y = np.add(a.ref, b.ref);
                for (let i = 1; i < n; i++) y = np.add(y, b.ref);
                y.dataSync();
              },
            };
          case 'addJit': {
            const f = jit((x: any, y: any) => np.add(x, y));
            return {
              ...base,
              run: () => {
                for (let i = 0; i < n; i++) f(a.ref, b.ref).dataSync();
              },
              dispose: () => {
                base.dispose();
                f.dispose?.();
              },
            };
          }
          default:
            base.dispose();
            return null;
        }
      }
      case 'mlp': {
        const d = mlpData();
        const classes = MLP.layers[MLP.layers.length - 1];
        const x = arr(d.x, [MLP.batch, MLP.layers[0]]);
        const y = nn.oneHot(np.array(d.labels, { dtype: np.int32 }), classes).astype(np.float32);
        const loss = (p: any[], xx: any, yy: any) => xent(dense(xx, p, nn.relu, false), yy, MLP.batch);
        return trainer(params(d.layers), MLP.lr, loss, [x, y], w.mode);
      }
      case 'deep': {
        const d = deepData();
        const x = arr(d.x, [DEEP.batch, DEEP.width]),
          t = arr(d.target, [DEEP.batch, DEEP.width]);
        const loss = (p: any[], xx: any, tt: any) => mse(dense(xx, p, np.tanh, true), tt);
        return trainer(params(d.layers), DEEP.lr, loss, [x, t], w.mode);
      }
      case 'cnn': {
        const d = cnnData();
        const { batch, hw, c1, c2, k, stride, pad, classes } = CNN;
        const x = arr(d.x, [batch, 1, hw, hw]);
        const y = nn.oneHot(np.array(d.labels, { dtype: np.int32 }), classes).astype(np.float32);
        const p = [
          arr(d.w1, [c1, 1, k, k]),
          arr(d.b1, [1, c1, 1, 1]),
          arr(d.w2, [c2, c1, k, k]),
          arr(d.b2, [1, c2, 1, 1]),
          arr(d.fc.w, [d.fc.fanIn, classes]),
          arr(d.fc.b, [classes]),
        ];
        const padding = [
          [pad, pad],
          [pad, pad],
        ];
        const loss = (q: any[], xx: any, yy: any) => {
          let h = nn.relu(np.add(lax.conv(xx, q[0], [stride, stride], padding), q[1]));
          h = nn.relu(np.add(lax.conv(h, q[2], [stride, stride], padding), q[3]));
          return xent(np.add(np.matmul(np.reshape(h, [batch, -1]), q[4]), q[5]), yy, batch);
        };
        return trainer(p, CNN.lr, loss, [x, y], w.mode);
      }
    }
  };
  return { id: 'jax-js', label: 'jax-js', version: versionOf('@jax-js/jax'), make };
}

// ---------------------------------------------------------------- loading

export async function loadPeers(): Promise<Loaded> {
  const suites: Suite[] = [];
  const notes: { id: string; note: string }[] = [];
  const fail = (id: string, e: unknown) => notes.push({ id, note: `skipped: ${(e as Error)?.message ?? String(e)}`.slice(0, 300) });

  let tfl: { tf: TF; wasm: any } | null = null;
  try {
    tfl = await loadTf();
  } catch (e) {
    fail('tfjs-wasm', e);
    fail('tfjs-cpu', e);
  }
  if (tfl !== null) {
    const { tf, wasm } = tfl;
    try {
      // Node: the .wasm files are read from node_modules (a file path with a trailing slash).
      const dist = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
      wasm.setThreadsCount(1);
      wasm.setWasmPaths(dist);
      if (!(await tf.setBackend('wasm'))) throw new Error('setBackend("wasm") returned false');
      await tf.ready();
      suites.push(tfSuite(tf, 'wasm', '@tensorflow/tfjs-backend-wasm'));
      notes.push({ id: 'tfjs-wasm', note: `threads: ${wasm.getThreadsCount?.() ?? 1}, SIMD build` });
    } catch (e) {
      fail('tfjs-wasm', e);
    }
    try {
      if (!(await tf.setBackend('cpu'))) throw new Error('setBackend("cpu") returned false');
      await tf.ready();
      suites.push(tfSuite(tf, 'cpu', '@tensorflow/tfjs-backend-cpu'));
    } catch (e) {
      fail('tfjs-cpu', e);
    }
  }

  try {
    const jax = await import('@jax-js/jax');
    // Node 20: a bare init() probes `navigator` and throws; the wasm device alone works.
    const devices = await jax.init('wasm');
    if (!devices.includes('wasm')) throw new Error(`jax-js init('wasm') returned [${devices}]`);
    jax.defaultDevice('wasm');
    suites.push(jaxSuite(jax));
    const threaded = typeof SharedArrayBuffer !== 'undefined' && typeof (globalThis as any).Worker !== 'undefined';
    notes.push({
      id: 'jax-js',
      note: `device wasm, ${threaded ? 'multi-threaded (Worker available)' : 'single-threaded (no Web Worker global in Node)'}; jit for GEMM/MLP/CNN, eager for per-op rows`,
    });
  } catch (e) {
    fail('jax-js', e);
  }
  return { suites, notes };
}
