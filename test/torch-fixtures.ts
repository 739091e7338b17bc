// Runs a PyTorch reference fixture (test/fixtures/torch/, format in its README): builds the
// module from the case's JSON, loads PyTorch's state dict, runs the forward pass, seeds every
// output with its cotangent and compares outputs, input gradients and parameter gradients.
// ADJOINT_TORCH_FIXTURES may point at another copy of the directory.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';

export const FIXTURES = process.env.ADJOINT_TORCH_FIXTURES ?? join(import.meta.dirname, 'fixtures/torch');
export const hasFixture = (name: string): boolean => existsSync(join(FIXTURES, `${name}.json`));

interface CaseJson {
  case: string;
  module?: string;
  op?: string;
  args?: number[];
  options?: Record<string, unknown>;
  forward?: Record<string, unknown>;
  keys: string[];
}

/** max |a − b| / max |b| (one scale per tensor). */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let e = 0,
    m = 0;
  for (let i = 0; i < b.length; i++) {
    e = Math.max(e, Math.abs(a[i] - b[i]));
    m = Math.max(m, Math.abs(b[i]));
  }
  return e / Math.max(m, 1e-300);
}

/** "in.x" strings (and arrays of them) replaced by the tensors they name. */
function resolve(v: unknown, t: Record<string, Tensor>): unknown {
  if (typeof v === 'string' && v.startsWith('in.')) return t[v];
  if (Array.isArray(v)) return v.map((x) => resolve(x, t));
  return v;
}

/** The case's outputs by name (out.<name>), computed by the module or op. */
function run(
  c: CaseJson,
  t: Record<string, Tensor>,
  dtype: 'float32' | 'float64',
): { outs: Record<string, Tensor>; params: [string, Tensor][] } {
  const fwd = Object.fromEntries(Object.entries(c.forward ?? {}).map(([k, v]) => [k, resolve(v, t)]));
  if (c.op === 'scaledDotProductAttention') {
    return { outs: { y: A.scaledDotProductAttention(t['in.q'], t['in.k'], t['in.v'], { ...c.options, mask: t['in.mask'] }) }, params: [] };
  }
  const Ctor = (A.nn as unknown as Record<string, new (...a: unknown[]) => A.nn.Module<unknown>>)[c.module!.replace(/^nn\./, '')];
  const m = new Ctor(...(c.args ?? []), { ...c.options, dtype });
  const params = Object.fromEntries(
    Object.entries(t)
      .filter(([k]) => k.startsWith('param.'))
      .map(([k, v]) => [k.slice(6), v]),
  );
  m.loadStateDict(params);
  const fn = m as unknown as { forward: (...a: unknown[]) => unknown };
  const x = t['in.x'];
  let outs: Record<string, Tensor>;
  switch (c.module) {
    case 'nn.MultiheadAttention': {
      const opts = { isCausal: fwd.isCausal as boolean | undefined, attnMask: fwd.attnMask as Tensor | undefined };
      outs = { y: (x ? fn.forward(x, x, x, opts) : fn.forward(t['in.query'], t['in.key'], t['in.value'], opts)) as Tensor };
      break;
    }
    case 'nn.TransformerEncoderLayer':
      outs = { y: fn.forward(x, fwd) as Tensor };
      break;
    case 'nn.LSTM': {
      const [y, [hN, cN]] = fn.forward(x, fwd.h0) as [Tensor, [Tensor, Tensor]];
      outs = { y, hN, cN };
      break;
    }
    case 'nn.GRU': {
      const [y, hN] = fn.forward(x, fwd.h0) as [Tensor, Tensor];
      outs = { y, hN };
      break;
    }
    case 'nn.LSTMCell': {
      const [h, cc] = fn.forward(x, fwd.hx) as [Tensor, Tensor];
      outs = { h, c: cc };
      break;
    }
    case 'nn.GRUCell':
      outs = { h: fn.forward(x, fwd.hx) as Tensor };
      break;
    default:
      throw new Error(`no runner for ${c.module}`);
  }
  return { outs, params: m.namedParameters() };
}

/** Largest relative error per compared key (out.*, grad.in.*, grad.param.*) of one case in one dtype. */
export function checkFixture(name: string, dtype: 'float32' | 'float64'): Record<string, number> {
  const c = JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), 'utf8')) as CaseJson;
  return A.tidy(() => {
    const t = A.io.loadSafetensors(readFileSync(join(FIXTURES, `${name}.${dtype === 'float32' ? 'f32' : 'f64'}.safetensors`)));
    for (const k of c.keys) if (k.startsWith('grad.in.')) t[k.slice(5)].requiresGrad = true;
    const { outs, params } = run(c, t, dtype);
    const errs: Record<string, number> = {};
    let loss: Tensor | null = null;
    for (const [k, y] of Object.entries(outs)) {
      errs[`out.${k}`] = relErr(y.toArray(), t[`out.${k}`].toArray());
      const l = A.sum(A.mul(y, t[`cot.${k}`]));
      loss = loss === null ? l : A.add(loss, l);
    }
    loss!.backward();
    for (const k of c.keys.filter((k) => k.startsWith('grad.in.'))) errs[k] = relErr(t[k.slice(5)].grad!.toArray(), t[k].toArray());
    const byName = new Map(params);
    for (const k of c.keys.filter((k) => k.startsWith('grad.param.')))
      errs[k] = relErr(byName.get(k.slice(11))!.grad!.toArray(), t[k].toArray());
    return errs;
  });
}
