// Error-table rows (test/errors.test.ts) for the int32 dtype and the sequence-model ops:
// permute … argmax, comparisons, where/maskedFill, tril/triu and crossEntropy's label forms.
import * as A from '../src/index.js';
import type { Fixtures, Row } from './error-rows.js';

type ErrorClass = Row['error'];
const row = (fn: string, call: () => unknown, error: ErrorClass, ...says: string[]): Row => ({ fn, call, error, says });
const any = (v: unknown) => v as any; // eslint-disable-line @typescript-eslint/no-explicit-any
const ints = () =>
  A.tensor(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    { dtype: 'int32' },
  );

function shapeOpRows(f: Fixtures): Row[] {
  return [
    row('permute', () => A.permute(f.x, 0, 0), A.ShapeError, 'dims [0, 0]', 'permutation', '[2,3]'),
    row('permute', () => A.permute(f.x, 0, 2), A.ShapeError, 'dim 2', 'out of range', '[2,3]'),
    row('permute', () => A.permute(f.x, 0), A.ShapeError, 'dims [0]', 'permutation'),
    row('permute', () => A.permute(any('x'), 0), A.ArgumentError, 'x', 'Tensor'),
    row('unsqueeze', () => A.unsqueeze(f.x, 3), A.ShapeError, 'dim 3', 'out of range', '[2,3]'),
    row('unsqueeze', () => A.unsqueeze(f.x, any(0.5)), A.ArgumentError, 'dim', 'integer', '0.5'),
    row('squeeze', () => A.squeeze(f.x, -3), A.ShapeError, 'dim -3', '[2,3]'),
    row('squeeze', () => A.squeeze(f.dead), A.DisposedError, 'disposed'),
    row('flatten', () => A.flatten(f.x, 1, 0), A.ShapeError, 'start (1)', 'end (0)', '[2,3]'),
    row('flatten', () => A.flatten(f.x, 2), A.ShapeError, 'start 2', 'out of range'),
    row('split', () => A.split(f.x, [1, 2]), A.ShapeError, 'sizes [1,2]', 'length 2', 'axis 0', '[2,3]'),
    row('split', () => A.split(f.x, 0), A.ArgumentError, 'size', 'positive', '0'),
    row('split', () => A.split(f.x, 1, 2), A.ShapeError, 'axis 2', 'out of range'),
    row('split', () => A.split(A.ones([]), 1), A.ShapeError, 'scalar'),
    row('chunk', () => A.chunk(f.x, 0), A.ArgumentError, 'n', 'positive', '0'),
    row('chunk', () => A.chunk(f.x, any('2')), A.ArgumentError, 'n', 'integer', 'string'),
    row('Tensor.T', () => A.ones([2, 2, 2]).T, A.ShapeError, '2-D', '[2,2,2]', 'permute'),
    row('tril', () => A.tril(f.v), A.ShapeError, 'at least 2-D', '[3]'),
    row('tril', () => A.tril(f.x, 0.5), A.ArgumentError, 'k', 'integer', '0.5'),
    row('triu', () => A.triu(A.ones([])), A.ShapeError, 'at least 2-D', '[]'),
    row('triu', () => A.triu(any(null)), A.ArgumentError, 'x', 'Tensor'),
  ];
}

function selectionRows(f: Fixtures): Row[] {
  return [
    row('eq', () => A.eq(f.x, f.y), A.ShapeError, '[2,3]', '[3,2]', 'broadcast'),
    row('ne', () => A.ne(f.x, f.x64), A.DtypeError, 'float32', 'float64'),
    row('lt', () => A.lt(ints(), 1.5), A.DtypeError, 'int32', '1.5', "astype('float32')"),
    row('le', () => A.le(any('a'), f.x), A.ArgumentError, 'Tensor', 'string'),
    row('gt', () => A.gt(1, 2), A.ArgumentError, 'at least one operand', 'Tensor'),
    row('ge', () => A.ge(f.dead, 0), A.DisposedError, 'disposed'),
    row('where', () => A.where(A.ones([4]), f.x, 0), A.ShapeError, 'cond [4]', 'a [2,3]', 'b []', 'broadcast'),
    row('where', () => A.where(A.ones([3]), f.x, f.x64), A.DtypeError, 'float32', 'float64'),
    row('where', () => A.where(A.ones([3]), f.x, any('0')), A.ArgumentError, 'b', 'Tensor or a number', 'string'),
    row('where', () => A.where(A.ones([3]), ints(), 0.5), A.DtypeError, 'a', '0.5', 'int32'),
    row('where', () => A.where(any([1]), f.x, 0), A.ArgumentError, 'cond', 'Tensor'),
    row('maskedFill', () => A.maskedFill(f.v, f.x, 0), A.ShapeError, 'mask [2,3]', 'x [3]'),
    row('maskedFill', () => A.maskedFill(f.x, A.ones([2]), 0), A.ShapeError, 'mask [2]', 'x [2,3]'),
    row('maskedFill', () => A.maskedFill(f.x, A.ones([3]), any('-inf')), A.ArgumentError, 'value', 'number', 'string'),
    row('argmax', () => A.argmax(f.x, 2), A.ShapeError, 'axis 2', 'out of range', '[2,3]'),
    row('argmax', () => A.argmax(A.zeros([2, 0]), 1), A.ShapeError, 'axis 1', 'empty', '[2,0]'),
    row('argmax', () => A.argmax(A.ones([]), 0), A.ShapeError, 'scalar', 'omit the axis'),
    row('argmax', () => A.argmax(A.zeros([0])), A.ShapeError, 'empty', '[0]'),
  ];
}

