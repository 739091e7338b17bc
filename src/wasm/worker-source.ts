// The worker side of the thread pool, as source text: one ESM bundle must be able to start
// workers in Node (worker_threads, `eval`) and in browsers (a Blob URL) with no extra file to
// ship or resolve, and text is the one form that survives every bundler and minifier intact.
//
// A worker instantiates the kernels on the shared memory, registers its own GEMM packing
// scratch (the scratch pointer is a module global, so each instance has its own), reports
// ready, and then serves its control slot forever: wait for SEQ to move, claim the job (TAKEN:
// seq − 1 → seq; the caller may have claimed it first and run it itself), run kernel OP with the
// f64 arguments, write STATUS (and a message on failure), publish DONE = SEQ. See threads.ts.
// The workers are started by a supervisor thread (at the end), which watches them die.

/** Control slot layout, shared with threads.ts (i32 indices; byte offsets for the areas). */
export const SLOT = {
  /** The whole slot: control words, arguments, message, job list. */
  BYTES: 1024 + 8192 * 8,
  SEQ: 0,
  DONE: 1,
  OP: 2,
  NARGS: 3,
  STATUS: 4,
  MSGLEN: 5,
  GONE: 6,
  TAKEN: 7,
  ARGS_AT: 64,
  MAX_ARGS: 24,
  MSG_AT: 256,
  MSG_CHARS: 384,
  /** While non-zero the caller is inside a compiled program: an idle worker keeps polling (up to holdMs) instead of sleeping. */
  HOLD: 8,
  /** Microseconds this worker has spent running jobs, cumulative (wraps as an int32; benches read differences). */
  BUSY_US: 9,
  /** 0 while the worker polls or runs; while it sleeps, a new even number per sleep, odd when the sleep is calm (congestion.ts). */
  NAP: 10,
  /** Test-only (src/testing.ts slowWorker): after each job the worker spins this many per cent of the job's time more, as a slower core would. */
  SLOW: 11,
  /** A job list (LIST): f64 records [op, nargs, ...args] written by the caller, LIST_F64 values at most. */
  LIST_AT: 1024,
  LIST_F64: 8192,
} as const;
/** STATUS values; OP values below 0 are commands. */
export const OK = 0,
  FAILED = 1,
  DEAD = 2;
export const QUIT = -1,
  DIE = -2,
  /** Runs a list of kernel calls (args[0] calls from the slot's list area; src/compile/parallel.ts). */
  LIST = -3;

// Marks a worker's slot dead: a message, STATUS, GONE, then a change of DONE and a notify, so a
// caller about to wait on DONE's old value, or waiting on it, wakes. Idempotent; the first
// reason stays. (Mirrored by markGone in threads.ts for the supervisor's own death.)
const gone = `
function gone(c, m, why) {
  var S = ${JSON.stringify(SLOT)};
  if (Atomics.load(c, S.GONE) !== 0) return;
  var msg = String(why).slice(0, S.MSG_CHARS);
  for (var j = 0; j < msg.length; j++) m[j] = msg.charCodeAt(j);
  c[S.MSGLEN] = msg.length;
  c[S.STATUS] = ${DEAD};
  Atomics.store(c, S.GONE, 1);
  Atomics.add(c, S.DONE, 1);
  Atomics.notify(c, S.DONE);
}
`;

// A job list: \`count\` records [op, nargs, ...args] of f64 in \`l\` (the slot's list area), run in
// order. Argument arrays are reused (one per length, in \`arrays\`): allocating one per call, the
// worker collected its young generation every 1.5 s or so at the MLP step's pace, 0.2–5 ms each,
// long enough for the caller to take its pieces meanwhile.
const runList = `
function argsOf(arrays, n) {
  var a = arrays[n];
  if (a === undefined) a = arrays[n] = new Array(n);
  return a;
}
function runList(fns, l, count, arrays) {
  for (var k = 0, p = 0; k < count; k++) {
    var op = l[p], n = l[p + 1], args = argsOf(arrays, n);
    for (var i = 0; i < n; i++) args[i] = l[p + 2 + i];
    p += 2 + n;
    fns[op].apply(null, args);
  }
}
`;

