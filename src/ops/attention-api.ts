// scaledDotProductAttention: PyTorch's F.scaled_dot_product_attention on the fused attention
// primitive (src/ops/attention.ts). Here: argument checks, broadcasting of the leading axes,
// the mask's layout, and the packed result's output columns.
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import type { Tensor } from './tensor.js';
import { seedOf } from './create.js';
import { kernel } from '../wasm/module.js';
import { apply } from './apply.js';
import { broadcastShapes, sizeOf } from './launch.js';
import { composite } from './composite.js';
import { reshape, broadcastTo, slice, log, cast, ne, tensorArg } from './api.js';
import type { AttentionParams, MaskLayout } from './attention.js';
import { describe, tooMany, optionsArg, boolArg } from '../args.js';

/** Options for {@link scaledDotProductAttention} (PyTorch's `F.scaled_dot_product_attention` arguments in camelCase). */
export interface AttentionOptions {
  /** Each query i attends to keys j ≤ i (PyTorch's is_causal: top-left aligned when Tq ≠ Tk). */
  causal?: boolean;
  /**
   * Broadcast against the weights [..., Tq, Tk]: a float mask is added to the scores; an int32
   * mask is boolean (nonzero = attend, as PyTorch's boolean masks). A float mask is differentiable.
   */
  mask?: Tensor | null;
  /** Multiplies q·kᵀ; default 1/√d. */
  scale?: number;
  /** Dropout on the attention weights, replayed exactly by the backward pass. */
  dropoutP?: number;
  /** Seed of the dropout mask; omitted, the next of a fixed sequence. */
  seed?: number;
}

const OP = 'scaledDotProductAttention';

function checkOperands(q: Tensor, k: Tensor, v: Tensor): number[] {
  for (const [name, t] of [
    ['q', q],
    ['k', k],
    ['v', v],
  ] as const) {
    tensorArg(OP, t, name);
    if (t.shape.length < 2) throw new ShapeError(`${OP}: ${name} must be at least 2-D [..., T, d], got shape [${t.shape}]`);
    if (t.dtype !== q.dtype) throw new DtypeError(`${OP}: q is ${q.dtype} but ${name} is ${t.dtype} (cast with astype)`);
  }
  if (q.dtype !== 'float32' && q.dtype !== 'float64') throw new DtypeError(`${OP}: q, k and v must be float32 or float64, got ${q.dtype}`);
  const r = (t: Tensor, i: number) => t.shape[t.shape.length + i];
  if (r(q, -1) !== r(k, -1)) throw new ShapeError(`${OP}: q [${q.shape}] and k [${k.shape}] must share the last axis (d)`);
  if (r(k, -2) !== r(v, -2)) throw new ShapeError(`${OP}: k [${k.shape}] and v [${v.shape}] must have the same number of keys (axis -2)`);
  try {
    return broadcastShapes(OP, broadcastShapes(OP, q.shape.slice(0, -2), k.shape.slice(0, -2)), v.shape.slice(0, -2));
  } catch {
    throw new ShapeError(`${OP}: the leading axes of q [${q.shape}], k [${k.shape}] and v [${v.shape}] do not broadcast together`);
  }
}

/** t broadcast over the leading axes `lead` and flattened to [N, T, c]. */
function asHeads(t: Tensor, lead: readonly number[]): Tensor {
  const [T, c] = t.shape.slice(-2);
  const full = sizeOf(t.shape.slice(0, -2)) === sizeOf(lead) ? t : broadcastTo(t, [...lead, T, c]);
  return reshape(full, [sizeOf(lead), T, c]);
}

/**
 * The mask as the kernels read it — rank lead + 2, last axis Tk — and its layout: the leading
 * axes it does not broadcast over must form one run (then head n reads block ⌊n / div⌋ mod mod);
 * otherwise it is expanded to every head.
 */
