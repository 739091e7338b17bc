// Seeded sampling from a GPT with its key/value cache. Randomness is our counter-based wasm
// stream (never Math.random) and the softmax runs in wasm, so a seed gives the same text in
// every runtime. Each new token costs one query row against the cached keys: O(T) work.
import { ArgumentError } from '../errors.js';
import { describe, optionsArg } from '../args.js';
import { rand, tensor } from '../ops/create.js';
import { softmax } from '../ops/api.js';
import { noGrad } from '../autodiff/transforms.js';
import { tidy } from '../tensor/memory.js';
import type { GPT } from './gpt.js';

/** How `GPT.generate` draws tokens: count, temperature, top-k and the seed of our wasm RNG. */
export interface SampleOptions {
  /** New tokens to draw (default 200). */
  tokens?: number;
  /** Divides the logits before the softmax (default 1; lower is more conservative). */
  temperature?: number;
  /** Keep only the k most likely tokens (default: all). */
  topK?: number | null;
  seed?: number;
  /** Called with each new token id as it is drawn (e.g. to stream text). */
  onToken?: (id: number) => void;
}

/** Index of the first cumulative probability above u (the last nonzero one if rounding leaves u above the sum). */
function pick(p: ArrayLike<number>, u: number): number {
  let c = 0,
    last = 0;
  for (let i = 0; i < p.length; i++) {
    if (p[i] <= 0) continue;
    last = i;
    c += p[i];
    if (u < c) return i;
  }
  return last;
}

/** Logits / temperature with everything below the k-th largest set to −∞ (ties at the k-th kept). */
function scaled(logits: ArrayLike<number>, temperature: number, topK: number | null): Float64Array {
  const out = new Float64Array(logits.length);
  for (let i = 0; i < out.length; i++) out[i] = logits[i] / temperature;
  if (topK !== null && topK < out.length) {
    const kth = Float64Array.from(out).sort()[out.length - topK];
    for (let i = 0; i < out.length; i++) if (out[i] < kth) out[i] = -Infinity;
  }
  return out;
}

/**
 * Continues `prompt` (token ids, at least one) by `tokens` ids drawn from the model. When the
 * context fills, the cache restarts from the last half-context of tokens, so the model always
 * sees between context/2 and context tokens of history.
 */
export function sample(model: GPT, prompt: ArrayLike<number>, options: SampleOptions = {}): Int32Array {
  // A misspelt option (top_k for topK) would sample from another distribution without a word.
  const opts = optionsArg('generate', options, ['tokens', 'temperature', 'topK', 'seed', 'onToken']);
  if (opts.seed !== undefined && !Number.isSafeInteger(opts.seed))
    throw new ArgumentError(`generate: seed must be a safe integer, got ${describe(opts.seed)}`);
  const tokens = opts.tokens ?? 200,
    temperature = opts.temperature ?? 1,
    topK = opts.topK ?? null;
  if (!Number.isInteger(tokens) || tokens < 0) throw new ArgumentError(`sample: tokens must be an integer ≥ 0, got ${describe(tokens)}`);
  if (typeof temperature !== 'number' || !(temperature > 0) || !Number.isFinite(temperature))
    throw new ArgumentError(`sample: temperature must be a positive number, got ${describe(temperature)}`);
  if (topK !== null && (!Number.isInteger(topK) || topK < 1))
    throw new ArgumentError(`sample: topK must be a positive integer, got ${describe(topK)}`);
  if (prompt.length === 0) throw new ArgumentError('sample: the prompt needs at least one token');
  const seq = Array.from(prompt);
  const u = tidy(() => rand([Math.max(tokens, 1)], { seed: opts.seed ?? 0, dtype: 'float64' }).toArray());
  const cache = model.cache();
  const wasTraining = model.training;
  model.eval();
  try {
    return noGrad(() => {
      let logits = cache.append(seq.slice(-model.context));
      for (let i = 0; i < tokens; i++) {
        const p = tidy(() => softmax(tensor(scaled(logits, temperature, topK), { dtype: 'float64' })).toArray());
        const id = pick(p, u[i]);
        seq.push(id);
        opts.onToken?.(id);
        if (i === tokens - 1) break;
        if (cache.length === model.context) {
          cache.reset();
          logits = cache.append(seq.slice(-Math.max(1, Math.floor(model.context / 2))));
        } else {
          logits = cache.append([id]);
        }
      }
      return Int32Array.from(seq.slice(prompt.length));
    });
  } finally {
    cache.dispose();
    model.train(wasTraining);
  }
}
