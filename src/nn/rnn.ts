// Recurrent layers with PyTorch's parameter names, gate order and init: nn.LSTMCell, nn.GRUCell,
// nn.LSTM and nn.GRU (multi-layer, batchFirst, initial state). Weights are
// weight_ih [G·H, in], weight_hh [G·H, H], bias_ih, bias_hh [G·H] with G = 4 gates (i, f, g, o)
// for the LSTM and 3 (r, z, n) for the GRU, all drawn from U(−1/√H, 1/√H). Each step is two
// GEMMs (with W_ih and W_hh, biases in their epilogues) and one fused gate primitive
// (src/ops/rnn.ts): backpropagation through time is many small kernels, so each step is kept to
// those few launches, and every tensor a step reads is its own (no slices of the whole sequence).
import { optionsArg, tooMany } from '../args.js';
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { zeros } from '../ops/create.js';
import { reshape, transpose, slice, concat, composite } from '../ops/api.js';
import { lstmCell, gruCell } from '../ops/rnn.js';
import { lstmSequence, gruSequence } from '../ops/rnnseq.js';
import { Module } from './module.js';
import { Stream, count, dtypeOf, fanInBound } from './init.js';
import { linear } from './attention.js';

/** Options for {@link LSTM} and {@link GRU} (PyTorch's arguments in camelCase). */
export interface RNNOptions {
  /** Stacked layers; default 1. */
  numLayers?: number;
  /** Whether each layer has the biases `bias_ih_l*` and `bias_hh_l*`; default true. */
  bias?: boolean;
  /** x is [B, T, in] (true) or [T, B, in] (false, the default, as PyTorch). */
  batchFirst?: boolean;
  /** Parameter dtype; default `'float32'`. */
  dtype?: DType;
  /** Seed of the initialisation U(−1/√hidden, 1/√hidden). */
  seed?: number;
}

/** Which recurrent cell a layer stack runs. */
type Kind = 'LSTM' | 'GRU';
const GATES: Record<Kind, number> = { LSTM: 4, GRU: 3 };

/** One layer's weights and biases (PyTorch's `weight_ih`, `weight_hh`, `bias_ih`, `bias_hh`). */
interface LayerParams {
  readonly wih: Tensor;
  readonly whh: Tensor;
  readonly bih: Tensor | null;
  readonly bhh: Tensor | null;
}

/** Registers one layer's four tensors under PyTorch's names (suffix '' for cells, '_l0', '_l1', … for layers). */
function registerLayer(
  m: RecurrentBase<unknown>,
  rng: Stream,
  inF: number,
  H: number,
  G: number,
  bias: boolean,
  suffix: string,
): LayerParams {
  const b = fanInBound(H),
    dt = m.dtype;
  const reg = (name: string, shape: number[]) => m.register(name + suffix, rng.uniform(shape, b, dt));
  reg('weight_ih', [G * H, inF]);
  reg('weight_hh', [G * H, H]);
  if (bias) {
    reg('bias_ih', [G * H]);
    reg('bias_hh', [G * H]);
  }
  // Looked up by name at every use, never held: functionalCall swaps the registered tensors for
  // the call (a held reference ran the module's own weights and gave zero gradients).
  const get = (name: string) => m.registered(name + suffix);
  return {
    get wih() {
      return get('weight_ih')!;
    },
    get whh() {
      return get('weight_hh')!;
    },
    get bih() {
      return bias ? get('bias_ih') : null;
    },
    get bhh() {
      return bias ? get('bias_hh') : null;
    },
  };
}

abstract class RecurrentBase<Out> extends Module<Out> {
  /** The parameters' dtype; inputs must have it too. */
  readonly dtype: DType;
  constructor(op: string, dtype: DType | undefined) {
    super();
    this.dtype = dtypeOf(op, dtype);
  }
  /** registerParameter, reachable from registerLayer. */
  register(name: string, t: Tensor): Tensor {
    return this.registerParameter(name, t);
  }
  /**
   * The parameter registered as `name`, as it is now (registerLayer's getters read it).
   * @internal
   */
  registered(name: string): Tensor | null {
    return this.ownParameter(name);
  }
}

/** Checks a state tensor: a live Tensor of `shape` and the layer's dtype. */
function checkState(op: string, name: string, t: unknown, shape: readonly number[], dtype: DType): Tensor {
  if (!(t instanceof Tensor)) throw new ArgumentError(`${op}: ${name} must be a Tensor, got ${typeof t}`);
  t.check(op);
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i]))
    throw new ShapeError(`${op}: ${name} must have shape [${shape}], got [${t.shape}]`);
  if (t.dtype !== dtype) throw new DtypeError(`${op}: ${name} is ${t.dtype} but the layer is ${dtype} (cast with astype)`);
  return t;
}

