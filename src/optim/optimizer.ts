// What SGD and Adam share: parameter groups (PyTorch's param_groups: each group its own
// hyper-parameters, read afresh on every step so a scheduler can change them), per-parameter
// state buffers (allocated on the first step, zero-filled and kept outside every tidy scope),
// the gradient bookkeeping, and the state dict that resumes training (./state-dict.ts).
// Each subclass's update is one fused wasm kernel per parameter (assembly/optim.ts).
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { keep, stateKeyed } from '../tensor/memory.js';
import { filled } from '../ops/launch.js';
import { disposeLoaded, readStateDict, writeStateDict, type StateCodec } from './state-dict.js';
import { describe, tooMany } from '../args.js';

/** The hyper-parameters every group has; subclasses add theirs. */
export interface ParamGroup {
  /** The group's parameter tensors. */
  params: Tensor[];
  /** The learning rate of this group; a scheduler assigns it between steps. */
  lr: number;
  /** Set by the first scheduler attached to the optimizer (PyTorch's initial_lr). */
  initialLr?: number;
}

/** One group as the user passes it: its parameters and any hyper-parameter to override. */
export type ParamGroupInput<G extends ParamGroup = ParamGroup> = {
  /** The group's parameter tensors (or one tensor). */
  params: Iterable<Tensor> | Tensor;
} & Partial<Omit<G, 'params'>>;

/** An array (or any iterable, e.g. `model.parameters()`) of parameter tensors, or of parameter groups. */
export type Params<G extends ParamGroup = ParamGroup> = Iterable<Tensor> | Iterable<ParamGroupInput<G>>;

/** Checks a hyper-parameter: a finite number ≥ lo (and < hi when given). */
export function hyper(op: string, name: string, v: number, lo = 0, hi = Infinity): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v >= hi) {
    const range = hi === Infinity ? `≥ ${lo}` : `in [${lo}, ${hi})`;
    throw new ArgumentError(`${op}: ${name} must be a finite number ${range}, got ${describe(v)}`);
  }
  return v;
}

/** Refuses option keys outside `known` (a typo such as weight_decay would otherwise be ignored). */
export function knownKeys(op: string, where: string, o: object, known: readonly string[]): void {
  for (const key of Object.keys(o)) {
    if (!known.includes(key)) throw new ArgumentError(`${op}: ${where} has an unknown option '${key}' (expected ${known.join(', ')})`);
  }
}

const isTensor = (v: unknown): v is Tensor => v instanceof Tensor;

/** Whether two shapes are equal (a plain loop: Optimizer.step runs it for every parameter). */
function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

/** o without its undefined entries, so `{ lr: undefined }` falls back to the default as `{}` does. */
export function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The user's params as a list of group inputs (a plain list of tensors is one group). */
function groupInputs(op: string, params: Params): { inputs: ParamGroupInput[]; plain: boolean } {
  if (params === null || typeof (params as Iterable<unknown>)?.[Symbol.iterator] !== 'function') {
    throw new ArgumentError(
      `${op}: params must be an array of Tensors (e.g. model.parameters()) or of parameter groups { params, lr?, ... }`,
    );
  }
  const list = [...(params as Iterable<unknown>)];
  if (list.length === 0) throw new ArgumentError(`${op}: got an empty parameter list`);
  const groups = list.filter((v) => v !== null && typeof v === 'object' && !isTensor(v) && 'params' in v);
  if (groups.length === 0) return { inputs: [{ params: list as Tensor[] }], plain: true };
  if (groups.length !== list.length) {
    throw new ArgumentError(`${op}: params mixes Tensors and parameter groups; pass either Tensors or groups { params, ... }`);
  }
  return { inputs: groups as ParamGroupInput[], plain: false };
}

/** A group's parameters: distinct live Tensors. */
function groupParams(op: string, where: string, params: Iterable<Tensor> | Tensor): Tensor[] {
  if (isTensor(params)) return [leaf(op, params.check(op), where === 'params' ? 'params' : `${where}.params`)];
  if (params === null || typeof (params as Iterable<Tensor>)?.[Symbol.iterator] !== 'function') {
    throw new ArgumentError(`${op}: ${where}.params must be an array of Tensors`);
  }
  const list = [...params];
  if (list.length === 0) throw new ArgumentError(`${op}: got an empty parameter list in ${where}`);
  list.forEach((p, i) => {
    if (!isTensor(p))
      throw new ArgumentError(`${op}: ${where === 'params' ? '' : `${where}.`}params[${i}] must be a Tensor, got ${typeof p}`);
    leaf(op, p.check(op), `${where === 'params' ? '' : `${where}.`}params[${i}]`);
  });
  return list;
}

