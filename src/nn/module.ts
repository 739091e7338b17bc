// The Module base class, as torch.nn.Module: parameters and submodules are registered by
// name (in order), so namedParameters() gives PyTorch's dotted names ("0.weight",
// "block.1.bias") and a stateDict moves to and from PyTorch through safetensors.
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { keep } from '../tensor/memory.js';
import { views } from '../wasm/module.js';
import { BYTES, type DType } from '../tensor/dtype.js';
import { cast } from '../ops/api.js';
import { noGrad } from '../autodiff/transforms.js';
import { describe, tooMany, boolArg } from '../args.js';

/** Checks a module's input: a live Tensor of the module's dtype whose axis `axis` is `size`. */
export function checkInput(op: string, x: unknown, dtype: DType, axis: number, size: number, what: string): Tensor {
  if (!(x instanceof Tensor)) throw new ArgumentError(`${op}: input must be a Tensor, got ${describe(x)}`);
  x.check(op);
  const a = axis < 0 ? x.shape.length + axis : axis;
  if (a < 0 || a >= x.shape.length || x.shape[a] !== size)
    throw new ShapeError(`${op}: expected input with ${what} = ${size}, got shape [${x.shape}]`);
  if (x.dtype !== dtype) throw new DtypeError(`${op}: input is ${x.dtype} but the layer's parameters are ${dtype} (cast with astype)`);
  return x;
}

const sameShape = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * The base class of layers and models, as `torch.nn.Module`: registered parameters and submodules, dotted parameter names, state dicts, train/eval mode.
 * Subclasses implement {@link Module.forward}; `dispose()` frees every parameter.
 * `Out` is what forward returns (a Tensor for most modules; `[output, state]` for recurrent ones).
 */
export abstract class Module<Out = Tensor> {
  /** Training mode (Dropout is active); switch with train() / eval(). */
  training = true;
  private readonly ownParams = new Map<string, Tensor>();
  private readonly children = new Map<string, Module<unknown>>();

  constructor() {
    // A layer without a constructor of its own (nn.ReLU, nn.Tanh) takes no arguments.
    if (arguments.length > 0) throw tooMany(`nn.${new.target.name}`, 0, arguments.length);
  }

  /** The module's computation; call it directly: `model.forward(x)`. */
  abstract forward(x: Tensor): Out;

  /**
   * Registers a trainable tensor under `name`: it becomes a leaf with requiresGrad, exempt
   * from every tidy() (parameters outlive training steps). Returns the tensor.
   */
  protected registerParameter(name: string, t: Tensor): Tensor {
    this.checkName(name);
    t.check('registerParameter');
    t.requiresGrad = true;
    this.ownParams.set(name, keep(t));
    return t;
  }

  /** This module's own parameter `name` as registered now (functionalCall and loadStateDict may have swapped it), or null. */
  protected ownParameter(name: string): Tensor | null {
    return this.ownParams.get(name) ?? null;
  }

  /** Registers a submodule under `name`; its parameters appear as `name.<param>`. */
  protected registerModule<M extends Module<unknown>>(name: string, m: M): M {
    this.checkName(name);
    if (!(m instanceof Module))
      throw new ArgumentError(`${this.constructor.name}: submodule ${JSON.stringify(name)} must be a Module, got ${describe(m)}`);
    this.children.set(name, m);
    return m;
  }

  private checkName(name: string): void {
    if (typeof name !== 'string' || name === '' || name.includes('.')) {
      throw new ArgumentError(
        `${this.constructor.name}: parameter and submodule names must be non-empty strings without '.', got ${describe(name)}`,
      );
    }
    if (this.ownParams.has(name) || this.children.has(name))
      throw new ArgumentError(`${this.constructor.name}: ${JSON.stringify(name)} is already registered`);
  }

  /** [name, submodule] pairs of the direct children, in registration order. */
  namedChildren(): [string, Module<unknown>][] {
    if (arguments.length > 0) throw tooMany('Module.namedChildren', 0, arguments.length);
    return [...this.children];
  }

  /**
   * Every parameter with its dotted name: own parameters first, then each child's, depth first.
   * A tensor shared by several modules (weight tying) comes once, under its first name, unless
   * `removeDuplicate` is false (PyTorch's named_parameters(remove_duplicate=False)).
   */
  namedParameters(prefix = '', removeDuplicate = true): [string, Tensor][] {
    if (arguments.length > 2) throw tooMany('Module.namedParameters', 2, arguments.length);
    const out: [string, Tensor][] = [];
    const seen = new Set<Tensor>();
    const walk = (m: Module<unknown>, pre: string): void => {
      for (const [n, t] of m.ownParams) if (!removeDuplicate || !seen.has(t)) seen.add(t), out.push([pre + n, t]);
      for (const [n, c] of m.children) walk(c, `${pre}${n}.`);
    };
    walk(this, prefix === '' ? '' : `${prefix}.`);
    return out;
  }

  /** Every parameter tensor, in {@link Module.namedParameters} order (a tensor shared by two modules appears once). */
  parameters(): Tensor[] {
    if (arguments.length > 0) throw tooMany('Module.parameters', 0, arguments.length);
    return this.namedParameters().map(([, t]) => t);
  }

