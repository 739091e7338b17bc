// Type-checks a small consumer (CONSUMER below) against the package as installed (node_modules/adjoint -> this
// repo), with both module resolutions users have: "bundler" and "nodenext". Library files are
// checked too (no skipLibCheck), so a broken declaration in dist/types fails here.
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './lib/proc.mjs';

// Kept here, not as .ts files under test/, so the repo's own `tsc --noEmit` (which runs before
// any build) never sees an import of the built package.
const CONSUMER = `import { init, tensor, nn, optim, data, crossEntropy, AdjointError, type Tensor, type InitOptions } from 'adjoint';
import wasm from 'adjoint/adjoint.wasm';

const options: InitOptions = { module: wasm, memory: { maximumBytes: 1 << 28 } };
await init(options);
const t: Tensor = tensor([1, 2, 3]).mul(2);
const net = new nn.Sequential(new nn.Linear(64, 10, { seed: 1 }));
const opt = new optim.SGD(net.parameters(), { lr: 0.1 });
const d = data.digits({ seed: 0 });
const loss: number = crossEntropy(net.forward(d.xTrain), d.yTrain).item();
opt.step();
const shape: readonly number[] = t.shape;
export const out: [readonly number[], number, typeof AdjointError] = [shape, loss, AdjointError];
`;
const WASM_DTS = `// What a bundler's or workerd's wasm import gives: a compiled module.
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
`;

export async function testTypes(root, scratch, env) {
  const dir = mkdtempSync(join(scratch, 'types-'));
  writeFileSync(join(dir, 'consumer.ts'), CONSUMER);
  writeFileSync(join(dir, 'wasm.d.ts'), WASM_DTS);
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(root, join(dir, 'node_modules/adjoint'), 'dir');
  const done = [];
  for (const [module, resolution] of [
    ['esnext', 'bundler'],
    ['nodenext', 'nodenext'],
  ]) {
    const args = [
      '--noEmit',
      '--strict',
      '--target',
      'es2022',
      '--module',
      module,
      '--moduleResolution',
      resolution,
      '--lib',
      'es2022,dom',
      '--types',
      '',
      'consumer.ts',
      'wasm.d.ts',
    ];
    const r = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), ...args], { cwd: dir, env });
    if (r.code !== 0) throw new Error(`tsc (moduleResolution ${resolution}) failed:\n${(r.stdout + r.stderr).trim()}`);
    done.push(resolution);
  }
  return { detail: `dist/index.d.ts type-checks a consumer (moduleResolution ${done.join(', ')})` };
}
