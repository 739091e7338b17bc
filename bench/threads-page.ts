// Browser entry of the threads benchmark (bench/threads.ts --browser bundles and serves it on a
// cross-origin isolated page): ?lib=adjoint|tfjs-wasm&threads=N&wasm=<TF.js dist URL>; the
// result goes to window.__adjoint, where the headless-browser driver reads it.
/* eslint-disable @typescript-eslint/no-explicit-any */
import * as A from '../src/index.js';
import { threadCount } from '../src/testing.js';
import * as tf from '@tensorflow/tfjs';
import * as tfwasm from '@tensorflow/tfjs-backend-wasm';
import { benchAdjoint, benchTf, type Lib, type Result } from './threads-core.js';

const q = new URLSearchParams(location.search);
const lib = q.get('lib') as Lib,
  threads = Number(q.get('threads') ?? 1);
const where = `${navigator.userAgent.match(/(Chrome|Firefox)\/[\d.]+/)?.[0] ?? 'browser'}, crossOriginIsolated=${crossOriginIsolated}`;

async function run(): Promise<Result> {
  if (lib === 'adjoint') {
    await A.init(threads === 1 ? {} : { threads });
    return { lib, threads: threadCount(), version: '', where, ...benchAdjoint(A) };
  }
  tfwasm.setThreadsCount(threads);
  tfwasm.setWasmPaths(q.get('wasm')!);
  if (!(await tf.setBackend('wasm'))) throw new Error('setBackend("wasm") returned false');
  await tf.ready();
  return { lib, threads: tfwasm.getThreadsCount(), version: tf.version_core, where, ...benchTf(tf) };
}

run().then(
  (r) => ((window as any).__adjoint = r),
  (e) => ((window as any).__adjoint = { error: String((e as Error)?.stack ?? e) }),
);
