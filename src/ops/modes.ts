// Global switches of the tracer: whether ops are recorded for reverse mode, whether tangents
// are propagated (forward mode), and whether outputs are checked for NaN/Inf.
export const modes = {
  record: true,
  forward: true,
  anomaly: false,
};

/** Runs fn with a mode switched, restoring it afterwards even if fn throws. */
export function withMode<T>(key: keyof typeof modes, value: boolean, fn: () => T): T {
  const prev = modes[key];
  modes[key] = value;
  try {
    return fn();
  } finally {
    modes[key] = prev;
  }
}
