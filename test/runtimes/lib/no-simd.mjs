// Preloaded with `node --import` to emulate an engine without WebAssembly SIMD (V8 can no longer
// switch SIMD off): modules using the SIMD opcode prefix 0xfd fail validation and compilation,
// as they do on a pre-SIMD engine.
const bytesOf = (src) => (ArrayBuffer.isView(src) ? new Uint8Array(src.buffer, src.byteOffset, src.byteLength) : new Uint8Array(src));
const usesSimd = (src) => bytesOf(src).includes(0xfd);
const { validate, compile } = WebAssembly;
WebAssembly.validate = (src) => !usesSimd(src) && validate(src);
WebAssembly.compile = async (src) => {
  if (usesSimd(src)) throw new WebAssembly.CompileError('invalid value type 0x7b (v128)');
  return compile(src);
};
