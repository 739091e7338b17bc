// vitest: `npx vitest run` for the unit tests; `npm run coverage` adds V8 line coverage of src/.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // A timeout is not a speed test (speed belongs in bench/): under coverage instrumentation on a
    // shared 2-core machine a few heavy tests take longer than vitest's default 5 s.
    testTimeout: 30_000,
    setupFiles: ['test/setup.ts'],
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      // Generated data (base64 kernels and digits): constants, not code.
      exclude: ['src/wasm/bytes.generated.ts', 'src/wasm/bytes-relaxed.generated.ts', 'src/data/digits-data.ts'],
      reporter: ['text-summary', ['text', { skipFull: true }], ['json-summary', { file: 'coverage-summary.json' }]],
      reportsDirectory: 'test/artifacts/coverage',
      reportOnFailure: true,
      thresholds: { lines: 90 },
    },
  },
});
