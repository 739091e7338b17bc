// Reverse mode from a tensor, PyTorch style: backward() accumulates d(root·seed)/d(leaf) into
// the .grad of every leaf with requiresGrad (or only of `inputs`). The sweep itself (sweep.ts)
// is shared with autograd.grad and the transforms. Saved tensors are released right after their
// node's VJP has run unless the graph is retained (retainGraph, or createGraph, whose recorded
// gradients still need them).
import { GradError, ShapeError, DtypeError, ArgumentError } from '../errors.js';
import { Tensor } from './tensor.js';
import { filled } from './launch.js';
import { optionsArg } from '../args.js';
import { sweep, linked } from './sweep.js';

/** Options for {@link Tensor.backward} (PyTorch's `backward` arguments in camelCase). */
export interface BackwardOptions {
  /** Keep the graph (and its saved tensors) for another backward pass. Default: createGraph. */
  retainGraph?: boolean;
  /** Record the backward pass, so the gradients written to .grad are differentiable again. */
  createGraph?: boolean;
  /** Accumulate only into these leaves' .grad (the rest of the graph is still swept). */
  inputs?: readonly Tensor[];
  /**
   * @internal
   * The seed tensor is handed over and freed as soon as the root's VJP has used it, instead of
   * staying alive until the pass ends (a nested pass: checkpoint's recompute).
   */
  consumeSeed?: boolean;
}

/** Gradients handed out by a transform or autograd.grad without createGraph: named in backward's error. */
export const constantGradients = new WeakSet<Tensor>();

/** The seed of a sweep from root: ones for a scalar, else a tensor of root's shape and dtype. */
export function seedFor(fname: string, root: Tensor, seed: unknown, consume = false): Tensor {
  if (seed === undefined || seed === null) {
    if (root.size !== 1) {
      throw new GradError(`${fname}: output has shape [${root.shape}]; a non-scalar output needs an explicit seed of that shape`);
    }
    return filled(root.shape, root.dtype, 1);
  }
  if (typeof seed === 'number') return filled(root.shape, root.dtype, seed);
  if (!(seed instanceof Tensor)) throw new ArgumentError(`${fname}: seed must be a Tensor or a number, got ${typeof seed}`);
  seed.check(fname);
  if (seed.dtype !== root.dtype) throw new DtypeError(`${fname}: seed is ${seed.dtype} but the output is ${root.dtype}`);
  if (seed.shape.length !== root.shape.length || seed.shape.some((d, i) => d !== root.shape[i])) {
    throw new ShapeError(`${fname}: seed has shape [${seed.shape}], expected the output's shape [${root.shape}]`);
  }
  return consume ? seed : linked(seed); // with its tangent and tape: a seed may itself be differentiated (vjp of vjp)
}

const OPTION_KEYS = ['createGraph', 'retainGraph', 'inputs', 'consumeSeed'];

function checkOptions(opts: unknown): BackwardOptions {
  if (opts === undefined) return {};
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts))
    throw new ArgumentError(`backward: options must be an object, got ${opts === null ? 'null' : typeof opts}`);
  optionsArg('backward', opts, OPTION_KEYS);
  const o = opts as BackwardOptions;
  for (const k of ['retainGraph', 'createGraph'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'boolean')
      throw new ArgumentError(`backward: ${k} must be true or false, got ${typeof o[k]}`);
  }
  if (o.inputs !== undefined) {
    if (!Array.isArray(o.inputs)) throw new ArgumentError(`backward: inputs must be an array of tensors, got ${typeof o.inputs}`);
    o.inputs.forEach((t, i) => {
      if (!(t instanceof Tensor)) throw new ArgumentError(`backward: inputs[${i}] must be a Tensor, got ${typeof t}`);
      t.check('backward');
      if (t.node !== null || !t.requiresGrad)
        throw new GradError(`backward: inputs[${i}] must be a leaf with requiresGrad (its .grad is written)`);
    });
  }
  return o;
}

/** Why root does not require grad, with the way out when it is a gradient someone asked to differentiate. */
function notDifferentiable(fname: string, root: Tensor): GradError {
  if (constantGradients.has(root)) {
    return new GradError(
      `${fname}: this tensor is a gradient computed without createGraph, so it does not require grad. ` +
        'To differentiate a gradient, nest the transforms (grad(x => sum(grad(f)(x)))), or use ' +
        'loss.backward(undefined, { createGraph: true }) / autograd.grad(outputs, inputs, { createGraph: true })',
    );
  }
  return new GradError(
    `${fname}: the output does not require grad: nothing it was computed from requires grad, it was computed under noGrad, ` +
      'or it comes from a gradient (a .grad, or the result of grad, vjp or jacrev), which carries no graph: to differentiate a ' +
      'gradient, nest the transforms (grad(x => sum(grad(f)(x)))) or use createGraph',
  );
}

/** Accumulates into every leaf with requiresGrad reachable from root its d(root·seed)/d(leaf) in `.grad`. */
export function backward(root: Tensor, seed?: Tensor | number, options?: BackwardOptions): void {
  if (!(root instanceof Tensor)) throw new ArgumentError(`backward: expected a Tensor, got ${typeof root}`);
  root.check('backward');
  const opts = checkOptions(options);
  if (!root.requiresGrad) throw notDifferentiable('backward', root);
  if (root.node?.released)
    throw new GradError(
      'backward: the graph behind this output was already released by an earlier backward(); pass { retainGraph: true } to the first call to run it twice',
    );
  const s = seedFor('backward', root, seed, opts.consumeSeed);
  const createGraph = opts.createGraph ?? false;
  sweep({
    roots: [root],
    seeds: [s],
    targets: null,
    record: createGraph || 'nested',
    retain: opts.retainGraph ?? createGraph,
    only: opts.inputs === undefined ? undefined : new Set(opts.inputs),
  });
}
