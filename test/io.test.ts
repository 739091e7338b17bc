// io.saveSafetensors / io.loadSafetensors: round trips (F32, F64, scalars, empty tensors),
// save → load → identical predictions, a file written by the reference Python library, and
// truncated or malformed files.
import { describe, it, expect, beforeAll } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr } from './helpers.js';

const { io, nn } = A;

beforeAll(async () => {
  await A.init();
});

/**
 * Written by safetensors 0.8.0 (Python, safetensors.numpy.save) from
 *   {"0.weight": float32 [[0.5, -1.25, 3], [2, 0.125, -0.75]], "0.bias": float32 [1.5, -2.5],
 *    "scale": float64 π (shape []), "grid": float64 arange(24).reshape(2, 3, 4) / 8}
 * with metadata {"producer": "safetensors-python"}.
 */
const PYTHON_FILE =
  'MAEAAAAAAAB7Il9fbWV0YWRhdGFfXyI6eyJwcm9kdWNlciI6InNhZmV0ZW5zb3JzLXB5dGhvbiJ9LCJncmlkIjp7ImR0eXBlIjoiRjY0Iiwic2hhcGUiOlsyLDMsNF0sImRhdGFfb2Zmc2V0cyI6WzAsMTkyXX0sInNjYWxlIjp7ImR0eXBlIjoiRjY0Iiwic2hhcGUiOltdLCJkYXRhX29mZnNldHMiOlsxOTIsMjAwXX0sIjAuYmlhcyI6eyJkdHlwZSI6IkYzMiIsInNoYXBlIjpbMl0sImRhdGFfb2Zmc2V0cyI6WzIwMCwyMDhdfSwiMC53ZWlnaHQiOnsiZHR5cGUiOiJGMzIiLCJzaGFwZSI6WzIsM10sImRhdGFfb2Zmc2V0cyI6WzIwOCwyMzJdfX0gICAgAAAAAAAAAAAAAAAAAADAPwAAAAAAANA/AAAAAAAA2D8AAAAAAADgPwAAAAAAAOQ/AAAAAAAA6D8AAAAAAADsPwAAAAAAAPA/AAAAAAAA8j8AAAAAAAD0PwAAAAAAAPY/AAAAAAAA+D8AAAAAAAD6PwAAAAAAAPw/AAAAAAAA/j8AAAAAAAAAQAAAAAAAAAFAAAAAAAAAAkAAAAAAAAADQAAAAAAAAARAAAAAAAAABUAAAAAAAAAGQAAAAAAAAAdAGC1EVPshCUAAAMA/AAAgwAAAAD8AAKC/AABAQAAAAEAAAAA+AABAvw==';
const fromBase64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

describe('safetensors round trip', () => {
  it('keeps names, shapes, dtypes and every bit of the values', () => {
    const record = {
      'a.weight': A.tensor([
        [1.5, -2],
        [1e-30, 3.4e38],
      ]),
      b: A.tensor([Math.PI, -Math.E, 5e-324], { dtype: 'float64' }),
      scalar: A.tensor(7, { dtype: 'float64' }),
      empty: A.zeros([0, 3]),
    };
    const back = io.loadSafetensors(io.saveSafetensors(record));
    expect(Object.keys(back).sort()).toEqual(Object.keys(record).sort());
    for (const [name, t] of Object.entries(record)) {
      expect(back[name].shape).toEqual(t.shape);
      expect(back[name].dtype).toBe(t.dtype);
      expect(arr(back[name])).toEqual(arr(t));
    }
  });

  it('writes the header safetensors readers expect (8-byte LE length, dtype/shape/data_offsets)', () => {
    const bytes = io.saveSafetensors({ w: A.tensor([1, 2], { dtype: 'float64' }) }, { producer: 'adjoint' });
    const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    expect(header).toEqual({ __metadata__: { producer: 'adjoint' }, w: { dtype: 'F64', shape: [2], data_offsets: [0, 16] } });
    expect(bytes.length).toBe(8 + n + 16);
  });

  it('save → load into a fresh model → identical predictions', () => {
    const make = (seed: number) =>
      new nn.Sequential(new nn.Linear(6, 16, { seed }), new nn.GELU(), new nn.LayerNorm(16), new nn.Linear(16, 3, { seed: seed + 1 }));
    const trained = make(1);
    // Move the weights off their initial values first.
    const opt = new A.optim.Adam(trained.parameters(), { lr: 0.01 });
    const x = A.randn([8, 6], { seed: 3 });
    for (let i = 0; i < 5; i++)
      A.tidy(() => {
        A.crossEntropy(trained.forward(x), [0, 1, 2, 0, 1, 2, 0, 1]).backward();
        opt.step();
        opt.zeroGrad();
      });
    const bytes = io.saveSafetensors(trained.stateDict());
    const fresh = make(99);
    fresh.loadStateDict(io.loadSafetensors(bytes));
    expect(arr(fresh.forward(x))).toEqual(arr(trained.forward(x)));
  });
});

