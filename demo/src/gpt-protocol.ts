// The messages between the Shakespeare page (gpt-main.ts) and its training worker
// (gpt-worker.ts). Weights files travel as transferables.

/** The model and run the worker holds. */
export interface GptInfo {
  layers: number;
  heads: number;
  width: number;
  context: number;
  batch: number;
  vocabSize: number;
  parameters: number;
  /** Characters in the training and validation splits (90/10). */
  trainChars: number;
  valChars: number;
  /** Threads the kernels use (more than one only where the page is cross-origin isolated). */
  threads: number;
}

/** The model's sizes; the page's default is the published configuration. */
export interface GptSize {
  layers: number;
  heads: number;
  width: number;
  context: number;
  batch: number;
}

export type ToGptWorker =
  | { type: 'build'; size: GptSize }
  | { type: 'train' }
  | { type: 'pause' }
  | { type: 'generate'; id: number; prompt: string; tokens: number; temperature: number; seed: number }
  | { type: 'save' }
  | { type: 'load'; bytes: ArrayBuffer; fileName: string };

export type FromGptWorker =
  /** A model was built or loaded (`fresh`: a new run starting at step 0 or at the file's step). */
  | { type: 'model'; info: GptInfo; step: number; label: string }
  | { type: 'state'; running: boolean }
  /** One training step: its batch's loss, the learning rate it used, its time (training only) and tokens; each thread's share of the work (backend().shares). */
  | {
      type: 'progress';
      step: number;
      loss: number;
      lr: number;
      stepMs: number;
      tokensPerStep: number;
      memoryBytes: number;
      shares: number[];
    }
  /** Mean loss over a few random validation batches. */
  | { type: 'eval'; step: number; valLoss: number }
  /** The live sample: `text` continues `prompt`, drawn from the weights at `step`. */
  | { type: 'sample'; step: number; prompt: string; text: string }
  | { type: 'generated'; id: number; step: number; prompt: string; text: string }
  | { type: 'weights'; bytes: ArrayBuffer; fileName: string }
  /** Something the user should read; `detail` is the library's message. */
  | { type: 'error'; context: string; detail: string };
