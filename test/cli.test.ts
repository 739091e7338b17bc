// `adjoint train`: argument errors end in one line and exit code 2 (never a stack trace), a
// short run prints plain per-epoch lines when not on a terminal and ends with
// `test accuracy: NN.NN%`, and --save writes weights that load back.
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as A from '../src/index.js';
import { main } from '../src/cli/main.js';
import { parseTrainArgs } from '../src/cli/args.js';
import { train, type TrainHooks } from '../src/cli/train.js';
import { Monitor } from '../src/cli/compare.js';

/** Runs main() with captured output. */
async function run(argv: string[], isTTY = false) {
  let out = '',
    err = '';
  const code = await main(argv, { stdout: { write: (s: string) => (out += s), isTTY }, stderr: { write: (s: string) => (err += s) } });
  return { code, out, err };
}

describe('argument errors: one line, exit code 2', () => {
  it.each([
    [['train', '--bogus'], /^adjoint: unknown option --bogus \(see adjoint train --help\)\n$/],
    [['train', '--epochs', '0'], /^adjoint: --epochs must be an integer ≥ 1, got "0"/],
    [['train', '--epochs=2.5'], /--epochs must be an integer ≥ 1, got "2.5"/],
    [['train', '--lr', '-1'], /--lr must be a positive number, got "-1"/],
    [['train', '--lr', 'fast'], /--lr must be a positive number, got "fast"/],
    [['train', '--optimizer', 'rmsprop'], /--optimizer must be one of sgd, adam, adamw, got "rmsprop"/],
    [['train', '--dataset', 'cifar'], /--dataset must be one of digits, fashion-mnist/],
    [['train', '--model', 'rnn'], /--model must be one of mlp, cnn/],
    [['train', '--batch'], /--batch needs a value/],
    [['train', '--seed', '--epochs', '1'], /--seed needs a value/],
    [['train', 'extra'], /unexpected argument "extra"/],
    [['train', '--diagnostics=yes'], /--diagnostics takes no value/],
    [['train', '--threads', '0'], /--threads must be an integer ≥ 1, got "0"/],
    [['compare', '--threads', 'two'], /--threads must be an integer ≥ 1, got "two"/],
    [['train', '--data', '/tmp'], /--data applies to --dataset fashion-mnist only/],
    [['train', '--feedback', 'dfa'], /--feedback must be one of bp, alignment, sign/],
    [['train', '--save', 'weights.bin'], /--save expects a FILE.safetensors path/],
    [['train', '--save', '/no/such/dir/w.safetensors'], /--save: directory \/no\/such\/dir does not exist/],
    [['fit'], /unknown command "fit"/],
    [[], /missing command/],
    [
      ['train', '--dataset', 'fashion-mnist', '--data', '/no/such/dir'],
      /fashionMnist: cannot read data directory \/no\/such\/dir \(ENOENT\)/,
    ],
  ])('%j', async (argv, message) => {
    const r = await run(argv);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toMatch(message);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).not.toMatch(/\n\s+at /);
  });

  it('--help prints the usage and exits 0', async () => {
    const r = await run(['train', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^usage: adjoint train \[--dataset digits\|fashion-mnist\]/);
  });

  it('parses --flag value and --flag=value, with per-data-set defaults', () => {
    expect(parseTrainArgs([])).toMatchObject({
      dataset: 'digits',
      model: 'mlp',
      optimizer: 'sgd',
      lr: 0.1,
      epochs: 40,
      batch: 32,
      seed: 0,
      save: null,
    });
    expect(parseTrainArgs(['--dataset=fashion-mnist', '--lr', '3e-4', '--seed=7'])).toMatchObject({
      dataset: 'fashion-mnist',
      data: '/usr/share/datasets/fashion-mnist',
      optimizer: 'adam',
      lr: 3e-4,
      epochs: 5,
      batch: 128,
      seed: 7,
    });
    expect(parseTrainArgs(['--optimizer', 'adamw'])).toMatchObject({ optimizer: 'adamw', lr: 1e-3, threads: 1 });
    expect(parseTrainArgs(['--threads', '2'])).toMatchObject({ threads: 2 });
    expect(parseTrainArgs(['--threads=auto'])).toMatchObject({ threads: 'auto' });
  });
});

