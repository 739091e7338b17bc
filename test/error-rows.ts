// The rows of the error table (test/errors.test.ts): every public function fed something it
// must refuse. A row names the function (as exported: 'add', 'nn.Linear', 'Tensor.backward'),
// the call, the error class, and the words its message must contain: the op, the offending
// argument and what was expected.
import * as A from '../src/index.js';
import { safetyRows } from './error-rows-safety.js';
import { SPECS } from './specs.js';
import { seqOpsRows } from './seq-error-rows.js';

type ErrorClass = abstract new (...args: any[]) => Error;
export interface Row {
  fn: string;
  call: () => unknown;
  error: ErrorClass;
  says: readonly string[];
}

/** Fixtures, created after init() by `makeFixtures`, then shared by every row. */
export interface Fixtures {
  x: A.Tensor; // f32 [2, 3]
  y: A.Tensor; // f32 [3, 2]
  v: A.Tensor; // f32 [3]
  x64: A.Tensor; // f64 [2, 3]
  dead: A.Tensor; // disposed f32 [2, 3]
  img: A.Tensor; // f32 [1, 1, 4, 4]
  w: A.Tensor; // f32 [2, 1, 3, 3]
  p: A.Tensor; // f32 [2, 3] with requiresGrad
  lin: A.nn.Linear; // 3 → 2
  ln: A.nn.LayerNorm; // 4
  emb: A.nn.Embedding; // 3 × 2
  conv: A.nn.Conv2d; // 2 → 2, 3×3
}

export function makeFixtures(): Fixtures {
  const dead = A.ones([2, 3]);
  dead.dispose();
  return A.tidy(() => {
    const f = {
      x: A.randn([2, 3], { seed: 1 }),
      y: A.randn([3, 2], { seed: 2 }),
      v: A.randn([3], { seed: 3 }),
      x64: A.randn([2, 3], { seed: 4, dtype: 'float64' }),
      dead,
      img: A.randn([1, 1, 4, 4], { seed: 5 }),
      w: A.randn([2, 1, 3, 3], { seed: 6 }),
      p: A.randn([2, 3], { seed: 7, requiresGrad: true }),
    };
    for (const t of Object.values(f)) if (!t.disposed) A.keep(t);
    const nn = A.nn;
    return {
      ...f,
      lin: new nn.Linear(3, 2, { seed: 1 }),
      ln: new nn.LayerNorm(4),
      emb: new nn.Embedding(3, 2, { seed: 2 }),
      conv: new nn.Conv2d(2, 2, 3),
    };
  });
}

const any = (v: unknown) => v as any;
const disposed = (t: A.Tensor): A.Tensor => (t.dispose(), t);
function backwardTwice(leaf: A.Tensor): void {
  const l = A.sum(A.square(leaf));
  l.backward();
  l.backward();
}
/** Runs a vjp function on a cotangent, releasing the retained graph whatever happens. */
function vjpWith(x: A.Tensor, ct: A.Tensor): void {
  const [, back] = A.vjp((t) => A.mul(t, 2), x);
  try {
    back(ct);
  } finally {
    back.release();
  }
}
const row = (fn: string, call: () => unknown, error: ErrorClass, ...says: string[]): Row => ({ fn, call, error, says });

const BINARY = ['add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum'] as const;
/** Every one-argument unary function of the spec table (its row in test/specs.ts is the one place an op is listed). */
const UNARY = SPECS.filter((s) => s.kind === 'unary' && /^\w+$/.test(s.name)).map((s) => s.name as 'exp');
const REDUCE = ['sum', 'mean', 'max', 'logsumexp'] as const;

function elementwiseRows(f: Fixtures): Row[] {
  const rows: Row[] = [];
  for (const op of BINARY) {
    const g = any(A[op]);
    rows.push(
      row(op, () => g(f.x, f.y), A.ShapeError, '[2,3]', '[3,2]', 'broadcast'),
      row(op, () => any(f.x)[op](f.y), A.ShapeError, '[2,3]', '[3,2]'),
      row(op, () => g(f.x, f.x64), A.DtypeError, 'float32', 'float64', 'astype'),
      row(op, () => g(f.dead, f.x), A.DisposedError, 'disposed'),
      row(op, () => g(f.x, 'a'), A.ArgumentError, 'second operand', 'Tensor', 'string'),
      row(op, () => g(f.x), A.ArgumentError, 'second operand', 'Tensor', 'undefined'),
      row(op, () => g(null, f.x), A.ArgumentError, 'first operand', 'Tensor'),
      row(op, () => g(1, 2), A.ArgumentError, 'Tensor'),
    );
  }
  for (const op of UNARY) {
    const g = any(A[op]);
    rows.push(
      row(op, () => g('a'), A.ArgumentError, 'x', 'Tensor', 'string'),
      row(op, () => g(), A.ArgumentError, 'x', 'Tensor', 'undefined'),
      row(op, () => g(f.dead), A.DisposedError, 'disposed'),
    );
  }
  rows.push(
    row('leakyRelu', () => A.leakyRelu(f.x, NaN), A.ArgumentError, 'slope', 'finite', 'NaN'),
    row('leakyRelu', () => A.leakyRelu(f.x, any('0.1')), A.ArgumentError, 'slope', 'finite number'),
    row('leakyRelu', () => A.leakyRelu(any([1])), A.ArgumentError, 'x', 'Tensor'),
    row('gelu', () => A.gelu(f.x, { approximate: any('exact') }), A.ArgumentError, 'approximate', "'tanh' or 'none'", 'exact'),
    row('gelu', () => A.gelu(f.x, any(null)), A.ArgumentError, 'options', 'null'),
    row('clamp', () => A.clamp(f.x, NaN, 1), A.ArgumentError, 'lo', 'NaN'),
    row('clamp', () => A.clamp(f.x, 0, NaN), A.ArgumentError, 'hi', 'NaN'),
    row('clamp', () => A.clamp(f.x, 2, 1), A.ArgumentError, 'lo (2)', 'hi (1)'),
    row('clamp', () => A.clamp(f.x, any('0'), 1), A.ArgumentError, 'lo', 'number', 'string'),
    row('clamp', () => any(A.clamp)(f.x, 0), A.ArgumentError, 'hi', 'number', 'undefined'),
    row('clamp', () => A.clamp(f.dead, 0, 1), A.DisposedError, 'disposed'),
  );
  return rows;
}

