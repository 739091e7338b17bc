// Shape ops under PyTorch's names, composed from the data-movement primitives: permute is a
// transpose with a permutation, unsqueeze/squeeze/flatten are reshapes (views, no copy),
// split/chunk are slices. No rules of their own, so gradients, JVPs and int32 support come
// from those primitives.
import { ShapeError, ArgumentError } from '../errors.js';
import type { Tensor } from './tensor.js';
import { reshape, transpose, slice, tensorArg } from './api.js';
import { tooMany } from '../args.js';

function intArg(op: string, name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v))
    throw new ArgumentError(`${op}: ${name} must be an integer, got ${typeof v === 'number' ? v : typeof v}`);
  return v;
}

/** An axis of a tensor of rank `rank`, negatives counting from the end. */
function dimArg(op: string, x: Tensor, d: unknown, rank = x.shape.length, name = 'dim'): number {
  const v = intArg(op, name, d);
  if (v < -rank || v >= rank)
    throw new ShapeError(`${op}: ${name} ${v} is out of range for shape [${x.shape}] (expected ${-rank} ≤ ${name} < ${rank})`);
  return v < 0 ? v + rank : v;
}

/** x with its axes reordered: output axis i is input axis dims[i] (torch.permute); dims may also come as one array. */
export function permute(x: Tensor, ...dims: (number | readonly number[])[]): Tensor {
  tensorArg('permute', x, 'x');
  const list = (dims.length === 1 && Array.isArray(dims[0]) ? dims[0] : dims) as readonly unknown[];
  const r = x.shape.length;
  const perm = list.map((d) => dimArg('permute', x, d));
  if (perm.length !== r || new Set(perm).size !== r) {
    throw new ShapeError(`permute: dims [${list.join(', ')}] are not a permutation of the ${r} axes of [${x.shape}]`);
  }
  return transpose(x, perm);
}

/** x with a new axis of length 1 at `dim` (−rank−1 ≤ dim ≤ rank). */
export function unsqueeze(x: Tensor, dim: number): Tensor {
  if (arguments.length > 2) throw tooMany('unsqueeze', 2, arguments.length);
  tensorArg('unsqueeze', x, 'x');
  const d = dimArg('unsqueeze', x, dim, x.shape.length + 1);
  return reshape(x, [...x.shape.slice(0, d), 1, ...x.shape.slice(d)]);
}

/** x without axes of length 1: all of them, or those of `dim` (a listed axis of another length stays, as in PyTorch). */
export function squeeze(x: Tensor, dim?: number | readonly number[]): Tensor {
  if (arguments.length > 2) throw tooMany('squeeze', 2, arguments.length);
  tensorArg('squeeze', x, 'x');
  const drop = dim === undefined ? x.shape.map((_, i) => i) : (Array.isArray(dim) ? dim : [dim]).map((d) => dimArg('squeeze', x, d));
  return reshape(
    x,
    x.shape.filter((n, i) => !(n === 1 && drop.includes(i))),
  );
}

/** Axes start..end (inclusive) merged into one (torch.flatten); a scalar becomes [1]. */
export function flatten(x: Tensor, start = 0, end = -1): Tensor {
  if (arguments.length > 3) throw tooMany('flatten', 3, arguments.length);
  tensorArg('flatten', x, 'x');
  if (x.shape.length === 0) return reshape(x, [1]);
  const s = dimArg('flatten', x, start, x.shape.length, 'start'),
    e = dimArg('flatten', x, end, x.shape.length, 'end');
  if (s > e) throw new ShapeError(`flatten: start (${start}) comes after end (${end}) for shape [${x.shape}]`);
  const merged = x.shape.slice(s, e + 1).reduce((a, b) => a * b, 1);
  return reshape(x, [...x.shape.slice(0, s), merged, ...x.shape.slice(e + 1)]);
}

/** Pieces of x along `axis` with the given lengths (consecutive slices). */
function pieces(x: Tensor, sizes: readonly number[], a: number): Tensor[] {
  const out: Tensor[] = [];
  let at = 0;
  for (const n of sizes) {
    out.push(
      slice(
        x,
        x.shape.map((_, i) => (i === a ? at : 0)),
        x.shape.map((d, i) => (i === a ? n : d)),
      ),
    );
    at += n;
  }
  return out;
}

/**
 * torch.split: a number gives pieces of that length along `axis` (the last may be shorter); an
 * array gives pieces of those lengths, which must add up to the axis.
 */
export function split(x: Tensor, sizeOrSizes: number | readonly number[], axis = 0): Tensor[] {
  if (arguments.length > 3) throw tooMany('split', 3, arguments.length);
  tensorArg('split', x, 'x');
  if (x.shape.length === 0) throw new ShapeError('split: cannot split a scalar');
  const a = dimArg('split', x, axis, x.shape.length, 'axis'),
    len = x.shape[a];
  if (Array.isArray(sizeOrSizes)) {
    const sizes = sizeOrSizes.map((n, i) => intArg('split', `size ${i}`, n));
    if (sizes.some((n) => n < 0) || sizes.reduce((p, n) => p + n, 0) !== len) {
      throw new ShapeError(`split: sizes [${sizes}] do not add up to the length ${len} of axis ${a} of [${x.shape}]`);
    }
    return pieces(x, sizes, a);
  }
  const size = intArg('split', 'size', sizeOrSizes);
  // As torch.split: an empty axis gives one empty piece, for any size (0 included).
  if (len === 0 && size >= 0) return pieces(x, [0], a);
  if (size <= 0) throw new ArgumentError(`split: size must be positive, got ${size}`);
  const sizes: number[] = [];
  for (let at = 0; at < len; at += size) sizes.push(Math.min(size, len - at));
  return pieces(x, sizes, a);
}

/**
 * torch.chunk: pieces of length ⌈len/n⌉ along `axis` (fewer than n when they run out, the last may
 * be shorter); an empty axis gives n empty pieces, as torch.chunk does.
 */
export function chunk(x: Tensor, n: number, axis = 0): Tensor[] {
  if (arguments.length > 3) throw tooMany('chunk', 3, arguments.length);
  tensorArg('chunk', x, 'x');
  if (intArg('chunk', 'n', n) <= 0) throw new ArgumentError(`chunk: n must be positive, got ${n}`);
  if (x.shape.length === 0) throw new ShapeError('chunk: cannot chunk a scalar');
  const a = dimArg('chunk', x, axis, x.shape.length, 'axis');
  const len = x.shape[a];
  return len === 0 ? pieces(x, new Array<number>(n).fill(0), a) : split(x, Math.ceil(len / n), a);
}

/** x.T: the transpose of a matrix (for other ranks, permute or transpose name the axes). */
export function matrixT(x: Tensor): Tensor {
  tensorArg('T', x, 'x');
  if (x.shape.length !== 2)
    throw new ShapeError(`T: x must be 2-D, got [${x.shape}] (use permute(x, ...dims) or transpose(x, perm) for other ranks)`);
  return transpose(x, [1, 0]);
}
