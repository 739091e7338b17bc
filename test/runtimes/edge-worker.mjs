// Drives examples/edge-worker in workerd over HTTP and replays the same requests on the same
// model code in this Node process: the worker's losses and predictions must match bit for bit.
import * as adj from '../../dist/index.js';
import { createModel, FEATURES } from '../../examples/edge-worker/model.mjs';
import { loadGpt, generate } from '../../examples/edge-worker/gpt.mjs';

const STEPS = 15;
const BATCH = 32;

async function call(url, method, path, body) {
  const res = await fetch(url + path, {
    method,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, body: await res.json() };
}

function expectStatus(what, r, status) {
  if (r.status !== status) throw new Error(`${what}: expected HTTP ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
}

/** Rows [start, start+n) of a [N, 64] tensor as nested arrays (float32 values survive JSON exactly). */
function rowsOf(flat, start, n) {
  return Array.from({ length: n }, (_, i) => Array.from(flat.subarray((start + i) * FEATURES, (start + i + 1) * FEATURES)));
}

/** Returns a summary; throws on any failed check. */
export async function testEdgeWorker(url) {
  await adj.init();
  const d = adj.data.digits({ seed: 3 });
  const xTrain = d.xTrain.toArray(),
    xTest = d.xTest.toArray();
  const yTrain = Array.from(d.yTrain),
    yTest = Array.from(d.yTest);
  d.xTrain.dispose();
  d.xTest.dispose();

  const info = await call(url, 'GET', '/');
  expectStatus('GET /', info, 200);
  if (info.body.steps !== 0) throw new Error(`GET /: expected a fresh model, got ${JSON.stringify(info.body)}`);
  expectStatus('GET /nope', await call(url, 'GET', '/nope'), 404);
  expectStatus('POST /train (not JSON)', await call(url, 'POST', '/train', '{oops'), 400);
  const bad = await call(url, 'POST', '/predict', { x: [[1, 2, 3]] });
  expectStatus('POST /predict (short row)', bad, 400);

  const reference = createModel({ seed: 1 });
  const losses = [];
  for (let s = 0; s < STEPS; s++) {
    const batch = { x: rowsOf(xTrain, s * BATCH, BATCH), y: yTrain.slice(s * BATCH, (s + 1) * BATCH) };
    const r = await call(url, 'POST', '/train', batch);
    expectStatus(`POST /train #${s + 1}`, r, 200);
    const want = reference.train(batch);
    if (r.body.loss !== want.loss || r.body.steps !== s + 1) {
      throw new Error(`POST /train #${s + 1}: worker says ${JSON.stringify(r.body)}, Node computes ${JSON.stringify(want)}`);
    }
    losses.push(r.body.loss);
  }
  if (!(losses[STEPS - 1] < losses[0])) throw new Error(`training did not lower the loss: ${losses.join(', ')}`);

  const query = { x: rowsOf(xTest, 0, 64) };
  const p = await call(url, 'POST', '/predict', query);
  expectStatus('POST /predict', p, 200);
  const want = reference.predict(query);
  if (JSON.stringify(p.body) !== JSON.stringify(want)) throw new Error('POST /predict: the worker and Node disagree');
  const accuracy = p.body.classes.filter((c, i) => c === yTest[i]).length / query.x.length;
  return { steps: STEPS, firstLoss: losses[0], lastLoss: losses[STEPS - 1], accuracy, generate: await testGenerate(url) };
}

/** A small seeded GPT saved with its config and vocabulary, as `adjoint train --model gpt --save` writes it. */
function savedGpt() {
  const tok = adj.data.CharTokenizer.fromText('abcdefghijklmnopqrstuvwxyz ,.:\n');
  const config = { vocabSize: tok.vocabSize, layers: 2, heads: 2, width: 16, context: 16 };
  const model = new adj.nn.GPT({ ...config, seed: 4 });
  const bytes = adj.io.saveSafetensors(model.stateDict(), {
    format: 'pt',
    model: 'gpt',
    config: JSON.stringify(config),
    vocab: JSON.stringify(tok.vocab),
  });
  model.dispose();
  return bytes;
}

/** PUT /gpt then POST /generate: the worker's text must equal Node's for the same request (past the context, too). */
async function testGenerate(url) {
  const body = { prompt: 'to be', tokens: 60, temperature: 0.9, topK: 8, seed: 5 };
  expectStatus('POST /generate before PUT /gpt', await call(url, 'POST', '/generate', body), 409);
  expectStatus('PUT /gpt (not safetensors)', await call(url, 'PUT', '/gpt', 'nope'), 400);
  const bytes = savedGpt();
  const res = await fetch(`${url}/gpt`, { method: 'PUT', body: bytes, signal: AbortSignal.timeout(60_000) });
  if (res.status !== 200) throw new Error(`PUT /gpt: HTTP ${res.status} ${await res.text()}`);
  const r = await call(url, 'POST', '/generate', body);
  expectStatus('POST /generate', r, 200);
  const local = loadGpt(bytes);
  const want = generate(local, body);
  local.model.dispose();
  if (r.body.text !== want.text)
    throw new Error(`POST /generate: worker says ${JSON.stringify(r.body.text)}, Node ${JSON.stringify(want.text)}`);
  if ([...r.body.text].length !== body.tokens)
    throw new Error(`POST /generate: expected ${body.tokens} characters, got ${JSON.stringify(r.body.text)}`);
  expectStatus('POST /generate (bad tokens)', await call(url, 'POST', '/generate', { ...body, tokens: 0 }), 400);
  expectStatus('POST /generate (unknown character)', await call(url, 'POST', '/generate', { ...body, prompt: 'TO BE' }), 400);
  return { tokens: body.tokens, text: r.body.text };
}
