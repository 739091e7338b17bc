// The customVjp primitive: a user function with a user-written VJP. It saves its inputs and
// output for the user's backward; forward mode through it is not defined (no JVP given).
import { GradError } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import type { Rule } from './table.js';
import { withMode } from '../graph/modes.js';

export interface CustomParams {
  readonly name: string;
  readonly forward: (...xs: Tensor[]) => Tensor;
  readonly backward: (g: Tensor, xs: readonly Tensor[], y: Tensor) => readonly (Tensor | null)[];
}

export const customRules = {
  custom: {
    saves: { inputs: 'all', output: true },
    forward: (xs, p) => withMode('record', false, () => withMode('forward', false, () => p.forward(...xs).view())),
    vjp: (g, s, p) => {
      const out = p.backward(g, s.x as Tensor[], s.y!);
      if (out.length !== s.shapes.length) {
        throw new GradError(`customVjp(${p.name}): backward returned ${out.length} cotangents for ${s.shapes.length} inputs`);
      }
      return [...out];
    },
    jvp: (_ts, _xs, _y, p) => {
      throw new GradError(`customVjp(${p.name}): forward mode (jvp) is not defined for a function with a custom VJP`);
    },
  } satisfies Rule<CustomParams>,
};