function reduceRows(f: Fixtures): Row[] {
  const rows: Row[] = [];
  for (const op of REDUCE) {
    const g = any(A[op]);
    rows.push(
      row(op, () => g(f.x, 2), A.ShapeError, 'axis 2', 'out of range', '[2,3]'),
      row(op, () => g(f.x, -3), A.ShapeError, 'axis -3', '[2,3]'),
      row(op, () => g(f.x, 0.5), A.ArgumentError, 'axis must be an integer', '0.5'),
      row(op, () => g(f.x, 'a'), A.ArgumentError, 'axis', 'number', 'string'),
      row(op, () => g(f.x, [0, 7]), A.ShapeError, 'axis 7'),
      row(op, () => g(f.x, [0, -2]), A.ArgumentError, 'axis [0,-2]', 'axis 0', 'more than once'),
      row(op, () => g(f.dead), A.DisposedError, 'disposed'),
      row(op, () => g('x'), A.ArgumentError, 'x', 'Tensor'),
    );
  }
  rows.push(row('max', () => A.max(A.zeros([2, 0]), 1), A.ShapeError, 'empty axis', '[2,0]'));
  return rows;
}

function shapeRows(f: Fixtures): Row[] {
  return [
    row('reshape', () => A.reshape(f.x, [4, 2]), A.ShapeError, '[2,3]', '6 elements', '[4,2]'),
    row('reshape', () => A.reshape(f.x, [-1, -1]), A.ShapeError, '[-1,-1]'),
    row('reshape', () => A.reshape(A.zeros([0, 3]), [0, -1]), A.ShapeError, '[0,3]', '[0,-1]', 'ambiguous'),
    row('reshape', () => A.reshape(f.x, [2.5, 2]), A.ShapeError, '[2.5,2]'),
    row('reshape', () => A.reshape(f.x, any(6)), A.ArgumentError, 'shape', 'array', 'number'),
    row('reshape', () => any(A.reshape)(f.x), A.ArgumentError, 'shape', 'array', 'undefined'),
    row('reshape', () => A.reshape(f.dead, [6]), A.DisposedError, 'disposed'),
    row('transpose', () => A.transpose(f.x, [0, 0]), A.ShapeError, 'perm [0,0]', 'permutation', '[2,3]'),
    row('transpose', () => A.transpose(f.x, [0]), A.ShapeError, 'perm [0]', 'permutation'),
    row('transpose', () => A.transpose(f.x, [0, 5]), A.ShapeError, 'axis 5', 'out of range'),
    row('transpose', () => A.transpose(f.x, any('10')), A.ArgumentError, 'perm', 'array'),
    row('transpose', () => A.transpose(any({ shape: [2] })), A.ArgumentError, 'x', 'Tensor', 'object'),
    row('broadcastTo', () => A.broadcastTo(f.x, [3, 3]), A.ShapeError, '[2,3]', '[3,3]'),
    row('broadcastTo', () => A.broadcastTo(f.x, [3]), A.ShapeError, '[2,3]', '[3]'),
    row('broadcastTo', () => A.broadcastTo(A.ones([1]), [-1]), A.ShapeError, 'non-negative integers', '[-1]'),
    row('broadcastTo', () => A.broadcastTo(f.x, any('2,3')), A.ArgumentError, 'shape', 'array', 'string'),
    row('concat', () => A.concat([]), A.ArgumentError, 'non-empty array'),
    row('concat', () => A.concat(any(f.x)), A.ArgumentError, 'array of tensors'),
    row('concat', () => A.concat([f.x, f.y]), A.ShapeError, 'tensor 1', '[3,2]', '[2,3]', 'axis 0'),
    row('concat', () => A.concat([f.x, f.x64]), A.DtypeError, 'tensor 1', 'float64', 'float32'),
    row('concat', () => A.concat([f.x, f.x], 2), A.ShapeError, 'axis 2', 'out of range'),
    row('concat', () => A.concat([f.x, any(7)]), A.ArgumentError, 'tensor 1', 'Tensor', 'number'),
    row('concat', () => A.concat([f.x, f.dead]), A.DisposedError, 'disposed'),
    row('slice', () => A.slice(f.x, [0, 0], [3, 3]), A.ShapeError, 'begin [0,0]', 'size [3,3]', '[2,3]'),
    row('slice', () => A.slice(f.x, [0], [1]), A.ShapeError, 'begin [0]', '[2,3]'),
    row('slice', () => A.slice(f.x, [0, NaN], [1, 1]), A.ShapeError, 'begin [0,NaN]'),
    row('slice', () => A.slice(f.x, [-1, 0], [1, 1]), A.ShapeError, 'begin [-1,0]'),
    row('slice', () => A.slice(f.x, any(0), [1, 1]), A.ArgumentError, 'begin', 'array', 'number'),
    row('slice', () => any(A.slice)(f.x, [0, 0]), A.ArgumentError, 'size', 'array', 'undefined'),
    row('gather', () => A.gather(f.x, [0, 2]), A.ShapeError, 'index 2', 'position 1', '[0, 2)', '[2,3]'),
    row('gather', () => A.gather(f.x, [-1]), A.ShapeError, 'index -1', '[0, 2)'),
    row('gather', () => A.gather(f.x, [0.5]), A.ArgumentError, 'indices[0] is 0.5', 'not an integer'),
    row('gather', () => A.gather(f.x, any([[1], [0]])), A.ArgumentError, 'indices[0] is [1]', 'flat array', 'int32 tensor'),
    row('gather', () => A.gather(f.x, Int32Array.of(3), 1), A.ShapeError, 'index 3', '[0, 3)', 'axis 1'),
    row('gather', () => A.gather(f.x, [0], 2), A.ShapeError, 'axis 2', 'out of range'),
    row('gather', () => A.gather(f.x, any(1)), A.ArgumentError, 'indices', 'Int32Array', 'number'),
    row('gather', () => A.gather(f.dead, [0]), A.DisposedError, 'disposed'),
    row('astype', () => A.astype(f.x, any('int16')), A.DtypeError, '"int16"', 'float32', 'float64', 'int32'),
    row('astype', () => any(A.astype)(f.x), A.DtypeError, 'dtype', 'float32'),
    row('astype', () => A.astype(any(1), 'float64'), A.ArgumentError, 'x', 'Tensor'),
    row('detach', () => A.detach(f.dead), A.DisposedError, 'disposed'),
    row('detach', () => A.detach(any('t')), A.ArgumentError, 'x', 'Tensor', 'string'),
    row('stopGradient', () => A.stopGradient(any(undefined)), A.ArgumentError, 'x', 'Tensor', 'undefined'),
  ];
}

