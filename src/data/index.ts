// The data namespace: the embedded digits, Fashion-MNIST, IDX files, seeded batching, and character-level text.
export { digits, fashionMnist, type Split, type DigitsOptions } from './datasets.js';
export { loadIdx, type IdxData } from './idx.js';
export { digitsRaw, type DigitsRaw } from './digits.js';
export { batches, batchCount, type Batch, type BatchOptions } from './batches.js';
export { permutation } from './shuffle.js';
export { CharTokenizer, splitText, lmBatches, shakespeare, type LmBatch, type LmBatchOptions } from './text.js';
