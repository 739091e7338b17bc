// Gradient checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost").
// checkpoint(fn) runs fn without recording its interior and records ONE node for the call that
// saves only the inputs; that node's VJP reruns fn with recording on (from the saved inputs,
// rewrapped as fresh leaves), backpropagates the incoming cotangent through that local graph,
// and frees it before the sweep moves on. Kernels are deterministic and random draws are
// replayed (src/tensor/replay.ts), so the recomputed interior — and every gradient — is bit-identical to
// an uncheckpointed run. (One exception: a tensor used several times inside a segment AND
// elsewhere gets its in-segment contributions summed first, a different float grouping.)
// planSegments() and sequentialForward() split a chain of layers into segments (nn.Sequential's
// `checkpoint` option).
import { ArgumentError, GradError } from '../errors.js';
import { Tensor, isTensor } from '../ops/tensor.js';
import { BYTES } from '../tensor/dtype.js';
import { runScoped } from '../tensor/scope.js';
import { modes, withMode } from '../ops/modes.js';
import { apply, observingInputs } from '../ops/apply.js';
import type { Saved } from '../ops/rule.js';
import { zerosLike } from '../ops/api.js';
import { backward } from '../ops/backward.js';
import { recordDraws, replayDraws } from '../tensor/replay.js';
import { describe } from '../args.js';

type Fn = (...xs: Tensor[]) => Tensor;

function output(name: string, y: unknown): Tensor {
  if (!isTensor(y)) throw new ArgumentError(`checkpoint(${name}): the function must return a Tensor, got ${describe(y)}`);
  return y;
}

/** The id every tensor created from now on exceeds (a zero-byte probe: no memory is counted). */
function watermark(): number {
  const probe = Tensor.empty([0], 'float32');
  probe.dispose();
  return probe.id;
}

interface FirstRun {
  /** Tensors from outside fn (not arguments) that require grad: parameters read through fn's closure. */
  readonly captured: Tensor[];
  /** The random draws fn made, for the recomputation to replay. */
  readonly draws: readonly unknown[];
}

/** fn under noGrad, watching which outside tensors requiring grad it reads; its interior is freed on return. */
function firstRun(name: string, fn: Fn, xs: readonly Tensor[]): FirstRun & { y: Tensor } {
  const mark = watermark();
  const read = new Set<Tensor>();
  const note = (ins: readonly Tensor[]) => { for (const t of ins) if (t.requiresGrad) read.add(t); };
  const [out, draws] = recordDraws(() =>
    runScoped(() => withMode('record', false, () => observingInputs(note, () => output(name, fn(...xs)))), isTensor));
  if (out.requiresGrad) read.add(out); // fn may return a parameter without using it in an op
  const args = new Set(xs);
  const captured = [...read].filter((t) => t.id <= mark && !args.has(t));
  const inner = captured.find((t) => t.node !== null);
  if (inner !== undefined) {
    if (out.id > mark) out.dispose();
    throw new GradError(
      `checkpoint(${name}): the function reads a tensor of shape [${inner.shape}] that was computed outside it and requires grad; ` +
        'pass it as an argument so its gradient can flow through the checkpoint',
    );
  }
  return { y: out.id > mark ? out : out.alias(), captured, draws };
}

/**
 * The backward pass of one segment: rerun fn with recording on, from fresh leaves over the saved
 * inputs and with the first run's random draws, then backpropagate g through that local graph.
 * Returns one cotangent per node input: the arguments' from their fresh leaves, the captured
 * parameters' from their .grad, borrowed for the occasion so the outer sweep stays the one that
 * writes .grad (all at once, at its end) exactly as it would without the checkpoint.
 */
function recompute(name: string, fn: Fn, arity: number, first: FirstRun, g: Tensor, s: Saved, needs: readonly boolean[]): (Tensor | null)[] {
  const args = s.x.slice(0, arity).map((t, i) => {
    const a = t!.alias();
    a.requiresGrad = needs[i];
    return a;
  });
  const y = runScoped(() => withMode('record', true, () => replayDraws(first.draws, () => output(name, fn(...args)))), isTensor);
  if (y.dtype !== g.dtype || y.shape.length !== g.shape.length || y.shape.some((d, i) => d !== g.shape[i])) {
    throw new GradError(`checkpoint(${name}): the recomputation gave ${y.dtype} [${y.shape}], the first run ${g.dtype} [${g.shape}]`);
  }
  if (!y.requiresGrad) return needs.map(() => null);
  const lent = first.captured.map((t) => t.grad);
  for (const t of first.captured) t.grad = null;
  const take = (t: Tensor): Tensor | null => {
    const c = t.grad;
    t.grad = null;
    return c;
  };
  try {
    backward(y, g, { consumeSeed: true }); // g is freed after the root's VJP, as in one uncheckpointed sweep
    return [...args.map(take), ...first.captured.map(take)];
  } finally {
    first.captured.forEach((t, i) => {
      t.grad?.dispose();
      t.grad = lent[i];
    });
  }
}