function linalgNnRows(f: Fixtures): Row[] {
  const logits = () => A.randn([2, 3], { seed: 8 });
  return [
    row('matmul', () => A.matmul(f.x, f.x), A.ShapeError, 'inner dimensions', '[2,3]', '3 vs 2'),
    row('matmul', () => A.matmul(f.x, A.ones([3, 2], { dtype: 'float64' })), A.DtypeError, 'float32', 'float64'),
    row('matmul', () => A.matmul(f.x, A.ones([])), A.ShapeError, 'at least 1-D', '[]'),
    row(
      'scaledDotProductAttention',
      () => A.scaledDotProductAttention(f.x, f.x, f.x, { mask: f.v }),
      A.ShapeError,
      'mask',
      '[3]',
      'does not broadcast',
      '[2,2]',
    ),
    row('scaledDotProductAttention', () => A.scaledDotProductAttention(f.x, f.x64, f.x), A.DtypeError, 'float32', 'float64'),
    row('scaledDotProductAttention', () => A.scaledDotProductAttention(f.x, f.y, f.x), A.ShapeError, 'q [2,3]', 'k [3,2]', 'last axis'),
    row('matmul', () => A.matmul(f.v, A.ones([2])), A.ShapeError, 'inner dimensions', '3 vs 2'),
    row('matmul', () => A.matmul(A.ones([2, 2, 3]), A.ones([3, 3, 2])), A.ShapeError, 'cannot be broadcast', '[2]', '[3]'),
    row('matmul', () => any(A.matmul)(f.x), A.ArgumentError, 'second operand', 'Tensor', 'undefined'),
    row('matmul', () => A.matmul(f.dead, f.y), A.DisposedError, 'disposed'),
    row('softmax', () => A.softmax(f.x, 2), A.ShapeError, 'axis 2', 'out of range'),
    row('softmax', () => A.softmax(A.ones([])), A.ShapeError, 'at least 1-D', 'scalar'),
    row('softmax', () => A.softmax(any(0)), A.ArgumentError, 'x', 'Tensor', 'number'),
    row('logSoftmax', () => A.logSoftmax(f.x, -3), A.ShapeError, 'axis -3', 'out of range'),
    row('logSoftmax', () => A.logSoftmax(f.dead), A.DisposedError, 'disposed'),
    row('crossEntropy', () => A.crossEntropy(logits(), [0, 3]), A.ArgumentError, 'label 3', 'position 1', '[0, 3)'),
    row('crossEntropy', () => A.crossEntropy(logits(), [0, -1]), A.ArgumentError, 'label -1', '[0, 3)'),
    row('crossEntropy', () => A.crossEntropy(logits(), [0, 1.5]), A.ArgumentError, 'label 1.5'),
    row('crossEntropy', () => A.crossEntropy(logits(), [0]), A.ShapeError, '1 labels', '2 rows', '[2,3]'),
    row('crossEntropy', () => A.crossEntropy(A.ones([]), [0]), A.ShapeError, 'logits', '[..., C]', 'scalar'),
    row('crossEntropy', () => A.crossEntropy(logits(), any(1)), A.ArgumentError, 'labels', 'Int32Array', 'number'),
    row('crossEntropy', () => A.crossEntropy(logits(), [0, 1], { reduction: any('avg') }), A.ArgumentError, 'reduction', "'mean'", '"avg"'),
    row('crossEntropy', () => A.crossEntropy(any([[1, 2]]), [0]), A.ArgumentError, 'logits', 'Tensor'),
    row('crossEntropy', () => A.crossEntropy(A.arange(3, { dtype: 'int32' }), [0]), A.DtypeError, 'crossEntropy: got an int32'),
    row('mseLoss', () => A.mseLoss(f.x, f.y), A.ShapeError, 'pred [2,3]', 'target [3,2]', 'same shape'),
    row('mseLoss', () => A.mseLoss(f.x, f.x64), A.DtypeError, 'float32', 'float64'),
    row('mseLoss', () => A.mseLoss(f.x, f.x, { reduction: any('all') }), A.ArgumentError, 'reduction', '"all"'),
    row('mseLoss', () => any(A.mseLoss)(f.x), A.ArgumentError, 'target', 'Tensor', 'undefined'),
    row('layerNorm', () => A.layerNorm(f.x, f.v.slice([0], [2])), A.ShapeError, 'weight', '[3]', '[2]'),
    row('layerNorm', () => A.layerNorm(f.x, null, A.ones([3], { dtype: 'float64' })), A.DtypeError, 'bias', 'float64', 'float32'),
    row('layerNorm', () => A.layerNorm(f.x, null, null, -1), A.ArgumentError, 'eps', 'finite number ≥ 0', '-1'),
    row('layerNorm', () => A.layerNorm(f.x, null, null, NaN), A.ArgumentError, 'eps', 'NaN'),
    row('layerNorm', () => A.layerNorm(f.x, any('w')), A.ArgumentError, 'weight', 'Tensor', 'string'),
    row('layerNorm', () => A.layerNorm(A.ones([])), A.ShapeError, 'at least 1-D', 'scalar'),
  ];
}