const serve = `${gone}${runList}
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
  // The slot lies in the memory as it was at the start; a shared memory's views stay valid as it grows.
  var list = new Float64Array(d.memory.buffer, d.slot + S.LIST_AT, S.LIST_F64);
  var arrays = [];
  var done = function (seq, status) {
    c[S.STATUS] = status;
    Atomics.store(c, S.DONE, seq);
    Atomics.notify(c, S.DONE);
  };
  // Whatever ends this thread and still runs its code (process.exit, close) marks it gone and
  // ends a caller's wait on it; deaths that run no code are the supervisor's (below).
  var quit = false;
  onExit(function (why) { if (!quit) gone(c, m, why); });
  var seen = Atomics.load(c, S.SEQ);
  var spinMs = d.spinMs, calmUntil = 0, lost = 0, naps = 0;
  reply({ ready: true });
  for (;;) {
    // Poll for up to spinMs (a training step's kernels come every few tens of µs, and waking a
    // sleeping thread can take longer than that), then sleep until the caller bumps SEQ. While a
    // compiled program runs (HOLD set) poll for up to holdMs, so the worker stays awake for the
    // whole step; the caller clears HOLD at the end of the step and the worker then sleeps.
    // NAP tells the caller it sleeps: a job it misses while waking is no sign of a busy machine.
    var t0 = performance.now(), slept = false;
    for (var spin = 0; Atomics.load(c, S.SEQ) === seen; spin++) {
      if ((spin & 1023) === 1023 && performance.now() - t0 > (spinMs > 0 && Atomics.load(c, S.HOLD) !== 0 ? d.holdMs : spinMs)) {
        naps = (naps % 0x3fffffff) + 1;
        Atomics.store(c, S.NAP, (naps << 1) | (spinMs === 0 ? 1 : 0));
        Atomics.wait(c, S.SEQ, seen);
        Atomics.store(c, S.NAP, 0);
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
    var status = ${OK}, tj = performance.now();
    try {
      if (op === ${LIST}) runList(fns, list, a[0], arrays);
      else {
        var n = c[S.NARGS], args = argsOf(arrays, n);
        for (var i = 0; i < n; i++) args[i] = a[i];
        fns[op].apply(null, args);
      }
    } catch (e) {
      status = ${FAILED};
      var msg = String((e && e.name ? e.name + ': ' : '') + ((e && e.message) || e)).slice(0, S.MSG_CHARS);
      for (var j = 0; j < msg.length; j++) m[j] = msg.charCodeAt(j);
      c[S.MSGLEN] = msg.length;
    }
    var slow = c[S.SLOW];
    if (slow > 0) for (var until = performance.now() + ((performance.now() - tj) * slow) / 100; performance.now() < until; );
    Atomics.add(c, S.BUSY_US, Math.round((performance.now() - tj) * 1000));
    done(seen, status);
  }
}
`;

/** For node:worker_threads (Node, Bun, Deno), evaluated as a CommonJS script. */
export const NODE_WORKER = `${serve}
var wt = require('node:worker_threads');
wt.parentPort.once('message', function (d) {
  serve(d, function (m) { wt.parentPort.postMessage(m); },
    function (f) { process.on('exit', function (code) { f('exit code ' + code); }); },
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
    function () { if (hook) hook('closed'); self.close(); });
};
`;

// The supervisor: a thread that starts the workers and does nothing else. A caller blocked in
// Atomics.wait cannot run its event loop, so it would never see the 'exit' of a worker killed
// from outside (terminate(), an out-of-memory kill: no code of the worker runs); the
// supervisor's event loop is always free, so it sees every death and marks the slot (gone).
const supervise = `${gone}
function supervise(d, spawn, reply, listen, close) {
  var S = ${JSON.stringify(SLOT)};
  var pending = d.workers.length, failed = false;
  var fail = function (msg) { if (!failed) { failed = true; reply({ error: msg }); } };
  var ws = d.workers.map(function (data, i) {
    var c = new Int32Array(d.memory.buffer, data.slot, S.ARGS_AT >> 2);
    var m = new Uint16Array(d.memory.buffer, data.slot + S.MSG_AT, S.MSG_CHARS);
    var started = false, why = null;
    return spawn(data, {
      ready: function (err) {
        started = true;
        if (err !== undefined) fail(err);
        else if (--pending === 0 && !failed) reply({ ready: true });
      },
      error: function (msg) { why = why || msg; },
      exit: function (msg) {
        if (!started) fail(why || 'a worker ' + msg + ' while starting');
        gone(c, m, why || msg);
      },
    });
  });
  listen(function (msg) {
    // A thread that ends does not end its workers everywhere (Deno): terminate them first.
    if (msg.stop) Promise.all(ws.map(function (w) { return w.terminate(); })).then(close, close);
    // Test hook: kill worker msg.kill from outside, as terminate() would, afterMs from now.
    else if (msg.kill !== undefined) setTimeout(function () { ws[msg.kill].terminate(); }, msg.afterMs);
  });
}
`;

/** The supervisor for node:worker_threads; its message carries NODE_WORKER as `source`. */
export const NODE_SUPERVISOR = `${supervise}
var wt = require('node:worker_threads');
wt.parentPort.once('message', function (d) {
  supervise(d, function (data, on) {
    var w = new wt.Worker(d.source, { eval: true });
    w.once('message', function (r) { on.ready(r.error); });
    w.on('error', function (e) { on.error(String((e && e.message) || e)); });
    w.on('exit', function (code) { on.exit('exited with code ' + code); });
    w.postMessage(data);
    return w;
  }, function (r) { wt.parentPort.postMessage(r); },
  function (f) { wt.parentPort.on('message', f); },
  function () { process.exit(0); });
});
`;

/** The supervisor as a Web Worker; its message carries WEB_WORKER as `source`. */
export const WEB_SUPERVISOR = `${supervise}
self.onmessage = function (e) {
  var d = e.data;
  self.onmessage = null;
  if (typeof Worker !== 'function') return void self.postMessage({ error: 'workers cannot start workers in this runtime' });
  var url = URL.createObjectURL(new Blob([d.source], { type: 'text/javascript' }));
  supervise(d, function (data, on) {
    var w = new Worker(url, { type: 'module' });
    w.onmessage = function (r) { w.onmessage = null; on.ready(r.data.error); };
    // No exit event on the web: an uncaught error ends the worker's service loop, so it counts as death.
    w.onerror = function (ev) { ev.preventDefault(); w.terminate(); on.error(ev.message || 'an uncaught error'); on.exit('stopped'); };
    w.postMessage(data);
    // Nor after terminate(), which on the web only this thread (the owner) can call: stop, and the
    // test hook, whose mark may come just before the thread has really stopped.
    return { terminate: function () { w.terminate(); on.exit('terminated'); } };
  }, function (r) { self.postMessage(r); },
  function (f) { self.onmessage = function (ev) { f(ev.data); }; },
  function () { self.close(); });
};
`;
