// `adjoint train --dataset shakespeare --model gpt` and `adjoint sample`: the GPT run with one
// progress line (redrawn in place on a terminal), validation every evalEvery steps, the whole
// validation split at the end and `val loss: N.NNNN` as the last line; sampling from a saved
// model whose safetensors metadata carries the configuration and the vocabulary.
import { readFile, writeFile } from 'node:fs/promises';
import { init } from '../wasm/init.js';
import { backend } from '../wasm/backend.js';
import { memory } from '../tensor/memory.js';
import { saveSafetensors, loadSafetensors } from '../io/safetensors.js';
import { decodeSafetensorsFile } from '../io/safetensors-format.js';
import { GPT } from '../nn/gpt.js';
import { CharTokenizer, shakespeare } from '../data/text.js';
import { ArgumentError, DtypeError, FormatError, ShapeError } from '../errors.js';
import { UsageError } from './args.js';
import type { GptTrainArgs, SampleArgs } from './gpt-args.js';
import { GptRun } from './gpt-run.js';
import { threadsText, type Sink } from './progress.js';

const CLEAR = '\r\x1b[2K';
const mb = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MB`;

function clock(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export interface GptTrainResult {
  valLoss20: number;
  valLossFull: number;
  msPerStepMedian: number;
  cpuMsPerStepMedian: number;
  tokensPerSec: number;
  seconds: number;
  peakWasmBytes: number;
}

/** Trains the GPT, printing progress to `out`; saves to args.save if given. */
export async function trainGpt(args: GptTrainArgs, out: Sink): Promise<GptTrainResult> {
  const text = await shakespeare(args.data ?? undefined);
  await init({ threads: args.threads });
  const run = new GptRun(text, {
    layers: args.layers,
    heads: args.heads,
    width: args.width,
    context: args.context,
    bias: args.bias,
    batch: args.batch,
    steps: args.steps,
    seed: args.seed,
  });
  const nParams = run.model.parameters().reduce((a, p) => a + p.size, 0);
  out.write(
    `training gpt on shakespeare: ${run.train.length} train / ${run.val.length} val characters, vocabulary ${run.tokenizer.vocabSize}\n`,
  );
  out.write(
    `model ${args.layers} layers, ${args.heads} heads, width ${args.width}, context ${args.context} (${nParams.toLocaleString('en-US')} parameters${args.bias ? ', with biases' : ', no biases'}); AdamW lr 1e-3 (100 warm-up, cosine to 1e-4), batch ${args.batch}, ${args.steps} steps, seed ${args.seed}, ${threadsText(backend().threads)}\n`,
  );
  const times: number[] = [],
    cpu: number[] = [];
  const t0 = performance.now();
  let last = 0,
    loss = NaN;
  for (let s = 1; s <= args.steps; s++) {
    const a = performance.now(),
      c = process.cpuUsage();
    loss = run.trainStep();
    times.push(performance.now() - a);
    const dc = process.cpuUsage(c);
    cpu.push((dc.user + dc.system) / 1000);
    const now = performance.now(),
      elapsed = (now - t0) / 1000;
    const tps = (s * run.tokensPerStep) / elapsed;
    const line = `step ${s}/${args.steps}  loss ${loss.toFixed(4)}  ${tps.toFixed(0)} tokens/s  ETA ${clock(((args.steps - s) * elapsed) / s)}`;
    if (out.isTTY && (now - last > 100 || s === args.steps)) {
      out.write(`${CLEAR}${line}`);
      last = now;
    }
    if (s % args.evalEvery === 0 && s < args.steps) out.write(`${out.isTTY ? CLEAR : ''}${line}  val ${run.evalRandom(20).toFixed(4)}\n`);
  }
  const seconds = (performance.now() - t0) / 1000;
  if (out.isTTY) out.write(CLEAR);
  const valLoss20 = run.evalRandom(20),
    valLossFull = run.evalFull();
  const median = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)];
  const med = median(times),
    cpuMed = median(cpu);
  const peakWasmBytes = memory().wasmBytes;
  out.write(
    `trained ${args.steps} steps in ${seconds.toFixed(1)} s: median ${med.toFixed(1)} ms/step (process CPU ${cpuMed.toFixed(1)} ms), ${((run.tokensPerStep / med) * 1000).toFixed(0)} tokens/s, final loss ${loss.toFixed(4)}, peak wasm memory ${mb(peakWasmBytes)} (tensors ${mb(memory().peakBytes)})\n`,
  );
  if (args.save !== null) {
    await writeFile(args.save, saveGpt(run.model, run.tokenizer));
    out.write(`saved ${args.save}\n`);
  }
  out.write(`val loss (whole validation split): ${valLossFull.toFixed(4)}\n`);
  out.write(`val loss: ${valLoss20.toFixed(4)}\n`);
  run.dispose();
  return {
    valLoss20,
    valLossFull,
    msPerStepMedian: med,
    cpuMsPerStepMedian: cpuMed,
    tokensPerSec: (run.tokensPerStep / med) * 1000,
    seconds,
    peakWasmBytes,
  };
}

/** The model's state dict with its configuration and vocabulary in the safetensors metadata. */
function saveGpt(model: GPT, tokenizer: CharTokenizer): Uint8Array {
  const config = {
    vocabSize: model.vocabSize,
    layers: model.layers,
    heads: model.heads,
    width: model.width,
    context: model.context,
    bias: model.bias,
  };
  return saveSafetensors(model.stateDict(), {
    format: 'pt',
    producer: 'adjoint',
    model: 'gpt',
    config: JSON.stringify(config),
    vocab: JSON.stringify(tokenizer.vocab),
  });
}

/** A metadata field of a GPT file, parsed; a damaged one is named rather than left to JSON.parse's message. */
function metaJson(field: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(
      `its "${field}" metadata is not valid JSON (${(e as Error).message}); was it written by adjoint train --model gpt --save?`,
    );
  }
}

/**
 * A GPT and its tokenizer from the bytes saveGpt wrote. Every way the file can be wrong (its bytes,
 * its metadata, its tensors against its config) is a usage error "--load: FILE …", exit code 2, as
 * for a path that cannot be read; running out of memory is not the file's fault and stays as it is.
 */
function loadGpt(file: string, bytes: Uint8Array): { model: GPT; tokenizer: CharTokenizer } {
  try {
    return readGpt(bytes);
  } catch (e) {
    // The byte-level decoder's name means nothing to a CLI user: say what the file is not.
    if (e instanceof FormatError)
      throw new UsageError(`--load: ${file} is not a valid safetensors file (${e.message.replace(/^decodeSafetensors\w*: /, '')})`);
    if (e instanceof ArgumentError || e instanceof ShapeError || e instanceof DtypeError)
      throw new UsageError(`--load: ${file}: ${e.message}`);
    throw e;
  }
}

function readGpt(bytes: Uint8Array): { model: GPT; tokenizer: CharTokenizer } {
  const { metadata: meta, tensors: entries } = decodeSafetensorsFile(bytes);
  if (!Object.hasOwn(meta, 'config') || !Object.hasOwn(meta, 'vocab'))
    throw new UsageError('it has no GPT config/vocab metadata (save it with adjoint train --model gpt --save)');
  const tokenizer = new CharTokenizer(metaJson('vocab', meta.vocab) as string[]);
  const config = metaJson('config', meta.config) as { vocabSize: number };
  const f64 = entries.some((t) => t.name === 'tokEmb.weight' && t.dtype === 'F64');
  const model = new GPT({ ...config, dtype: f64 ? 'float64' : 'float32' });
  try {
    // Checked now: a vocabulary shorter than the model's ids would fail only in decode, after generating.
    if (tokenizer.vocabSize !== model.vocabSize)
      throw new UsageError(
        `its vocabulary has ${tokenizer.vocabSize} characters but its config says vocabSize ${model.vocabSize}; the two must match`,
      );
    const tensors = loadSafetensors(bytes);
    try {
      model.loadStateDict(tensors);
    } finally {
      for (const t of Object.values(tensors)) t.dispose();
    }
  } catch (e) {
    model.dispose();
    throw e;
  }
  return { model, tokenizer };
}

/** Prints the prompt and its continuation. */
export async function sampleGpt(args: SampleArgs, out: Sink): Promise<void> {
  const bytes = await readFile(args.load).catch((e: NodeJS.ErrnoException) => {
    throw new UsageError(`--load: cannot read ${args.load} (${e.code ?? e.message})`);
  });
  await init({ threads: args.threads });
  const { model, tokenizer } = loadGpt(args.load, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const prompt = tokenizer.encode(args.prompt);
  out.write(args.prompt);
  model.generate(prompt, {
    tokens: args.tokens,
    temperature: args.temperature,
    topK: args.topK,
    seed: args.seed,
    onToken: (id) => out.write(tokenizer.decode([id])),
  });
  out.write('\n');
  model.dispose();
}
