// A character-level GPT for the edge worker: load one saved by `adjoint train --model gpt --save`
// (its safetensors metadata carries the configuration and the vocabulary), then sample from it.
// Sampling is seeded with adjoint's own generator, so a request gives the same text in workerd,
// Node, Deno, Bun and browsers.
import { io, nn, data } from 'adjoint';
import { BadInput } from './model.mjs';

/** The "__metadata__" strings of a safetensors file (its header is 8 bytes of length, then JSON). */
function metadataOf(bytes) {
  if (bytes.length < 8) throw new BadInput('the body must be a safetensors file');
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  if (n > bytes.length - 8) throw new BadInput('the body must be a safetensors file');
  try {
    return JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))).__metadata__ ?? {};
  } catch {
    throw new BadInput('the body must be a safetensors file');
  }
}

/** { model, tokenizer, config } from the bytes of a saved GPT. */
export function loadGpt(bytes) {
  const meta = metadataOf(bytes);
  if (!meta.config || !meta.vocab)
    throw new BadInput('this safetensors file has no GPT config/vocab metadata (save it with adjoint train --model gpt --save)');
  const config = JSON.parse(meta.config);
  const tokenizer = new data.CharTokenizer(JSON.parse(meta.vocab));
  const tensors = io.loadSafetensors(bytes);
  const model = new nn.GPT({ ...config, dtype: tensors['tokEmb.weight']?.dtype === 'float64' ? 'float64' : 'float32' });
  try {
    model.loadStateDict(tensors);
  } catch (e) {
    model.dispose();
    throw e;
  } finally {
    for (const t of Object.values(tensors)) t.dispose();
  }
  return { model, tokenizer, config };
}

/** POST /generate's body → { text }: { prompt = "\n", tokens = 200 (≤ 2000), temperature = 1, topK?, seed = 0 }. */
export function generate({ model, tokenizer }, body) {
  if (body === null || typeof body !== 'object')
    throw new BadInput('the body must be a JSON object { prompt, tokens, temperature, topK, seed }');
  const { prompt = '\n', tokens = 200, temperature = 1, topK = null, seed = 0 } = body;
  if (typeof prompt !== 'string' || prompt.length === 0) throw new BadInput('prompt must be a non-empty string');
  if (!Number.isInteger(tokens) || tokens < 1 || tokens > 2000) throw new BadInput('tokens must be an integer in 1..2000');
  const ids = model.generate(tokenizer.encode(prompt), { tokens, temperature, topK, seed });
  return { text: tokenizer.decode(ids) };
}
