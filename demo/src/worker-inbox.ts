// What the digits and the Shakespeare workers share: the text they post for a failure, and their
// message loop (messages that arrive while the engine starts wait, in order, until it is up).
import { AdjointError } from '../../src/index.js';

/** An AdjointError by its class name (ShapeError, …) and message, anything else by its message. */
export function errorText(e: unknown): string {
  if (e instanceof AdjointError) return `${e.name}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

/**
 * A worker's inbox: `receive` queues a message until `open(state)`, then hands each to `handle`;
 * a throw is reported through `fail` with the message type's context ("Could not …").
 */
export function inbox<M extends { type: string }, S>(
  handle: (s: S, m: M) => void,
  contexts: Record<M['type'], string>,
  fail: (context: string, detail: string) => void,
) {
  const waiting: M[] = [];
  let state: S | null = null;
  const dispatch = (s: S, m: M) => {
    try {
      handle(s, m);
    } catch (e) {
      fail(contexts[m.type as M['type']], errorText(e));
    }
  };
  return {
    receive(m: M): void {
      if (state === null) waiting.push(m);
      else dispatch(state, m);
    },
    /** The first waiting message of this type, taken out of the queue (the one boot itself applies). */
    take<T extends M['type']>(type: T): Extract<M, { type: T }> | null {
      const i = waiting.findIndex((m) => m.type === type);
      return i >= 0 ? (waiting.splice(i, 1)[0] as Extract<M, { type: T }>) : null;
    },
    /** The engine is up: handle what waited, in order, and everything after as it comes. */
    open(s: S): void {
      state = s;
      for (const m of waiting.splice(0)) dispatch(s, m);
    },
  };
}
