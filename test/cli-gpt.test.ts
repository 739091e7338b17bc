// `adjoint train --dataset shakespeare --model gpt` and `adjoint sample`: a few steps of a small
// GPT on a slice of the text (progress lines, validation, `val loss: N.NNNN` last), a saved model
// that samples the same text for the same seed, the lr schedule of the PyTorch reference, the
// whole-split validation windows, and argument errors.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as A from '../src/index.js';
import { main } from '../src/cli/main.js';
import { parseGptTrainArgs } from '../src/cli/gpt-args.js';
import { GptRun, gptLr } from '../src/cli/gpt-run.js';
import { checkWritable } from '../src/cli/compare.js';

async function run(argv: string[], isTTY = false) {
  let out = '',
    err = '';
  const code = await main(argv, { stdout: { write: (s: string) => (out += s), isTTY }, stderr: { write: (s: string) => (err += s) } });
  return { code, out, err };
}

let dir = '',
  text = '';
beforeAll(async () => {
  await A.init();
  dir = mkdtempSync(join(tmpdir(), 'adjoint-gpt-'));
  text = (await A.data.shakespeare()).slice(0, 20_000);
  writeFileSync(join(dir, 'small.txt'), text);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SMALL = ['--layers', '1', '--heads', '2', '--width', '16', '--context', '16', '--batch', '4'];

describe('adjoint train --model gpt', () => {
  it('defaults to the published configuration', () => {
    expect(parseGptTrainArgs(['--dataset', 'shakespeare', '--model', 'gpt'])).toEqual({
      layers: 4,
      heads: 4,
      width: 128,
      context: 64,
      bias: true,
      batch: 12,
      steps: 2000,
      seed: 0,
      threads: 1,
      data: null,
      save: null,
      evalEvery: 250,
    });
    expect(parseGptTrainArgs(['--model', 'gpt', '--bias', 'false']).bias).toBe(false);
    expect(parseGptTrainArgs(['--model', 'gpt', '--threads', 'auto']).threads).toBe('auto');
    expect(() => parseGptTrainArgs(['--model', 'gpt', '--threads', '0'])).toThrow(/--threads must be an integer ≥ 1, got "0"/);
    expect(() => parseGptTrainArgs(['--model', 'gpt', '--bias', 'yes'])).toThrow(/--bias must be true or false, got "yes"/);
  });

  it('trains a few steps, validates, saves, and the last line is the validation loss', async () => {
    const save = join(dir, 'g.safetensors');
    const r = await run([
      'train',
      '--dataset',
      'shakespeare',
      '--model',
      'gpt',
      ...SMALL,
      '--steps',
      '4',
      '--eval-every',
      '2',
      '--data',
      join(dir, 'small.txt'),
      '--bias',
      'false',
      '--save',
      save,
    ]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^training gpt on shakespeare: 18000 train \/ 2000 val characters, vocabulary \d+$/);
    expect(lines[1]).toMatch(/, seed 0, 1 thread$/);
    expect(lines[2]).toMatch(/^step 2\/4 {2}loss \d\.\d{4} {2}\d+ tokens\/s {2}ETA \d+:\d\d {2}val \d\.\d{4}$/);
    expect(r.out).toMatch(/peak wasm memory [\d.]+ MB/);
    expect(lines.at(-2)).toMatch(/^val loss \(whole validation split\): \d\.\d{4}$/);
    const v = Number(/^val loss: (\d\.\d{4})$/.exec(lines.at(-1)!)![1]);
    expect(v).toBeGreaterThan(2); // four steps from a uniform start (ln 60 ≈ 4.1)
    expect(v).toBeLessThan(4.5);
    const s1 = await run(['sample', '--load', save, '--prompt', 'ROMEO', '--tokens', '40', '--seed', '3', '--top-k', '5']);
    const s2 = await run(['sample', '--load', save, '--prompt', 'ROMEO', '--tokens', '40', '--seed', '3', '--top-k', '5']);
    const s3 = await run(['sample', '--load', save, '--prompt', 'ROMEO', '--tokens', '40', '--seed', '4', '--top-k', '5']);
    expect(s1.err).toBe('');
    expect(s1.code).toBe(0);
    expect(s1.out.startsWith('ROMEO')).toBe(true);
    expect([...s1.out.trimEnd()].length).toBe(45);
    expect(s2.out).toBe(s1.out);
    expect(s3.out).not.toBe(s1.out);
  });

  it('redraws one progress line on a terminal', async () => {
    const r = await run(
      ['train', '--dataset', 'shakespeare', '--model', 'gpt', ...SMALL, '--steps', '3', '--data', join(dir, 'small.txt')],
      true,
    );
    expect(r.code).toBe(0);
    expect(r.out).toContain('\r\x1b[2Kstep 3/3  loss');
    expect(r.out.trimEnd().split('\n').at(-1)).toMatch(/^val loss: \d\.\d{4}$/);
  });

  it.each([
    [['train', '--model', 'gpt', '--dataset', 'digits'], /--dataset must be shakespeare here/],
    [['train', '--model', 'gpt', '--width', '10', '--heads', '4'], /--width \(10\) must be divisible by --heads \(4\)/],
    [['train', '--model', 'gpt', '--steps', '0'], /--steps must be an integer ≥ 1/],
    [['train', '--model', 'gpt', '--save', 'w.bin'], /--save expects a FILE.safetensors path/],
    [['sample'], /sample needs --load/],
    [['sample', '--load', '/no/such.safetensors'], /--load: cannot read \/no\/such.safetensors \(ENOENT\)/],
    [['sample', '--load', 'x', '--temperature', '0'], /--temperature must be a positive number/],
    [['sample', '--load', 'x', '--tokens', '1000000000'], /--tokens must be an integer from 1 to 1000000, got "1000000000"/],
  ])('%j fails with one line and exit code 2', async (argv, message) => {
    const r = await run(argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.err.trimEnd().split('\n')).toHaveLength(1);
  });
});

describe('failures found before training, not after it', () => {
  it('a --data file too short for a validation window is refused before the first step', async () => {
    writeFileSync(join(dir, 'tiny.txt'), text.slice(0, 300)); // 270 train / 30 validation characters
    const save = join(dir, 'tiny.safetensors');
    const r = await run([
      'train',
      '--model',
      'gpt',
      '--data',
      join(dir, 'tiny.txt'),
      ...SMALL,
      '--context',
      '32',
      '--steps',
      '3',
      '--save',
      save,
    ]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/the validation split has 30 characters, but a window of context 32 needs 33/);
    expect(r.out).toBe('');
  });

  it.each([
    [
      'a directory',
      () => {
        const d = join(dir, 'taken.safetensors');
        mkdirSync(d, { recursive: true });
        return d;
      },
      /--save: .*taken.safetensors is a directory/,
    ],
    ['a path that cannot be created', () => '/proc/adjoint-test.safetensors', /--save: cannot write \/proc\/adjoint-test.safetensors/],
  ])('--save naming %s fails with exit code 2 before training (gpt and digits)', async (_what, path, message) => {
    const save = path();
    for (const argv of [
      ['train', '--model', 'gpt', ...SMALL, '--steps', '2', '--save', save],
      ['train', '--epochs', '1', '--save', save],
    ]) {
      const r = await run(argv);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.out).toBe('');
    }
  });

  it('the check leaves a writable path as it found it (no empty file)', async () => {
    const fresh = join(dir, 'fresh.safetensors');
    await checkWritable('--save', fresh);
    expect(existsSync(fresh)).toBe(false);
    writeFileSync(fresh, 'kept');
    await checkWritable('--save', fresh);
    expect(readFileSync(fresh, 'utf8')).toBe('kept');
  });

  it('--prompt "-h" is text to sample from, not a request for help', async () => {
    const r = await run(['sample', '--load', join(dir, 'g.safetensors'), '--prompt', '-h', '--tokens', '5']);
    expect(r.code).toBe(0);
    expect(r.out.startsWith('-h')).toBe(true);
    expect(r.out).not.toMatch(/usage/i);
    expect((await run(['sample', '-h'])).out).toMatch(/adjoint sample --load/);
  });

  it('a GPT file whose metadata is damaged names the field', async () => {
    const bad = join(dir, 'bad-vocab.safetensors');
    writeFileSync(bad, A.io.saveSafetensors({ w: A.zeros([1]) }, { config: '{"layers":1}', vocab: 'not json' }));
    const r = await run(['sample', '--load', bad, '--tokens', '3']);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`--load: ${bad}: its "vocab" metadata is not valid JSON`);
  });

  it('a malformed safetensors file is a --load error naming the file (exit 2), not the decoder', async () => {
    const hole = join(dir, 'hole.safetensors');
    const good = A.io.saveSafetensors({ a: A.zeros([2]), b: A.zeros([1]) });
    // b's data_offsets [8, 12] become [9, 13] (same header length) and one byte is appended: byte 8 belongs to no tensor.
    const at = Buffer.from(good).indexOf('[8,12]');
    expect(at).toBeGreaterThan(8);
    const bytes = Buffer.concat([good, Buffer.of(0)]);
    bytes.write('[9,13]', at);
    writeFileSync(hole, bytes);
    const r = await run(['sample', '--load', hole, '--tokens', '3']);
    expect([r.code, r.out]).toEqual([2, '']);
    expect(r.err).toContain(`adjoint: --load: ${hole} is not a valid safetensors file (tensor "b" data_offsets [9, 13] leave a gap`);
    expect(r.err).not.toMatch(/decodeSafetensors/);
  });

  it("a file whose vocabulary does not match its config's vocabSize is refused at load time, before any output", async () => {
    const model = new A.nn.GPT({ vocabSize: 5, layers: 1, heads: 1, width: 8, context: 4 });
    const config = JSON.stringify({ vocabSize: 5, layers: 1, heads: 1, width: 8, context: 4, bias: true });
    const short = join(dir, 'short-vocab.safetensors');
    writeFileSync(short, A.io.saveSafetensors(model.stateDict(), { config, vocab: JSON.stringify(['a', 'b', 'c']) }));
    model.dispose();
    const before = A.memory().tensors;
    const r = await run(['sample', '--load', short, '--prompt', 'ab', '--tokens', '20']);
    expect([r.code, r.out]).toEqual([2, '']);
    expect(r.err).toContain(`--load: ${short}: its vocabulary has 3 characters but its config says vocabSize 5`);
    expect(A.memory().tensors).toBe(before); // the model built to check it is freed
  });
});

