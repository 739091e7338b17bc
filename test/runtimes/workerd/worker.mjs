// workerd entry of the cross-runtime suite: GET /train runs the shared workload and answers with
// its result as JSON; GET /init-check calls init() without a module (must fail clearly). workerd forbids compiling wasm from bytes, so the kernels arrive as a
// precompiled WebAssembly.Module (a `wasm` module in config.capnp) and go to init({ module }).
// GET /train-relaxed is passed to the RELAXED service (relaxed.mjs, an isolate of its own: init
// is once per isolate), which trains with dist/adjoint-relaxed.wasm.
import wasm from '../../../dist/adjoint.wasm';
import * as adj from '../../../dist/index.js';
import { trainDigits } from '../train-digits.mjs';

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === '/train-relaxed') return env.RELAXED.fetch(request);
    // init() with no module: workerd forbids compiling the inlined bytes, and init must say so.
    if (pathname === '/init-check') {
      try {
        await adj.init();
        return Response.json({ initialised: true });
      } catch (e) {
        return Response.json({
          initialised: false,
          errorName: e?.name,
          isAdjointError: e instanceof adj.AdjointError,
          message: e?.message,
        });
      }
    }
    if (pathname !== '/train') return new Response('not found\n', { status: 404 });
    try {
      return Response.json(await trainDigits({ module: wasm }, undefined, { weights: true }));
    } catch (e) {
      return Response.json({ error: String(e?.stack ?? e) }, { status: 500 });
    }
  },
};
