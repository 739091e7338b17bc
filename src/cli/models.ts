// The models `adjoint train` builds: an MLP and a small LeNet-style CNN per data set. Layer i
// is seeded with seed·100 + i, so one --seed fixes every initial weight.
import * as nn from '../nn/index.js';
import type { Dataset, ModelKind } from './args.js';

export function buildModel(dataset: Dataset, kind: ModelKind, seed: number): nn.Sequential {
  const s = (i: number) => ({ seed: seed * 100 + i });
  if (dataset === 'digits') {
    return kind === 'mlp'
      ? new nn.Sequential(new nn.Linear(64, 512, s(0)), new nn.ReLU(), new nn.Dropout(0.5, s(2)), new nn.Linear(512, 10, s(3)))
      : new nn.Sequential(
          new nn.Unflatten(1, [1, 8, 8]),
          new nn.Conv2d(1, 16, 3, { padding: 1, ...s(1) }),
          new nn.ReLU(),
          new nn.MaxPool2d(2),
          new nn.Conv2d(16, 32, 3, { padding: 1, ...s(4) }),
          new nn.ReLU(),
          new nn.MaxPool2d(2),
          new nn.Flatten(),
          new nn.Linear(32 * 2 * 2, 10, s(8)),
        );
  }
  return kind === 'mlp'
    ? new nn.Sequential(
        new nn.Linear(784, 256, s(0)),
        new nn.ReLU(),
        new nn.Linear(256, 256, s(2)),
        new nn.ReLU(),
        new nn.Linear(256, 10, s(4)),
      )
    : new nn.Sequential(
        new nn.Unflatten(1, [1, 28, 28]),
        new nn.Conv2d(1, 16, 5, { padding: 2, ...s(1) }),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Conv2d(16, 32, 5, { padding: 2, ...s(4) }),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Flatten(),
        new nn.Linear(32 * 7 * 7, 10, s(8)),
      );
}

/** The architecture in one line, for the run's header. */
export function describeModel(model: nn.Sequential): string {
  const n = model.parameters().reduce((a, p) => a + p.size, 0);
  return `${model.layers.map((m) => m.constructor.name).join(' → ')} (${n.toLocaleString('en-US')} parameters)`;
}
