// torch.autograd.grad: the gradients of outputs with respect to inputs, handed back instead of
// accumulated into .grad. Inputs may be leaves or intermediate tensors; with createGraph the
// sweep records, so the gradients are differentiable again (a gradient penalty, a Hessian).
import { ArgumentError, GradError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { constantGradients, seedFor } from '../ops/backward.js';
import { sweep } from '../ops/sweep.js';
import { tooMany, optionsArg } from '../args.js';

/** Options for {@link grad | autograd.grad} (PyTorch's `torch.autograd.grad` arguments in camelCase). */
export interface AutogradOptions {
  /** One seed per output (a Tensor of its shape, a number, or null for ones on a scalar). */
  gradOutputs?: Tensor | number | null | readonly (Tensor | number | null)[];
  /** Record the sweep: the gradients can be differentiated again. */
  createGraph?: boolean;
  /** Keep the graph for another sweep. Default: createGraph. */
  retainGraph?: boolean;
  /** An input the outputs do not depend on gets null instead of an error. */
  allowUnused?: boolean;
}

const KEYS = ['gradOutputs', 'createGraph', 'retainGraph', 'allowUnused'];

function tensors(what: string, v: unknown): Tensor[] {
  const list = v instanceof Tensor ? [v] : v;
  if (!Array.isArray(list) || list.length === 0)
    throw new ArgumentError(
      `autograd.grad: ${what} must be a Tensor or a non-empty array of Tensors, got ${v === null ? 'null' : typeof v}`,
    );
  list.forEach((t, i) => {
    if (!(t instanceof Tensor)) throw new ArgumentError(`autograd.grad: ${what}[${i}] must be a Tensor, got ${typeof t}`);
    t.check('autograd.grad');
  });
  return list as Tensor[];
}

function checkOptions(opts: unknown): AutogradOptions {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts))
    throw new ArgumentError(`autograd.grad: options must be an object, got ${opts === null ? 'null' : typeof opts}`);
  optionsArg('autograd.grad', opts, KEYS);
  const o = opts as AutogradOptions;
  for (const k of ['createGraph', 'retainGraph', 'allowUnused'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'boolean')
      throw new ArgumentError(`autograd.grad: ${k} must be true or false, got ${typeof o[k]}`);
  }
  return o;
}

/**
 * d(Σ outputs·gradOutputs)/d(input) for each input. No .grad is read or written. Without
 * createGraph the graph is released afterwards unless retainGraph.
 */
export function grad(
  outputs: Tensor | readonly Tensor[],
  inputs: Tensor | readonly Tensor[],
  options?: AutogradOptions,
): (Tensor | null)[] {
  if (arguments.length > 3) throw tooMany('autograd.grad', 3, arguments.length);
  const outs = tensors('outputs', outputs),
    ins = tensors('inputs', inputs);
  const opts = checkOptions(options);
  const seedsIn =
    opts.gradOutputs === undefined ? outs.map(() => null) : Array.isArray(opts.gradOutputs) ? opts.gradOutputs : [opts.gradOutputs];
  if (seedsIn.length !== outs.length)
    throw new ArgumentError(`autograd.grad: ${seedsIn.length} gradOutputs for ${outs.length} outputs; give one per output`);
  outs.forEach((o, i) => {
    if (!o.requiresGrad)
      throw new GradError(
        `autograd.grad: outputs[${i}] does not require grad (no input had requiresGrad, it was computed under noGrad, or it is a gradient computed without createGraph)`,
      );
    if (o.node?.released)
      throw new GradError(
        `autograd.grad: the graph behind outputs[${i}] was already released; pass { retainGraph: true } to the earlier call`,
      );
  });
  ins.forEach((t, i) => {
    if (!t.requiresGrad)
      throw new GradError(`autograd.grad: inputs[${i}] does not require grad, so no gradient flows to it (set requiresGrad on the leaf)`);
  });
  const createGraph = opts.createGraph ?? false;
  const seeds = outs.map((o, i) => seedFor('autograd.grad', o, seedsIn[i]));
  // Inside a transform that differentiates through this call, the sweep records even without
  // createGraph ('nested'): a constant gradient would make the outer derivative silently 0.
  const { grads } = sweep({ roots: outs, seeds, targets: ins, record: createGraph || 'nested', retain: opts.retainGraph ?? createGraph });
  grads.forEach((g, i) => {
    if (g !== null || opts.allowUnused) return;
    for (const h of grads) h?.dispose();
    throw new GradError(
      `autograd.grad: inputs[${i}] (shape [${ins[i].shape}]) was not used to compute the outputs; pass { allowUnused: true } to get null for it`,
    );
  });
  for (const g of grads) if (g !== null && !g.requiresGrad) constantGradients.add(g);
  return grads;
}
