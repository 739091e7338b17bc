// adjoint's side of every workload. GEMM is measured twice: through the public matmul (what
// users and the training workloads get) and at the kernel level (gemm_f32 / gemm_f64 called
// directly on arena memory, with a packing scratch region registered), so a gap between the
// two shows a slow path in the op layer rather than in the kernel.
import * as adj from '../src/index.js';
import { Tensor } from '../src/ops/tensor.js';
import { kernel, runtime } from '../src/wasm/module.js';
import { CNN, DEEP, MLP, cnnData, deepData, mlpData, OP_CHAIN, type Layer, type Made, type Suite, type Workload } from './workloads.js';

const { tensor, matmul, transpose, add, sub, mul, tanh, relu, tidy, noGrad, crossEntropy, mseLoss, reshape } = adj;
type T = adj.Tensor;
// Optional exports that other issues add (optim, compile, conv2d): used when present.
const lib = adj as unknown as Record<string, any>;

function params(layers: Layer[]): T[] {
  return layers.flatMap((l) => [
    tensor(l.w, { shape: [l.fanIn, l.fanOut], requiresGrad: true }),
    tensor(l.b, { shape: [l.fanOut], requiresGrad: true }),
  ]);
}

function disposeAll(ts: T[]): void {
  for (const t of ts) t.dispose();
}

/**
 * A training step runner: loss(params) is built, backward() fills .grad, and SGD updates the
 * parameters — with optim.SGD when the package exports it, else with plain ops (p − lr·g).
 */
function trainer(ps: T[], lr: number, loss: (ps: T[]) => T): { run: () => void; dispose: () => void } {
  let cur = ps;
  const SGD = lib.optim?.SGD;
  if (typeof SGD === 'function') {
    const opt = new SGD(cur, { lr });
    return {
      run: () => {
        opt.zeroGrad();
        tidy(() => {
          const l = loss(cur);
          l.backward();
          l.item();
        });
        opt.step();
      },
      dispose: () => disposeAll(cur),
    };
  }
  return {
    run: () => {
      const next = tidy(() => {
        const l = loss(cur);
        l.backward();
        l.item();
        return noGrad(() => cur.map((p) => sub(p, mul(p.grad!, lr))));
      });
      disposeAll(cur); // frees the old parameters and their .grad
      for (const p of next) p.requiresGrad = true;
      cur = next;
    },
    dispose: () => disposeAll(cur),
  };
}

function forwardRunner(loss: () => T): { run: () => void; loss: () => number } {
  return {
    run: () =>
      noGrad(() =>
        tidy(() => {
          loss().item();
        }),
      ),
    loss: () => noGrad(() => tidy(() => loss().item())),
  };
}

function mlpForward(x: T, ps: T[], act: (t: T) => T, actLast: boolean): T {
  let h = x;
  for (let i = 0; i < ps.length; i += 2) {
    h = add(matmul(h, ps[i]), ps[i + 1]);
    if (actLast || i + 2 < ps.length) h = act(h);
  }
  return h;
}

function gemmApi(n: number, dtype: adj.DType, ta: boolean, tb: boolean): Made {
  const a = adj.randn([n, n], { seed: 11, dtype }),
    b = adj.randn([n, n], { seed: 12, dtype });
  // matmul(transpose(a), b): what a user writes for Aᵀ·B through the public API.
  return {
    run: () =>
      tidy(() => {
        matmul(ta ? transpose(a) : a, tb ? transpose(b) : b);
      }),
    dispose: () => disposeAll([a, b]),
  };
}

function gemmKernel(n: number, dtype: adj.DType, ta: boolean, tb: boolean): Made {
  const gemm = kernel(dtype === 'float32' ? 'gemm_f32' : 'gemm_f64');
  const a = adj.randn([n, n], { seed: 11, dtype }),
    b = adj.randn([n, n], { seed: 12, dtype });
  const c = Tensor.empty([n, n], dtype);
  // Packing scratch, if this build of the kernels has it; unregistered again on dispose so the
  // op-layer measurements see the library exactly as it configures itself.
  const r = runtime();
  let scratch = -1,
    scratchBytes = 0;
  if (typeof r.exports.gemm_set_scratch === 'function' && typeof r.exports.gemm_scratch_bytes === 'function') {
    scratchBytes = r.exports.gemm_scratch_bytes(n, n, n, dtype === 'float32' ? 4 : 8);
    scratch = r.arena.alloc(scratchBytes);
  }
  const [pa, pb, pc] = [a.ptr, b.ptr, c.ptr];
  const set = () => {
    if (scratch >= 0) r.exports.gemm_set_scratch(scratch, scratchBytes);
  };
  return {
    run: () => {
      set();
      gemm(pa, pb, pc, n, n, n, n, n, n, ta ? 1 : 0, tb ? 1 : 0, 0);
    },
    dispose: () => {
      if (scratch >= 0) {
        r.exports.gemm_set_scratch(0, 0);
        r.arena.free(scratch, scratchBytes);
      }
      disposeAll([a, b, c]);
    },
  };
}