function convRows(f: Fixtures): Row[] {
  return [
    row('conv2d', () => A.conv2d(f.x, f.w), A.ShapeError, 'input', '4-D', '[2,3]'),
    row('conv2d', () => A.conv2d(f.img, A.ones([2, 3, 3, 3])), A.ShapeError, '1 channels', 'expects 3'),
    row('conv2d', () => A.conv2d(f.img, A.ones([2, 1, 3, 3], { dtype: 'float64' })), A.DtypeError, 'float32', 'float64'),
    row('conv2d', () => A.conv2d(f.img, f.w, { stride: 0 }), A.ArgumentError, 'stride', 'positive integer', '0'),
    row('conv2d', () => A.conv2d(f.img, f.w, { padding: -1 }), A.ArgumentError, 'padding', 'non-negative', '-1'),
    row('conv2d', () => A.conv2d(f.img, A.ones([1, 1, 5, 5])), A.ShapeError, 'window 5×5', 'larger', '4×4'),
    row('conv2d', () => A.conv2d(f.img, f.w, A.ones([3])), A.ShapeError, 'bias', '[2]', '[3]'),
    row('conv2d', () => any(A.conv2d)(f.img), A.ArgumentError, 'weight', 'Tensor', 'undefined'),
    row('maxPool2d', () => A.maxPool2d(f.img, 0), A.ArgumentError, 'kernel size', 'positive', '0'),
    row('maxPool2d', () => A.maxPool2d(f.img, 5), A.ShapeError, 'window 5×5', '4×4'),
    row('maxPool2d', () => A.maxPool2d(f.x, 2), A.ShapeError, 'input', '4-D', '[2,3]'),
    row('avgPool2d', () => A.avgPool2d(f.img, 2, [1, 0]), A.ArgumentError, 'stride', '[1,0]'),
    row('avgPool2d', () => A.avgPool2d(f.dead, 2), A.DisposedError, 'disposed'),
    row('dropout', () => A.dropout(f.x, 1), A.ArgumentError, 'p', '[0, 1)', '1'),
    row('dropout', () => A.dropout(f.x, NaN), A.ArgumentError, 'p', 'NaN'),
    row('dropout', () => A.dropout(f.x, 0.5, { seed: 1.5 }), A.ArgumentError, 'seed', 'safe integer', '1.5'),
    row('dropout', () => A.dropout(any(null), 0.5), A.ArgumentError, 'input', 'Tensor'),
  ];
}

function creationRows(): Row[] {
  return [
    row('tensor', () => A.tensor([[1, 2], [3]]), A.ShapeError, 'ragged', 'data[1]'),
    row('tensor', () => A.tensor([[1, 2], [3]], { shape: [3] }), A.ShapeError, 'ragged', 'data[1]'), // a given shape does not flatten them
    row('tensor', () => A.tensor([Float32Array.of(1, 2), Float32Array.of(3)]), A.ShapeError, 'ragged', 'data[1]', '[1]', '[2]'),
    row('tensor', () => A.tensor(any([1, 2, [3]]), { shape: [3] }), A.ShapeError, 'ragged', 'data[2]', '[1]', '[]'), // a row of numbers that is not
    row(
      'tensor',
      () =>
        A.tensor(
          any([
            [1, 2],
            [3, [4]],
          ]),
          { shape: [4] },
        ),
      A.ShapeError,
      'ragged',
      'data[1][1]',
      '[1]',
      '[]',
    ),
    row('tensor', () => A.tensor(any('abc')), A.ArgumentError, 'data', 'array', 'string'),
    row('tensor', () => A.tensor(any(null)), A.ArgumentError, 'data', 'null'),
    row('tensor', () => A.tensor([1, 2, 3], { shape: [2, 2] }), A.ShapeError, '3 values', '[2,2]'),
    row('tensor', () => A.tensor([1, 2], { dtype: any('int8') }), A.DtypeError, 'dtype', '"int8"', 'float32'),
    row('tensor', () => A.tensor(any([1, 'x'])), A.ArgumentError, 'data[1]', 'number', 'string'),
    row('tensor', () => A.tensor(any(['x']), { shape: [1] }), A.ArgumentError, 'data[0]', 'string', 'number'),
    row('tensor', () => A.tensor([1], { shape: any([-1]) }), A.ShapeError, 'shape', 'non-negative'),
    row('zeros', () => A.zeros([2, -1]), A.ShapeError, 'shape', 'non-negative integers', '[2,-1]'),
    row('zeros', () => A.zeros(any(3)), A.ShapeError, 'shape', 'array'),
    row('ones', () => A.ones([1.5]), A.ShapeError, 'shape', '[1.5]'),
    row('ones', () => A.ones([2], { dtype: any('float16') }), A.DtypeError, '"float16"'),
    row('full', () => A.full([2], any('a')), A.ArgumentError, 'value', 'number', 'string'),
    row('full', () => A.full(any(undefined), 1), A.ShapeError, 'shape', 'array'),
    row('arange', () => A.arange(-1), A.ArgumentError, 'n', 'non-negative integer', '-1'),
    row('arange', () => A.arange(2.5), A.ArgumentError, 'n', '2.5'),
    row('arange', () => A.arange(2 ** 40), A.OutOfMemoryError, 'bytes'),
    row('randn', () => A.randn([2], { seed: 1.5 }), A.ArgumentError, 'seed', 'safe integer', '1.5'),
    row('randn', () => A.randn([NaN]), A.ShapeError, 'shape', '[NaN]'),
    row('rand', () => A.rand([2], { dtype: any('f32') }), A.DtypeError, 'dtype', '"f32"'),
    row('rand', () => A.rand([2 ** 20, 2 ** 20]), A.OutOfMemoryError, '4398046511104 bytes', 'in use'),
    row('zeros', () => A.zeros([2 ** 30, 2 ** 30, 2 ** 30]), A.OutOfMemoryError, 'cannot allocate', 'maximumBytes'),
    row('ones', () => A.ones([2 ** 53]), A.OutOfMemoryError, 'cannot allocate'),
    row('broadcastTo', () => A.broadcastTo(A.ones([1]), [2 ** 40]), A.OutOfMemoryError, 'cannot allocate'),
  ];
}

function memoryRows(f: Fixtures): Row[] {
  return [
    row('tidy', () => A.tidy(any(5)), A.ArgumentError, 'fn', 'function', 'number'),
    row('tidy', () => A.tidy(any(async () => A.ones([1]))), A.ArgumentError, 'Promise', 'synchronous'),
    row('keep', () => A.keep(any({})), A.ArgumentError, 'Tensor', 'object'),
    row('keep', () => A.keep(f.dead), A.DisposedError, 'disposed'),
    row('Tensor.item', () => f.x.item(), A.ShapeError, '[2,3]', '6 elements', 'exactly one'),
    row('Tensor.item', () => disposed(A.ones([1])).item(), A.DisposedError, 'disposed'),
    row('Tensor.toArray', () => f.dead.toArray(), A.DisposedError, 'disposed', '[2,3]'),
    row('Tensor.backward', () => A.mul(f.p, 2).backward(), A.GradError, 'shape [2,3]', 'explicit seed'),
    row('Tensor.backward', () => A.mul(f.p, 2).backward(A.ones([3])), A.ShapeError, 'seed', '[3]', '[2,3]'),
    row('Tensor.backward', () => A.mul(f.p, 2).backward(A.ones([2, 3], { dtype: 'float64' })), A.DtypeError, 'seed', 'float64', 'float32'),
    row('Tensor.backward', () => A.mul(f.p, 2).backward(any('1')), A.ArgumentError, 'seed', 'Tensor', 'string'),
    row('Tensor.backward', () => f.x.sum().backward(), A.GradError, 'does not require grad'),
    row('Tensor.backward', () => backwardTwice(A.randn([2], { requiresGrad: true })), A.GradError, 'already released', 'retainGraph'),
    row('Tensor.backward', () => disposed(A.sum(f.p)).backward(), A.DisposedError, 'disposed'),
  ];
}

