// Anomaly mode: when on, every primitive's output (forward and backward) is checked for NaN/Inf.
import { modes } from './modes.js';

/** Turns the NaN/Inf check of every kernel output on or off (off by default: it costs a pass over each output). */
export function detectAnomaly(on: boolean): void {
  modes.anomaly = on;
}
