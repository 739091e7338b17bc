// nn.ModuleList: an indexable list of submodules registered as "0", "1", … (PyTorch's names),
// with no forward of its own: the owner decides how to run them.
import { ArgumentError } from '../errors.js';
import { Module } from './module.js';
import { describe, tooMany } from '../args.js';

/** An indexable list of submodules registered as `0`, `1`, … (PyTorch's `nn.ModuleList`), with no forward of its own: the owner decides how to run them. */
export class ModuleList<M extends Module<unknown> = Module<unknown>> extends Module<never> {
  private readonly items: M[] = [];

  constructor(modules: Iterable<M> = []) {
    if (arguments.length > 1) throw tooMany('nn.ModuleList', 1, arguments.length);
    super();
    if (modules === null || typeof (modules as Iterable<M>)[Symbol.iterator] !== 'function' || typeof modules === 'string') {
      throw new ArgumentError(`ModuleList: modules must be an array of Modules, got ${describe(modules)}`);
    }
    for (const m of modules) this.append(m);
  }

  /** The number of modules. */
  get length(): number {
    return this.items.length;
  }

  /** The module at index i (negative counts from the end). */
  at(i: number): M {
    const j = i < 0 ? i + this.items.length : i;
    if (!Number.isInteger(j) || j < 0 || j >= this.items.length)
      throw new ArgumentError(`ModuleList: index ${i} is out of range for ${this.items.length} modules`);
    return this.items[j];
  }

  /** Adds `m` at the end, registered under the next index; returns this. */
  append(m: M): this {
    if (!(m instanceof Module)) throw new ArgumentError(`ModuleList: item ${this.items.length} must be a Module, got ${typeof m}`);
    this.registerModule(String(this.items.length), m);
    this.items.push(m);
    return this;
  }

  /** The modules, in order. */
  [Symbol.iterator](): Iterator<M> {
    return this.items[Symbol.iterator]();
  }

  forward(): never {
    throw new ArgumentError('ModuleList: has no forward; iterate over it and call each module');
  }
}
