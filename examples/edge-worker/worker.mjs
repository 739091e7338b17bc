// An edge worker (workerd / Cloudflare Workers) that keeps a small digit classifier in memory:
//   POST /predict  {"x": [[64 numbers], ...]}            → {"classes": [...], "probs": [[10], ...]}
//   POST /train    {"x": [[64 numbers], ...], "y": [...]} → {"loss": 2.31, "steps": 1}  (one SGD step)
//   PUT  /gpt      (body: a GPT saved by `adjoint train --model gpt --save`)  → {"config": {...}}
//   POST /generate {"prompt": "ROMEO:", "tokens": 200, "temperature": 0.8, "topK": 10, "seed": 1} → {"text": "..."}
//   GET  /         → model info
// Workers may not compile wasm from bytes, so the kernels come in as a precompiled module
// (`adjoint/adjoint.wasm`, a wasm module in config.capnp / a CompiledWasm rule in wrangler).
// The model lives as long as the isolate; each isolate trains its own copy.
import { init } from 'adjoint';
import wasm from 'adjoint/adjoint.wasm';
import { createModel, isBadInput } from './model.mjs';
import { loadGpt, generate } from './gpt.mjs';

let model = null;
let gpt = null;
async function ready() {
  await init({ module: wasm });
  model ??= createModel({ seed: 1 });
  return model;
}

const json = (body, status = 200) => Response.json(body, { status });

export default {
  async fetch(request) {
    const { pathname } = new URL(request.url);
    const route = `${request.method} ${pathname}`;
    try {
      const m = await ready();
      if (route === 'GET /') return json({ ...m.info(), gpt: gpt?.config ?? null });
      if (route === 'PUT /gpt') {
        const next = loadGpt(new Uint8Array(await request.arrayBuffer()));
        gpt?.model.dispose();
        gpt = next;
        return json({ config: gpt.config });
      }
      if (route === 'POST /generate' && gpt === null) return json({ error: 'no GPT loaded: PUT /gpt a saved model first' }, 409);
      if (route === 'POST /generate') {
        let body;
        try {
          body = await request.json();
        } catch {
          return json({ error: 'the body must be JSON' }, 400);
        }
        return json(generate(gpt, body));
      }
      if (route !== 'POST /predict' && route !== 'POST /train') return json({ error: `no route ${route}` }, 404);
      let body;
      try {
        body = await request.json();
      } catch {
        return json({ error: 'the body must be JSON' }, 400);
      }
      return json(route === 'POST /predict' ? m.predict(body) : m.train(body));
    } catch (e) {
      if (isBadInput(e)) return json({ error: e.message }, 400);
      return json({ error: String(e?.stack ?? e) }, 500);
    }
  },
};
