// Spec-table rows (test/specs.ts) for the sequence-model ops: where, maskedFill, tril/triu,
// permute/unsqueeze/squeeze/flatten/split/chunk, and crossEntropy over [..., C] with
// ignoreIndex, labelSmoothing and probability targets. Each row runs the forward check against
// a float64 JS reference, gradcheck, float32-vs-float64 and the JVP checks.
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import * as R from './ref.js';
import type { Nd } from './ref.js';
import type { OpSpec, Domain } from './specs.js';

const op = (name: string, shapes: number[][], f: (...xs: Tensor[]) => Tensor, ref: (...xs: Nd[]) => Nd, domain?: Domain[]): OpSpec => ({
  name,
  f,
  ref,
  shapes,
  domain,
});

/** Multi-index helpers for the references. */
const strides = (shape: readonly number[]) => shape.map((_, i) => R.sizeOf(shape.slice(i + 1)));
const read = (x: Nd, idx: readonly number[]) => x.data[idx.reduce((a, v, d) => a + v * strides(x.shape)[d], 0)];
const bread = (x: Nd, idx: readonly number[]) =>
  read(
    x,
    x.shape.map((d, i) => (d === 1 ? 0 : idx[idx.length - x.shape.length + i])),
  );

/** where(c, a, b) with broadcasting, written out. */
export function refWhere(c: Nd, a: Nd, b: Nd): Nd {
  const shape = R.broadcastShape(R.broadcastShape(c.shape, a.shape), b.shape);
  return R.gen(shape, (idx) => (bread(c, idx) !== 0 ? bread(a, idx) : bread(b, idx)));
}
export function refTri(x: Nd, k: number, upper: boolean): Nd {
  const r = x.shape.length;
  return R.gen(x.shape, (idx) => ((upper ? idx[r - 1] - idx[r - 2] >= k : idx[r - 1] - idx[r - 2] <= k) ? read(x, idx) : 0));
}
/** PyTorch's cross_entropy with the class axis last: class indices, ignore_index and label_smoothing. */
export function refCrossEntropy(x: Nd, labels: readonly number[], reduction: 'mean' | 'sum' | 'none', ignore?: number, eps = 0): Nd {
  const c = x.shape[x.shape.length - 1],
    n = labels.length;
  const rows: number[] = [];
  let count = 0;
  for (let i = 0; i < n; i++) {
    const row = Array.from(x.data.subarray(i * c, (i + 1) * c));
    const m = Math.max(...row),
      lse = m + Math.log(row.reduce((s, v) => s + Math.exp(v - m), 0));
    if (labels[i] === ignore) {
      rows.push(0);
      continue;
    }
    count++;
    const nll = lse - row[labels[i]],
      smooth = lse - row.reduce((s, v) => s + v, 0) / c;
    rows.push((1 - eps) * nll + eps * smooth);
  }
  if (reduction === 'none') return R.nd(x.shape.slice(0, -1), rows);
  const total = rows.reduce((s, v) => s + v, 0);
  return R.scalar(reduction === 'sum' ? total : total / (ignore === undefined ? n : count));
}
/** Probability targets: −Σ_c ((1 − ε)p_c + ε/C)·log softmax(x)_c per row, mean over rows. */
export function refCrossEntropyProbs(x: Nd, p: Nd, reduction: 'mean' | 'sum' | 'none', eps = 0): Nd {
  const c = x.shape[x.shape.length - 1],
    n = x.data.length / c;
  const rows: number[] = [];
  for (let i = 0; i < n; i++) {
    const row = Array.from(x.data.subarray(i * c, (i + 1) * c));
    const m = Math.max(...row),
      lse = m + Math.log(row.reduce((s, v) => s + Math.exp(v - m), 0));
    rows.push(-row.reduce((s, v, j) => s + ((1 - eps) * p.data[i * c + j] + eps / c) * (v - lse), 0));
  }
  if (reduction === 'none') return R.nd(x.shape.slice(0, -1), rows);
  const total = rows.reduce((s, v) => s + v, 0);
  return R.scalar(reduction === 'sum' ? total : total / n);
}

