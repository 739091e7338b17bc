// Calls init() and prints what happened as one JSON line: used under runtimes with a piece
// missing (node --jitless: no WebAssembly; lib/no-simd.mjs: no SIMD) to check the error is clear.
import * as adj from '../../dist/index.js';

let r;
try {
  await adj.init();
  r = { initialised: true };
} catch (e) {
  r = { initialised: false, errorName: e?.name, isAdjointError: e instanceof adj.AdjointError, message: e?.message };
}
console.log(`ADJOINT_RESULT ${JSON.stringify(r)}`);
