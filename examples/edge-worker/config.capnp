# workerd config for the adjoint edge worker. Run it with
#   npx workerd serve config.capnp                      (listens on 127.0.0.1:8787)
#   npx workerd serve config.capnp --socket-addr http=127.0.0.1:9000
# then: curl -X POST 127.0.0.1:8787/predict -d '{"x": [[0, 0.3, ...64 numbers]]}'
#
# In your own project, point the two adjoint embeds at the installed package:
#   embed "node_modules/adjoint/dist/index.js" and embed "node_modules/adjoint/dist/adjoint.wasm".
# (This copy points at the repo's build, ../../dist, so the test suite runs it as is.)
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [ (name = "main", worker = .edgeWorker) ],
  sockets = [ (name = "http", address = "127.0.0.1:8787", http = (), service = "main") ],
);

const edgeWorker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "worker.mjs"),
    (name = "model.mjs", esModule = embed "model.mjs"),
    (name = "gpt.mjs", esModule = embed "gpt.mjs"),
    # The module names are the import specifiers the worker uses.
    (name = "adjoint", esModule = embed "../../dist/index.js"),
    # The embedded digits data set, its own module: dist/index.js imports it as ./data/digits.js.
    (name = "data/digits.js", esModule = embed "../../dist/data/digits.js"),
    # A `wasm` module is compiled by workerd at load time and imported as a WebAssembly.Module.
    (name = "adjoint/adjoint.wasm", wasm = embed "../../dist/adjoint.wasm"),
  ],
  compatibilityDate = "2025-09-01",
);
