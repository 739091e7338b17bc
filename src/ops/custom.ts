// The customVjp primitive: a user function with a user-written VJP. It saves its inputs and
// output for the user's backward; forward mode through it is not defined (no JVP given).
import { ArgumentError, GradError } from '../errors.js';
import { isTensor, type Tensor } from './tensor.js';
import type { Rule, Saved } from './rule.js';
import { withMode } from './modes.js';
import { recordsNode } from './apply.js';
import { runScopedRest } from '../tensor/scope.js';
import { batchedOf, loopBatch } from './batch.js';
import { reshape } from './api.js';
import { describe } from '../args.js';

export interface CustomParams {
  readonly name: string;
  readonly forward: (...xs: Tensor[]) => Tensor;
  readonly backward: (g: Tensor, xs: readonly Tensor[], y: Tensor) => readonly (Tensor | null)[];
}

/**
 * The checkpoint primitive (src/autodiff/checkpoint.ts): a segment recorded as one node that
 * saves only its inputs. Its forward, VJP (recompute, then backward through the local graph) and
 * JVP are supplied per call, so this table entry stays free of the autodiff imports.
 */
export interface CheckpointParams {
  readonly name: string;
  readonly forward: (xs: readonly Tensor[]) => Tensor;
  readonly vjp: (g: Tensor, s: Saved, needs: readonly boolean[]) => (Tensor | null)[];
  readonly jvp: (y: Tensor) => Tensor;
}

/** A user cotangent must be null or a live tensor of the input's shape and the output's dtype. */
function checkCotangent(name: string, c: unknown, i: number, shape: readonly number[], g: Tensor): void {
  if (c === null) return;
  const want = `null or a ${g.dtype} Tensor of shape [${shape}]`;
  if (!isTensor(c)) throw new GradError(`customVjp(${name}): backward's cotangent ${i} must be ${want}, got ${describe(c)}`);
  c.check(`customVjp(${name})`);
  if (c.dtype !== g.dtype || c.shape.length !== shape.length || c.shape.some((d, j) => d !== shape[j])) {
    throw new GradError(`customVjp(${name}): backward's cotangent ${i} must be ${want}, got a ${c.dtype} Tensor of shape [${c.shape}]`);
  }
}

/** The forward's intermediates of each recorded customVjp call, by the call's inputs array (its node's `inputs`). */
const residuals = new WeakMap<readonly Tensor[], Tensor[]>();

export const customRules = {
  custom: {
    saves: { inputs: 'all', output: true },
    // int32 arguments (indices, labels) reach forward and backward as they are, as in JAX's
    // custom_vjp; they take no gradient, and the user's own ops check how they are used.
    int32: true,
    // Scoped like a composite op, so the user's intermediates are not left to the GC (the handle
    // returned may be an input or a captured tensor, hence the share). backward may read them
    // through its closure (there is no other way to pass residuals), so a call that records a node
    // keeps them until that node is released; any other call frees them now.
    forward: (xs, p) => {
      const records = recordsNode(xs); // asked before forward runs: inside it recording is off
      const [y, rest] = withMode('record', false, () =>
        withMode('forward', false, () =>
          runScopedRest(() => {
            const y: unknown = p.forward(...xs);
            if (!isTensor(y)) throw new ArgumentError(`customVjp(${p.name}): forward must return a Tensor, got ${describe(y)}`);
            return y.share();
          }),
        ),
      );
      if (records && y.dtype !== 'int32' && rest.length > 0) residuals.set(xs, rest);
      else for (const t of rest) t.dispose();
      return y;
    },
    release: (_p, xs) => {
      const rest = residuals.get(xs);
      residuals.delete(xs);
      if (rest !== undefined) for (const t of rest) t.dispose();
    },
    vjp: (g, s, p) => {
      const out = p.backward(g, s.x as Tensor[], s.y!);
      if (!Array.isArray(out) || out.length !== s.shapes.length) {
        throw new GradError(
          `customVjp(${p.name}): backward must return an array of one cotangent (or null) per input; got ${Array.isArray(out) ? out.length : typeof out} for ${s.shapes.length} inputs`,
        );
      }
      out.forEach((c, i) => {
        if (s.x[i]?.dtype === 'int32' && c !== null)
          throw new GradError(`customVjp(${p.name}): input ${i} is int32 (indices take no gradient): backward must return null for it`);
        checkCotangent(p.name, c, i, s.shapes[i], g);
      });
      return [...out];
    },
    jvp: (_ts, _xs, _y, p) => {
      throw new GradError(`customVjp(${p.name}): forward mode (jvp) is not defined for a function with a custom VJP`);
    },
    // The user's forward is written per example: run once per example.
    batch: (xs, dims, p, self) => loopBatch(xs, dims, self, p),
  } satisfies Rule<CustomParams>,
  checkpoint: {
    saves: { inputs: 'all', output: false },
    // An int32 argument (token ids, gather indices) is saved like the others and reaches fn's
    // recomputation as itself; it takes no gradient, and fn's own ops check how it is used.
    int32: true,
    forward: (xs, p) => p.forward(xs),
    vjp: (g, s, p, needs) => p.vjp(g, s, needs),
    jvp: (_ts, _xs, y, p) => p.jvp(y),
    // The first run already ran on the batched arguments: its output is batched; the node only wraps it.
    batch: (xs, dims, p, self) => {
      const y = p.forward(xs),
        b = batchedOf(y);
      if (b !== null) return [reshape(b[0], b[0].shape), b[1]];
      y.dispose();
      return loopBatch(xs, dims, self, p);
    },
  } satisfies Rule<CheckpointParams>,
};
