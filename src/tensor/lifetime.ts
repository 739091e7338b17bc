// Tensors nobody disposes: a handle that becomes unreachable gives its reference on the memory
// block back through a FinalizationRegistry, so a loop without tidy() or dispose() does not
// leak. Registering costs more than creating a tensor does, and most tensors are disposed
// within microseconds (tidy scopes, composite ops), so new handles wait in a list and only
// those still alive when it is flushed (at the next microtask, or every FLUSH_AT creations)
// are registered. The registry holds each handle's Storage, never the handle; a handle's node
// is not dropped from here: when a handle is unreachable, so is every node only it could reach
// (a consumer node holds its input handles), and their saved handles are finalized alike.
// Also here: which ops created the live bytes, for the OutOfMemoryError message.
// `using` needs Symbol.dispose: engines without it (older Node, Safari) get the registered
// symbol that TypeScript's and esbuild's lowering of `using` look up.
(Symbol as { dispose?: symbol }).dispose ??= Symbol.for('Symbol.dispose');

import { oomReport } from '../wasm/arena.js';
import { liveTensors, dropped, inScope, outside } from './scope.js';

/** What the registry needs of a handle and of its block (tensor.ts implements both). */
interface Handle {
  readonly disposed: boolean;
  readonly storage: Block;
  registered: boolean;
}
interface Block {
  release(): void;
}

const FLUSH_AT = 1024;

/**
 * Live handles registered with the registry (owned by no tidy scope). The unreachable ones are
 * freed only when finalizers run, between event-loop tasks: a synchronous loop that never
 * yields keeps them all, which the OutOfMemoryError message says.
 */
let awaitingGc = 0;

const registry =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry<Block>((storage) => {
        awaitingGc--;
        dropped();
        storage.release();
      })
    : null;

const fresh: (Handle | undefined)[] = new Array(FLUSH_AT).fill(undefined);
let count = 0;
let scheduled = false;

/**
 * Called for every new handle outside tidy scopes, and for a handle leaving them (kept,
 * returned from the outermost scope, saved for backward): it becomes collectable once the list
 * is flushed. A handle inside a scope is not registered: the scope disposes or hands it on.
 */
function adopt(t: Handle): void {
  if (registry === null) return;
  fresh[count++] = t;
  if (count === FLUSH_AT) flush();
  else if (!scheduled) {
    scheduled = true;
    queueMicrotask(flush);
  }
}

/** Registers the handles of the list that are still alive. */
function flush(): void {
  scheduled = false;
  const n = count;
  count = 0;
  for (let i = 0; i < n; i++) {
    const t = fresh[i]!;
    fresh[i] = undefined;
    if (t.disposed || t.registered || inScope(t)) continue;
    t.registered = true;
    awaitingGc++;
    registry!.register(t, t.storage, t);
  }
}

/** Called by dispose() of a registered handle: its reference is returned there, not here. */
export function forget(t: Handle): void {
  if (registry?.unregister(t)) awaitingGc--;
}

// ---------------------------------------------------------------- live bytes per op

/** The live bytes of blocks first produced by one op (a row of the OutOfMemoryError report). */
export class Origin {
  bytes = 0;
  constructor(readonly op: string) {}
}
const origins = new Map<string, Origin>();

let lastOp = '';
let lastOrigin: Origin | null = null;
export function originOf(op: string): Origin {
  if (op === lastOp) return lastOrigin!; // runs of the same op (elementwise chains, the bench) skip the map
  let o = origins.get(op);
  if (o === undefined) origins.set(op, (o = new Origin(op)));
  lastOp = op;
  lastOrigin = o;
  return o;
}

const mb = (b: number): string => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MiB` : `${(b / 1024).toFixed(1)} KiB`);

/** The sentence an OutOfMemoryError ends with: live tensors, the ops holding most memory, and what to do. */
function liveReport(): string {
  const top = [...origins.values()]
    .filter((o) => o.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3);
  const ops = top.length === 0 ? '' : `; most live bytes were created by ${top.map((o) => `${o.op} (${mb(o.bytes)})`).join(', ')}`;
  const unowned =
    awaitingGc === 0
      ? ''
      : `; ${awaitingGc} of them are in no tidy() scope and wait for the garbage collector, which frees the unreachable ones only ` +
        'between event-loop tasks: a synchronous loop that never awaits keeps every one of them until it yields';
  return (
    `. ${liveTensors()} tensors are live${ops}${unowned}. Free tensors you no longer need: run each step in tidy(() => …), ` +
    'declare them with `using`, or call dispose() (unreachable tensors are also reclaimed by the garbage collector, between event-loop tasks)'
  );
}

oomReport.explain = liveReport;
outside.adopt = adopt;
