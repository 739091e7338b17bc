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

// float64 sums are compensated (Neumaier): the rounding error of each addition is gathered and
// added back at the end, so a sum is accurate to a few ulp whatever n (a plain one lost 250 ulp on
// [1, 1000 × 2⁻⁵³]). float32 sums keep their plain order, bits included.
/** What t = s + x lost to rounding, lane-wise for f64x2. */
@inline export function lost2(s: v128, x: v128, t: v128): v128 {
  return v128.bitselect(f64x2.add(f64x2.sub(s, t), x), f64x2.add(f64x2.sub(x, t), s), f64x2.ge(f64x2.abs(s), f64x2.abs(x)));
}
/** What t = s + x lost to rounding, for scalars. */
@inline export function lost1(s: f64, x: f64, t: f64): f64 { return abs(s) >= abs(x) ? (s - t) + x : (x - t) + s; }
/** The compensated total s + c; s itself when it is ±∞ or NaN (the compensation is then NaN). */
@inline export function compensated(s: f64, c: f64): f64 { return s - s == 0 ? s + c : s; }
/** What foldPair's sum lost, with the lanes' own losses: read right after it (no tuples in AssemblyScript). */
export let foldLost: f64 = 0;
/** The two lanes of s added, compensated; foldLost gets c's lanes plus what this addition lost. */
@inline export function foldPair(s: v128, c: v128): f64 {
  const s0 = f64x2.extract_lane(s, 0), s1 = f64x2.extract_lane(s, 1), t = s0 + s1;
  foldLost = (f64x2.extract_lane(c, 0) + f64x2.extract_lane(c, 1)) + lost1(s0, s1, t);
  return t;
}
/** The lanes of s (with compensations c) and then the scalars from `from` on, compensated: Σ. */
@inline export function foldLanes(s: v128, c: v128, x: usize, from: i32, n: i32): f64 {
  let t = foldPair(s, c);
  let lost = foldLost;
  for (let i = from; i < n; i++) {
    const xi = ld<f64>(x, i), u = t + xi;
    lost += lost1(t, xi, u);
    t = u;
  }
  return compensated(t, lost);
}