/** A parameter must be a leaf: an op's result never receives a .grad, so it would never move. */
function leaf(op: string, p: Tensor, name: string): Tensor {
  if (p.node !== null) {
    throw new ArgumentError(
      `${op}: ${name} [${p.shape}] is not a leaf tensor (an op computed it, so backward() gives it no .grad and step() could never update it); ` +
        'optimize the tensor it was computed from, or make a leaf with x.detach() and set requiresGrad = true',
    );
  }
  return p;
}

/**
 * The base class of optimizers: parameter groups with their own hyper-parameters, `step()`, `zeroGrad()`, state dicts.
 * Subclasses implement one fused update per parameter; `dispose()` frees their state.
 */
export abstract class Optimizer<G extends ParamGroup = ParamGroup> {
  /** The parameter groups, in order; assign e.g. `opt.paramGroups[1].lr` between steps. */
  readonly paramGroups: G[] = [];
  /** The hyper-parameters a group gets when it does not set them. */
  readonly defaults: Readonly<Omit<G, 'params'>>;
  private readonly state = new Map<Tensor, Tensor[]>();
  /** Number of updates applied to each parameter (only the optimizers that count them). */
  protected readonly steps = new Map<Tensor, number>();
  private calls = 0;

  /**
   * `checkGroup(input, where)` validates one group's own options merged over the defaults and
   * returns its hyper-parameters; `codec` names the state buffers and hyper-parameters in a state dict.
   *
   * @param name - The optimizer's class name, used in error messages and state dicts.
   */
  protected constructor(
    readonly name: string,
    params: Params<G>,
    defaults: Omit<G, 'params'>,
    private readonly checkGroup: (o: Partial<Omit<G, 'params'>>, where: string) => Omit<G, 'params'>,
    private readonly codec: StateCodec,
  ) {
    if (arguments.length > 5) throw tooMany('optim.Optimizer', 5, arguments.length);
    if (new.target === Optimizer || typeof name !== 'string')
      throw new ArgumentError('optim.Optimizer is the abstract base class: construct optim.SGD, optim.Adam or optim.AdamW');
    this.defaults = defaults;
    const { inputs, plain } = groupInputs(name, params);
    inputs.forEach((g, i) => this.addParamGroup(g as ParamGroupInput<G>, plain ? 'params' : `params[${i}]`));
  }

  /** Appends a group (PyTorch's add_param_group); its missing hyper-parameters come from the defaults. */
  addParamGroup(input: ParamGroupInput<G>, where = `paramGroups[${this.paramGroups.length}]`): void {
    if (arguments.length > 2) throw tooMany('Optimizer.addParamGroup', 2, arguments.length);
    if (input === null || typeof input !== 'object' || !('params' in input))
      throw new ArgumentError(`${this.name}.addParamGroup: expected a group { params, ... }, got ${describe(input)}`);
    const { params, ...own } = input;
    const list = groupParams(this.name, where, params);
    if (new Set(list).size !== list.length)
      throw new ArgumentError(`${this.name}: a parameter appears more than once in ${where === 'params' ? 'params' : `${where}.params`}`);
    const taken = new Set(this.params);
    if (list.some((p) => taken.has(p)))
      throw new ArgumentError(`${this.name}: a parameter appears in more than one parameter group (${where})`);
    const hypers = this.checkGroup({ ...this.defaults, ...defined(own as Partial<Omit<G, 'params'>>) }, where);
    this.paramGroups.push({ ...hypers, params: list } as G);
    for (const p of list) stateKeyed.add(p);
  }

  /** Every parameter, group by group. */
  get params(): readonly Tensor[] {
    return this.paramGroups.flatMap((g) => g.params);
  }

  /** The first group's learning rate; assigning sets every group's (schedule several groups with a scheduler). */
  get lr(): number {
    return this.paramGroups[0].lr;
  }
  /** Sets every group's learning rate. */
  set lr(v: number) {
    hyper(this.name, 'lr', v);
    for (const g of this.paramGroups) g.lr = v;
  }

  /** How many times step() has run (a scheduler checks it before its first step). */
  get stepCalls(): number {
    return this.calls;
  }

  /** Applies one update to every parameter that has a gradient (the others are skipped, as in PyTorch). */
  step(): void {
    if (arguments.length > 0) throw tooMany('Optimizer.step', 0, arguments.length);
    // Every gradient is checked before any parameter moves: an error leaves the model as it was.
    // A parameter is checked before its gradient test: disposing it drops its .grad, so a disposed
    // one would otherwise be skipped without a word (a model freed while its optimizer lives on).
    // Two plain passes whose messages are built only when a check fails: this runs for every
    // parameter on every step (hundreds in a transformer).
    for (const group of this.paramGroups)
      for (const p of group.params) {
        if (p.disposed) p.check(`${this.name}.step`);
        if (p.grad !== null) this.checkGrad(p);
      }
    this.calls++;
    for (const group of this.paramGroups)
      for (const p of group.params) {
        const g = p.grad;
        if (g !== null) this.update(p, g, group);
      }
  }

