// Random draws that a recomputation must repeat. A checkpointed segment runs its forward twice
// (once without a tape, once in the backward pass), so anything it draws from a stateful
// stream — an automatic seed, nn.Dropout's call counter — must give the same value the second
// time, or the recomputed activations (and so the gradients) would differ from the first run.
// Streams route their draws through replayable(): recorded on the first run, served from the
// record on the rerun (PyTorch's checkpoint stashes and restores the RNG state for the same reason).
// No imports: the tensor constructors depend on this file.
import { GradError } from '../errors.js';

interface Tape {
  readonly draws: unknown[];
  /** Position of the next draw to serve, or -1 while recording. */
  pos: number;
  /** The tape this one was opened inside: a recording inside a replay reads from it. */
  readonly parent: Tape | null;
}

let current: Tape | null = null;

function drawFrom<T>(t: Tape | null, draw: () => T): T {
  if (t === null) return draw();
  if (t.pos >= 0) {
    if (t.pos >= t.draws.length) {
      throw new GradError(
        'checkpoint: the recomputation drew more random numbers than the first run (the function must be deterministic given its inputs)',
      );
    }
    return t.draws[t.pos++] as T;
  }
  const v = drawFrom(t.parent, draw);
  t.draws.push(v);
  return v;
}

/** The next value of a stateful stream (e.g. `() => seed++`), repeated when a segment is recomputed. */
export function replayable<T>(draw: () => T): T {
  return drawFrom(current, draw);
}

function withTape<T>(t: Tape, fn: () => T): T {
  const prev = current;
  current = t;
  try {
    return fn();
  } finally {
    current = prev;
  }
}

/** Runs fn and returns its result with the draws it made. */
export function recordDraws<T>(fn: () => T): [T, readonly unknown[]] {
  const t: Tape = { draws: [], pos: -1, parent: current };
  return [withTape(t, fn), t.draws];
}

/** Runs fn serving its draws from `draws` (in order), as a first run recorded them. */
export function replayDraws<T>(draws: readonly unknown[], fn: () => T): T {
  return withTape({ draws: draws as unknown[], pos: 0, parent: null }, fn);
}

/** Whether a draw now would be recorded or served by a tape (inside checkpoint()). */
export function onTape(): boolean {
  return current !== null;
}