function checkX(op: string, x: unknown, rank: number[], inF: number, dtype: DType): Tensor {
  if (!(x instanceof Tensor)) throw new ArgumentError(`${op}: input must be a Tensor, got ${typeof x}`);
  x.check(op);
  if (!rank.includes(x.shape.length) || x.shape[x.shape.length - 1] !== inF) {
    throw new ShapeError(`${op}: input must be ${rank.map((r) => `${r}-D`).join(' or ')} with last axis ${inF}, got [${x.shape}]`);
  }
  if (x.dtype !== dtype) throw new DtypeError(`${op}: input is ${x.dtype} but the layer is ${dtype} (cast with astype)`);
  return x;
}

/** One step: gates from x·W_ihᵀ + b_ih (precomputed: xg) and h·W_hhᵀ + b_hh, then the fused cell. */
function step(kind: Kind, p: LayerParams, xg: Tensor, h: Tensor, c: Tensor | null): [Tensor, Tensor | null] {
  const hg = linear(h, p.whh, p.bhh);
  return kind === 'LSTM' ? lstmCell(xg, hg, c!) : [gruCell(xg, hg, h), null];
}

/** The shared body of nn.LSTMCell and nn.GRUCell: checks and PyTorch's four parameters. */
abstract class RecurrentCell<Out> extends RecurrentBase<Out> {
  /** The cell's weights and biases. @internal */
  protected readonly p: LayerParams;
  constructor(
    kind: Kind,
    readonly inputSize: number,
    readonly hiddenSize: number,
    opts: { bias?: boolean; dtype?: DType; seed?: number },
  ) {
    const op = `${kind}Cell`;
    opts = optionsArg(op, opts, ['bias', 'dtype', 'seed']);
    super(op, opts.dtype);
    count(op, 'inputSize', inputSize);
    count(op, 'hiddenSize', hiddenSize);
    this.p = registerLayer(this, new Stream(opts.seed, op), inputSize, hiddenSize, GATES[kind], opts.bias ?? true, '');
  }
}

/**
 * An LSTM state given as an array holds both tensors, as PyTorch's (h, c) tuple must: [h] or
 * [h, null] used to run with c = 0 (and [null, c] with h = 0) without a word.
 */
function checkPair(op: string, state: readonly unknown[], names: string): void {
  if (state.length !== 2 || state.some((s) => s == null)) {
    const got = state.length !== 2 ? `an array of ${state.length}` : `[${state.map((s) => (s == null ? String(s) : 'Tensor')).join(', ')}]`;
    throw new ArgumentError(`${op}: the state must be an array ${names} of two tensors (or omitted for zeros), got ${got}`);
  }
}

/** nn.LSTMCell: forward(x [B, in], [h, c]?) → [h', c']. */
export class LSTMCell extends RecurrentCell<[Tensor, Tensor]> {
  /**
   * @param inputSize - Size of the input's last axis.
   * @param hiddenSize - Size of the hidden (and cell) state.
   * @param opts - `bias` (default true), `dtype`, `seed`.
   */
  constructor(inputSize: number, hiddenSize: number, opts: { bias?: boolean; dtype?: DType; seed?: number } = {}) {
    if (arguments.length > 3) throw tooMany('nn.LSTMCell', 3, arguments.length);
    super('LSTM', inputSize, hiddenSize, opts);
  }
  forward(x: Tensor, hx?: readonly [Tensor, Tensor] | null): [Tensor, Tensor] {
    if (arguments.length > 2) throw tooMany('nn.LSTMCell.forward', 2, arguments.length);
    return cellForward('LSTMCell', 'LSTM', this, this.p, x, hx ?? null) as [Tensor, Tensor];
  }
}

/** nn.GRUCell: forward(x [B, in], h?) → h'. */
export class GRUCell extends RecurrentCell<Tensor> {
  /**
   * @param inputSize - Size of the input's last axis.
   * @param hiddenSize - Size of the hidden state.
   * @param opts - `bias` (default true), `dtype`, `seed`.
   */
  constructor(inputSize: number, hiddenSize: number, opts: { bias?: boolean; dtype?: DType; seed?: number } = {}) {
    if (arguments.length > 3) throw tooMany('nn.GRUCell', 3, arguments.length);
    super('GRU', inputSize, hiddenSize, opts);
  }
  forward(x: Tensor, h?: Tensor | null): Tensor {
    if (arguments.length > 2) throw tooMany('nn.GRUCell.forward', 2, arguments.length);
    return cellForward('GRUCell', 'GRU', this, this.p, x, h == null ? null : [h]) as Tensor;
  }
}

