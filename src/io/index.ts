// The io namespace: reading and writing weights.
export { saveSafetensors, loadSafetensors } from './safetensors.js';
