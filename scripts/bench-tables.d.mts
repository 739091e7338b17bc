// Types for scripts/bench-tables.mjs, which test/docs.test.ts imports.
export const FILES: string[];
/** Every region's contents by name (machine, targets, gemm, op, train, headline, fashion). */
export function renderAll(results: unknown, fashion: unknown): Record<string, string>;
/** Replaces each `<!-- bench:NAME -->…<!-- /bench:NAME -->` region's body with tables[NAME]. */
export function applyRegions(text: string, tables: Record<string, string>, file?: string): string;
/** renderAll from bench/results.json and bench/fashion-results.json under dir (the repository root by default). */
export function loadResults(dir?: string): Record<string, string>;