function cellForward(
  op: string,
  kind: Kind,
  m: RecurrentCell<unknown>,
  p: LayerParams,
  x: Tensor,
  state: readonly Tensor[] | null,
): Tensor | [Tensor, Tensor] {
  checkX(op, x, [1, 2], m.inputSize, m.dtype);
  if (state !== null && !Array.isArray(state))
    throw new ArgumentError(`${op}: the state must be ${kind === 'LSTM' ? 'an array [h, c]' : 'a Tensor'}`);
  if (kind === 'LSTM' && state !== null) checkPair(op, state, '[h, c]');
  return composite(() => {
    const x2 = x.shape.length === 1 ? reshape(x, [1, x.shape[0]]) : x,
      B = x2.shape[0],
      H = m.hiddenSize;
    const unbatch = (t: Tensor) => (x.shape.length === 1 ? reshape(t, [H]) : t);
    const st = (i: number, name: string) =>
      state?.[i] == null
        ? zeros([B, H], { dtype: m.dtype })
        : reshape(checkState(op, name, state[i], x.shape.length === 1 ? [H] : [B, H], m.dtype), [B, H]);
    const [h, c] = step(kind, p, linear(x2, p.wih, p.bih), st(0, 'h'), kind === 'LSTM' ? st(1, 'c') : null);
    return kind === 'LSTM' ? [unbatch(h), unbatch(c!)] : unbatch(h);
  });
}

/** The shared body of nn.LSTM and nn.GRU. */
abstract class Recurrent<Out> extends RecurrentBase<Out> {
  /** Stacked layers. */
  readonly numLayers: number;
  /** Inputs are `[B, T, in]` (true) or `[T, B, in]` (false, PyTorch's default). */
  readonly batchFirst: boolean;
  /** Each layer's parameters, in order. @internal */
  protected readonly layers: LayerParams[] = [];

  /**
   * @param kind - The cell each layer runs (internal).
   * @param inputSize - Size of the input's last axis.
   * @param hiddenSize - Size of the hidden state.
   * @param opts - `numLayers`, `bias`, `batchFirst`, `dtype`, `seed`.
   */
  constructor(
    protected readonly kind: Kind,
    readonly inputSize: number,
    readonly hiddenSize: number,
    opts: RNNOptions,
  ) {
    opts = optionsArg(kind, opts, ['numLayers', 'bias', 'batchFirst', 'dtype', 'seed']);
    super(kind, opts.dtype);
    count(kind, 'inputSize', inputSize);
    count(kind, 'hiddenSize', hiddenSize);
    this.numLayers = count(kind, 'numLayers', opts.numLayers ?? 1);
    this.batchFirst = opts.batchFirst ?? false;
    const rng = new Stream(opts.seed, kind);
    for (let l = 0; l < this.numLayers; l++) {
      this.layers.push(registerLayer(this, rng, l === 0 ? inputSize : hiddenSize, hiddenSize, GATES[kind], opts.bias ?? true, `_l${l}`));
    }
  }

