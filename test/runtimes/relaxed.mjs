// The check of the suite's relaxed-SIMD runs (init({ relaxedSimd: true })), for test/runtimes/run.mjs.
// Fused multiply-add rounds once where the default kernels round twice, so a relaxed run is not
// bit-identical to the default; it must stay close to the same runtime's default run. Tolerances:
// 40 SGD steps of a 64-32-10 MLP in f32 move the weights by ~1e-6 of their scale (measured);
// 1e-4 leaves room for other engines and CPUs while still catching a wrong kernel (a wrong GEMM
// moves them by far more than 1e-2).

/** Runtimes that must load the relaxed kernels: they have relaxed SIMD (with the suite's flags), and workerd is given them as its module. */
export const RELAXED_REQUIRED = ['node', 'chromium', 'workerd'];
export const LOSS_TOL = 1e-4;
export const WEIGHT_TOL = 1e-4;

/**
 * Checks relaxed run `t` (sets t.closeness) and returns null or the problem. `shared`: the
 * default runs' shared result; `own`: this runtime's 1-thread default result (with weights);
 * `one`: this runtime's 1-thread relaxed result (a threaded relaxed run must match its bits);
 * `required`: the relaxed kernels must have loaded.
 */
export function compareRelaxed(t, { shared, own, one, required }) {
  const r = t.result;
  if (r.kernels !== 'relaxed') {
    // The engine has no relaxed SIMD: init fell back to the default kernels, so the bits are the shared ones.
    t.closeness = { verdict: r.digest === shared?.digest ? 'fallback, same bits' : 'fallback, DIFFERENT bits' };
    if (required) return `loaded the ${r.kernels} kernels, but this runtime has relaxed SIMD`;
    return shared === undefined || r.digest === shared.digest
      ? null
      : 'fell back to the default kernels but its weights differ from the shared digest';
  }
  if (t.name.includes('threads=')) {
    t.closeness = { verdict: one !== undefined && r.digest === one.digest ? 'same bits as 1 thread' : 'DIFFERENT from 1 thread' };
    return one === undefined || r.digest === one.digest ? null : "differs from the same runtime's 1-thread relaxed run";
  }
  if (own?.weights === undefined) return 'no default run with weights to compare with';
  if (r.weights.length !== own.weights.length || r.losses.length !== own.losses.length) return 'a different workload from the default run';
  const loss = Math.max(...r.losses.map((l, i) => Math.abs(l - own.losses[i]) / Math.abs(own.losses[i])));
  const scale = Math.max(...own.weights.map(Math.abs));
  const weights = Math.max(...r.weights.map((w, i) => Math.abs(w - own.weights[i]))) / scale;
  const close = loss <= LOSS_TOL && weights <= WEIGHT_TOL;
  t.closeness = { loss, weights, verdict: close ? (r.digest === own.digest ? 'close (same bits)' : 'close') : 'NOT CLOSE' };
  return close
    ? null
    : `relaxed run not within ${LOSS_TOL} (losses, relative) and ${WEIGHT_TOL} (weights, of max |w|) of the default run: ${loss.toExponential(2)}, ${weights.toExponential(2)}`;
}