function transformRows(f: Fixtures): Row[] {
  const sq = (t: A.Tensor) => A.sum(A.square(t));
  return [
    row('grad', () => A.grad(any(5))(f.x), A.ArgumentError, 'f', 'function', 'number'),
    row('grad', () => A.grad(sq, { argnums: 1 })(f.x), A.ArgumentError, 'argnums 1', 'out of range', '1 argument'),
    row('grad', () => A.grad(any((a: A.Tensor) => a))(f.x), A.GradError, 'scalar', '[2,3]'),
    row('grad', () => A.grad(any(() => 3))(f.x), A.GradError, 'must return a Tensor', 'number'),
    row('grad', () => A.grad(sq)(any(3)), A.ArgumentError, 'argument 0', 'Tensor'),
    row('grad', () => A.grad(sq)(f.dead), A.DisposedError, 'disposed'),
    row('valueAndGrad', () => A.valueAndGrad(sq, { argnums: [0, 2] })(f.x, f.y), A.ArgumentError, 'argnums 2', 'out of range'),
    row('valueAndGrad', () => A.valueAndGrad(any(null)), A.ArgumentError, 'f', 'function'),
    row('vjp', () => A.vjp(any('f'), f.x), A.ArgumentError, 'f', 'function', 'string'),
    row('vjp', () => A.vjp((t) => A.mul(t, 2), any(1)), A.ArgumentError, 'argument 0', 'Tensor'),
    row('vjp', () => vjpWith(f.x, A.ones([3])), A.ShapeError, 'cotangent', '[3]', '[2,3]'),
    row('vjp', () => vjpWith(f.x, any(2)), A.ArgumentError, 'cotangent', 'Tensor', 'number'),
    row('vjp', () => vjpWith(f.x, f.x64), A.DtypeError, 'cotangent', 'float64', 'float32'),
    row('jvp', () => A.jvp(sq, [f.x], []), A.ArgumentError, '0 tangent', '1 primal'),
    row('jvp', () => A.jvp(sq, [f.x], [f.v]), A.ShapeError, 'tangent', '[3]', '[2,3]'),
    row('jvp', () => A.jvp(sq, any(f.x), any(f.x)), A.ArgumentError, 'primals', 'arrays'),
    row('jacfwd', () => A.jacfwd(sq)(any('x')), A.ArgumentError, 'x', 'Tensor', 'string'),
    row('jacrev', () => A.jacrev(sq)(f.dead), A.DisposedError, 'disposed'),
    row('vmap', () => A.vmap(A.add)(f.x, f.y), A.ArgumentError, 'different sizes', 'args[0] has 2', 'args[1] has 3'),
    row('vmap', () => A.vmap(sq, { inAxes: 2 })(f.x), A.ArgumentError, 'inAxes 2', 'out of range', 'args[0]'),
    row('vmap', () => A.vmap(sq, { outAxes: 3 })(f.x), A.ArgumentError, 'outAxes 3', 'out of range'),
    row('vmap', () => A.vmap(sq, { outAxes: null })(f.x), A.ArgumentError, 'outAxes is null', 'depends on the mapped'),
    row('vmap', () => A.vmap(sq, { inAxes: null })(f.x), A.ArgumentError, 'no argument is mapped'),
    row('vmap', () => A.vmap(any('f')), A.ArgumentError, 'f', 'function', 'string'),
    row('hvp', () => A.hvp(sq, f.x, f.v), A.ShapeError, 'v', '[3]', '[2,3]'),
    row('hessian', () => A.hessian((t) => A.mul(t, 2))(f.v), A.GradError, 'hessian', 'scalar', '[3]'),
    row('noGrad', () => A.noGrad(any(undefined)), A.ArgumentError, 'fn', 'function', 'undefined'),
    row('grad', () => A.grad(sq, any({ hasAux: 'yes' })), A.ArgumentError, 'hasAux', 'true or false'),
    row('grad', () => A.grad(sq, any({ argnum: 0 })), A.ArgumentError, 'unknown option', 'argnum'),
    row('grad', () => A.grad(sq, { hasAux: true })(f.x), A.GradError, 'hasAux', '[value, aux]'),
    row('grad', () => A.grad((t: { a: A.Tensor }) => A.sum(t.a))({ a: f.x, b: 'no' }), A.ArgumentError, 'argument 0.b', 'string'),
    row(
      'Tensor.backward',
      () => f.p.sum().backward(undefined, any({ createGraph: 'yes' })),
      A.ArgumentError,
      'backward',
      'createGraph',
      'true or false',
    ),
    row('Tensor.backward', () => f.p.sum().backward(undefined, any({ inputs: [f.x] })), A.GradError, 'inputs[0]', 'leaf with requiresGrad'),
    row('autograd.grad', () => A.autograd.grad(f.x.sum(), [f.p]), A.GradError, 'outputs[0]', 'does not require grad'),
    row('autograd.grad', () => A.autograd.grad(f.p.sum(), any(3)), A.ArgumentError, 'inputs', 'Tensor', 'number'),
    row('autograd.grad', () => A.autograd.grad(f.p.sum(), [f.p, f.x]), A.GradError, 'inputs[1]', 'does not require grad'),
    row('autograd.grad', () => A.autograd.grad(f.p.sum(), [f.p], { gradOutputs: [f.v] }), A.ShapeError, 'seed', '[3]'),
    row('autograd.grad', () => A.autograd.grad(f.p.sum(), [f.p], any({ create: true })), A.ArgumentError, 'unknown option', 'create'),
    row('functionalCall', () => A.functionalCall(any(3), {}, f.x), A.ArgumentError, 'module', 'nn.Module', 'number'),
    row('functionalCall', () => A.functionalCall(f.lin, { nope: f.x }, f.x), A.ArgumentError, '"nope"', 'not a parameter', 'weight'),
    row('functionalCall', () => A.functionalCall(f.lin, { weight: f.y }, f.x), A.ShapeError, 'weight', '[3,2]', '[2,3]'),
    row('functionalCall', () => A.functionalCall(f.lin, { bias: f.v }, f.x), A.ShapeError, 'bias', '[3]', '[2]'),
    row('customVjp', () => A.customVjp(any(1), any(2)), A.ArgumentError, 'forward', 'function', 'number'),
    row('customVjp', () => A.customVjp((t) => t, any(null)), A.ArgumentError, 'backward', 'function'),
    row(
      'customVjp',
      () =>
        A.customVjp(
          function twice(t) {
            return A.mul(t, 2);
          },
          (g) => [g],
        )(any(3)),
      A.ArgumentError,
      'twice',
      'argument 0',
      'Tensor',
    ),
    row(
      'customVjp',
      () =>
        A.customVjp(
          any(function bad() {
            return 7;
          }),
          (g) => [g],
        )(f.x),
      A.ArgumentError,
      'bad',
      'forward',
      'Tensor',
    ),
    row(
      'customVjp',
      () =>
        A.sum(
          A.customVjp(
            function two(t) {
              return A.mul(t, 2);
            },
            (g) => [g, g],
          )(f.p),
        ).backward(),
      A.GradError,
      'two',
      '2',
      '1 input',
    ),
    row(
      'customVjp',
      () =>
        A.sum(
          A.customVjp(
            function shp(t) {
              return A.mul(t, 2);
            },
            () => [A.ones([3])],
          )(f.p),
        ).backward(),
      A.GradError,
      'shp',
      'cotangent 0',
      '[2,3]',
      '[3]',
    ),
    row('gradcheck', () => A.gradcheck(sq, []), A.ArgumentError, 'inputs', 'non-empty'),
    row('gradcheck', () => A.gradcheck(any(0), [f.x]), A.ArgumentError, 'f', 'function'),
    row('gradcheck', () => A.gradcheck(sq, [any('x')]), A.ArgumentError, 'input 0', 'Tensor'),
    row('gradcheck', () => A.gradcheck(sq, [f.x], { eps: -1 }), A.ArgumentError, 'eps', 'positive'),
    row('checkpoint', () => A.checkpoint(any(5)), A.ArgumentError, 'fn', 'function', 'number'),
    row(
      'checkpoint',
      () =>
        A.checkpoint(function seg(t: A.Tensor) {
          return t;
        })(any('x')),
      A.ArgumentError,
      'seg',
      'must return a Tensor',
      'string',
    ),
    row(
      'checkpoint',
      () =>
        A.checkpoint(function seg(t: A.Tensor) {
          return A.tanh(t);
        })(f.dead),
      A.DisposedError,
      'disposed',
    ),
    row('compile', () => A.compile(any(5)), A.ArgumentError, 'fn', 'function', 'number'),
    row('detectAnomaly', () => A.detectAnomaly(any('yes')), A.ArgumentError, 'true or false', 'string'),
    row('withAnomalyDetection', () => A.withAnomalyDetection(any(0)), A.ArgumentError, 'fn', 'function'),
  ];
}

