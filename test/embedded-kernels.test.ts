// The kernels the bundle embeds (compressed, src/wasm/bytes.generated.ts) inflate to exactly
// build/adjoint.wasm, the file shipped as adjoint/adjoint.wasm.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { embeddedKernelBytes } from '../src/wasm/module.js';

describe('embedded kernels', () => {
  it('inflate to build/adjoint.wasm byte for byte, a fresh copy each call', () => {
    const file = new Uint8Array(readFileSync('build/adjoint.wasm'));
    const a = embeddedKernelBytes();
    expect(a.length).toBe(file.length);
    expect(Buffer.compare(Buffer.from(a), Buffer.from(file))).toBe(0);
    const b = embeddedKernelBytes();
    expect(b).not.toBe(a);
    expect(WebAssembly.validate(b)).toBe(true);
  });
});
