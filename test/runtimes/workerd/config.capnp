# workerd config of the cross-runtime suite (test/runtimes/run.mjs starts it with
# `workerd serve config.capnp --socket-addr http=127.0.0.1:<free port>`).
# Module names are the files' repo-relative paths, so the relative imports inside
# worker.mjs -> train-digits.mjs -> dist/index.js resolve exactly as they do on disk.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [ (name = "main", worker = .trainer), (name = "relaxed", worker = .relaxedTrainer) ],
  sockets = [ (name = "http", address = "127.0.0.1:8787", http = (), service = "main") ],
);

const trainer :Workerd.Worker = (
  modules = [
    (name = "test/runtimes/workerd/worker.mjs", esModule = embed "worker.mjs"),
    (name = "test/runtimes/train-digits.mjs", esModule = embed "../train-digits.mjs"),
    (name = "dist/index.js", esModule = embed "../../../dist/index.js"),
    (name = "dist/data/digits.js", esModule = embed "../../../dist/data/digits.js"),
    (name = "dist/adjoint.wasm", wasm = embed "../../../dist/adjoint.wasm"),
  ],
  bindings = [ (name = "RELAXED", service = "relaxed") ],
  compatibilityDate = "2025-09-01",
);

# The same workload on the relaxed-SIMD kernels, passed in as dist/adjoint-relaxed.wasm.
const relaxedTrainer :Workerd.Worker = (
  modules = [
    (name = "test/runtimes/workerd/relaxed.mjs", esModule = embed "relaxed.mjs"),
    (name = "test/runtimes/train-digits.mjs", esModule = embed "../train-digits.mjs"),
    (name = "dist/index.js", esModule = embed "../../../dist/index.js"),
    (name = "dist/data/digits.js", esModule = embed "../../../dist/data/digits.js"),
    (name = "dist/adjoint-relaxed.wasm", wasm = embed "../../../dist/adjoint-relaxed.wasm"),
  ],
  compatibilityDate = "2025-09-01",
);
