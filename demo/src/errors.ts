// The text a worker posts for a failure: an AdjointError by its class name (ShapeError, …) and
// message, anything else by its message. Shared by the digits and the Shakespeare workers.
import { AdjointError } from '../../src/index.js';

export function errorText(e: unknown): string {
  if (e instanceof AdjointError) return `${e.name}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}
