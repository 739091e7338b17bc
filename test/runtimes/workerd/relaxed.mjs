// workerd service of the cross-runtime suite for the relaxed-SIMD kernels: the main worker
// passes GET /train-relaxed here. The kernels arrive as the precompiled dist/adjoint-relaxed.wasm,
// as a Cloudflare Worker would import 'adjoint/adjoint-relaxed.wasm'.
import wasm from '../../../dist/adjoint-relaxed.wasm';
import { trainDigits } from '../train-digits.mjs';

export default {
  async fetch() {
    try {
      return Response.json(await trainDigits({ module: wasm }, undefined, { weights: true }));
    } catch (e) {
      return Response.json({ error: String(e?.stack ?? e) }, { status: 500 });
    }
  },
};
