// assembly/norm.ts normalises f32 rows two at a time (two independent accumulator chains) with the
// single-row code's operations in its order: layer_norm and layer_norm_vjp over many rows at once
// give exactly the bits of the same kernels called one row at a time (the single-row path), odd
// and even row counts, row lengths with and without a SIMD tail (f64, which runs rows one at a
// time either way, as a control).
import { beforeAll, describe, expect, it } from 'vitest';
import * as A from '../src/index.js';
import { runtime } from '../src/wasm/module.js';

beforeAll(async () => {
  await A.init({ threads: 1 });
});

const bits = (t: A.Tensor) => Buffer.from(t.toArray().buffer as ArrayBuffer).toString('base64');

describe('layer_norm and its VJP: rows in pairs give the bits of rows one at a time', () => {
  for (const dtype of ['float32', 'float64'] as const)
    it(dtype, () => {
      const sfx = dtype === 'float32' ? 'f32' : 'f64',
        bytes = dtype === 'float32' ? 4 : 8;
      const e = runtime().exports as unknown as Record<string, (...a: number[]) => void>;
      let seed = 3;
      for (const rows of [2, 5, 8])
        for (const cols of [1, 3, 4, 7, 33, 128]) {
          const n = rows * cols;
          const x = A.randn([n], { seed: seed++, dtype }).mul(3).add(1),
            g = A.randn([n], { seed: seed++, dtype });
          const [y, yRow, dx, dxRow] = [0, 1, 2, 3].map(() => A.zeros([n], { dtype }));
          e[`layer_norm_${sfx}`](x.ptr, y.ptr, rows, cols, 1e-5);
          e[`layer_norm_vjp_${sfx}`](x.ptr, g.ptr, dx.ptr, rows, cols, 1e-5);
          for (let r = 0; r < rows; r++) {
            const o = r * cols * bytes;
            e[`layer_norm_${sfx}`](x.ptr + o, yRow.ptr + o, 1, cols, 1e-5);
            e[`layer_norm_vjp_${sfx}`](x.ptr + o, g.ptr + o, dxRow.ptr + o, 1, cols, 1e-5);
          }
          expect(bits(y), `layer_norm [${rows}, ${cols}]`).toBe(bits(yRow));
          expect(bits(dx), `layer_norm_vjp [${rows}, ${cols}]`).toBe(bits(dxRow));
          for (const t of [x, g, y, yRow, dx, dxRow]) t.dispose();
        }
    });
});
