// Starting the pool's supervisor thread (see worker-source.ts): with node:worker_threads in
// Node, Deno and Bun, as a Web Worker elsewhere. The supervisor starts the workers, reports when
// they are all ready, and marks a worker's slot when it dies; `died` is called when the
// supervisor itself ends (it marks every slot then).
import { NODE_SUPERVISOR, NODE_WORKER, WEB_SUPERVISOR, WEB_WORKER } from './worker-source.js';

/** The supervisor thread, which starts the workers and marks their slots when they die. */
export interface Supervisor {
  ready: Promise<void>;
  send(message: Record<string, unknown>): void;
  /** Stops the workers (they were told to quit) and the supervisor. */
  stop(): void;
}

/** How to start a supervisor in this runtime (`node`: node:worker_threads is there). */
export async function supervisorStarter(node: boolean): Promise<Start> {
  return node ? nodeSupervisor() : webSupervisor();
}

export type Start = (data: Record<string, unknown>, died: (why: string) => void) => Supervisor;

async function nodeSupervisor(): Promise<Start> {
  const { Worker } = await import('node:worker_threads');
  return (data, died) => {
    const w = new Worker(NODE_SUPERVISOR, { eval: true });
    w.unref(); // an idle pool must not keep the process alive
    const ready = new Promise<void>((resolve, reject) => {
      w.once('message', (m: { error?: string }) => (m.error !== undefined ? reject(new Error(m.error)) : resolve()));
      w.once('error', reject);
      w.once('exit', (code) => reject(new Error(`the supervisor thread exited with code ${code} while starting`)));
    });
    w.on('exit', (code) => died(`the supervisor thread exited with code ${code}`));
    w.postMessage({ ...data, source: NODE_WORKER });
    return { ready, send: (m) => w.postMessage(m), stop: () => w.postMessage({ stop: true }) };
  };
}

function webSupervisor(): Start {
  const url = URL.createObjectURL(new Blob([WEB_SUPERVISOR], { type: 'text/javascript' }));
  return (data, died) => {
    const w = new Worker(url, { type: 'module' });
    const ready = new Promise<void>((resolve, reject) => {
      w.onmessage = (e: MessageEvent<{ error?: string }>) => (e.data.error !== undefined ? reject(new Error(e.data.error)) : resolve());
      w.onerror = (e) => reject(new Error(e.message));
    });
    w.addEventListener('error', (e) => died(`the supervisor thread failed: ${e.message}`));
    w.postMessage({ ...data, source: WEB_WORKER });
    return { ready, send: (m) => w.postMessage(m), stop: () => w.postMessage({ stop: true }) };
  };
}
