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
    expect(parseTrainArgs(['--optimizer', 'adamw'])).toMatchObject({ optimizer: 'adamw', lr: 1e-3 });
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
      lines.filter((l) => /^epoch \d\/2  45 steps  .* steps\/s  loss \d+\.\d{4}  train \d+\.\d\d%  test \d+\.\d\d%$/.test(l)),
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