describe('GptRun', () => {
  it("schedules lr as nanoGPT's get_lr (warmup_iters 100, lr_decay_iters = max_iters = steps)", () => {
    // train.py: it < warmup: lr·(it+1)/(warmup+1); else min_lr + ½(1 + cos(π·(it−warmup)/(decay−warmup)))·(lr − min_lr).
    const steps = 2000,
      ref = (s: number) => (s < 100 ? (1e-3 * (s + 1)) / 101 : 1e-4 + 0.5 * (1 + Math.cos((Math.PI * (s - 100)) / 1900)) * 9e-4);
    for (const s of [0, 1, 49, 99, 100, 101, 500, 1000, 1500, 1998, 1999]) expect(gptLr(s, steps)).toBeCloseTo(ref(s), 15);
    // Pinned values: the first step is lr/101, the last warm-up step 100/101 of lr, the peak at step 100.
    expect(gptLr(0, steps)).toBe(1e-3 / 101);
    expect(gptLr(99, steps)).toBe((1e-3 * 100) / 101);
    expect(gptLr(100, steps)).toBeCloseTo(1e-3, 15);
    expect(gptLr(1050, steps)).toBeCloseTo(5.5e-4, 15);
    expect(gptLr(1999, steps)).toBeCloseTo(1e-4 + 0.45e-3 * (1 + Math.cos(Math.PI * (1899 / 1900))), 15);
    expect(gptLr(1999, steps)).toBeGreaterThan(1e-4);
  });

  it('the whole-split validation loss is the mean over consecutive non-overlapping windows', () => {
    const small = { layers: 1, heads: 1, width: 8, context: 16, batch: 2, steps: 1, seed: 1 };
    const withBias = new GptRun(text, small);
    expect(withBias.model.bias).toBe(true); // the default
    withBias.dispose();
    const r = new GptRun(text, { ...small, bias: false });
    const T = 16,
      n = Math.floor((r.val.length - 1) / T);
    let total = 0;
    A.noGrad(() => {
      for (let i = 0; i < n; i++) {
        const x = r.val.subarray(i * T, (i + 1) * T),
          y = r.val.subarray(i * T + 1, (i + 1) * T + 1);
        total += A.tidy(() =>
          A.crossEntropy(A.reshape(r.model.forward({ ids: x, shape: [1, T] }), [T, -1]), y, { reduction: 'sum' }).item(),
        );
      }
    });
    expect(r.evalFull(50)).toBeCloseTo(total / (n * T), 5);
    // AdamW groups: decay on matrices only.
    expect(
      r.optimizer.paramGroups.map((g) => [g.weightDecay, g.params.every((p) => p.shape.length === (g.weightDecay > 0 ? 2 : 1))]),
    ).toEqual([
      [0.1, true],
      [0, true],
    ]);
    // bias: false is nanoGPT's bias=False: no biases, so the undecayed group is the LayerNorm weights (2 a block + the final one).
    expect(r.model.bias).toBe(false);
    expect(r.optimizer.paramGroups[1].params).toEqual([
      r.model.blocks.at(0).ln1.weight,
      r.model.blocks.at(0).ln2.weight,
      r.model.lnF.weight,
    ]);
    // Every matrix decays, the tied token embedding/head once and the position table too.
    expect(r.optimizer.paramGroups[0].params).toContain(r.model.tokEmb.weight);
    expect(r.optimizer.paramGroups[0].params).toContain(r.model.posEmb.weight);
    expect(r.optimizer.paramGroups[0].params.length).toBe(2 + 4);
    r.dispose();
  });
});

describe('saved model', () => {
  it('keeps the config and vocabulary in the safetensors metadata and the PyTorch keys', async () => {
    const bytes = readFileSync(join(dir, 'g.safetensors'));
    const header = JSON.parse(
      new TextDecoder().decode(bytes.subarray(8, 8 + Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true)))),
    );
    expect(JSON.parse(header.__metadata__.config)).toMatchObject({ layers: 1, heads: 2, width: 16, context: 16, bias: false });
    expect(JSON.parse(header.__metadata__.vocab).join('')).toBe([...new Set(text)].sort().join(''));
    expect(Object.keys(header)).toContain('head.weight');
    expect(Object.keys(header)).toContain('blocks.0.attn.in_proj_weight');
    expect(Object.keys(header).filter((k) => k.endsWith('bias'))).toEqual([]);
  });
});
