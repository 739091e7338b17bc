// An optimizer's state as a flat record of tensors, so it saves as safetensors next to the
// model's weights and a resumed run continues bit for bit. PyTorch's nested state_dict
// ({ state: { i: {...} }, param_groups: [{ ..., params: [i...] }] }) flattened to keys:
//   state.<i>.<buffer>          a copy of parameter i's buffer (exp_avg, exp_avg_sq, momentum_buffer)
//   state.<i>.step              float64 [] — updates applied to parameter i (Adam, AdamW)
//   param_groups.<g>.params     float64 [n] — the indices i of group g's parameters
//   param_groups.<g>.<hyper>    float64 [] (betas: [2]; booleans 0/1) — lr, weight_decay, ...
// Parameters are numbered 0, 1, … through the groups in order, as PyTorch does; every number is
// a float64 so it round-trips exactly.
import { ArgumentError, FormatError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { fromValues } from '../ops/create.js';
import type { ParamGroup } from './optimizer.js';
import { describe } from '../args.js';

/** How a hyper-parameter is stored: a number, a pair (betas) or a boolean (0/1). */
type HyperKind = 'number' | 'pair' | 'bool';

/** What one optimizer keeps: buffer names, whether it counts steps, and its hyper-parameters. */
export interface StateCodec {
  buffers: readonly string[];
  step: boolean;
  /** [name in a group, key in the state dict (PyTorch's), kind]. */
  hypers: readonly (readonly [string, string, HyperKind])[];
}

interface ParamState {
  bufs?: Tensor[];
  step?: number;
}

const scalar = (v: number) => fromValues([v], [], 'float64');
/** A copy of t (state dicts are rare: a round trip through JS is fine). */
const copy = (t: Tensor, shape: readonly number[] = t.shape) => fromValues(t.toArray(), shape, t.dtype);

function encodeHyper(v: unknown, kind: HyperKind): Tensor {
  if (kind === 'pair') return fromValues(v as readonly number[], [2], 'float64');
  return scalar(kind === 'bool' ? (v ? 1 : 0) : (v as number));
}

/** The flat record of `groups` and their parameters' state. */
export function writeStateDict(
  codec: StateCodec,
  groups: readonly ParamGroup[],
  stateOf: (p: Tensor) => ParamState,
): Record<string, Tensor> {
  const out: Record<string, Tensor> = {};
  let i = 0;
  groups.forEach((g, gi) => {
    const indices: number[] = [];
    for (const p of g.params) {
      const { bufs, step } = stateOf(p);
      if (bufs !== undefined) codec.buffers.forEach((name, b) => (out[`state.${i}.${name}`] = copy(bufs[b])));
      if (codec.step && step !== undefined) out[`state.${i}.step`] = scalar(step);
      indices.push(i++);
    }
    out[`param_groups.${gi}.params`] = fromValues(indices, [indices.length], 'float64');
    for (const [name, key, kind] of codec.hypers)
      out[`param_groups.${gi}.${key}`] = encodeHyper((g as unknown as Record<string, unknown>)[name], kind);
    if (g.initialLr !== undefined) out[`param_groups.${gi}.initial_lr`] = scalar(g.initialLr);
  });
  return out;
}

/** A loaded state dict: each group's hyper-parameters (group names) and each parameter's state. */
export interface LoadedState {
  groups: Record<string, unknown>[];
  state: Map<Tensor, ParamState>;
}

const KEY = /^(state|param_groups)\.(\d+)\.([a-z_0-9]+)$/;

/** Splits the record by key; refuses keys that are not ours. */
function parseKeys(
  op: string,
  record: Record<string, Tensor>,
): { groups: Map<number, Map<string, Tensor>>; state: Map<number, Map<string, Tensor>> } {
  if (record === null || typeof record !== 'object')
    throw new ArgumentError(`${op}: expected a record of tensors from stateDict(), got ${describe(record)}`);
  const groups = new Map<number, Map<string, Tensor>>(),
    state = new Map<number, Map<string, Tensor>>();
  for (const [key, t] of Object.entries(record)) {
    const m = KEY.exec(key);
    if (m === null)
      throw new FormatError(
        `${op}: unexpected key '${key}' (an optimizer state dict has state.<i>.<buffer> and param_groups.<g>.<option> keys)`,
      );
    if (!(t instanceof Tensor)) throw new ArgumentError(`${op}: '${key}' must be a Tensor, got ${typeof t}`);
    const into = m[1] === 'state' ? state : groups,
      n = Number(m[2]);
    if (!into.has(n)) into.set(n, new Map());
    into.get(n)!.set(m[3], t.check(op));
  }
  return { groups, state };
}

/** The values of t as plain numbers, with the element count checked. */
function numbers(op: string, key: string, t: Tensor, count: number | null): number[] {
  const v = Array.from(t.toArray());
  if (count !== null && (v.length !== count || (count === 1 && t.shape.length !== 0))) {
    throw new ShapeError(`${op}: '${key}' has shape [${t.shape}], expected ${count === 1 ? '[] (a number)' : `[${count}]`}`);
  }
  return v;
}

/** Reads one saved group's hyper-parameters under their group names. */
function readHypers(op: string, codec: StateCodec, gi: number, saved: Map<string, Tensor>): Record<string, unknown> {
  const h: Record<string, unknown> = {};
  const known = new Set(['params', 'initial_lr', ...codec.hypers.map(([, key]) => key)]);
  for (const key of saved.keys())
    if (!known.has(key))
      throw new FormatError(`${op}: unexpected key 'param_groups.${gi}.${key}' (this optimizer's options: ${[...known].join(', ')})`);
  for (const [name, key, kind] of codec.hypers) {
    const t = saved.get(key);
    if (t === undefined) throw new FormatError(`${op}: the state dict lacks 'param_groups.${gi}.${key}'`);
    const v = numbers(op, `param_groups.${gi}.${key}`, t, kind === 'pair' ? 2 : 1);
    h[name] = kind === 'pair' ? [v[0], v[1]] : kind === 'bool' ? v[0] !== 0 : v[0];
  }
  const initial = saved.get('initial_lr');
  if (initial !== undefined) h.initialLr = numbers(op, `param_groups.${gi}.initial_lr`, initial, 1)[0];
  return h;
}

/** Parameter p's state from its saved entries (buffers cast to p's dtype). */
function readParamState(op: string, codec: StateCodec, i: number, p: Tensor, saved: Map<string, Tensor>): ParamState {
  const known = new Set([...codec.buffers, ...(codec.step ? ['step'] : [])]);
  for (const key of saved.keys())
    if (!known.has(key)) throw new FormatError(`${op}: unexpected key 'state.${i}.${key}' (this optimizer keeps ${[...known].join(', ')})`);
  const have = codec.buffers.filter((b) => saved.has(b));
  if (have.length !== 0 && have.length !== codec.buffers.length) {
    throw new FormatError(`${op}: state.${i} has ${have.join(', ')} but not ${codec.buffers.filter((b) => !saved.has(b)).join(', ')}`);
  }
  const out: ParamState = {};
  if (have.length !== 0) {
    out.bufs = codec.buffers.map((b) => {
      const t = saved.get(b)!;
      if (t.shape.length !== p.shape.length || t.shape.some((d, k) => d !== p.shape[k])) {
        throw new ShapeError(`${op}: 'state.${i}.${b}' has shape [${t.shape}] but parameter ${i} has shape [${p.shape}]`);
      }
      return fromValues(t.toArray(), p.shape, p.dtype); // a copy, cast to the parameter's dtype
    });
  }
  const step = saved.get('step');
  if (step !== undefined) {
    const s = numbers(op, `state.${i}.step`, step, 1)[0];
    if (!Number.isSafeInteger(s) || s < 0) throw new FormatError(`${op}: 'state.${i}.step' must be a non-negative integer, got ${s}`);
    out.step = s;
  }
  if (codec.step && (out.step === undefined) !== (out.bufs === undefined))
    throw new FormatError(`${op}: state.${i} must have both its buffers and its step, or neither`);
  return out;
}

/** Checks `record` against the optimizer's groups and decodes it (nothing is changed yet). */
export function readStateDict(name: string, codec: StateCodec, groups: readonly ParamGroup[], record: Record<string, Tensor>): LoadedState {
  const op = `${name}.loadStateDict`;
  const keys = parseKeys(op, record);
  if (keys.groups.size !== groups.length || [...keys.groups.keys()].some((g) => g >= groups.length)) {
    throw new ArgumentError(`${op}: the state dict has ${keys.groups.size} parameter groups but this optimizer has ${groups.length}`);
  }
  const ids = new Map<number, Tensor>();
  const hypers = groups.map((g, gi) => {
    const saved = keys.groups.get(gi)!;
    const idx = saved.get('params');
    if (idx === undefined) throw new FormatError(`${op}: the state dict lacks 'param_groups.${gi}.params'`);
    const list = numbers(op, `param_groups.${gi}.params`, idx, null);
    if (list.length !== g.params.length) {
      throw new ArgumentError(
        `${op}: parameter group ${gi} has ${list.length} parameters in the state dict but ${g.params.length} in this optimizer`,
      );
    }
    list.forEach((id, k) => {
      if (!Number.isSafeInteger(id) || id < 0 || ids.has(id))
        throw new FormatError(`${op}: 'param_groups.${gi}.params' holds a bad or repeated index ${id}`);
      ids.set(id, g.params[k]);
    });
    return readHypers(op, codec, gi, saved);
  });
  const state = new Map<Tensor, ParamState>();
  try {
    for (const [i, saved] of keys.state) {
      const p = ids.get(i);
      if (p === undefined) throw new FormatError(`${op}: state.${i} belongs to no parameter group`);
      state.set(p, readParamState(op, codec, i, p, saved));
    }
  } catch (e) {
    disposeLoaded(state);
    throw e;
  }
  return { groups: hypers, state };
}

/** Frees the buffers a LoadedState holds (when loading fails part-way). */
export function disposeLoaded(state: Map<Tensor, ParamState>): void {
  for (const s of state.values()) for (const b of s.bufs ?? []) b.dispose();
}