/** Rows for nn, optim, io and data (as far as they exist). */
function libraryRows(f: Fixtures): Row[] {
  const nn = A.nn,
    optim = A.optim;
  const rows: Row[] = [
    row('nn.Linear', () => new nn.Linear(0, 2), A.ArgumentError, 'inFeatures', 'positive integer', '0'),
    row('nn.Linear', () => new nn.Linear(3, any('2')), A.ArgumentError, 'outFeatures', 'positive integer'),
    row('nn.Linear', () => new nn.Linear(3, 2, { dtype: any('int') }), A.DtypeError, 'dtype', '"int"'),
    row('nn.Linear', () => new nn.Linear(3, 2, { seed: 0.5 }), A.ArgumentError, 'seed', 'safe integer'),
    row('nn.Linear', () => f.lin.forward(A.ones([2, 4])), A.ShapeError, 'in_features', '3', '[2,4]'),
    row('nn.Linear', () => f.lin.forward(f.x64), A.DtypeError, 'float64', 'float32'),
    row('nn.Linear', () => f.lin.forward(any([1, 2, 3])), A.ArgumentError, 'input', 'Tensor'),
    row('nn.Sequential', () => new nn.Sequential(new nn.ReLU(), any(5)), A.ArgumentError, 'argument 1', 'Module', 'number'),
    row('nn.ReLU', () => new nn.ReLU().forward(any(1)), A.ArgumentError, 'input', 'Tensor'),
    row('nn.Tanh', () => new nn.Tanh().forward(f.dead), A.DisposedError, 'disposed'),
    row('nn.GELU', () => new nn.GELU().forward(any(null)), A.ArgumentError, 'input', 'Tensor'),
    row('nn.GELU', () => new nn.GELU({ approximate: any('erf') }), A.ArgumentError, 'GELU', 'approximate', "'tanh' or 'none'"),
    row('nn.Flatten', () => new nn.Flatten(2).forward(f.x), A.ShapeError, 'dims 2', '[2,3]'),
    row('nn.Unflatten', () => new nn.Unflatten(1, [4, 2]).forward(f.x), A.ShapeError, 'sizes [4,2]', '[2,3]'),
    row('nn.Unflatten', () => new nn.Unflatten(5, [3]).forward(f.x), A.ShapeError, 'dim 5', 'out of range'),
    row('nn.Dropout', () => new nn.Dropout(1.5), A.ArgumentError, 'p', '[0, 1)', '1.5'),
    row('nn.LayerNorm', () => new nn.LayerNorm(0), A.ArgumentError, 'dim', 'positive integer'),
    row('nn.LayerNorm', () => new nn.LayerNorm(any([4, 5])), A.ShapeError, 'only the last axis', '[4,5]'),
    row('nn.LayerNorm', () => f.ln.forward(f.x), A.ShapeError, 'last axis', '4', '[2,3]'),
    row('nn.Embedding', () => f.emb.forward([0, 3]), A.ShapeError, 'index 3', 'position 1', '[0, 3)'),
    row('nn.Embedding', () => new nn.Embedding(-1, 2), A.ArgumentError, 'numEmbeddings', 'positive integer'),
    row('nn.Residual', () => new nn.Residual(any({})), A.ArgumentError, 'module', 'Module'),
    row('nn.Conv2d', () => new nn.Conv2d(1, 2, 0), A.ArgumentError, 'kernelSize', '0'),
    row('nn.Conv2d', () => f.conv.forward(f.img), A.ShapeError, 'channels', '2', '[1,1,4,4]'),
    row('nn.MaxPool2d', () => new nn.MaxPool2d(0).forward(f.img), A.ArgumentError, 'kernel size', '0'),
    row('nn.AvgPool2d', () => new nn.AvgPool2d(2).forward(f.x), A.ShapeError, '4-D', '[2,3]'),
    row('nn.MultiheadAttention', () => new nn.MultiheadAttention(10, 4), A.ShapeError, 'embedDim', 'numHeads', '10', '4', 'divisible'),
    row(
      'nn.TransformerEncoderLayer',
      () => new nn.TransformerEncoderLayer(8, 2, { activation: any('tanh') }),
      A.ArgumentError,
      'activation',
      "'relu' or 'gelu'",
      'tanh',
    ),
    row('nn.LSTM', () => new nn.LSTM(3, 0), A.ArgumentError, 'LSTM', 'hiddenSize', 'positive integer', '0'),
    row('nn.GRU', () => new nn.GRU(3, 4, { numLayers: 0 }), A.ArgumentError, 'GRU', 'numLayers', 'positive integer'),
    row('nn.LSTMCell', () => new nn.LSTMCell(0, 4), A.ArgumentError, 'LSTMCell', 'inputSize', 'positive integer'),
    row('nn.GRUCell', () => new nn.GRUCell(3, any('4')), A.ArgumentError, 'GRUCell', 'hiddenSize', 'positive integer'),
    row('nn.ModuleList', () => new nn.ModuleList([any(5)]), A.ArgumentError, 'ModuleList', 'item 0', 'Module'),
    row('nn.GPT', () => new nn.GPT({ vocabSize: 5, width: 6, heads: 4 }), A.ShapeError, 'GPT', 'width (6)', 'divisible by heads (4)'),
    row('nn.GPT', () => new nn.GPT(any({ vocabSize: 0 })), A.ArgumentError, 'GPT', 'vocabSize', 'positive integer'),
    row('nn.Module', () => f.lin.loadStateDict({ weight: A.ones([2, 3]) }), A.ArgumentError, 'loadStateDict', 'missing', 'bias'),
    row(
      'nn.Module',
      () => f.lin.loadStateDict({ weight: A.ones([3, 2]), bias: A.ones([2]) }),
      A.ShapeError,
      'loadStateDict',
      'weight',
      '[2,3]',
      '[3,2]',
    ),
    row('nn.Module', () => f.lin.loadStateDict(any(null)), A.ArgumentError, 'loadStateDict', 'record'),
    row(
      'optim.dpGradients',
      () => optim.dpGradients(f.lin, f.x, new Int32Array([0, 1]), 2, { clip: 0, noise: 1, seed: 0 }),
      A.ArgumentError,
      'clip',
      'positive',
      '0',
    ),
    row(
      'optim.perExampleGradNorms',
      () => optim.perExampleGradNorms(f.lin, f.x, new Int32Array([0, 1]), 1),
      A.ArgumentError,
      'perExampleGradNorms',
      'labels[1] = 1',
      '[0, 1)',
    ),
    row('optim.SGD', () => new optim.SGD([f.p], any({})), A.ArgumentError, 'lr', 'required'),
    row('optim.SGD', () => new optim.SGD([f.p], { lr: NaN }), A.ArgumentError, 'lr', 'finite', 'NaN'),
    row('optim.SGD', () => new optim.SGD([], { lr: 0.1 }), A.ArgumentError, 'empty parameter list'),
    row('optim.SGD', () => new optim.SGD(any(5), { lr: 0.1 }), A.ArgumentError, 'params', 'array of Tensors'),
    row('optim.SGD', () => new optim.SGD([any('w')], { lr: 0.1 }), A.ArgumentError, 'params[0]', 'Tensor'),
    row('optim.SGD', () => new optim.SGD([f.p], { lr: 0.1, nesterov: true }), A.ArgumentError, 'nesterov', 'momentum'),
    row('optim.Adam', () => new optim.Adam([f.p], { betas: [0.9, 1] }), A.ArgumentError, 'betas[1]', '[0, 1)', '1'),
    row('optim.Adam', () => new optim.Adam([f.p], { lr: -1 }), A.ArgumentError, 'lr', '≥ 0', '-1'),
    row('optim.AdamW', () => new optim.AdamW([f.p], { eps: any('1e-8') }), A.ArgumentError, 'eps', 'finite number'),
    row('optim.AdamW', () => new optim.AdamW([f.dead], {}), A.DisposedError, 'disposed'),
    row('clipGradNorm', () => A.clipGradNorm([f.p], NaN), A.ArgumentError, 'maxNorm', '≥ 0', 'NaN'),
    row('clipGradNorm', () => A.clipGradNorm(any(3), 1), A.ArgumentError, 'params', 'array of Tensors'),
    row('clipGradValue', () => A.clipGradValue([f.p], -1), A.ArgumentError, 'clipValue', '≥ 0', '-1'),
    row('clipGradValue', () => A.clipGradValue([any(1)], 1), A.ArgumentError, 'params', 'Tensors', 'number'),
    row('optim.clipGradNorm', () => optim.clipGradNorm([f.p], -1), A.ArgumentError, 'maxNorm', '-1'),
    row('optim.clipGradValue', () => optim.clipGradValue(any(null), 1), A.ArgumentError, 'params'),
    row('io.saveSafetensors', () => A.io.saveSafetensors(any(null)), A.ArgumentError, 'record', 'null'),
    row('io.saveSafetensors', () => A.io.saveSafetensors(any({ w: 1 })), A.ArgumentError, '"w"', 'Tensor', 'number'),
    row('io.saveSafetensors', () => A.io.saveSafetensors({ w: f.dead }), A.DisposedError, 'disposed'),
    row('io.loadSafetensors', () => A.io.loadSafetensors(any([1, 2])), A.ArgumentError, 'Uint8Array', '[1,2] (an array)'),
    row('io.loadSafetensors', () => A.io.loadSafetensors(new Uint8Array(4)), A.FormatError, '4 bytes', 'header length'),
    row('io.loadSafetensorsMetadata', () => A.io.loadSafetensorsMetadata(any([1, 2])), A.ArgumentError, 'Uint8Array', '[1,2] (an array)'),
    row('io.loadSafetensorsMetadata', () => A.io.loadSafetensorsMetadata(new Uint8Array(4)), A.FormatError, '4 bytes', 'header length'),
    row('data.loadIdx', () => A.data.loadIdx(Uint8Array.of(0, 0, 9, 1, 0, 0, 0, 1, 5)), A.FormatError, '0x09', 'not supported'),
    row('data.loadIdx', () => A.data.loadIdx(any('idx')), A.ArgumentError, 'Uint8Array', 'string'),
    row('data.digits', () => A.data.digits({ testFraction: 1 }), A.ArgumentError, 'testFraction', '(0, 1)', '1'),
    // The seed is checked by the shared integer stream, whose message names the public function.
    row('data.digits', () => A.data.digits({ seed: 1.5 }), A.ArgumentError, 'digits: seed', 'safe integer', '1.5'),
    row(
      'data.batches',
      () => A.data.batches(f.x, new Int32Array(2), { batchSize: 1, seed: 0.5 }).next(),
      A.ArgumentError,
      'batches: seed',
      '0.5',
    ),
    row(
      'data.batches',
      () => A.data.batches(f.x, new Int32Array(2), { batchSize: 0 }).next(),
      A.ArgumentError,
      'batchSize',
      'positive integer',
      '0',
    ),
    row('data.batches', () => A.data.batches(f.x, new Int32Array(3), { batchSize: 1 }).next(), A.ShapeError, '3 labels', '2 rows'),
    row('data.batches', () => A.data.batches(any(1), new Int32Array(3), { batchSize: 1 }).next(), A.ArgumentError, 'x', 'Tensor'),
    row('data.batchCount', () => A.data.batchCount(10, 0), A.ArgumentError, 'batchSize', 'positive integer', '0'),
    row('data.batchCount', () => A.data.batchCount(-1, 2), A.ArgumentError, 'n', 'non-negative integer', '-1'),
    row('data.permutation', () => A.data.permutation(-2), A.ArgumentError, 'n', 'non-negative integer', '-2'),
    row('data.permutation', () => A.data.permutation(3, 0.5), A.ArgumentError, 'permutation: seed', 'safe integer'),
    row(
      'optim.lrScheduler.StepLR',
      () => new optim.lrScheduler.StepLR(new optim.SGD([f.p], { lr: 0.1 }), { stepSize: 0 }),
      A.ArgumentError,
      'stepSize',
      'integer ≥ 1',
      '0',
    ),
    row(
      'optim.lrScheduler.StepLR',
      () => new optim.lrScheduler.StepLR(new optim.SGD([f.p], { lr: 0.1 }), { stepSize: 1 }).step(),
      A.AdjointError,
      'before SGD.step()',
    ),
    row(
      'optim.lrScheduler.LinearLR',
      () => new optim.lrScheduler.LinearLR(new optim.SGD([f.p], { lr: 0.1 }), { startFactor: 2 }),
      A.ArgumentError,
      'startFactor',
      '(0, 1]',
      '2',
    ),
    row(
      'optim.lrScheduler.CosineAnnealingLR',
      () => new optim.lrScheduler.CosineAnnealingLR(any(null), { tMax: 5 }),
      A.ArgumentError,
      'optimizer',
      'null',
    ),
    row(
      'optim.lrScheduler.LambdaLR',
      () => new optim.lrScheduler.LambdaLR(new optim.SGD([f.p], { lr: 0.1 }), { lrLambda: any(3) }),
      A.ArgumentError,
      'lrLambda',
      'function',
      'number',
    ),
    row(
      'optim.lrScheduler.SequentialLR',
      () => new optim.lrScheduler.SequentialLR(new optim.SGD([f.p], { lr: 0.1 }), { schedulers: [], milestones: [] }),
      A.ArgumentError,
      'schedulers',
      'non-empty',
    ),
    row(
      'optim.lrScheduler.OneCycleLR',
      () => new optim.lrScheduler.OneCycleLR(new optim.SGD([f.p], { lr: 0.1 }), { maxLr: 1, totalSteps: 0 }),
      A.ArgumentError,
      'totalSteps',
      'integer ≥ 1',
      '0',
    ),
    row('data.CharTokenizer', () => A.data.CharTokenizer.fromText('ab').encode('abc'), A.ArgumentError, '"c"', 'position 2', 'vocabulary'),
    row('data.CharTokenizer', () => new A.data.CharTokenizer(['ab']), A.ArgumentError, 'vocab[0]', 'one character', '"ab"'),
    row('data.splitText', () => A.data.splitText(any([1, 2]), 0.5), A.ArgumentError, 'Int32Array', 'string'),
    row(
      'data.lmBatches',
      () => A.data.lmBatches(new Int32Array(9), { batchSize: 1, blockSize: 4, seed: NaN }).next(),
      A.ArgumentError,
      'lmBatches: seed',
      'NaN',
    ),
    row(
      'data.lmBatches',
      () => A.data.lmBatches(new Int32Array(4), { batchSize: 1, blockSize: 4 }).next(),
      A.ArgumentError,
      'blockSize + 1 = 5',
      'ids has 4',
    ),
    row('gradientStats', () => A.gradientStats(any({})), A.ArgumentError, 'model', 'nn.Module', 'object'),
    row('nn.gradientStats', () => A.nn.gradientStats(any(null)), A.ArgumentError, 'model', 'nn.Module', 'null'),
    row('gradientWarnings', () => A.gradientWarnings([], { vanishing: -1 }), A.ArgumentError, 'vanishing', 'positive number', '-1'),
    row('alignmentAngles', () => A.alignmentAngles(f.lin, any([1, 2]), (y) => y), A.ArgumentError, 'x', 'Tensor'),
    row('setFeedback', () => A.setFeedback(f.lin, any('random')), A.ArgumentError, 'feedback', "'alignment'", '"random"'),
    row('withBackprop', () => A.withBackprop(any(3)), A.ArgumentError, 'fn', 'function', 'number'),
  ];
  return rows;
}

export function allRows(f: Fixtures): Row[] {
  return [
    ...elementwiseRows(f),
    ...reduceRows(f),
    ...shapeRows(f),
    ...linalgNnRows(f),
    ...convRows(f),
    ...creationRows(),
    ...memoryRows(f),
    ...transformRows(f),
    ...libraryRows(f),
    ...safetyRows(f),
    ...seqOpsRows(f),
  ];
}

/** The short name a message must mention: 'nn.Linear' → 'Linear', 'Tensor.item' → 'item', 'optim.SGD' → 'SGD'. */
export function opName(fn: string): string {
  if (fn === 'nn.Module') return 'loadStateDict';
  return fn.slice(fn.lastIndexOf('.') + 1);
}