function perOp(op: Extract<Workload, { kind: 'op' }>['op']): Made {
  const a = tensor([0.1, 0.2, 0.3, 0.4]),
    b = tensor([0.01, 0.01, 0.01, 0.01]);
  const m = tensor(
    Array.from({ length: 16 }, (_, i) => (i % 5) * 0.1),
    { shape: [4, 4] },
  );
  const base = { perCall: OP_CHAIN, dispose: () => disposeAll([a, b, m]) };
  switch (op) {
    case 'add':
      return {
        ...base,
        run: () => {
          for (let i = 0; i < OP_CHAIN; i++) add(a, b).dispose();
        },
      };
    case 'tanh':
      return {
        ...base,
        run: () => {
          for (let i = 0; i < OP_CHAIN; i++) tanh(a).dispose();
        },
      };
    case 'matmul4':
      return {
        ...base,
        run: () => {
          for (let i = 0; i < OP_CHAIN; i++) matmul(m, m).dispose();
        },
      };
    case 'addChain':
      return {
        ...base,
        run: () => {
          let y = add(a, b);
          for (let i = 1; i < OP_CHAIN; i++) {
            const z = add(y, b);
            y.dispose();
            y = z;
          }
          y.toArray();
          y.dispose();
        },
      };
    case 'addRecord': {
      const g = tensor([0.1, 0.2, 0.3, 0.4], { requiresGrad: true });
      return {
        ...base,
        run: () => {
          for (let i = 0; i < OP_CHAIN; i++) add(g, b).dispose();
        },
        dispose: () => disposeAll([a, b, m, g]),
      };
    }
    case 'addJit': {
      disposeAll([a, b, m]);
      if (typeof lib.compile !== 'function') return 'no compile() export yet';
      const a2 = tensor([0.1, 0.2, 0.3, 0.4]),
        b2 = tensor([0.01, 0.01, 0.01, 0.01]);
      const f = lib.compile((x: T, y: T) => add(x, y));
      return {
        perCall: OP_CHAIN,
        run: () => {
          for (let i = 0; i < OP_CHAIN; i++) f(a2, b2).dispose();
        },
        dispose: () => disposeAll([a2, b2]),
      };
    }
  }
}

function mlp(mode: 'step' | 'forward'): Made {
  const d = mlpData();
  const x = tensor(d.x, { shape: [MLP.batch, MLP.layers[0]] });
  const ps = params(d.layers);
  const loss = (p: T[]) => crossEntropy(mlpForward(x, p, relu, false), d.labels);
  if (mode === 'forward') return { ...forwardRunner(() => loss(ps)), dispose: () => disposeAll([x, ...ps]) };
  const t = trainer(ps, MLP.lr, loss);
  return {
    run: t.run,
    dispose: () => {
      t.dispose();
      x.dispose();
    },
  };
}

function deep(mode: 'step' | 'forward'): Made {
  const d = deepData();
  const x = tensor(d.x, { shape: [DEEP.batch, DEEP.width] });
  const target = tensor(d.target, { shape: [DEEP.batch, DEEP.width] });
  const ps = params(d.layers);
  const loss = (p: T[]) => mseLoss(mlpForward(x, p, tanh, true), target);
  if (mode === 'forward') return { ...forwardRunner(() => loss(ps)), dispose: () => disposeAll([x, target, ...ps]) };
  const t = trainer(ps, DEEP.lr, loss);
  return {
    run: t.run,
    dispose: () => {
      t.dispose();
      disposeAll([x, target]);
    },
  };
}

function cnn(mode: 'step' | 'forward'): Made {
  const conv2d = lib.conv2d;
  if (typeof conv2d !== 'function') return 'TODO: conv2d is not exported from src/index.ts yet';
  const d = cnnData();
  const { batch, hw, c1, c2, k, stride, pad } = CNN;
  const x = tensor(d.x, { shape: [batch, 1, hw, hw] });
  const ps = [
    tensor(d.w1, { shape: [c1, 1, k, k], requiresGrad: true }),
    tensor(d.b1, { shape: [c1], requiresGrad: true }),
    tensor(d.w2, { shape: [c2, c1, k, k], requiresGrad: true }),
    tensor(d.b2, { shape: [c2], requiresGrad: true }),
    tensor(d.fc.w, { shape: [d.fc.fanIn, d.fc.fanOut], requiresGrad: true }),
    tensor(d.fc.b, { shape: [d.fc.fanOut], requiresGrad: true }),
  ];
  const loss = (p: T[]) => {
    let h = relu(conv2d(x, p[0], p[1], { stride, padding: pad }));
    h = relu(conv2d(h, p[2], p[3], { stride, padding: pad }));
    return crossEntropy(add(matmul(reshape(h, [batch, -1]), p[4]), p[5]), d.labels);
  };
  if (mode === 'forward') return { ...forwardRunner(() => loss(ps)), dispose: () => disposeAll([x, ...ps]) };
  const t = trainer(ps, CNN.lr, loss);
  return {
    run: t.run,
    dispose: () => {
      t.dispose();
      x.dispose();
    },
  };
}

/** `init`: more init() options (bench/relaxed.ts loads a copy of this suite with { relaxedSimd: true }). */
export async function adjointSuite(version: string, init: adj.InitOptions = {}): Promise<Suite> {
  // One thread, like every peer here (TF.js setThreadsCount(1); jax-js has no workers in Node).
  await adj.init({ threads: 1, ...init });
  return {
    id: 'adjoint',
    label: 'adjoint',
    version,
    make: (w) => {
      switch (w.kind) {
        case 'gemm':
          return w.level === 'kernel' ? gemmKernel(w.n, w.dtype, w.ta, w.tb) : gemmApi(w.n, w.dtype, w.ta, w.tb);
        case 'op':
          return perOp(w.op);
        case 'mlp':
          return mlp(w.mode);
        case 'deep':
          return deep(w.mode);
        case 'cnn':
          return cnn(w.mode);
      }
    },
  };
}

/** Which kernel build this copy of the library loaded (bench/relaxed.ts). */
export const adjointBackend = (): adj.BackendInfo => adj.backend();

/** Live tensors and bytes, to check that a workload does not leak. */
export function adjointMemory(): { tensors: number; bytesInUse: number } {
  const m = adj.memory();
  return { tensors: m.tensors, bytesInUse: m.bytesInUse };
}
