// Segment planning for checkpointed chains of layers (nn.Sequential's `checkpoint` option).
// Memory model (bytes of activations; weights, gradients and the backward's
// few transient buffers come on top): layer l keeps layerBytes[l] (its output) while its
// segment is live. The backward pass visits segments last to first; when it reaches segment j,
// what is alive is every output kept by the earlier segments — the last layer's output of a
// checkpointed segment (the next one's input), every layer's of a stored one — plus all of
// segment j (recomputed, or stored), plus the network's output, which the loss's caller holds
// through the whole backward pass. The planned peak is the largest such sum over j. The last
// segment is always stored: it is the first to run backward, so recomputing it saves nothing.
import { ArgumentError } from '../errors.js';
import { describe } from '../args.js';

/**
 * How `nn.Sequential` checkpoints its layers: `'sqrt'` (about √n segments, Chen et al. 2016), a
 * segment count, or `{ maxBytes }` (the fewest recomputed layers whose planned peak fits the budget).
 */
export type CheckpointPlan =
  | 'sqrt'
  | number
  | {
      /** The activation-memory budget in bytes. */
      readonly maxBytes: number;
    };

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
  throw new ArgumentError(
    `${where}: checkpoint must be 'sqrt', a positive integer number of segments, or { maxBytes: positive number }, got ${describe(plan)}`,
  );
}

/** The network output's bytes while a segment ending at layer e runs backward (its own when e is last). */
const outputHeld =
  (bytes: readonly number[]) =>
  (e: number): number =>
    e < bytes.length - 1 ? bytes[bytes.length - 1] : 0;

function prefixSums(bytes: readonly number[]): number[] {
  const s = [0];
  for (const b of bytes) s.push(s[s.length - 1] + b);
  return s;
}

/** The planned peak and recomputed-layer count of a segmentation. */
export function planOf(bytes: readonly number[], segments: readonly Segment[]): SegmentPlan {
  const sum = prefixSums(bytes),
    held = outputHeld(bytes);
  let kept = 0,
    peakBytes = 0,
    recomputed = 0;
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
  const L = bytes.length,
    held = outputHeld(bytes);
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
  const L = bytes.length,
    sum = prefixSums(bytes);
  // The last segment [s, L) is stored; find the least M for which some s fits, by bisection.
  const lastStart = (M: number): { s: number; from: number[][] } | null => {
    const { kept, from } = fewestKept(sum, bytes, M, count - 1);
    for (let s = count - 1; s < L; s++) if (kept[count - 1][s] + sum[L] - sum[s] <= M) return { s, from };
    return null;
  };
  let lo = 0,
    hi = Math.ceil(sum[L]);
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
  const L = bytes.length,
    sum = prefixSums(bytes),
    held = outputHeld(bytes);
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
  let lo = 0,
    hi = Math.ceil(sum[L]);
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
  const L = bytes.length,
    sum = prefixSums(bytes),
    held = outputHeld(bytes);
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
  for (let i = L, rr = r; i > 0; ) {
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
