// How much of a second core this process gets right now, for the benches that compare one and
// two threads (threads.ts, threads-step.ts, moonshot.ts). A round on a host whose second core
// has gone away measures the host, not the library.
import { Worker } from 'node:worker_threads';

/** The same loop as the probe thread's below. */
function spin(n: number): number {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) | 0;
  return x;
}
const PROBE = `const p = require('node:worker_threads').parentPort;
p.on('message', (n) => { let x = 0; for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) | 0; p.postMessage(x); });`;
let probe: Worker | null = null;

/**
 * The work two threads of plain JS get done per unit of one thread's: a loop of n steps on this
 * thread alone, then on this thread and a worker at once (2.00: two idle cores; about 1: the
 * second vCPU is busy or not there). With the default n it takes ≈ 3 × 15 ms.
 */
export async function secondCore(n = 1e7): Promise<number> {
  probe ??= new Worker(PROBE, { eval: true });
  const p = probe;
  p.ref();
  const once = () => new Promise((r) => p.once('message', r));
  let t = performance.now();
  spin(n);
  const solo = performance.now() - t;
  t = performance.now();
  const done = once();
  p.postMessage(n);
  spin(n);
  await done;
  const work = (2 * solo) / (performance.now() - t);
  p.unref(); // between probes the idle thread does not keep the process alive
  return work;
}
