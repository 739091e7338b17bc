// Command-line parsing for `adjoint train`: every flag is checked up front, so a typo or a
// bad value ends in one line naming the flag, before any data is loaded.
import { ArgumentError } from '../errors.js';

/** A mistake on the command line: reported in one line, exit code 2. */
export class UsageError extends ArgumentError {}

export type Dataset = 'digits' | 'fashion-mnist';
export type ModelKind = 'mlp' | 'cnn';
type OptimizerKind = 'sgd' | 'adam' | 'adamw';

export interface TrainArgs {
  dataset: Dataset;
  data: string | null;
  model: ModelKind;
  epochs: number;
  batch: number;
  lr: number;
  optimizer: OptimizerKind;
  seed: number;
  feedback: 'bp' | 'alignment' | 'sign';
  save: string | null;
  plot: string | null;
  diagnostics: boolean;
  /** DP-SGD: per-example clipping norm C (null: ordinary training) and noise multiplier σ. */
  dpClip: number | null;
  dpNoise: number;
  /** Threads of the kernel pool (1: none; 'auto': one per core); the same bits for any count. */
  threads: Threads;
}

export const USAGE = `usage: adjoint train [--dataset digits|fashion-mnist] [--data DIR] [--model mlp|cnn]
                     [--epochs N] [--batch N] [--lr X] [--optimizer sgd|adam|adamw] [--seed N]
                     [--feedback bp|alignment|sign] [--save FILE.safetensors] [--plot FILE.svg] [--diagnostics]
                     [--dp-clip C [--dp-noise SIGMA]] [--threads N|auto]
       adjoint compare [--feedback bp,alignment[,sign]] [--plot FILE.svg] [train options except --save]`;

const FASHION_DIR = '/usr/share/datasets/fashion-mnist';

/**
 * Defaults per data set: digits train with SGD (Nesterov momentum 0.9), lr 0.1, 40 epochs of
 * 32 (about 1 800 steps, a few seconds); Fashion-MNIST with Adam, lr 1e-3, 5 epochs of 128.
 */
function defaults(dataset: Dataset, optimizer?: OptimizerKind): { optimizer: OptimizerKind; epochs: number; batch: number; lr: number } {
  const opt = optimizer ?? (dataset === 'digits' ? 'sgd' : 'adam');
  const lr = opt === 'sgd' ? 0.1 : 1e-3;
  return dataset === 'digits' ? { optimizer: opt, epochs: 40, batch: 32, lr } : { optimizer: opt, epochs: 5, batch: 128, lr };
}

const choice =
  <T extends string>(flag: string, options: readonly T[]) =>
  (v: string): T => {
    if (!(options as readonly string[]).includes(v))
      throw new UsageError(`${flag} must be one of ${options.join(', ')}, got ${JSON.stringify(v)}`);
    return v as T;
  };
/** A flag's value as an integer ≥ min, and ≤ max when one is given (also used by the GPT flags). */
export const integer =
  (flag: string, min: number, max = Number.MAX_SAFE_INTEGER) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
      throw new UsageError(`${flag} must be an integer ${range}, got ${JSON.stringify(v)}`);
    }
    return n;
  };
/** --threads: 'auto' (one per core, as init's) or an integer ≥ 1. */
export type Threads = number | 'auto';
export const threadCount = (v: string): Threads => (v === 'auto' ? v : integer('--threads', 1)(v));
/** A flag's value as a positive number. */
export const positive =
  (flag: string) =>
  (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n <= 0)
      throw new UsageError(`${flag} must be a positive number, got ${JSON.stringify(v)}`);
    return n;
  };
/** A flag's value as given. */
export const text = (v: string): string => v;

const VALUED: Record<string, (v: string) => unknown> = {
  dataset: choice('--dataset', ['digits', 'fashion-mnist'] as const),
  data: text,
  model: choice('--model', ['mlp', 'cnn'] as const),
  epochs: integer('--epochs', 1),
  batch: integer('--batch', 1),
  lr: positive('--lr'),
  optimizer: choice('--optimizer', ['sgd', 'adam', 'adamw'] as const),
  seed: integer('--seed', 0),
  feedback: choice('--feedback', ['bp', 'alignment', 'sign'] as const),
  save: text,
  plot: text,
  threads: threadCount,
  'dp-clip': positive('--dp-clip'),
  'dp-noise': (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new UsageError(`--dp-noise must be a number ≥ 0, got ${JSON.stringify(v)}`);
    return n;
  },
};
const SWITCHES = new Set(['diagnostics']);

/** Parses the words after `train`; `--flag value` and `--flag=value` both work. */
export function parseTrainArgs(argv: readonly string[]): TrainArgs {
  const given: Record<string, unknown> = {};
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (!word.startsWith('--')) throw new UsageError(`unexpected argument ${JSON.stringify(word)}`);
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    if (SWITCHES.has(name)) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      given[name] = true;
      continue;
    }
    const parse = Object.hasOwn(VALUED, name) ? VALUED[name] : undefined;
    if (parse === undefined) throw new UsageError(`unknown option --${name}`);
    const value = eq >= 0 ? word.slice(eq + 1) : argv[++i];
    if (value === undefined || (eq < 0 && value.startsWith('--'))) throw new UsageError(`--${name} needs a value`);
    given[name] = parse(value);
  }
  const dataset = (given.dataset ?? 'digits') as Dataset;
  if (given.data !== undefined && dataset === 'digits')
    throw new UsageError('--data applies to --dataset fashion-mnist only (digits are built in)');
  if (given['dp-noise'] !== undefined && given['dp-clip'] === undefined)
    throw new UsageError("--dp-noise needs --dp-clip (DP-SGD clips each example's gradient to that norm)");
  const d = defaults(dataset, given.optimizer as OptimizerKind | undefined);
  return {
    dataset,
    optimizer: d.optimizer,
    data: (given.data as string | undefined) ?? (dataset === 'fashion-mnist' ? FASHION_DIR : null),
    model: (given.model ?? 'mlp') as ModelKind,
    epochs: (given.epochs as number | undefined) ?? d.epochs,
    batch: (given.batch as number | undefined) ?? d.batch,
    lr: (given.lr as number | undefined) ?? d.lr,
    seed: (given.seed as number | undefined) ?? 0,
    feedback: (given.feedback ?? 'bp') as TrainArgs['feedback'],
    save: (given.save as string | undefined) ?? null,
    plot: (given.plot as string | undefined) ?? null,
    diagnostics: given.diagnostics === true,
    dpClip: (given['dp-clip'] as number | undefined) ?? null,
    dpNoise: (given['dp-noise'] as number | undefined) ?? 1,
    threads: (given.threads as Threads | undefined) ?? 1,
  };
}
