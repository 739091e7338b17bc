// The worker side of the thread pool, as source text: one ESM bundle must be able to start
// workers in Node (worker_threads, `eval`) and in browsers (a Blob URL) with no extra file to
// ship or resolve, and text is the one form that survives every bundler and minifier intact.
//
// A worker instantiates the kernels on the shared memory, registers its own GEMM packing
// scratch (the scratch pointer is a module global, so each instance has its own), reports
// ready, and then serves its control slot forever: wait for SEQ to move, claim the job (TAKEN:
// seq − 1 → seq; the caller may have claimed it first and run it itself), run kernel OP with the
// f64 arguments, write STATUS (and a message on failure), publish DONE = SEQ. See threads.ts.

/** Control slot layout, shared with threads.ts (i32 indices; byte offsets for the areas). */
export const SLOT = {
  BYTES: 1024, SEQ: 0, DONE: 1, OP: 2, NARGS: 3, STATUS: 4, MSGLEN: 5, GONE: 6, TAKEN: 7,
  ARGS_AT: 64, MAX_ARGS: 24, MSG_AT: 256, MSG_CHARS: 384,
} as const;
/** STATUS values; OP values below 0 are commands. */
export const OK = 0, FAILED = 1, DEAD = 2;
export const QUIT = -1, DIE = -2;

const serve = `
function serve(d, reply, onExit, exit) {
  var S = ${JSON.stringify(SLOT)};
  var inst;
  try {
    inst = new WebAssembly.Instance(d.module, { env: { memory: d.memory } });
  } catch (e) {
    reply({ error: String((e && e.message) || e) });
    return;
  }
  var ex = inst.exports;
  var fns = d.names.map(function (n) { return ex[n]; });
  if (ex.gemm_set_scratch && d.scratchBytes > 0) ex.gemm_set_scratch(d.scratch, d.scratchBytes);
  var c = new Int32Array(d.memory.buffer, d.slot, S.ARGS_AT >> 2);
  var a = new Float64Array(d.memory.buffer, d.slot + S.ARGS_AT, S.MAX_ARGS);
  var m = new Uint16Array(d.memory.buffer, d.slot + S.MSG_AT, S.MSG_CHARS);
  var done = function (seq, status) {
    c[S.STATUS] = status;
    Atomics.store(c, S.DONE, seq);
    Atomics.notify(c, S.DONE);
  };
  // Whatever ends this thread (short of terminate()) marks it gone and ends a caller's wait on it.
  var quit = false;
  onExit(function () { if (!quit) { Atomics.store(c, S.GONE, 1); done(Atomics.load(c, S.SEQ), ${DEAD}); } });
  var seen = Atomics.load(c, S.SEQ);
  var spinMs = d.spinMs, calmUntil = 0, lost = 0;
  reply({ ready: true });
  for (;;) {
    // Poll for up to spinMs (a training step's kernels come every few tens of µs, and waking a
    // sleeping thread can take longer than that), then sleep until the caller bumps SEQ.
    var t0 = performance.now(), slept = false;
    for (var spin = 0; Atomics.load(c, S.SEQ) === seen; spin++) {
      if ((spin & 1023) === 1023 && performance.now() - t0 > spinMs) {
        Atomics.wait(c, S.SEQ, seen);
        t0 = performance.now();
        slept = true;
      }
    }
    seen = Atomics.load(c, S.SEQ);
    // Claim the job; failing means the caller already ran it itself (and published DONE).
    if (Atomics.compareExchange(c, S.TAKEN, seen - 1, seen) !== seen - 1) {
      // Lost it while polling: this thread was off the CPU when the job came. Again and again
      // means a busy machine, where polling only takes CPU from the caller: sleep between jobs.
      if (!slept && ++lost >= d.calmAfter) { spinMs = 0; calmUntil = performance.now() + d.calmMs; lost = 0; }
      continue;
    }
    lost = 0;
    if (spinMs === 0 && performance.now() > calmUntil) spinMs = d.spinMs;
    var op = c[S.OP];
    if (op === ${QUIT}) { quit = true; done(seen, ${OK}); return; }
    if (op === ${DIE}) { exit(); return; }
    var status = ${OK};
    try {
      var n = c[S.NARGS], args = new Array(n);
      for (var i = 0; i < n; i++) args[i] = a[i];
      fns[op].apply(null, args);
    } catch (e) {
      status = ${FAILED};
      var msg = String((e && e.name ? e.name + ': ' : '') + ((e && e.message) || e)).slice(0, S.MSG_CHARS);
      for (var j = 0; j < msg.length; j++) m[j] = msg.charCodeAt(j);
      c[S.MSGLEN] = msg.length;
    }
    done(seen, status);
  }
}
`;

/** For node:worker_threads (Node, Bun, Deno), evaluated as a CommonJS script. */
export const NODE_WORKER = `${serve}
var wt = require('node:worker_threads');
wt.parentPort.once('message', function (d) {
  serve(d, function (m) { wt.parentPort.postMessage(m); },
    function (f) { process.on('exit', f); },
    function () { process.exit(70); });
});
`;

/** For a Web Worker (browsers, Deno without node: modules). */
export const WEB_WORKER = `${serve}
self.onmessage = function (e) {
  self.onmessage = null;
  var hook = null;
  serve(e.data, function (m) { self.postMessage(m); },
    function (f) { hook = f; },
    function () { if (hook) hook(); self.close(); });
};
`;
