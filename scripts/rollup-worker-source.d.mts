// Types for scripts/rollup-worker-source.mjs, which test/worker-source-build.test.ts imports.
/** The rollup plugin: its load hook replaces src/wasm/worker-source.ts with the minified module. */
export function minifyWorkerSource(): {
  name: string;
  load(this: { error(message: string): never }, id: string): Promise<{ code: string } | null>;
};
