// The relaxed-SIMD opt-in: init({ relaxedSimd: true }) loads the second kernel build
// (assembly/madd.ts: GEMM and convolution inner loops with f32x4/f64x2.relaxed_madd) where the
// engine validates relaxed-SIMD code, and the default build elsewhere. Its bytes are embedded as
// a small delta against the default kernels' (src/wasm/delta.ts), rebuilt only when asked for.
import { AdjointError, ArgumentError } from '../errors.js';
import { decodeBase64, embeddedKernelBytes, type InitOptions } from './module.js';
import { RELAXED_DELTA_BASE64, RELAXED_FNV1A, RELAXED_LENGTH } from './bytes-relaxed.generated.js';
import { applyDelta, fnv1a } from './delta.js';

/** `() -> v128 { f32x4.relaxed_madd(splat 0, splat 0, splat 0) }`: valid only where the engine has relaxed SIMD. */
const RELAXED_PROBE = [
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 19, 1, 17, 0, 65, 0, 253, 15, 65, 0, 253, 15, 65, 0, 253, 15, 253,
  133, 2, 11,
];

/** Whether this engine validates relaxed-SIMD code (Chrome/Edge 114+, Node 22+ or 20 with a flag, Deno, Bun, Firefox, workerd; see docs/relaxed-simd.md). */
export function hasRelaxedSimd(): boolean {
  return typeof WebAssembly === 'object' && WebAssembly.validate(new Uint8Array(RELAXED_PROBE));
}

/**
 * The kernel source init() should compile: options.module when given (the caller chose the
 * build), else the relaxed kernels' bytes when asked for and supported, else undefined (the
 * embedded default kernels).
 */
export function kernelSource(options: InitOptions): InitOptions['module'] {
  const r = options.relaxedSimd;
  if (r !== undefined && typeof r !== 'boolean')
    throw new ArgumentError(`init: relaxedSimd must be true or false, got ${typeof r === 'string' ? `'${r}'` : String(r)}`);
  if (options.module !== undefined || r !== true || !hasRelaxedSimd()) return options.module;
  return relaxedKernelBytes();
}

/** The relaxed kernels' bytes, rebuilt from the default ones and the embedded delta. */
export function relaxedKernelBytes(): Uint8Array<ArrayBuffer> {
  if (RELAXED_LENGTH === 0)
    throw new AdjointError(
      'init: this build of adjoint has no relaxed-SIMD kernels (build/adjoint-relaxed.wasm was missing when it was bundled)',
    );
  const bytes = applyDelta(embeddedKernelBytes(), decodeBase64(RELAXED_DELTA_BASE64), RELAXED_LENGTH);
  if (fnv1a(bytes) !== RELAXED_FNV1A)
    throw new AdjointError(
      'internal: the relaxed-SIMD kernels do not match their checksum (src/wasm/*.generated.ts from different builds: run npm run asbuild)',
    );
  return bytes;
}
