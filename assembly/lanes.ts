// Shared inline helpers: lane counts and pointer arithmetic used by every kernel family.

/** Lanes of T in one v128 (4 for f32, 2 for f64). */
@inline export function lanes<T>(): i32 { return <i32>(16 / sizeof<T>()); }

/** Byte address of element i of a T array at p. */
@inline export function at<T>(p: usize, i: i32): usize { return p + (<usize>i << alignof<T>()); }

/** Reads element i of a T array. */
@inline export function ld<T>(p: usize, i: i32): T { return load<T>(at<T>(p, i)); }

/** Writes element i of a T array. */
@inline export function st<T>(p: usize, i: i32, v: T): void { store<T>(at<T>(p, i), v); }

/** Reads element i of an i32 array (shapes, strides, indices). */
@inline export function ldi(p: usize, i: i32): i32 { return load<i32>(p + (<usize>i << 2)); }

/** Sum of the lanes of v, in a fixed order (lane 0 first) so results never depend on the engine. */
@inline export function hsum<T>(v: v128): T {
  if (sizeof<T>() == 4) {
    return <T>(<f32>(v128.extract_lane<f32>(v, 0) + v128.extract_lane<f32>(v, 1)) +
      <f32>(v128.extract_lane<f32>(v, 2) + v128.extract_lane<f32>(v, 3)));
  }
  return <T>(v128.extract_lane<f64>(v, 0) + v128.extract_lane<f64>(v, 1));
}

/** Largest lane of v (NaN-propagating like Math.max). */
@inline export function hmax<T>(v: v128): T {
  if (sizeof<T>() == 4) {
    return <T>max(max(v128.extract_lane<f32>(v, 0), v128.extract_lane<f32>(v, 1)),
      max(v128.extract_lane<f32>(v, 2), v128.extract_lane<f32>(v, 3)));
  }
  return <T>max(v128.extract_lane<f64>(v, 0), v128.extract_lane<f64>(v, 1));
}

/** Rows longer than this are summed pairwise (reduce.ts's sums, softmax.ts's exp sums: the same split, the same bits). */
export const SUM_LEAF: i32 = 1024;
/** Where a pairwise sum of n > SUM_LEAF elements splits: a whole number of leaves on the left, from n alone. */
@inline export function pairSplit(n: i32): i32 { return ((n >> 1) + SUM_LEAF - 1) / SUM_LEAF * SUM_LEAF; }
