// The table of every primitive. Prim is the closed union of their names; ParamsOf gives each
// one's parameter type, so apply('matmul', xs, params) is checked at compile time.
import type { Rule } from './rule.js';
import { unaryRules, binaryRules } from './elementwise.js';
import { reduceRules } from './reduce.js';
import { shapeRules } from './shape.js';
import { linalgRules } from './linalg.js';
import { nnRules } from './nn.js';
import { customRules } from './custom.js';
import { convRules } from './conv.js';
import { denseRules } from './dense.js';
import { attentionRules } from './attention.js';
import { rnnRules } from './rnn.js';
import { rnnSeqRules } from './rnnseq.js';
import { selectRules } from './select.js';
import { takeRules } from './take.js';

export const rules = {
  ...unaryRules,
  ...binaryRules,
  ...reduceRules,
  ...shapeRules,
  ...linalgRules,
  ...nnRules,
  ...customRules,
  ...convRules,
  ...denseRules,
  ...selectRules,
  ...takeRules,
  ...attentionRules,
  ...rnnRules,
  ...rnnSeqRules,
};

export type Prim = keyof typeof rules;
export type ParamsOf<K extends Prim> = (typeof rules)[K] extends Rule<infer P> ? P : never;