function prepareMask(mask: Tensor, q: Tensor, lead: readonly number[], Tq: number, Tk: number): { m: Tensor; layout: MaskLayout } {
  tensorArg(OP, mask, 'mask');
  const R = lead.length + 2,
    want = [...lead, Tq, Tk];
  let ok = mask.shape.length <= R;
  try {
    ok &&= broadcastShapes(OP, mask.shape, want).every((d, i) => d === want[i]);
  } catch {
    ok = false;
  }
  if (!ok) throw new ShapeError(`${OP}: mask of shape [${mask.shape}] does not broadcast to the attention weights' shape [${want}]`);
  let m: Tensor;
  if ((mask.dtype as string) === 'int32')
    m = log(cast(ne(mask, 0), q.dtype)); // nonzero → 0, 0 → −∞ (any nonzero is true, as a PyTorch bool)
  else if (mask.dtype !== q.dtype) throw new DtypeError(`${OP}: mask is ${mask.dtype} but q is ${q.dtype} (cast with astype)`);
  else m = mask;
  const shape = [...new Array<number>(R - mask.shape.length).fill(1), ...mask.shape];
  m = reshape(m, shape);
  if (shape[R - 1] !== Tk) m = broadcastTo(m, ((shape[R - 1] = Tk), shape)); // the kernels read whole key rows
  const Mr = shape[R - 2],
    kept = lead.map((_, a) => a).filter((a) => shape[a] !== 1 && lead[a] !== 1);
  const contiguous = kept.every((a, i) => i === 0 || a === kept[i - 1] + 1);
  if (!contiguous) {
    m = broadcastTo(m, [...lead, Mr, Tk]);
    return { m, layout: { div: 1, mod: sizeOf(lead), stride: Mr * Tk, row: Mr === 1 ? 0 : Tk } };
  }
  const a1 = kept.length ? kept[kept.length - 1] : lead.length - 1;
  const mod = sizeOf(kept.map((a) => lead[a])),
    div = sizeOf(lead.slice(a1 + 1));
  return { m, layout: { div, mod, stride: kept.length ? Mr * Tk : 0, row: Mr === 1 ? 0 : Tk } };
}

function checkOptions(o: AttentionOptions): void {
  if (o === null || typeof o !== 'object') throw new ArgumentError(`${OP}: options must be an object, got ${describe(o)}`);
  optionsArg(OP, o, ['causal', 'mask', 'scale', 'dropoutP', 'seed']);
  boolArg(OP, 'causal', o.causal, false); // `causal: 1` would otherwise attend everywhere: causal is `=== true`
  const p = o.dropoutP ?? 0;
  if (typeof p !== 'number' || !(p >= 0 && p < 1))
    throw new ArgumentError(`${OP}: dropoutP must be a number in [0, 1), got ${describe(p)}`);
  if (o.scale !== undefined && (typeof o.scale !== 'number' || !Number.isFinite(o.scale)))
    throw new ArgumentError(`${OP}: scale must be a finite number, got ${describe(o.scale)}`);
}

/**
 * softmax(q·kᵀ·scale + mask)·v over q [..., Tq, d], k [..., Tk, d], v [..., Tk, dv] (leading
 * axes broadcast) → [..., Tq, dv], as PyTorch's F.scaled_dot_product_attention. One fused
 * primitive: memory O(T·d) both ways. A query row whose every key is masked gives zeros.
 */
export function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, opts: AttentionOptions = {}): Tensor {
  if (arguments.length > 4) throw tooMany('scaledDotProductAttention', 4, arguments.length);
  return attentionDrawn(q, k, v, opts, () => opts.seed, opts?.seed != null); // null: an automatic seed (seedOf)
}

/**
 * scaledDotProductAttention with the dropout seed from draw() (undefined: the next automatic
 * seed), called once per forward pass, again on every replay of a compiled step (nn modules
 * pass their per-call counter).
 */
export function attentionDrawn(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  opts: AttentionOptions,
  draw: () => number | undefined,
  given = false,
): Tensor {
  const lead = checkOperands(q, k, v);
  checkOptions(opts);
  const Tq = q.shape[q.shape.length - 2],
    Tk = k.shape[k.shape.length - 2],
    d = q.shape[q.shape.length - 1],
    dv = v.shape[v.shape.length - 1];
  const dropoutP = opts.dropoutP ?? 0;
  const seed = { value: [0, 0] as const, draw: () => seedOf(draw(), OP), given };
  const scale = opts.scale ?? 1 / kernel('sqrt_scalar')(d);
  return composite(() => {
    const prepared = opts.mask == null ? null : prepareMask(opts.mask, q, lead, Tq, Tk);
    const p: AttentionParams = { scale, causal: opts.causal === true, dropoutP, seed, lead, mask: prepared?.layout ?? null };
    const xs = [asHeads(q, lead), asHeads(k, lead), asHeads(v, lead)];
    const y = apply('attention', prepared === null ? xs : [...xs, prepared.m], p);
    const N = sizeOf(lead);
    return reshape(slice(y, [0, 0, 0], [N, Tq, dv]), [...lead, Tq, dv]);
  });
}
