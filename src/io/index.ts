/**
 * The io namespace: reading and writing weights.
 *
 * @module
 */
export { saveSafetensors, loadSafetensors } from './safetensors.js';