  /** Refuses p.grad unless it is a live Tensor of p's dtype and shape. */
  private checkGrad(p: Tensor): void {
    const g = p.grad as unknown;
    if (!isTensor(g)) throw new ArgumentError(`${this.name}.step: a parameter's .grad must be a Tensor or null, got ${describe(g)}`);
    if (g.disposed) g.check(`${this.name}.step (the .grad of a parameter [${p.shape}])`);
    if (g.dtype !== p.dtype) throw new DtypeError(`${this.name}.step: gradient is ${g.dtype} but the parameter is ${p.dtype}`);
    // The shape, not just the size: a [3, 2] gradient on a [2, 3] parameter would update it
    // in memory order; PyTorch refuses such a .grad when it is assigned.
    if (!sameShape(g.shape, p.shape))
      throw new ShapeError(`${this.name}.step: gradient has shape [${g.shape}] but the parameter has [${p.shape}]`);
  }

  /** Disposes every parameter's gradient (PyTorch's zero_grad(set_to_none=True)). */
  zeroGrad(): void {
    if (arguments.length > 0) throw tooMany('Optimizer.zeroGrad', 0, arguments.length);
    for (const p of this.params) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  /**
   * The optimizer's state as a flat record of tensors, so `io.saveSafetensors(opt.stateDict())`
   * stores it: copies of the buffers (`state.<i>.exp_avg`, …) and every group's hyper-parameters
   * (`param_groups.<g>.lr`, …) as float64 tensors. See docs/optim.md for the layout.
   */
  stateDict(): Record<string, Tensor> {
    if (arguments.length > 0) throw tooMany('Optimizer.stateDict', 0, arguments.length);
    return writeStateDict(this.codec, this.paramGroups, (p) => ({ bufs: this.state.get(p), step: this.steps.get(p) }));
  }

  /** Restores a stateDict() of an optimizer of the same kind over the same parameter layout. */
  loadStateDict(record: Record<string, Tensor>): void {
    if (arguments.length > 1) throw tooMany('Optimizer.loadStateDict', 1, arguments.length);
    const loaded = readStateDict(this.name, this.codec, this.paramGroups, record);
    let hypers: Omit<G, 'params'>[];
    try {
      hypers = loaded.groups.map(({ initialLr: _, ...h }, i) =>
        this.checkGroup({ ...this.defaults, ...(h as Partial<Omit<G, 'params'>>) }, `the state dict's param_groups.${i}`),
      );
    } catch (e) {
      disposeLoaded(loaded.state);
      throw e;
    }
    hypers.forEach((h, i) => {
      const initialLr = loaded.groups[i].initialLr as number | undefined;
      Object.assign(this.paramGroups[i], h, initialLr === undefined ? {} : { initialLr });
    });
    for (const bufs of this.state.values()) for (const b of bufs) b.dispose();
    this.state.clear();
    this.steps.clear();
    for (const [p, s] of loaded.state) {
      if (s.bufs !== undefined)
        this.state.set(
          p,
          s.bufs.map((b) => keep(b)),
        );
      if (s.step !== undefined) this.steps.set(p, s.step);
    }
  }

  /** Frees the optimizer's state buffers (the parameters are the caller's). */
  dispose(): void {
    if (arguments.length > 0) throw tooMany('Optimizer.dispose', 0, arguments.length);
    for (const bufs of this.state.values()) for (const b of bufs) b.dispose();
    this.state.clear();
    this.steps.clear();
  }

  /** `using opt = new optim.Adam(…)` frees the state buffers at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** One fused update of p in place from its gradient g with its group's hyper-parameters. */
  protected abstract update(p: Tensor, g: Tensor, group: G): void;

  /** p's `count` state buffers; `fresh` is true on the call that created them. */
  protected buffers(
    p: Tensor,
    count: number,
  ): {
    /** The buffers, zeros when fresh. */
    bufs: Tensor[];
    /** Whether this call created them. */
    fresh: boolean;
  } {
    const have = this.state.get(p);
    if (have !== undefined) return { bufs: have, fresh: false };
    const bufs = Array.from({ length: count }, () => keep(filled(p.shape, p.dtype, 0)));
    this.state.set(p, bufs);
    return { bufs, fresh: true };
  }
}