/**
 * fn wrapped so that a call keeps only its inputs for the backward pass and recomputes its
 * interior then. Parameters fn reads through its closure receive their gradients as usual.
 * Under noGrad (or jvp, which records nothing) it is an ordinary call; forward-mode tangents
 * flow through it either way. Nested checkpoints are recomputed recursively.
 */
export function checkpoint<F extends Fn>(fn: F): F {
  if (typeof fn !== 'function') throw new ArgumentError(`checkpoint: fn must be a function, got ${describe(fn)}`);
  const name = fn.name || 'anonymous';
  return ((...xs: Tensor[]) => {
    xs.forEach((x, i) => {
      if (!isTensor(x)) throw new ArgumentError(`checkpoint(${name}): argument ${i} must be a Tensor, got ${describe(x)}`);
      x.check(`checkpoint(${name})`);
    });
    if (!modes.record) return runScoped(() => output(name, fn(...xs)), isTensor);
    const { y, captured, draws } = firstRun(name, fn, xs);
    const first: FirstRun = { captured, draws };
    let pending: Tensor | null = y; // the output, a handle of the caller's scope without a node yet
    return apply('checkpoint', [...xs, ...first.captured], {
      name,
      forward: (ins) => {
        if (pending === null) return firstRun(name, fn, ins.slice(0, xs.length)).y; // applied again (a tracer's replay)
        const out = pending;
        pending = null; // the node keeps these params: they must not hold the output
        return out;
      },
      vjp: (g, s, needs) => recompute(name, fn, xs.length, first, g, s, needs),
      jvp: (out) => (out.tangent === null ? zerosLike(out) : out.tangent), // carried out of the first run
    });
  }) as F;
}

// ---------------------------------------------------------------------------------------------
// Segment planning. Memory model (bytes of activations; weights, gradients and the backward's
// few transient buffers come on top): layer l keeps layerBytes[l] (its output) while its
// segment is live. The backward pass visits segments last to first; when it reaches segment j,
// what is alive is every output kept by the earlier segments — the last layer's output of a
// checkpointed segment (the next one's input), every layer's of a stored one — plus all of
// segment j (recomputed, or stored), plus the network's output, which the loss's caller holds
// through the whole backward pass. The planned peak is the largest such sum over j. The last
// segment is always stored: it is the first to run backward, so recomputing it saves nothing.

export type CheckpointPlan = 'sqrt' | number | { readonly maxBytes: number };

export interface Segment {
  /** Layers [start, end). */
  readonly start: number;
  readonly end: number;
  /** Recomputed in the backward pass (false: its activations are stored). */
  readonly checkpoint: boolean;
}

export interface SegmentPlan {
  readonly segments: readonly Segment[];
  /** The activation peak under the model above. */
  readonly peakBytes: number;
  /** Layers whose forward runs twice. */
  readonly recomputed: number;
}

/** Checks a plan value; `where` names the caller in the message. */
export function checkPlan(plan: unknown, where = 'checkpoint'): CheckpointPlan {
  if (plan === 'sqrt') return plan;
  if (typeof plan === 'number' && Number.isInteger(plan) && plan >= 1) return plan;
  const m = (plan as { maxBytes?: unknown } | null)?.maxBytes;
  if (typeof plan === 'object' && plan !== null && typeof m === 'number' && Number.isFinite(m) && m > 0) return plan as CheckpointPlan;
  throw new ArgumentError(`${where}: checkpoint must be 'sqrt', a positive integer number of segments, or { maxBytes: positive number }, got ${describe(plan)}`);
}

/** The network output's bytes while a segment ending at layer e runs backward (its own when e is last). */
const outputHeld = (bytes: readonly number[]) => (e: number): number => (e < bytes.length - 1 ? bytes[bytes.length - 1] : 0);

function prefixSums(bytes: readonly number[]): number[] {
  const s = [0];
  for (const b of bytes) s.push(s[s.length - 1] + b);
  return s;
}

/** The planned peak and recomputed-layer count of a segmentation. */
export function planOf(bytes: readonly number[], segments: readonly Segment[]): SegmentPlan {
  const sum = prefixSums(bytes), held = outputHeld(bytes);
  let kept = 0, peakBytes = 0, recomputed = 0;
  for (const s of segments) {
    const all = sum[s.end] - sum[s.start];
    peakBytes = Math.max(peakBytes, kept + all + held(s.end - 1));
    kept += s.checkpoint ? bytes[s.end - 1] : all;
    if (s.checkpoint) recomputed += s.end - s.start;
  }
  return { segments, peakBytes, recomputed };
}