describe('a short run', () => {
  it('prints plain epoch lines off a terminal, ends with the test accuracy, saves weights', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adjoint-cli-'));
    const file = join(dir, 'w.safetensors');
    const r = await run(['train', '--epochs', '2', '--optimizer', 'adam', '--lr', '0.005', '--save', file, '--plot', join(dir, 'p.svg')]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(/\r/);
    const lines = r.out.trim().split('\n');
    expect(
      lines.filter((l) => /^epoch \d\/2 {2}45 steps {2}.* steps\/s {2}loss \d+\.\d{4} {2}train \d+\.\d\d% {2}test \d+\.\d\d%$/.test(l)),
    ).toHaveLength(2);
    expect(lines[lines.length - 1]).toMatch(/^test accuracy: \d{2}\.\d{2}%$/);
    expect(Number(lines[lines.length - 1].slice(15, -1))).toBeGreaterThan(85);
    const saved = A.io.loadSafetensors(new Uint8Array(readFileSync(file)));
    expect(Object.keys(saved).sort()).toEqual(['0.bias', '0.weight', '3.bias', '3.weight']);
    expect(saved['0.weight'].shape).toEqual([512, 64]);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('redraws a progress bar on a terminal', async () => {
    const r = await run(['train', '--epochs', '1'], true);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\r\x1b\[2Kepoch 1\/1 \[[=> ]{24}\] \d+\/45 {2}\d+ steps\/s {2}loss \d/);
    expect(r.out.trim().split('\n').pop()).toMatch(/^test accuracy: \d{2}\.\d{2}%$/);
  }, 30_000);

  it('as a process: a bad flag exits 2 with one line on stderr', () => {
    const p = spawnSync(process.execPath, ['scripts/run-ts.mjs', 'src/cli/main.ts', 'train', '--nope'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(p.status).toBe(2);
    expect(p.stdout).toBe('');
    expect(p.stderr).toBe('adjoint: unknown option --nope (see adjoint train --help)\n');
  }, 60_000);
});

/** The run's parameters as numbers, and its history without the times. */
function outcome(r: Awaited<ReturnType<typeof train>>) {
  return {
    weights: r.model.parameters().map((p) => Array.from(p.toArray() as ArrayLike<number>)),
    history: r.history.map(({ seconds: _, ...rest }) => rest),
  };
}
const quiet = { write: () => true };

describe('compiled steps, the steps hooks watch, threads', () => {
  it.each([
    ['MLP with dropout, SGD', ['--epochs', '2']],
    ['CNN, Adam', ['--model', 'cnn', '--optimizer', 'adam', '--lr', '0.005', '--epochs', '1']],
    ['feedback alignment', ['--feedback', 'alignment', '--epochs', '1']],
    ['sign-symmetric feedback, AdamW', ['--feedback', 'sign', '--optimizer', 'adamw', '--epochs', '1']],
  ])(
    "%s: the compiled steps end in the eager run's weights and history, bit for bit",
    async (_, argv) => {
      await A.init({ threads: 1 });
      const args = parseTrainArgs(argv);
      const compiled = await train(args, quiet);
      const everyStep: TrainHooks = { afterBackward: () => {} }; // no watches(): a hook sees every step, so each runs eagerly
      const eager = await train(args, quiet, everyStep);
      const steps = args.epochs * 45;
      expect(compiled.steps).toEqual({ compiled: steps, eager: 0 });
      expect(eager.steps).toEqual({ compiled: 0, eager: steps });
      expect(outcome(compiled)).toEqual(outcome(eager));
      expect(compiled.testAccuracy).toBeGreaterThan(0.8);
      compiled.model.dispose();
      eager.model.dispose();
    },
    60_000,
  );

  it('--diagnostics with feedback alignment runs eagerly only the steps it reads (3 probes and the last, per epoch)', async () => {
    await A.init({ threads: 1 });
    const args = parseTrainArgs(['--feedback', 'alignment', '--epochs', '2', '--diagnostics']);
    const before = A.memory().tensors;
    const monitor = new Monitor(quiet, { diagnostics: true, angles: false });
    const r = await train(args, quiet, monitor.hooks());
    // 45 steps an epoch: probes at steps 0, 15 and 30 of the run's count (every 15), plus each epoch's last step.
    const watched = [0, 15, 30, 44, 45, 60, 75, 89];
    expect(r.steps).toEqual({ compiled: 90 - watched.length, eager: watched.length });
    expect(monitor.angles.map((a) => Math.round(a.epoch * 45))).toEqual(watched);
    monitor.dispose();
    r.model.dispose();
    expect(A.memory().tensors).toBe(before);
  }, 60_000);

  it('--threads 2, as a process: the weights of --threads 1, byte for byte', () => {
    const dir = mkdtempSync(join(tmpdir(), 'adjoint-cli-'));
    const saved: Buffer[] = [];
    for (const t of ['1', '2']) {
      const file = join(dir, `w${t}.safetensors`);
      const p = spawnSync(
        process.execPath,
        ['scripts/run-ts.mjs', 'src/cli/main.ts', 'train', '--model', 'cnn', '--epochs', '2', '--threads', t, '--save', file],
        { encoding: 'utf8', timeout: 90_000 },
      );
      expect(p.stderr).toBe('');
      expect(p.status).toBe(0);
      expect(p.stdout).toMatch(t === '1' ? /, seed 0, 1 thread\n/ : /, seed 0, 2 threads\n/);
      saved.push(readFileSync(file));
    }
    expect(saved[1].equals(saved[0])).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);
});
