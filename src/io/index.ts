/**
 * The io namespace: reading and writing weights.
 *
 * @module
 */
export { saveSafetensors, loadSafetensors, loadSafetensorsMetadata } from './safetensors.js';
