// A recorded application of a primitive: the DAG's vertex. Nodes are numbered in creation
// order; since an op's inputs always exist before it runs, decreasing id is a reverse
// topological order, and no explicit sort of the graph is needed beyond that.
import type { Tensor } from './tensor.js';
import type { Rule, Saved } from './rule.js';

let nextId = 0;

export class Node {
  readonly id = nextId++;
  released = false;
  /**
   * Live tensor handles whose `node` this is, plus unreleased consumer nodes. When it drops to 0
   * no backward pass can reach this node any more, so it releases what it saved (a forward pass
   * that is never differentiated, or one that threw halfway, would otherwise pin that memory).
   */
  private refs = 0;
  /** The input nodes this node holds a reference on (fixed at creation). */
  private readonly parents: (Node | null)[];

  constructor(
    readonly prim: string,
    /** The primitive's rule: the backward pass runs its VJP (no lookup by name). */
    readonly rule: Rule<never>,
    readonly params: unknown,
    /** The input tensors (for their shapes, their nodes and leaf gradients; data lives in `saved`). */
    readonly inputs: readonly Tensor[],
    readonly saved: Saved,
  ) {
    this.parents = inputs.map((t) => t.node);
    for (const n of this.parents) if (n !== null) n.refs++;
  }

  hold(): void {
    this.refs++;
  }

  /** Drops one reference; at zero the node is released, and so, iteratively, are the inputs it kept alive. */
  drop(): void {
    const work: Node[] = [this];
    while (work.length > 0) {
      const n = work.pop()!;
      if (--n.refs > 0) continue;
      n.release();
      for (const m of n.parents) if (m !== null) work.push(m);
      n.parents.fill(null);
    }
  }

  /** Drops what the VJP kept; the memory returns to the arena once no other handle views it. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const t of this.saved.x) t?.dispose();
    this.saved.y?.dispose();
    this.rule.release?.(this.params as never, this.inputs);
  }
}

/** The id the next node will get: nodes with a smaller id already exist. */
export const nextNodeId = (): number => nextId;
