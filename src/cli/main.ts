// `adjoint <command>`: `train`, and `compare` (src/cli/compare.ts). Errors end in one line on stderr and an
// exit code (2: a mistake on the command line, a missing data directory or an unusable --load file;
// 1: anything else), never a stack trace.
import { realpathSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { AdjointError, ArgumentError } from '../errors.js';
import { init } from '../wasm/init.js';
import { saveSafetensors } from '../io/safetensors.js';
import { parseTrainArgs, UsageError, USAGE, type TrainArgs } from './args.js';
import { train } from './train.js';
import { percent, type Sink } from './progress.js';
import { compare, checkPlotPath, checkWritable, trainPlot, Monitor } from './compare.js';
import { GPT_USAGE, isGptTrain, parseGptTrainArgs, parseSampleArgs } from './gpt-args.js';
import { trainGpt, sampleGpt } from './gpt.js';

export interface MainIO {
  stdout: Sink;
  stderr: Sink;
}

/** Runs the CLI with `argv` (the words after `adjoint`); resolves to the exit code. */
export async function main(argv: readonly string[], io: MainIO = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  try {
    // -h or --help anywhere, except as the text of --prompt (sample --prompt "-h" samples from it).
    if (argv.some((a, i) => (a === '--help' || a === '-h') && argv[i - 1] !== '--prompt')) {
      io.stdout.write(`${USAGE}\n${GPT_USAGE}\n`);
      return 0;
    }
    const [command, ...rest] = argv;
    if (command === 'compare') return await compare(rest, io);
    if (command === 'sample') {
      await sampleGpt(parseSampleArgs(rest), io.stdout);
      return 0;
    }
    if (command === 'train' && isGptTrain(rest)) {
      const gptArgs = parseGptTrainArgs(rest);
      if (gptArgs.save !== null) await preflight({ save: gptArgs.save, plot: null } as TrainArgs, io.stderr);
      await trainGpt(gptArgs, io.stdout);
      return 0;
    }
    if (command !== 'train')
      throw new UsageError(
        command === undefined ? 'missing command (try: adjoint train)' : `unknown command ${JSON.stringify(command)} (try: adjoint train)`,
      );
    const args = parseTrainArgs(rest);
    await preflight(args, io.stderr);
    await init({ threads: args.threads });
    const monitor = new Monitor(io.stdout, { diagnostics: args.diagnostics, angles: args.plot !== null });
    const result = await train(args, io.stdout, monitor.hooks());
    monitor.dispose();
    if (args.save !== null) {
      await writeFile(args.save, saveSafetensors(result.model.stateDict(), { format: 'pt', producer: 'adjoint' }));
      io.stdout.write(`saved ${result.model.parameters().length} tensors to ${args.save}\n`);
    }
    if (args.plot !== null) {
      await writeFile(args.plot, trainPlot(args, result.history, monitor.angles));
      io.stdout.write(`wrote ${args.plot}\n`);
    }
    io.stdout.write(`done in ${result.seconds.toFixed(1)} s\n`);
    io.stdout.write(`test accuracy: ${percent(result.testAccuracy)}\n`);
    result.model.dispose();
    return 0;
  } catch (e) {
    const usage = e instanceof ArgumentError;
    const message = e instanceof AdjointError ? e.message : `${(e as Error)?.message ?? String(e)}`;
    io.stderr.write(`adjoint: ${message.split('\n')[0]}${e instanceof UsageError ? ' (see adjoint train --help)' : ''}\n`);
    return usage ? 2 : 1;
  }
}

/** Checks what would otherwise fail only after training: the --save and --plot paths. */
async function preflight(args: TrainArgs, _err: Sink): Promise<void> {
  if (args.plot !== null) await checkPlotPath(args.plot);
  if (args.save !== null) {
    if (!args.save.endsWith('.safetensors'))
      throw new UsageError(`--save expects a FILE.safetensors path, got ${JSON.stringify(args.save)}`);
    await checkWritable('--save', args.save);
  }
}

/** True when this module is the program being run (not imported by tests). */
function isEntry(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) process.exitCode = await main(process.argv.slice(2));