  /**
   * The live parameters by name (not copies: save them, or load into them with loadStateDict).
   * As in PyTorch, a tied parameter appears under each of its names, every one the same tensor.
   */
  stateDict(): Record<string, Tensor> {
    if (arguments.length > 0) throw tooMany('Module.stateDict', 0, arguments.length);
    return Object.fromEntries(this.namedParameters('', false));
  }

  /**
   * Copies every tensor of `record` into the parameter of the same name (cast to its dtype).
   * Checks everything first, so a bad record changes nothing: missing, unexpected and
   * mis-shaped keys are all named in one error.
   */
  loadStateDict(record: Record<string, Tensor>): void {
    if (arguments.length > 1) throw tooMany('Module.loadStateDict', 1, arguments.length);
    if (record === null || typeof record !== 'object')
      throw new ArgumentError(`loadStateDict: expected a record of Tensors, got ${describe(record)}`);
    const params = new Map(this.namedParameters('', false));
    const problems: string[] = [];
    // A tied parameter needs only one of its names (a record saved with duplicates dropped still loads).
    const present = new Set([...params].filter(([n]) => Object.hasOwn(record, n)).map(([, t]) => t));
    const missing = [...params].filter(([n, t]) => !Object.hasOwn(record, n) && !present.has(t)).map(([n]) => n);
    const extra = Object.keys(record).filter((n) => !params.has(n));
    const shapes: string[] = [];
    for (const [n, p] of params) {
      // Own keys only: a parameter named "constructor" or "__proto__" must not read Object.prototype's.
      const t = Object.hasOwn(record, n) ? record[n] : undefined;
      if (t === undefined) continue;
      if (!(t instanceof Tensor)) throw new ArgumentError(`loadStateDict: ${JSON.stringify(n)} must be a Tensor, got ${describe(t)}`);
      t.check(`loadStateDict (${n})`);
      if (!sameShape(t.shape, p.shape)) shapes.push(`${n} (expected [${p.shape}], got [${t.shape}])`);
    }
    if (missing.length) problems.push(`missing keys: ${missing.join(', ')}`);
    if (extra.length) problems.push(`unexpected keys: ${extra.join(', ')}`);
    if (shapes.length) problems.push(`shape mismatch: ${shapes.join(', ')}`);
    if (problems.length) {
      const Err = missing.length || extra.length ? ArgumentError : ShapeError;
      throw new Err(`loadStateDict: ${problems.join('; ')}`);
    }
    noGrad(() => {
      for (const [n, p] of params) if (Object.hasOwn(record, n)) copyInto(p, record[n]);
    });
  }

  /**
   * Puts t in place of own parameter `name` (its record entry and every field holding it) and
   * returns the tensor it replaced: functionalCall's swap, undone by a second call.
   */
  replaceParameter(name: string, t: Tensor): Tensor {
    if (arguments.length > 2) throw tooMany('Module.replaceParameter', 2, arguments.length);
    const old = this.ownParams.get(name);
    if (old === undefined) throw new ArgumentError(`${this.constructor.name}: no parameter ${JSON.stringify(name)}`);
    this.ownParams.set(name, t);
    const self = this as unknown as Record<string, unknown>;
    for (const k of Object.keys(self)) if (self[k] === old) self[k] = t;
    return old;
  }

  /** Sets training mode on this module and every submodule; returns this. */
  train(mode = true): this {
    if (arguments.length > 1) throw tooMany('Module.train', 1, arguments.length);
    mode = boolArg('train', 'mode', mode, true);
    this.training = mode;
    for (const c of this.children.values()) c.train(mode);
    return this;
  }

  /** Evaluation mode (Dropout off); returns this. */
  eval(): this {
    if (arguments.length > 0) throw tooMany('Module.eval', 0, arguments.length);
    return this.train(false);
  }

  /** Disposes every parameter's gradient (PyTorch's zero_grad()). */
  zeroGrad(): void {
    if (arguments.length > 0) throw tooMany('Module.zeroGrad', 0, arguments.length);
    for (const p of this.parameters()) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  /**
   * Frees every parameter (and its gradient) and, through each submodule's own dispose(), what
   * a submodule owns besides (a Linear's feedback matrix inside a Residual, say).
   */
  dispose(): void {
    if (arguments.length > 0) throw tooMany('Module.dispose', 0, arguments.length);
    for (const c of this.children.values()) c.dispose();
    for (const p of this.ownParams.values()) p.dispose();
  }

  /** `using model = new nn.Linear(…)` disposes the module at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** dst's memory ← src's values (a byte copy, or a cast first when the dtypes differ). */
function copyInto(dst: Tensor, src: Tensor): void {
  if (src === dst) return;
  const from = src.dtype === dst.dtype ? src : cast(src, dst.dtype);
  const to = dst.ptr,
    at = from.ptr; // before views(): filling a lazy transpose may grow the memory
  views().u8.copyWithin(to, at, at + from.size * BYTES[from.dtype]);
  if (from !== src) from.dispose();
}