function int32Rows(f: Fixtures): Row[] {
  return [
    row('add', () => A.add(ints(), 1), A.DtypeError, 'int32', '[2,3]', "astype('float32')"),
    row('matmul', () => A.matmul(ints(), A.transpose(ints())), A.DtypeError, 'int32', "astype('float32')"),
    row('exp', () => A.exp(ints()), A.DtypeError, 'int32', "astype('float32')"),
    row('sum', () => A.sum(ints()), A.DtypeError, 'int32', "astype('float32')"),
    row('softmax', () => A.softmax(ints()), A.DtypeError, 'int32', "astype('float32')"),
    row('mean', () => A.mean(ints()), A.DtypeError, 'mean: got an int32 tensor [2,3]', "astype('float32')"),
    row('logSoftmax', () => A.logSoftmax(ints()), A.DtypeError, 'logSoftmax: got an int32', "astype('float32')"),
    row('layerNorm', () => A.layerNorm(ints()), A.DtypeError, 'layerNorm: got an int32', "astype('float32')"),
    row('mseLoss', () => A.mseLoss(ints(), ints()), A.DtypeError, 'mseLoss: got an int32', "astype('float32')"),
    row('gelu', () => A.gelu(ints()), A.DtypeError, 'gelu: got an int32', "astype('float32')"),
    row('dropout', () => A.dropout(ints(), 0.5, { seed: 1 }), A.DtypeError, 'dropout: got an int32', "astype('float32')"),
    row('tensor', () => A.tensor([1.5], { dtype: 'int32' }), A.ArgumentError, 'element 0', '1.5', 'int32', "astype('int32')"),
    row('tensor', () => A.tensor([2 ** 31], { dtype: 'int32' }), A.ArgumentError, '2147483648', 'int32'),
    row('tensor', () => A.tensor([1], { dtype: 'int32', requiresGrad: true }), A.GradError, 'int32', 'requiresGrad'),
    row('full', () => A.full([2], 0.5, { dtype: 'int32' }), A.ArgumentError, 'value', '0.5', 'int32'),
    row('arange', () => A.arange(3, { dtype: any('int64') }), A.DtypeError, '"int64"', 'int32'),
    row('randn', () => A.randn([2], { dtype: any('int32') }), A.DtypeError, '"int32"', 'float32', 'float64'),
    row('gather', () => A.gather(f.x, A.tensor([0, 1])), A.DtypeError, 'indices', 'float32', "astype('int32')"),
    row('gather', () => A.gather(f.x, A.tensor([0, 2], { dtype: 'int32' })), A.ShapeError, 'index 2', '[0, 2)'),
  ];
}

function crossEntropyRows(): Row[] {
  const logits = () => A.randn([2, 3], { seed: 8 });
  return [
    row('crossEntropy', () => A.crossEntropy(logits(), A.tensor([0, 1])), A.DtypeError, 'float32 tensor', '[2]', "astype('int32')"),
    row(
      'crossEntropy',
      () =>
        A.crossEntropy(
          logits(),
          A.tensor(
            [
              [1, 0, 0],
              [0, 1, 0],
            ],
            { dtype: 'int32' },
          ),
        ),
      A.ShapeError,
      'one-hot',
      '[2]',
      '[2,3]',
    ),
    row(
      'crossEntropy',
      () =>
        A.crossEntropy(logits(), [
          [1, 0, 0],
          [0, 1, 0],
        ]),
      A.ShapeError,
      'one-hot',
      '[2,3]',
    ),
    row('crossEntropy', () => A.crossEntropy(logits(), [1, 0, 0, 0, 1, 0]), A.ShapeError, '6 labels', '2 rows', 'one-hot'),
    row('crossEntropy', () => A.crossEntropy(logits(), any(['cat', 'dog'])), A.ArgumentError, 'label "cat"', 'position 0', 'string'),
    row('crossEntropy', () => A.crossEntropy(logits(), any('cat')), A.ArgumentError, 'labels is a string', '"cat"'),
    row(
      'crossEntropy',
      () => A.crossEntropy(logits(), A.tensor([0, 1, 2], { dtype: 'int32' })),
      A.ShapeError,
      'labels [3]',
      'logits [2,3]',
      '[2]',
    ),
    row('crossEntropy', () => A.crossEntropy(logits(), A.ones([2, 3], { dtype: 'float64' })), A.DtypeError, 'float64', 'float32'),
    row(
      'crossEntropy',
      () => A.crossEntropy(logits(), A.ones([2, 3]), { ignoreIndex: 0 }),
      A.ArgumentError,
      'ignoreIndex',
      'probabilities',
    ),
    row(
      'crossEntropy',
      () => A.crossEntropy(logits(), [0, 1], { labelSmoothing: 1.5 }),
      A.ArgumentError,
      'labelSmoothing',
      '[0, 1]',
      '1.5',
    ),
    row('crossEntropy', () => A.crossEntropy(logits(), [0, 1], { ignoreIndex: 0.5 }), A.ArgumentError, 'ignoreIndex', 'integer', '0.5'),
    row(
      'crossEntropy',
      () => A.crossEntropy(logits(), [0, 7], { ignoreIndex: -100 }),
      A.ArgumentError,
      'label 7',
      '[0, 3)',
      'ignoreIndex (-100)',
    ),
  ];
}

export function seqOpsRows(f: Fixtures): Row[] {
  return [...shapeOpRows(f), ...selectionRows(f), ...int32Rows(f), ...crossEntropyRows()];
}