  /** The sequence through every layer: [y, hN, cN (LSTM)], y in the input's layout. */
  protected run(x: Tensor, state: readonly (Tensor | null | undefined)[]): Tensor[] {
    const op = this.kind,
      H = this.hiddenSize,
      L = this.numLayers;
    checkX(op, x, [2, 3], this.inputSize, this.dtype);
    const unbatched = x.shape.length === 2;
    const x3 = unbatched ? reshape(x, [x.shape[0], 1, x.shape[1]]) : this.batchFirst ? transpose(x, [1, 0, 2]) : x; // [T, B, in]
    const [T, B] = x3.shape;
    const init = (i: number, name: string): Tensor | null => {
      const s = state[i];
      if (s == null) return null;
      return reshape(checkState(op, name, s, unbatched ? [L, H] : [L, B, H], this.dtype), [L, B, H]);
    };
    const h0 = init(0, 'h0'),
      c0 = this.kind === 'LSTM' ? init(1, 'c0') : null;
    const layerState = (s: Tensor | null, l: number) =>
      s === null ? zeros([B, H], { dtype: this.dtype }) : reshape(slice(s, [l, 0, 0], [1, B, H]), [B, H]);
    // Per layer: the input projection of every step as one GEMM, then the whole recurrence as one
    // primitive (src/ops/rnnseq.ts) whose backward is one kernel call plus GEMMs over all steps.
    let seq = x3;
    const hN: Tensor[] = [],
      cN: Tensor[] = [];
    this.layers.forEach((p, l) => {
      const GH = GATES[this.kind] * H,
        inF = seq.shape[2];
      const xg = reshape(linear(reshape(seq, [T * B, inF]), p.wih, p.bih), [T, B, GH]);
      const bhh = p.bhh ?? zeros([GH], { dtype: this.dtype });
      const h = layerState(h0, l);
      const last = (y: Tensor, k: number) => reshape(slice(y, [T - 1, 0, k * H], [1, B, H]), [B, H]);
      if (this.kind === 'LSTM') {
        const c = layerState(c0, l),
          y = lstmSequence(xg, p.whh, bhh, h, c);
        seq = slice(y, [0, 0, 0], [T, B, H]);
        hN.push(T === 0 ? h : last(y, 0));
        cN.push(T === 0 ? c : last(y, 1));
      } else {
        const y = gruSequence(xg, p.whh, bhh, h);
        seq = slice(y, [0, 0, 0], [T, B, H]);
        hN.push(T === 0 ? h : last(y, 0));
      }
    });
    const y = unbatched ? reshape(seq, [T, H]) : this.batchFirst ? transpose(seq, [1, 0, 2]) : seq;
    const stack = (ts: Tensor[]) => reshape(concat(ts, 0), unbatched ? [L, H] : [L, B, H]);
    return this.kind === 'LSTM' ? [y, stack(hN), stack(cN)] : [y, stack(hN)];
  }

  /** As Module's, after checking the record holds this many layers (a clearer error than a list of keys). */
  override loadStateDict(record: Record<string, Tensor>): void {
    if (record !== null && typeof record === 'object') {
      const layers = new Set(
        Object.keys(record)
          .map((k) => /_l(\d+)$/.exec(k)?.[1])
          .filter((v) => v !== undefined)
          .map(Number),
      );
      const n = layers.size === 0 ? 0 : Math.max(...layers) + 1;
      if (n !== this.numLayers && layers.size > 0) {
        throw new ShapeError(
          `${this.kind}.loadStateDict: the state dict has ${n} layer${n === 1 ? '' : 's'} (keys up to _l${n - 1}) but this ${this.kind} has numLayers = ${this.numLayers}`,
        );
      }
    }
    super.loadStateDict(record);
  }
}

/** nn.LSTM: forward(x, [h0, c0]?) → [y, [hN, cN]]; x [T, B, in] ([B, T, in] with batchFirst), states [numLayers, B, H]. */
export class LSTM extends Recurrent<[Tensor, [Tensor, Tensor]]> {
  constructor(inputSize: number, hiddenSize: number, opts: RNNOptions = {}) {
    if (arguments.length > 3) throw tooMany('nn.LSTM', 3, arguments.length);
    super('LSTM', inputSize, hiddenSize, opts);
  }
  forward(x: Tensor, hx?: readonly [Tensor, Tensor] | null): [Tensor, [Tensor, Tensor]] {
    if (arguments.length > 2) throw tooMany('nn.LSTM.forward', 2, arguments.length);
    if (hx != null && !Array.isArray(hx)) throw new ArgumentError('LSTM: the initial state must be an array [h0, c0]');
    if (hx != null) checkPair('LSTM', hx, '[h0, c0]');
    return composite(() => {
      const [y, h, c] = this.run(x, hx ?? []);
      return [y, [h, c]] as [Tensor, [Tensor, Tensor]];
    });
  }
}

/** nn.GRU: forward(x, h0?) → [y, hN]. */
export class GRU extends Recurrent<[Tensor, Tensor]> {
  constructor(inputSize: number, hiddenSize: number, opts: RNNOptions = {}) {
    if (arguments.length > 3) throw tooMany('nn.GRU', 3, arguments.length);
    super('GRU', inputSize, hiddenSize, opts);
  }
  forward(x: Tensor, h0?: Tensor | null): [Tensor, Tensor] {
    if (arguments.length > 2) throw tooMany('nn.GRU.forward', 2, arguments.length);
    return composite(() => {
      const [y, h] = this.run(x, [h0]);
      return [y, h] as [Tensor, Tensor];
    });
  }
}