// Constant inputs a row's function builds each call (not differentiated).
const MASK_34 = [1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0];
const mask = (shape: number[], vals: number[]) => A.tensor(vals, { shape });
const LABELS_BT = [2, 0, 4, 1, 3, 3]; // [2, 3] labels for logits [2, 3, 5]
const IGNORED = [2, -100, 4, 1, -100, 3];
/** Positive probabilities summing to 1 per row (a fixed table). */
const PROBS = Array.from({ length: 6 }, (_, i) => {
  const w = Array.from({ length: 5 }, (_, j) => 1 + ((i * 7 + j * 3) % 5));
  const s = w.reduce((a, b) => a + b, 0);
  return w.map((v) => v / s);
}).flat();
const UNIT = [(n: number, r: () => number) => Array.from({ length: n }, () => 2 * r() - 1)] as Domain[];

export const SEQ_SPECS: OpSpec[] = [
  // Selection
  op(
    'where',
    [
      [3, 4],
      [3, 4],
    ],
    (a, b) => A.where(mask([3, 4], MASK_34), a, b),
    (a, b) => refWhere(R.nd([3, 4], MASK_34), a, b),
  ),
  op(
    'where broadcast',
    [[3, 4], [4]],
    (a, b) => A.where(mask([3, 1], [1, 0, 1]), a, b),
    (a, b) => refWhere(R.nd([3, 1], [1, 0, 1]), a, b),
  ),
  op(
    'where int32 cond',
    [[2, 3], [1]],
    (a, b) =>
      A.where(
        A.tensor(
          [
            [0, 5, -1],
            [2, 0, 0],
          ],
          { dtype: 'int32' },
        ),
        a,
        b,
      ),
    (a, b) => refWhere(R.nd([2, 3], [0, 5, -1, 2, 0, 0]), a, b),
  ),
  op(
    'maskedFill',
    [[2, 3, 4]],
    (x) => A.maskedFill(x, mask([3, 4], MASK_34), -2.5),
    (x) => refWhere(R.nd([3, 4], MASK_34), R.scalar(-2.5), x),
  ),
  op(
    'tril',
    [[2, 3, 4]],
    (x) => A.tril(x),
    (x) => refTri(x, 0, false),
  ),
  op(
    'tril k=1',
    [[4, 3]],
    (x) => A.tril(x, 1),
    (x) => refTri(x, 1, false),
  ),
  op(
    'tril k=-2',
    [[4, 5]],
    (x) => A.tril(x, -2),
    (x) => refTri(x, -2, false),
  ),
  op(
    'triu',
    [[3, 4]],
    (x) => A.triu(x),
    (x) => refTri(x, 0, true),
  ),
  op(
    'triu k=2',
    [[2, 3, 5]],
    (x) => A.triu(x, 2),
    (x) => refTri(x, 2, true),
  ),
  op(
    'triu k=-1',
    [[4, 3]],
    (x) => A.triu(x, -1),
    (x) => refTri(x, -1, true),
  ),
  // Shape ops (compositions of transpose, reshape and slice)
  op(
    'permute',
    [[2, 3, 4]],
    (x) => A.permute(x, 2, 0, 1),
    (x) => R.transpose(x, [2, 0, 1]),
  ),
  op(
    'permute array',
    [[2, 3, 4]],
    (x) => x.permute([1, 2, 0]),
    (x) => R.transpose(x, [1, 2, 0]),
  ),
  op(
    'unsqueeze',
    [[3, 4]],
    (x) => A.unsqueeze(x, 1),
    (x) => R.nd([3, 1, 4], x.data),
  ),
  op(
    'squeeze',
    [[3, 1, 4, 1]],
    (x) => A.squeeze(x, -1),
    (x) => R.nd([3, 1, 4], x.data),
  ),
  op(
    'flatten',
    [[2, 3, 4]],
    (x) => A.flatten(x, 1),
    (x) => R.nd([2, 12], x.data),
  ),
  op(
    'T',
    [[3, 4]],
    (x) => x.T,
    (x) => R.transpose(x),
  ),
  op(
    'split (pieces reversed)',
    [[5, 2]],
    (x) => A.concat(A.split(x, 2).reverse()),
    (x) => R.concat([R.nd([1, 2], x.data.slice(8)), R.nd([2, 2], x.data.slice(4, 8)), R.nd([2, 2], x.data.slice(0, 4))]),
  ),
  op(
    'chunk axis 1 (pieces reversed)',
    [[2, 5]],
    (x) => A.concat(A.chunk(x, 2, 1).reverse(), 1),
    (x) => R.gen([2, 5], ([i, j]) => read(x, [i, j < 2 ? j + 3 : j - 2])),
  ),
  // crossEntropy over [..., C]
  op(
    'crossEntropy [B,T,C]',
    [[2, 3, 5]],
    (x) =>
      A.crossEntropy(x, [
        [2, 0, 4],
        [1, 3, 3],
      ]),
    (x) => refCrossEntropy(x, LABELS_BT, 'mean'),
    UNIT,
  ),
  op(
    'crossEntropy int32 labels none',
    [[2, 3, 5]],
    (x) => A.crossEntropy(x, A.tensor(LABELS_BT, { shape: [2, 3], dtype: 'int32' }), { reduction: 'none' }),
    (x) => refCrossEntropy(x, LABELS_BT, 'none'),
    UNIT,
  ),
  op(
    'crossEntropy ignoreIndex',
    [[2, 3, 5]],
    (x) => A.crossEntropy(x, IGNORED, { ignoreIndex: -100 }),
    (x) => refCrossEntropy(x, IGNORED, 'mean', -100),
    UNIT,
  ),
  op(
    'crossEntropy ignoreIndex sum',
    [[6, 5]],
    (x) => A.crossEntropy(x, IGNORED, { ignoreIndex: -100, reduction: 'sum' }),
    (x) => refCrossEntropy(x, IGNORED, 'sum', -100),
    UNIT,
  ),
  op(
    'crossEntropy labelSmoothing',
    [[6, 5]],
    (x) => A.crossEntropy(x, LABELS_BT, { labelSmoothing: 0.1 }),
    (x) => refCrossEntropy(x, LABELS_BT, 'mean', undefined, 0.1),
    UNIT,
  ),
  op(
    'crossEntropy labelSmoothing ignoreIndex',
    [[2, 3, 5]],
    (x) => A.crossEntropy(x, IGNORED, { labelSmoothing: 0.2, ignoreIndex: -100 }),
    (x) => refCrossEntropy(x, IGNORED, 'mean', -100, 0.2),
    UNIT,
  ),
  op(
    'crossEntropy probabilities',
    [[2, 3, 5]],
    (x) => A.crossEntropy(x, A.tensor(PROBS, { shape: [2, 3, 5], dtype: x.dtype })),
    (x) => refCrossEntropyProbs(x, R.nd([2, 3, 5], PROBS), 'mean'),
    UNIT,
  ),
  op(
    'crossEntropy probabilities smoothing none',
    [[6, 5]],
    (x) => A.crossEntropy(x, A.tensor(PROBS, { shape: [6, 5], dtype: x.dtype }), { labelSmoothing: 0.3, reduction: 'none' }),
    (x) => refCrossEntropyProbs(x, R.nd([6, 5], PROBS), 'none', 0.3),
    UNIT,
  ),
  op(
    'crossEntropy probabilities (target differentiated)',
    [
      [3, 5],
      [3, 5],
    ],
    (x, p) => A.crossEntropy(x, p, { reduction: 'sum' }),
    (x, p) => refCrossEntropyProbs(x, p, 'sum'),
    UNIT,
  ),
];
