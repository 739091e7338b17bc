// Argument checks shared by every layer (like errors.ts, this file imports nothing upward): a
// value named safely in a message (a Symbol or a BigInt cannot go through a template string or
// JSON.stringify), booleans and numbers that must be exactly that, and options objects whose
// keys are all known. Nothing a caller passes is silently ignored.
import { ArgumentError } from './errors.js';

/**
 * Any value for an error message, as its value and its kind: `"1e-3" (a string)`, `5 (a number)`,
 * `[2,-1] (an array)`, `null`, `an object`, `a float32 Tensor [2,3]`. Never throws (a Symbol or
 * a BigInt cannot go through a template string or JSON.stringify).
 */
export function describe(v: unknown): string {
  switch (typeof v) {
    case 'number':
      return `${v} (a number)`;
    case 'string':
      return `${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)} (a string)`;
    case 'bigint':
      return `${v}n (a BigInt)`;
    case 'symbol':
      return `${v.toString()} (a Symbol)`;
    case 'boolean':
      return `${v} (a boolean)`;
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    default: {
      if (v === null) return 'null';
      if (Array.isArray(v)) return `[${v.slice(0, 8).map(element).join(',')}${v.length > 8 ? `,… ${v.length} elements` : ''}] (an array)`;
      if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
      const name = (v as object).constructor?.name;
      if (name === 'Tensor') {
        const t = v as { shape: readonly number[]; dtype: string; disposed: boolean };
        return `a ${t.disposed ? 'disposed ' : ''}${t.dtype} Tensor [${t.shape}]`;
      }
      return typeof name === 'string' && name !== 'Object' && name !== '' ? `a ${name}` : 'an object';
    }
  }
}

/** An array element in a message: numbers as they are, anything else described (one level deep). */
function element(v: unknown): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return JSON.stringify(v.length > 12 ? `${v.slice(0, 12)}…` : v);
  if (Array.isArray(v)) return `[…${v.length}]`;
  return describe(v);
}

/** A boolean argument (undefined gives the default): an options object or a number is an error. */
export function boolArg(op: string, name: string, v: unknown, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new ArgumentError(`${op}: ${name} must be true or false, got ${describe(v)}`);
  return v;
}

/**
 * An options argument: undefined gives {}, anything but a plain object is an error, and so is a
 * key the op does not know (a misspelt option would otherwise be ignored).
 */
export function optionsArg<T extends object>(op: string, v: T | undefined, keys: readonly string[], name = 'options'): T {
  if (v === undefined) return {} as T;
  if (v === null || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v)) {
    throw new ArgumentError(`${op}: ${name} must be an object, got ${describe(v)}`);
  }
  for (const k of Object.keys(v)) {
    if (!keys.includes(k)) {
      throw new ArgumentError(`${op}: unknown option ${JSON.stringify(k)} (known: ${keys.join(', ') || 'none'})`);
    }
  }
  return v;
}

/** Too many positional arguments: the extra ones would be ignored. */
export function tooMany(op: string, max: number, got: number): ArgumentError {
  return new ArgumentError(`${op}: takes at most ${max} argument${max === 1 ? '' : 's'}, got ${got} (an extra argument would be ignored)`);
}

/** A function argument. */
export function functionArg(op: string, name: string, v: unknown): void {
  if (typeof v !== 'function') throw new ArgumentError(`${op}: ${name} must be a function, got ${describe(v)}`);
}
