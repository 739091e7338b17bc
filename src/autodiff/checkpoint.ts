// Gradient checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost").
// checkpoint(fn) runs fn without recording its interior and records ONE node for the call that
// saves only the inputs; that node's VJP reruns fn with recording on (from the saved inputs,
// rewrapped as fresh leaves), backpropagates the incoming cotangent through that local graph,
// and frees it before the sweep moves on. Kernels are deterministic and random draws are
// replayed (src/tensor/replay.ts), so the recomputed interior — and every gradient — is bit-identical to
// an uncheckpointed run. (One exception: a tensor used several times inside a segment AND
// elsewhere gets its in-segment contributions summed first, a different float grouping.)
// The segment planner is segments.ts; nn.Sequential's `checkpoint` option runs it (src/nn/sequential.ts).
import { ArgumentError, GradError } from '../errors.js';
import { Tensor, isTensor } from '../ops/tensor.js';
import { runScoped } from '../tensor/scope.js';
import { modes, withMode } from '../ops/modes.js';
import { recordDraws, replayDraws } from '../tensor/replay.js';
import { apply, observingInputs } from '../ops/apply.js';
import type { Saved } from '../ops/rule.js';
import { zerosLike } from '../ops/api.js';
import { sweep } from '../ops/sweep.js';
import { batching } from '../ops/batch.js';
import { describe, tooMany } from '../args.js';

type Fn = (...xs: Tensor[]) => Tensor;
// biome-ignore lint/suspicious/noExplicitAny: any arguments; the tensors among them are checkpointed
type AnyFn = (...args: any[]) => Tensor;

function output(name: string, y: unknown): Tensor {
  if (!isTensor(y)) throw new ArgumentError(`checkpoint(${name}): the function must return a Tensor, got ${describe(y)}`);
  return y;
}

/** The id every tensor created from now on exceeds (a zero-byte probe: no memory is counted). */
function watermark(): number {
  const probe = Tensor.empty([0], 'float32');
  probe.dispose();
  return probe.id;
}

interface FirstRun {
  /** Tensors from outside fn (not arguments) that require grad: parameters read through fn's closure. */
  readonly captured: Tensor[];
  /** The random draws fn made, for the recomputation to replay. */
  readonly draws: readonly unknown[];
}

/** fn under noGrad, watching which outside tensors requiring grad it reads; its interior is freed on return. */
function firstRun(name: string, fn: Fn, xs: readonly Tensor[]): FirstRun & { y: Tensor } {
  const mark = watermark();
  const read = new Set<Tensor>();
  const note = (ins: readonly Tensor[]) => {
    for (const t of ins) if (t.requiresGrad) read.add(t);
  };
  const [out, draws] = recordDraws(() =>
    runScoped(() => withMode('record', false, () => observingInputs(note, () => output(name, fn(...xs)))), isTensor),
  );
  if (out.requiresGrad) read.add(out); // fn may return a parameter without using it in an op
  const args = new Set(xs);
  const captured = [...read].filter((t) => t.id <= mark && !args.has(t));
  const inner = captured.find((t) => t.node !== null);
  if (inner !== undefined) {
    if (out.id > mark) out.dispose();
    throw new GradError(
      `checkpoint(${name}): the function reads a tensor of shape [${inner.shape}] that was computed outside it and requires grad; ` +
        'pass it as an argument so its gradient can flow through the checkpoint',
    );
  }
  return { y: out.id > mark ? out : out.alias(), captured, draws };
}

/**
 * The backward pass of one segment: rerun fn with recording on, from fresh leaves over the saved
 * inputs and with the first run's random draws, then sweep g through that local graph to the
 * arguments and the captured parameters (handed back, so the outer sweep stays the one that
 * writes .grad, all at once at its end, exactly as it would without the checkpoint). When the
 * outer sweep records (the gradient is differentiated again), so does this one, and the
 * arguments are identity nodes on the (linked) saved inputs, so the chain is not cut.
 */
function recompute(
  name: string,
  fn: Fn,
  arity: number,
  first: FirstRun,
  g: Tensor,
  s: Saved,
  needs: readonly boolean[],
): (Tensor | null)[] {
  const record = modes.record;
  const args = s.x.slice(0, arity).map((t, i) => {
    if (record && needs[i] && t!.requiresGrad) return withMode('record', true, () => apply('reshape', [t!], { shape: t!.shape }));
    const a = t!.alias();
    a.requiresGrad = needs[i];
    return a;
  });
  const y = runScoped(() => withMode('record', true, () => replayDraws(first.draws, () => output(name, fn(...args)))), isTensor);
  if (y.dtype !== g.dtype || y.shape.length !== g.shape.length || y.shape.some((d, i) => d !== g.shape[i])) {
    throw new GradError(`checkpoint(${name}): the recomputation gave ${y.dtype} [${y.shape}], the first run ${g.dtype} [${g.shape}]`);
  }
  if (!y.requiresGrad) return needs.map(() => null);
  // g is freed after the root's VJP, as in one uncheckpointed sweep
  return sweep({ roots: [y], seeds: [g], targets: [...args, ...first.captured], record, retain: false }).grads;
}

/**
 * fn wrapped so that a call keeps only its inputs for the backward pass and recomputes its
 * interior then. Parameters fn reads through its closure receive their gradients as usual.
 * Under noGrad (or jvp, which records nothing) it is an ordinary call; forward-mode tangents
 * flow through it either way. Nested checkpoints are recomputed recursively.
 */
export function checkpoint<F extends AnyFn>(fn: F): F {
  if (arguments.length > 1) throw tooMany('checkpoint', 1, arguments.length);
  if (typeof fn !== 'function') throw new ArgumentError(`checkpoint: fn must be a function, got ${describe(fn)}`);
  const name = fn.name || 'anonymous';
  return ((...all: unknown[]) => {
    all.forEach((x) => {
      if (isTensor(x)) x.check(`checkpoint(${name})`);
    });
    // Arguments that are not tensors (numbers, flags, options) are constants of the call, as in
    // PyTorch's checkpoint: the node saves and differentiates the tensor arguments only.
    const at = all.flatMap((x, i) => (isTensor(x) ? [i] : []));
    const xs = at.map((i) => all[i] as Tensor);
    const call: Fn =
      at.length === all.length
        ? (fn as Fn)
        : (...ts) => {
            const args = all.slice();
            at.forEach((i, j) => {
              args[i] = ts[j];
            });
            return (fn as (...a: unknown[]) => Tensor)(...args);
          };
    // Under vmap, an ordinary recorded call: the checkpoint node would be applied to the batched
    // arguments' physical tensors, which its recomputation cannot tell from its own inputs, and
    // grad(vmap(f)) came out as zeros. The values and gradients are right; the memory is not saved.
    if (!modes.record || batching.level > 0) return runScoped(() => output(name, call(...xs)), isTensor);
    const { y, captured, draws } = firstRun(name, call, xs);
    const first: FirstRun = { captured, draws };
    let pending: Tensor | null = y; // the output, a handle of the caller's scope without a node yet
    return apply('checkpoint', [...xs, ...first.captured], {
      name,
      forward: (ins) => {
        if (pending === null) return firstRun(name, call, ins.slice(0, xs.length)).y; // applied again (a tracer's replay)
        const out = pending;
        pending = null; // the node keeps these params: they must not hold the output
        return out;
      },
      vjp: (g, s, needs) => recompute(name, call, xs.length, first, g, s, needs),
      jvp: (out) => (out.tangent === null ? zerosLike(out) : out.tangent), // carried out of the first run
    });
  }) as F;
}
