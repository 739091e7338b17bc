// Runs before every in-process test file (vitest.config.mjs): the pool's balance controller
// (src/wasm/balance.ts) off, so that a test counting a compiled function's traces, replays or
// signatures is not disturbed partway by new shares of the cuts on a machine whose cores run at
// unequal speeds (the results would not change; the counts would). test/balance.test.ts turns it
// on for its own cases, and the child processes of test/threads.test.ts run with it.
import { balance } from '../src/testing.js';

balance.enabled = false;