/** Up to `count` checkpointed segments within M: fewer bytes kept is always better for what follows. */
function fewestKept(sum: readonly number[], bytes: readonly number[], M: number, count: number) {
  const L = bytes.length, held = outputHeld(bytes);
  // kept[m][i]: least bytes kept once exactly m segments cover layers [0, i); from[m][i]: the m-th one's start.
  const kept = Array.from({ length: count + 1 }, () => new Array<number>(L + 1).fill(Infinity));
  const from = Array.from({ length: count + 1 }, () => new Array<number>(L + 1).fill(-1));
  kept[0][0] = 0;
  for (let m = 1; m <= count; m++) {
    for (let i = 0; i < L; i++) {
      const k = kept[m - 1][i];
      if (k === Infinity) continue;
      for (let e = i; e < L && k + sum[e + 1] - sum[i] <= M; e++) {
        if (k + sum[e + 1] - sum[i] + held(e) > M) continue;
        if (k + bytes[e] < kept[m][e + 1]) {
          kept[m][e + 1] = k + bytes[e];
          from[m][e + 1] = i;
        }
      }
    }
  }
  return { kept, from };
}

/** `count` segments with the smallest planned peak (ties: the longest stored last segment). */
function bestOfCount(bytes: readonly number[], count: number): Segment[] {
  const L = bytes.length, sum = prefixSums(bytes);
  // The last segment [s, L) is stored; find the least M for which some s fits, by bisection.
  const lastStart = (M: number): { s: number; from: number[][] } | null => {
    const { kept, from } = fewestKept(sum, bytes, M, count - 1);
    for (let s = count - 1; s < L; s++) if (kept[count - 1][s] + sum[L] - sum[s] <= M) return { s, from };
    return null;
  };
  let lo = 0, hi = Math.ceil(sum[L]);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (lastStart(mid) !== null) hi = mid;
    else lo = mid + 1;
  }
  const { s, from } = lastStart(hi)!;
  const segments: Segment[] = [{ start: s, end: L, checkpoint: false }];
  for (let m = count - 1, e = s; m > 0; m--) {
    const start = from[m][e];
    segments.unshift({ start, end: e, checkpoint: true });
    e = start;
  }
  return segments;
}

