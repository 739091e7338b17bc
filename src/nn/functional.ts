// functionalCall (torch.func.functional_call): a module's forward run with some parameters
// replaced, for that call only, so a gradient with respect to a model's parameters is one line:
//   grad((p) => loss(functionalCall(model, p, x), y))(model.stateDict())
import { ArgumentError, DtypeError, ShapeError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import { Module } from './module.js';

type Owner = { module: Module<unknown>; local: string };

/** Every parameter tensor's owning modules and local names (a shared tensor has several). */
function owners(root: Module<unknown>): Map<Tensor, Owner[]> {
  const out = new Map<Tensor, Owner[]>();
  const walk = (m: Module<unknown>): void => {
    for (const [n, t] of m.namedParameters()) {
      if (n.includes('.')) continue; // a child's: visited below
      out.set(t, [...(out.get(t) ?? []), { module: m, local: n }]);
    }
    for (const [, c] of m.namedChildren()) walk(c);
  };
  walk(root);
  return out;
}

/**
 * module.forward(...inputs) with `params` (a record by parameter name, as namedParameters and
 * stateDict name them) in place of the module's own; names left out keep the module's tensors.
 * The module is restored afterwards, also when forward throws.
 */
export function functionalCall(module: Module<unknown>, params: Record<string, Tensor>, ...inputs: unknown[]): any {
  if (!(module instanceof Module))
    throw new ArgumentError(`functionalCall: module must be an nn.Module, got ${module === null ? 'null' : typeof module}`);
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    throw new ArgumentError(
      `functionalCall: params must be a record of Tensors by parameter name, got ${params === null ? 'null' : Array.isArray(params) ? 'an array' : typeof params}`,
    );
  }
  const own = owners(module);
  const current = new Map(module.namedParameters());
  for (const [name, t] of Object.entries(params)) {
    const p = current.get(name);
    if (p === undefined)
      throw new ArgumentError(
        `functionalCall: ${JSON.stringify(name)} is not a parameter of ${module.constructor.name} (it has ${[...current.keys()].join(', ') || 'none'})`,
      );
    if (!(t instanceof Tensor))
      throw new ArgumentError(`functionalCall: params[${JSON.stringify(name)}] must be a Tensor, got ${t === null ? 'null' : typeof t}`);
    t.check('functionalCall');
    if (t.shape.length !== p.shape.length || t.shape.some((d, i) => d !== p.shape[i]))
      throw new ShapeError(`functionalCall: params[${JSON.stringify(name)}] has shape [${t.shape}], the parameter [${p.shape}]`);
    if (t.dtype !== p.dtype)
      throw new DtypeError(`functionalCall: params[${JSON.stringify(name)}] is ${t.dtype}, the parameter ${p.dtype}`);
  }
  const undo: [Owner, Tensor][] = [];
  try {
    for (const [name, t] of Object.entries(params)) {
      for (const o of own.get(current.get(name)!) ?? []) undo.push([o, o.module.replaceParameter(o.local, t)]);
    }
    return (module.forward as (...xs: unknown[]) => unknown)(...inputs);
  } finally {
    for (const [o, t] of undo.reverse()) o.module.replaceParameter(o.local, t);
  }
}
