// Flags of `adjoint train --dataset shakespeare --model gpt` and `adjoint sample`. Defaults are
// the published CPU configuration for character-level tiny Shakespeare.
import { UsageError, integer, positive, text, threadCount, type Threads } from './args.js';

export interface GptTrainArgs {
  layers: number;
  heads: number;
  width: number;
  context: number;
  /** Linear/LayerNorm biases (default true; false is nanoGPT's bias = False). */
  bias: boolean;
  batch: number;
  steps: number;
  seed: number;
  threads: Threads;
  data: string | null;
  save: string | null;
  /** Steps between validation estimates (20 random batches each). */
  evalEvery: number;
}

export interface SampleArgs {
  load: string;
  prompt: string;
  tokens: number;
  temperature: number;
  topK: number | null;
  seed: number;
  threads: Threads;
}

/** sample keeps every drawn id (and one uniform per token) until it returns: 10⁶ tokens is about 12 MB. */
const MAX_TOKENS = 1_000_000;

export const GPT_USAGE = `       adjoint train --dataset shakespeare --model gpt [--layers 4] [--heads 4] [--width 128] [--context 64] [--bias true]
                     [--batch 12] [--steps 2000] [--eval-every 250] [--seed 0] [--threads N|auto] [--data FILE] [--save FILE.safetensors]
       adjoint sample --load FILE.safetensors [--prompt TEXT] [--tokens 500] [--temperature 1] [--top-k K] [--seed 0]`;

const fixed =
  (flag: string, want: string) =>
  (v: string): string => {
    if (v !== want) throw new UsageError(`${flag} must be ${want} here, got ${JSON.stringify(v)}`);
    return v;
  };

/** `--flag value` or `--flag=value` words into parsed values; unknown flags are usage errors. */
function parseFlags(argv: readonly string[], valued: Record<string, (v: string) => unknown>): Record<string, unknown> {
  const given: Record<string, unknown> = {};
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (!word.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(word)}`);
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    const parse = Object.hasOwn(valued, name) ? valued[name] : undefined;
    if (parse === undefined) throw new UsageError(`unknown option --${name}`);
    const value = eq >= 0 ? word.slice(eq + 1) : argv[++i];
    if (value === undefined || (eq < 0 && value.startsWith('--') && name !== 'prompt')) throw new UsageError(`--${name} needs a value`);
    given[name] = parse(value);
  }
  return given;
}

/** Whether `adjoint train` words ask for the GPT (--dataset shakespeare or --model gpt). */
export function isGptTrain(argv: readonly string[]): boolean {
  return argv.some(
    (w, i) =>
      w === '--dataset=shakespeare' ||
      w === '--model=gpt' ||
      (w === '--dataset' && argv[i + 1] === 'shakespeare') ||
      (w === '--model' && argv[i + 1] === 'gpt'),
  );
}

export function parseGptTrainArgs(argv: readonly string[]): GptTrainArgs {
  const g = parseFlags(argv, {
    dataset: fixed('--dataset', 'shakespeare'),
    model: fixed('--model', 'gpt'),
    layers: integer('--layers', 1),
    heads: integer('--heads', 1),
    width: integer('--width', 1),
    context: integer('--context', 1),
    bias: (v: string): boolean => {
      if (v !== 'true' && v !== 'false') throw new UsageError(`--bias must be true or false, got ${JSON.stringify(v)}`);
      return v === 'true';
    },
    batch: integer('--batch', 1),
    steps: integer('--steps', 1),
    seed: integer('--seed', 0),
    threads: threadCount,
    data: text,
    save: text,
    'eval-every': integer('--eval-every', 1),
  });
  const a: GptTrainArgs = {
    layers: (g.layers as number) ?? 4,
    heads: (g.heads as number) ?? 4,
    width: (g.width as number) ?? 128,
    context: (g.context as number) ?? 64,
    bias: (g.bias as boolean) ?? true,
    batch: (g.batch as number) ?? 12,
    steps: (g.steps as number) ?? 2000,
    seed: (g.seed as number) ?? 0,
    threads: (g.threads as Threads) ?? 1,
    data: (g.data as string) ?? null,
    save: (g.save as string) ?? null,
    evalEvery: (g['eval-every'] as number) ?? 250,
  };
  if (a.width % a.heads !== 0) throw new UsageError(`--width (${a.width}) must be divisible by --heads (${a.heads})`);
  if (a.save !== null && !a.save.endsWith('.safetensors'))
    throw new UsageError(`--save expects a FILE.safetensors path, got ${JSON.stringify(a.save)}`);
  return a;
}

export function parseSampleArgs(argv: readonly string[]): SampleArgs {
  const g = parseFlags(argv, {
    load: text,
    prompt: text,
    tokens: integer('--tokens', 1, MAX_TOKENS),
    temperature: positive('--temperature'),
    'top-k': integer('--top-k', 1),
    seed: integer('--seed', 0),
    threads: threadCount,
  });
  if (g.load === undefined)
    throw new UsageError('sample needs --load FILE.safetensors (a model saved by adjoint train --model gpt --save)');
  return {
    load: g.load as string,
    prompt: (g.prompt as string) ?? '\n',
    tokens: (g.tokens as number) ?? 500,
    temperature: (g.temperature as number) ?? 1,
    topK: (g['top-k'] as number) ?? null,
    seed: (g.seed as number) ?? 0,
    threads: (g.threads as Threads) ?? 1,
  };
}