/** The least budget any segmentation fits (a stored layer costs what a one-layer segment does). */
export function minimumBudget(bytes: readonly number[]): number {
  const L = bytes.length, sum = prefixSums(bytes), held = outputHeld(bytes);
  const fits = (M: number): boolean => {
    // kept[i]: least bytes kept by segments covering [0, i) within M; fewer kept is always better later.
    const kept = new Array<number>(L + 1).fill(Infinity);
    kept[0] = 0;
    for (let i = 0; i < L; i++) {
      for (let e = i; kept[i] !== Infinity && e < L && kept[i] + sum[e + 1] - sum[i] <= M; e++) {
        if (kept[i] + sum[e + 1] - sum[i] + held(e) <= M) kept[e + 1] = Math.min(kept[e + 1], kept[i] + bytes[e]);
      }
    }
    return kept[L] !== Infinity;
  };
  let lo = 0, hi = Math.ceil(sum[L]);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

/**
 * Under a budget: the segmentation with the fewest recomputed layers whose planned peak is at
 * most M. Dynamic programming over (next layer, layers recomputed so far) keeping the least
 * bytes kept; a layer may be stored on its own (kept whole, no recompute) or close a
 * checkpointed segment (only its output kept).
 */
function fewestRecomputed(bytes: readonly number[], M: number): Segment[] {
  const L = bytes.length, sum = prefixSums(bytes), held = outputHeld(bytes);
  type Step = { prev: number; r: number; start: number; checkpoint: boolean };
  const kept = Array.from({ length: L + 1 }, () => new Array<number>(L + 1).fill(Infinity));
  const how: (Step | null)[][] = Array.from({ length: L + 1 }, () => new Array<Step | null>(L + 1).fill(null));
  kept[0][0] = 0;
  for (let i = 0; i < L; i++) {
    for (let r = 0; r <= i; r++) {
      const k = kept[i][r];
      if (k === Infinity) continue;
      if (k + bytes[i] + held(i) <= M && k + bytes[i] < kept[i + 1][r]) {
        kept[i + 1][r] = k + bytes[i];
        how[i + 1][r] = { prev: i, r, start: i, checkpoint: false };
      }
      for (let e = i; e < L && k + sum[e + 1] - sum[i] <= M; e++) {
        const r2 = r + e - i + 1;
        if (k + sum[e + 1] - sum[i] + held(e) > M) continue;
        if (k + bytes[e] < kept[e + 1][r2]) {
          kept[e + 1][r2] = k + bytes[e];
          how[e + 1][r2] = { prev: i, r, start: i, checkpoint: true };
        }
      }
    }
  }
  const r = kept[L].findIndex((k) => k !== Infinity);
  const segments: Segment[] = [];
  for (let i = L, rr = r; i > 0;) {
    const h = how[i][rr]!;
    const last = segments[0];
    if (!h.checkpoint && last !== undefined && !last.checkpoint) segments[0] = { start: h.start, end: last.end, checkpoint: false };
    else segments.unshift({ start: h.start, end: i, checkpoint: h.checkpoint });
    i = h.prev;
    rr = h.r;
  }
  return segments;
}

/**
 * Splits layers with the given activation bytes into segments: 'sqrt' → ⌈√L⌉ segments, k → k
 * (at most L), both sized for the smallest planned peak; { maxBytes } → the fewest recomputed
 * layers whose planned peak fits, or an ArgumentError naming the least budget that fits.
 */
export function planSegments(layerBytes: readonly number[], plan: CheckpointPlan): SegmentPlan {
  if (!Array.isArray(layerBytes) || layerBytes.some((b) => typeof b !== 'number' || !Number.isFinite(b) || b < 0)) {
    throw new ArgumentError(`planSegments: layerBytes must be an array of non-negative byte counts, got ${describe(layerBytes)}`);
  }
  const p = checkPlan(plan, 'planSegments');
  const L = layerBytes.length;
  if (L === 0) return { segments: [], peakBytes: 0, recomputed: 0 };
  if (typeof p === 'object') {
    const least = minimumBudget(layerBytes);
    if (p.maxBytes < least) {
      throw new ArgumentError(
        `checkpoint: maxBytes ${p.maxBytes} is below the least activation budget these ${L} layers fit in, ${least} bytes ` +
          `(the largest layer alone keeps ${Math.max(...layerBytes)} bytes)`,
      );
    }
    return planOf(layerBytes, fewestRecomputed(layerBytes, p.maxBytes));
  }
  const count = Math.min(L, p === 'sqrt' ? Math.ceil(Math.sqrt(L)) : p);
  return planOf(layerBytes, bestOfCount(layerBytes, count));
}

// ---------------------------------------------------------------------------------------------
// Running a chain of layers under a plan (nn.Sequential's forward).

export interface Layer {
  forward(x: Tensor): Tensor;
}

/** Applies layers in order, disposing each intermediate handle once the next layer has consumed it. */
function chain(layers: readonly Layer[], x: Tensor): Tensor {
  let h = x;
  for (const m of layers) {
    const next = m.forward(h);
    // Only the graph's saved views keep an intermediate alive now, and backward frees those as it goes.
    if (h !== x && next !== h) h.dispose();
    h = next;
  }
  return h;
}

/** Plans per layer chain and input signature, measured on the first call. */
const plans = new WeakMap<readonly Layer[], Map<string, SegmentPlan>>();

/** Output bytes of each layer for input x, from a run under noGrad that frees as it goes. */
function measure(layers: readonly Layer[], x: Tensor): number[] {
  const bytes: number[] = [];
  withMode('record', false, () => {
    let h = x;
    for (const m of layers) {
      const next = m.forward(h);
      bytes.push(next.size * BYTES[next.dtype]);
      if (h !== x && next !== h) h.dispose();
      h = next;
    }
    if (h !== x) h.dispose();
  });
  return bytes;
}

/**
 * layers applied to x, intermediates freed as soon as they are consumed; with a plan (and while
 * recording), split into segments run through checkpoint(). The plan is made on the first call
 * for each input shape from the layers' measured output bytes; that measuring run's random
 * draws are replayed by the real one, so the RNG streams advance exactly once per call.
 */
export function sequentialForward(layers: readonly Layer[], x: Tensor, plan?: CheckpointPlan): Tensor {
  if (plan === undefined || !modes.record || layers.length === 0) return chain(layers, x);
  let byShape = plans.get(layers);
  if (byShape === undefined) plans.set(layers, (byShape = new Map()));
  const key = `${x.dtype}[${x.shape}]`;
  const known = byShape.get(key);
  if (known !== undefined) return runSegments(layers, x, known);
  const [bytes, draws] = recordDraws(() => measure(layers, x));
  const made = planSegments(bytes, plan);
  byShape.set(key, made);
  return replayDraws(draws, () => runSegments(layers, x, made));
}

function runSegments(layers: readonly Layer[], x: Tensor, plan: SegmentPlan): Tensor {
  let h = x;
  for (const s of plan.segments) {
    const part = layers.slice(s.start, s.end);
    const run = (input: Tensor): Tensor => chain(part, input);
    Object.defineProperty(run, 'name', { value: `layers ${s.start}..${s.end - 1}` });
    const next = s.checkpoint ? checkpoint(run)(h) : run(h);
    if (h !== x && next !== h) h.dispose();
    h = next;
  }
  return h;
}
