// The messages between the page (main.ts) and the training worker (worker.ts). Typed arrays
// travel as transferables, so a 359-image test set or a weights file is moved, not copied.

export type ModelKind = 'mlp' | 'cnn';
export type OptimizerKind = 'sgd' | 'adam' | 'adamw';
type FeedbackKind = 'bp' | 'alignment';

/** What a model is built from; changing `model` or `feedback` builds a fresh model. */
export interface ModelConfig {
  model: ModelKind;
  feedback: FeedbackKind;
}

/** What can change between steps without touching the weights. */
export interface TrainConfig {
  optimizer: OptimizerKind;
  lr: number;
  batch: number;
}

export type ToWorker =
  | { type: 'build'; model: ModelConfig; train: TrainConfig }
  | { type: 'configure'; train: TrainConfig }
  | { type: 'train' }
  | { type: 'pause' }
  | { type: 'predict'; id: number; pixels: Float32Array }
  | { type: 'save' }
  | { type: 'load'; bytes: ArrayBuffer; fileName: string };

export interface ModelInfo extends ModelConfig {
  /** e.g. "Linear → ReLU → Dropout → Linear". */
  layers: string;
  parameters: number;
}

export type FromWorker =
  | { type: 'ready'; testPixels: Float32Array; testLabels: Int32Array; trainCount: number }
  /** The model in use; `fresh` when it was just built (a failed rebuild reports the old one). */
  | { type: 'model'; info: ModelInfo; fresh: boolean }
  | { type: 'state'; running: boolean }
  /** One chunk of training steps: the mean loss and accuracy over its batches. */
  | { type: 'progress'; step: number; epoch: number; loss: number; trainAccuracy: number; stepsPerSecond: number; memoryBytes: number }
  /** alignmentAngle: with feedback alignment, the angle (degrees) between the error signal it sends back and backprop's. */
  | { type: 'eval'; step: number; epoch: number; testAccuracy: number; predictions: Int32Array; alignmentAngle: number | null }
  | { type: 'prediction'; id: number; probabilities: Float32Array }
  | { type: 'weights'; bytes: ArrayBuffer; fileName: string }
  | { type: 'loaded'; fileName: string; info: ModelInfo }
  /** Something the user should read (a refused option, a file that does not fit); `detail` is the library's message. */
  | { type: 'error'; context: string; detail: string };
