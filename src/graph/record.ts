// The one place every primitive runs through: compute the output with the rule's kernels,
// carry the tangent along (forward mode), and record a node with exactly what the rule says
// it saves (reverse mode).
import { AdjointError } from '../errors.js';
import type { Tensor } from '../tensor/tensor.js';
import { exempt } from '../tensor/scope.js';
import { rules, type Prim, type ParamsOf } from '../ops/rules.js';
import type { Rule, Saved } from '../ops/table.js';
import { broadcastTo } from '../ops/api.js';
import { k } from '../ops/launch.js';
import { Node } from './node.js';
import { modes, withMode } from './modes.js';

export function apply<K extends Prim>(name: K, xs: readonly Tensor[], p: ParamsOf<K>): Tensor {
  for (const x of xs) x.check(name);
  const rule = rules[name] as unknown as Rule<ParamsOf<K>>;
  const y = rule.forward(xs, p);
  if (modes.anomaly) checkFinite(name, y, xs);
  if (modes.forward && xs.some((x) => x.tangent !== null)) y.tangent = tangentOf(rule, xs, y, p);
  if (modes.record && xs.some((x) => x.requiresGrad)) {
    y.requiresGrad = true;
    y.node = new Node(name, p, xs, saveFor(rule, xs, y));
  }
  return y;
}

/** The JVP, run with recording and tangent propagation off (a tangent has no tangent of its own). */
function tangentOf<P>(rule: Rule<P>, xs: readonly Tensor[], y: Tensor, p: P): Tensor {
  const t = withMode('record', false, () =>
    withMode('forward', false, () => {
      let t = rule.jvp(xs.map((x) => x.tangent), xs, y, p);
      if (xs.some((x) => x.tangent === t)) t = t.view();
      if (t.shape.length !== y.shape.length || t.shape.some((d, i) => d !== y.shape[i])) {
        const b = broadcastTo(t, y.shape);
        t.dispose();
        t = b;
      }
      return t;
    }),
  );
  exempt(t); // owned by y: disposed with it, never by a tidy scope
  return t;
}

function saveFor<P>(rule: Rule<P>, xs: readonly Tensor[], y: Tensor): Saved {
  const x: (Tensor | undefined)[] = xs.map(() => undefined);
  const which = rule.saves.inputs === 'all' ? xs.map((_, i) => i) : rule.saves.inputs;
  for (const i of which) x[i] = xs[i].save();
  return { x, y: rule.saves.output ? y.save() : undefined, shapes: xs.map((t) => t.shape) };
}

function checkFinite(name: string, y: Tensor, xs: readonly Tensor[]): void {
  const bad = k('count_nonfinite', y.dtype)(y.ptr, y.size);
  if (bad > 0) {
    const shapes = xs.map((x) => `[${x.shape}]`).join(', ');
    y.dispose();
    throw new AdjointError(`detectAnomaly: ${name} produced ${bad} NaN/Inf value(s) in its output [${y.shape}] from inputs ${shapes}`);
  }
}