describe('files from other tools', () => {
  it('reads a file written by the Python safetensors library', () => {
    const t = io.loadSafetensors(fromBase64(PYTHON_FILE));
    expect(Object.keys(t).sort()).toEqual(['0.bias', '0.weight', 'grid', 'scale']);
    expect(t['0.weight'].shape).toEqual([2, 3]);
    expect(t['0.weight'].dtype).toBe('float32');
    expect(arr(t['0.weight'])).toEqual([0.5, -1.25, 3, 2, 0.125, -0.75]);
    expect(arr(t['0.bias'])).toEqual([1.5, -2.5]);
    expect(t.scale.shape).toEqual([]);
    expect(t.scale.item()).toBe(Math.PI);
    expect(t.grid.dtype).toBe('float64');
    expect(arr(t.grid)).toEqual(Array.from({ length: 24 }, (_, i) => i / 8));
    // ... and loads into a module with PyTorch's names.
    const l = new nn.Linear(3, 2);
    l.loadStateDict({ weight: t['0.weight'], bias: t['0.bias'] });
    expect(arr(l.forward(A.tensor([1, 0, 0])))).toEqual([2, -0.5]);
  });
});

describe('any string names a tensor', () => {
  // Object.prototype's names: an assignment out["__proto__"] = t would set the record's prototype instead.
  const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
  const PROTO = names[0]; // a computed key: r.__proto__ would read the prototype accessor on a plain object

  it('a file written elsewhere: every name is an own key, and disposing the values frees every tensor', () => {
    const header = new TextEncoder().encode(
      '{"__proto__":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}',
    );
    const bytes = new Uint8Array(8 + header.length + 12);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(header.length), true);
    bytes.set(header, 8);
    bytes.set(new Uint8Array(Float32Array.of(1, 2, 3).buffer), 8 + header.length);
    const before = A.memory().tensors;
    const r = io.loadSafetensors(bytes);
    expect(Object.keys(r)).toEqual(['__proto__', 'w']);
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(arr(r[PROTO])).toEqual([1, 2]);
    for (const t of Object.values(r)) t.dispose();
    expect(A.memory().tensors).toBe(before);
  });

  it('round trips through save/load, metadata included, and through a module state dict', () => {
    A.tidy(() => {
      const record: Record<string, Tensor> = {};
      names.forEach((n, i) => Object.defineProperty(record, n, { value: A.tensor([i, i + 0.5]), enumerable: true }));
      const meta = JSON.parse('{"__proto__":"p","constructor":"c"}') as Record<string, string>;
      const bytes = io.saveSafetensors(record, meta);
      const back = io.loadSafetensors(bytes);
      expect(Object.keys(back).sort()).toEqual([...names].sort());
      for (const [i, n] of names.entries()) expect(arr(back[n])).toEqual([i, i + 0.5]);
      const m = io.loadSafetensorsMetadata(bytes);
      expect([Object.keys(m), Object.getPrototypeOf(m)]).toEqual([['__proto__', 'constructor'], Object.prototype]);

      class Odd extends nn.Module {
        constructor() {
          super();
          for (const n of names) this.registerParameter(n, A.zeros([2]));
        }
        forward(x: Tensor): Tensor {
          return x;
        }
      }
      const odd = new Odd();
      odd.loadStateDict(back);
      expect(names.map((n) => arr(odd.stateDict()[n]))).toEqual(names.map((_n, i) => [i, i + 0.5]));
      expect(Object.keys(odd.stateDict())).toEqual(names);
      // A record missing those names reports them missing rather than reading Object.prototype's.
      expect(() => odd.loadStateDict({})).toThrow(/missing keys: __proto__, constructor, toString, hasOwnProperty/);
    });
  });
});

describe('bad files', () => {
  const good = () => io.saveSafetensors({ w: A.tensor([1, 2, 3]) });
  it.each([
    ['truncated data', () => good().subarray(0, good().length - 1), /cover|exceed/],
    ['truncated header length', () => new Uint8Array(5), /too short/],
    ['header longer than the file', () => good().subarray(0, 20), /header length/],
    [
      'header not JSON',
      () => {
        const b = good();
        b[9] = 0x7b;
        b[10] = 0x7b;
        return b;
      },
      /not valid JSON/,
    ],
  ])('%s → FormatError', (_n, bytes, msg) => {
    expect(() => io.loadSafetensors(bytes())).toThrow(A.FormatError);
    expect(() => io.loadSafetensors(bytes())).toThrow(msg);
  });

  it('refuses a record holding something other than tensors', () => {
    expect(() => io.saveSafetensors({ w: [1, 2] as unknown as Tensor })).toThrow(/"w" must be a Tensor/);
    expect(() => io.loadSafetensors('abc' as unknown as Uint8Array)).toThrow(/expected a Uint8Array/);
  });
});

describe('io.loadSafetensorsMetadata', () => {
  it('reads back what saveSafetensors wrote as metadata ({} when none), and names itself on a bad file', () => {
    const t = A.tensor([1, 2]);
    const bytes = A.io.saveSafetensors({ t }, { vocab: 'abc', scheduler: '{"lastEpoch":3}' });
    expect(A.io.loadSafetensorsMetadata(bytes)).toEqual({ vocab: 'abc', scheduler: '{"lastEpoch":3}' });
    expect(A.io.loadSafetensorsMetadata(A.io.saveSafetensors({ t }))).toEqual({});
    expect(() => A.io.loadSafetensorsMetadata(bytes.subarray(0, 5))).toThrow(A.FormatError);
    expect(() => A.io.loadSafetensorsMetadata(bytes.subarray(0, 5))).toThrow(/^loadSafetensorsMetadata/);
    expect(() => A.io.loadSafetensorsMetadata('x' as never)).toThrow(/expected a Uint8Array/);
  });
});
