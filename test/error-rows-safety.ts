// Error-table rows for arguments that used to be accepted and ignored, or that turned into a
// bare TypeError: options objects where a boolean belongs, unknown option keys, null options,
// extra positional arguments to Tensor methods, BigInt and Symbol arguments.
import * as A from '../src/index.js';
import type { Fixtures, Row } from './error-rows.js';

const any = (v: unknown) => v as any;
const row = (fn: string, call: () => unknown, error: Row['error'], ...says: string[]): Row => ({ fn, call, error, says });

export function safetyRows(f: Fixtures): Row[] {
  return [
    row('sum', () => A.sum(f.x, 1, any({ keepdim: false })), A.ArgumentError, 'keepdims', 'true or false', 'object'),
    row('mean', () => A.mean(f.x, 0, any(1)), A.ArgumentError, 'keepdims', 'true or false', '1 (a number)'),
    row('max', () => A.max(f.x, 0, any('yes')), A.ArgumentError, 'keepdims', '"yes" (a string)'),
    row('logsumexp', () => A.logsumexp(f.x, 1, any({})), A.ArgumentError, 'keepdims', 'object'),
    row('Tensor.sum', () => any(f.x).sum(0, false, 'extra'), A.ArgumentError, 'at most 2 arguments', 'got 3'),
    row('Tensor.relu', () => any(f.x).relu(0.1), A.ArgumentError, 'at most 0 arguments', 'ignored'),
    row('Tensor.view', () => f.x.view(any(6)), A.ArgumentError, 'shape', 'array', '6 (a number)'),
    row('concat', () => A.concat(any(f.x)), A.ArgumentError, 'non-empty array', 'Tensor [2,3]'),
    row('Tensor.concat', () => f.x.concat(any(f.x)), A.ArgumentError, 'others', 'array of Tensors'),
    row('zeros', () => A.zeros(any(3n)), A.ShapeError, 'shape', '3n (a BigInt)'),
    row('zeros', () => A.zeros([2], any({ dtyp: 'float64' })), A.ArgumentError, 'unknown option "dtyp"', 'dtype, requiresGrad'),
    row('ones', () => A.ones([2], any(null)), A.ArgumentError, 'options', 'object', 'null'),
    row('full', () => A.full([2], any(Symbol('v'))), A.ArgumentError, 'value', 'number', 'Symbol(v)'),
    row('arange', () => A.arange(any(Symbol('n'))), A.ArgumentError, 'n', 'non-negative integer', 'Symbol(n)'),
    row('arange', () => A.arange(any(4n)), A.ArgumentError, 'n', '4n (a BigInt)'),
    row('astype', () => A.astype(f.x, any(1n)), A.DtypeError, 'dtype', '1n (a BigInt)'),
    row('tensor', () => A.tensor([1], any({ requires_grad: true })), A.ArgumentError, 'unknown option "requires_grad"'),
    row('randn', () => A.randn([2], any({ requiresGrad: 1 })), A.ArgumentError, 'requiresGrad', 'true or false'),
    row('dropout', () => A.dropout(f.x, 0.5, any(null)), A.ArgumentError, 'options', 'object', 'null'),
    row('dropout', () => A.dropout(f.x, 0.5, any({ training: 'no' })), A.ArgumentError, 'training', 'true or false', '"no" (a string)'),
    row('gradcheck', () => A.gradcheck((t) => A.sum(t), [f.x64], any(null)), A.ArgumentError, 'options', 'object', 'null'),
    row('mseLoss', () => A.mseLoss(f.x, f.x, any({ reduce: 'sum' })), A.ArgumentError, 'unknown option "reduce"', 'reduction'),
    row('hessian', () => A.hessian(any(5)), A.ArgumentError, 'f', 'function', '5 (a number)'),
    row('jacfwd', () => A.jacfwd(any(null)), A.ArgumentError, 'f', 'function', 'null'),
    row('jacrev', () => A.jacrev(any('f')), A.ArgumentError, 'f', 'function', '"f" (a string)'),
    row('hvp', () => A.hvp(any({}), f.v, f.v), A.ArgumentError, 'f', 'function', 'object'),
    row('nn.Embedding', () => f.emb.forward([0, 0.5]), A.ArgumentError, 'index 0.5', 'not an integer'),
    row('nn.Linear', () => new A.nn.Linear(2, 2, any({ bais: false })), A.ArgumentError, 'unknown option "bais"'),
    row('nn.Dropout', () => new A.nn.Dropout(0.5, any(null)), A.ArgumentError, 'options', 'null'),
    row('optim.SGD', () => new A.optim.SGD([f.p], any({ lr: '1e-3' })), A.ArgumentError, 'lr', '"1e-3" (a string)'),
    row('data.digits', () => A.data.digits(any(null)), A.ArgumentError, 'options', 'null'),
    row('data.permutation', () => A.data.permutation(2 ** 31), A.ArgumentError, 'n', 'below 2³¹'),
    row('gradientWarnings', () => A.gradientWarnings([any(null)]), A.ArgumentError, 'stats[0]', 'gradientStats'),
  ];
}
