// A compiled function's call signatures: the full key of a call's arguments (inspect), and the
// quick check that the next call fits the signature last replayed, made without building a key.
import { isTensor, type Tensor } from '../ops/tensor.js';
import { modes } from '../ops/modes.js';
import { poolSize } from '../wasm/pool.js';
import { cutKey } from '../wasm/balance.js';
import { stateKeyed } from '../tensor/memory.js';

/** A call's arguments: tensors and array data by position, and the signature they make. */
export interface Args {
  tensors: Tensor[];
  data: unknown[];
  dataPaths: string[];
  key: string;
}

/** A signature made of top-level tensors and number arrays only, checked without building a key. */
export interface Quick {
  readonly modes: number;
  readonly threads: number;
  readonly cuts: string;
  readonly items: readonly (
    | { readonly dtype: string; readonly shape: readonly number[]; readonly alias: number; readonly marks: string }
    | { readonly tag: string; readonly length: number }
  )[];
}

const modeBits = (): number => +modes.record | (+modes.forward << 1) | (+modes.anomaly << 2);

export function quickSig(args: readonly unknown[], a: Args): Quick | null {
  if (a.tensors.length + a.data.length !== args.length) return null;
  const items: Quick['items'][number][] = [],
    seen: Tensor[] = [];
  for (const v of args) {
    if (isTensor(v))
      items.push({ dtype: v.dtype, shape: v.shape, alias: seen.findIndex((t) => t.storage === v.storage), marks: marksOf(v) }),
        seen.push(v);
    else if (isNumberArray(v) && a.data.includes(v)) items.push({ tag: Object.prototype.toString.call(v), length: v.length });
    else return null;
  }
  return { modes: modeBits(), threads: poolSize(), cuts: cutKey(), items };
}

/** The tensors and data of a call whose arguments fit `q`, or null. */
export function quickArgs(args: readonly unknown[], q: Quick): { tensors: Tensor[]; data: unknown[] } | null {
  if (args.length !== q.items.length || modeBits() !== q.modes || poolSize() !== q.threads || cutKey() !== q.cuts) return null;
  const tensors: Tensor[] = [],
    data: unknown[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args[i],
      it = q.items[i];
    if ('dtype' in it) {
      if (!isTensor(v) || v.dtype !== it.dtype || v.shape.length !== it.shape.length) return null;
      for (let d = 0; d < it.shape.length; d++) if (v.shape[d] !== it.shape[d]) return null;
      if (tensors.findIndex((t) => t.storage === v.storage) !== it.alias || marksOf(v) !== it.marks) return null;
      tensors.push(v);
    } else {
      if (!isNumberArray(v) || v.length !== it.length || Object.prototype.toString.call(v) !== it.tag) return null;
      data.push(v);
    }
  }
  return { tensors, data };
}

/**
 * What else of a tensor argument the schedule depends on: whether it requires grad (which
 * gradients the trace computes), and, for an optimizer's parameter, which one it is (the trace
 * bound that parameter's momentum or moments).
 */
const marksOf = (t: Tensor): string => (t.requiresGrad ? 'g' : '') + (stateKeyed.has(t) ? `#${idOf(t)}` : '');

/** A signature key without the threads' shares of the cuts (the `c…` at the end of its first part). */
export const withoutCuts = (key: string): string => key.replace(/^([^|]*?)c[\d.]*(?=\||$)/, '$1');

const ids = new WeakMap<object, number>();
let nextObjectId = 0;
const idOf = (o: object): number => {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextObjectId++));
  return id;
};

const isNumberArray = (v: unknown): v is ArrayLike<number> =>
  (ArrayBuffer.isView(v) && !(v instanceof DataView) && !(v instanceof BigInt64Array) && !(v instanceof BigUint64Array)) ||
  (Array.isArray(v) && v.every((x) => typeof x === 'number'));

/**
 * The call's signature: tensors by dtype, shape and which earlier argument shares their memory;
 * typed and number arrays by type and length (their values are data, rebound on every call) unless
 * fn used them as values; other values as they are (objects by identity); plus the global modes
 * and the thread count and the threads' shares of each cut (src/wasm/balance.ts), which change the schedule.
 */
export function inspect(args: readonly unknown[], statics: ReadonlySet<string>): Args {
  const a: Args = { tensors: [], data: [], dataPaths: [], key: '' };
  const parts: string[] = [`${+modes.record}${+modes.forward}${+modes.anomaly}t${poolSize()}c${cutKey()}`];
  const walk = (v: unknown, path: string, depth: number): void => {
    if (isTensor(v)) {
      const alias = a.tensors.findIndex((t) => t.storage === v.storage);
      parts.push(`T${v.dtype}[${v.shape}]${alias}${marksOf(v)}`);
      a.tensors.push(v);
    } else if (isNumberArray(v)) {
      if (statics.has(path)) parts.push(`V${Array.prototype.join.call(v, ',')}`);
      else {
        parts.push(`A${Object.prototype.toString.call(v)}${v.length}`);
        a.data.push(v);
        a.dataPaths.push(path);
      }
    } else if (depth < 8 && Array.isArray(v)) {
      parts.push(`[${v.length}`);
      v.forEach((x, i) => walk(x, `${path}.${i}`, depth + 1));
      parts.push(']');
    } else if (depth < 8 && v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      parts.push('{');
      for (const [k, x] of Object.entries(v)) {
        parts.push(JSON.stringify(k));
        walk(x, `${path}.${k}`, depth + 1);
      }
      parts.push('}');
    } else if ((typeof v === 'object' && v !== null) || typeof v === 'function') parts.push(`o${idOf(v)}`);
    else if (typeof v === 'number') parts.push(Object.is(v, -0) ? 'n-0' : `n${v}`);
    else parts.push(typeof v === 'string' ? `s${JSON.stringify(v)}` : `${typeof v}:${String(v)}`);
  };
  args.forEach((v, i) => walk(v, String(i), 0));
  a.key = parts.join('|');
  return a;
}

/** Where tensor t sits among a call's arguments ("0", "1.w.2"), for an error message. */
export function pathOf(args: readonly unknown[], t: Tensor): string {
  const walk = (v: unknown, path: string, depth: number): string | null => {
    if (v === t) return path;
    if (depth >= 8 || v === null || typeof v !== 'object' || isTensor(v)) return null;
    if (!Array.isArray(v) && Object.getPrototypeOf(v) !== Object.prototype) return null;
    for (const [k, x] of Object.entries(v)) {
      const p = walk(x, `${path}.${k}`, depth + 1);
      if (p !== null) return p;
    }
    return null;
  };
  for (let i = 0; i < args.length; i++) {
    const p = walk(args[i], String(i), 0);
    if (p !== null) return p;
  }
  return '?';
}
