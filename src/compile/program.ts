// A traced call turned into a replayable program. Static memory plan: every block the call
// allocated and freed again gets an offset in one arena block, allocated once, assigned greedily
// by size among the blocks whose lifetimes overlap (so buffers that are never alive together share
// bytes); pointer arguments into them are baked in as absolute addresses, as are pointers into
// persistent tensors (parameters, optimizer state: storage never moves). What changes per call is
// patched in before the first kernel runs: pointers into the call's tensor arguments, pointers into
// the fresh output tensors, array arguments written into memory (crossEntropy's labels), and the
// perCall() trailing arguments (step counts, learning rates, seeds). Replay is the recorded
// launches in order — pooled ones through runJobs with the traced cuts — and no other JS work,
// except that runs of elementwise launches replay tile by tile (src/compile/fuse.ts).
import { AdjointError } from '../errors.js';
import { Tensor } from '../ops/tensor.js';
import type { Storage } from '../tensor/tensor.js';
import type { DType } from '../tensor/dtype.js';
import { runtime, views } from '../wasm/module.js';
import { runJobs, holdPool } from '../wasm/threads.js';
import { poolSize } from '../wasm/pool.js';
import type { Kernel, Derivation } from '../wasm/hooks.js';
import { shiftOf, type Trace, type Launch, type Ref, type Template, type Typed, type WriteKind } from './trace.js';
import { findRuns, fusedBlocks, fusion, runTiles, type Run, type TiledOp } from './fuse.js';
import { withEpilogues } from './epilogues.js';
import { parallelize, runPhase, runTileLists, schedule, type Extent, type PhaseStep, type PlannedLaunch } from './parallel.js';
import { assign, blockKey, checkPlan, scheduleOrder } from './plan.js';
import { constantArrays, constantBytes, constantLaunch, constants, inArgs, type Arrays } from './copies.js';

const NONE: readonly ArrayLike<number>[] = [];
const ABS = 0,
  IN = 1,
  OUT = 2;
type Base = typeof ABS | typeof IN | typeof OUT;

/** One replayed kernel launch, with the memory each piece touches (the planner's view, src/compile/parallel.ts). */
type LaunchStep = PlannedLaunch;
/** A run of elementwise launches replayed tile-major (src/compile/fuse.ts). */
interface TiledStep {
  readonly w: false;
  readonly tiled: true;
  readonly ops: readonly TiledOp[];
  readonly n: number;
  readonly tile: number;
  readonly threads: number;
}
interface WriteStep {
  readonly w: true;
  readonly base: Base;
  readonly idx: number;
  readonly off: number;
  readonly elem: WriteKind;
  readonly data: Typed;
  /** Index into the program's bound arrays, or -1 for constant data. */
  readonly bind: number;
}
interface Patch {
  readonly argv: number[];
  readonly i: number;
  readonly base: typeof IN | typeof OUT;
  readonly idx: number;
  readonly off: number;
}
type Out =
  | {
      readonly k: 'slot';
      readonly slot: number;
      readonly first: boolean;
      readonly shape: readonly number[];
      readonly requiresGrad: boolean;
    }
  | { readonly k: 'input'; readonly input: number }
  | { readonly k: 'same'; readonly tensor: Tensor };

export class Program {
  private disposed = false;
  /** fn returns one fresh tensor (the common case: no result structure to rebuild). */
  private readonly single: boolean;
  /** Launches replayed tile-major in fused runs. */
  readonly fused: number;

  private constructor(
    /** The plan block (arena offset) and its size. */
    private readonly base: number,
    readonly bytes: number,
    private readonly steps: readonly (LaunchStep | TiledStep | WriteStep | PhaseStep)[],
    private readonly patches: readonly Patch[],
    private readonly binds: readonly { readonly arg: number; readonly make: Derivation | null; readonly count: number }[],
    private readonly slots: readonly { readonly shape: readonly number[]; readonly dtype: DType }[],
    private readonly outs: readonly Out[],
    private readonly template: Template,
    private readonly exts: readonly Storage[],
    /** Sources numbered from `nData` on: the int32 tensor argument (by position) whose values JS read (Trace.reads). */
    private readonly nData: number,
    private readonly reads: readonly number[],
  ) {
    this.single = 'out' in template && outs.length === 1 && outs[0].k === 'slot';
    this.fused = steps.reduce((k, s) => k + (s.w === false && s.tiled === true ? s.ops.length : 0), 0);
  }

  /** Plans memory for a (checked, untainted) trace and allocates the plan block; `fuse`: tile-major elementwise runs and GEMM epilogues. */
  static build(traced: Trace, fuse = fusion.enabled): Program {
    const trace = fuse ? withEpilogues(traced) : traced; // matmul → bias add → tanh/sigmoid as one GEMM (src/compile/epilogues.ts)
    const slotOf = new Map<number, number>();
    const slots: { shape: readonly number[]; dtype: DType }[] = [];
    const outs = trace.outputs.map((o): Out => {
      if (o.k !== 'fresh') return o;
      let slot = slotOf.get(o.block);
      const first = slot === undefined;
      if (slot === undefined) slotOf.set(o.block, (slot = slots.push({ shape: o.shape, dtype: o.dtype }) - 1));
      return { k: 'slot', slot, first, shape: o.shape, requiresGrad: o.requiresGrad };
    });
    const runs = fuse ? findRuns(trace, fusion, new Set(slotOf.keys())) : [];
    const blocks = fusedBlocks(
      trace.blocks.filter((b) => b.free >= 0),
      runs,
    );
    // With the pool up, strided copies and attention read their arrays from constants after the plan (src/compile/copies.ts).
    const threads = poolSize();
    const scheduled = threads >= 2 && schedule.enabled;
    const arrays = scheduled && constants.enabled ? constantArrays(trace) : new Map<number, never>();
    const reads = trace.reads.map((r) => r.input);
    let laid = Program.lay(trace, runs, slotOf, arrays, threads, assign(blocks, null));
    if (scheduled) {
      // The schedule sees plan blocks by identity, so it is the same on any plan: plan again for
      // it (src/compile/plan.ts) and lay the steps out on the new plan.
      if (laid.bytes > 0) runtime().arena.free(laid.base, laid.bytes);
      const plan = assign(blocks, scheduleOrder(laid.steps, laid.uses));
      laid = Program.lay(trace, runs, slotOf, arrays, threads, plan);
      try {
        checkPlan(blocks, plan.offsets, scheduleOrder(laid.steps, laid.uses));
      } catch (e) {
        if (laid.bytes > 0) runtime().arena.free(laid.base, laid.bytes);
        throw e;
      }
    }
    const { base, bytes, steps, patches, binds, exts } = laid;
    return new Program(base, bytes, steps, patches, binds, slots, outs, trace.template, exts, trace.data.length, reads);
  }

  /**
   * The program's steps for the plan at `offsets` (`total` bytes; the plan block allocated with
   * room for constants after it), scheduled for `threads` threads, with the plan blocks that
   * JS writes and fused runs use (for ScheduleOrder; launches carry theirs in `touches`).
   */
  private static lay(
    trace: Trace,
    runs: readonly Run[],
    slotOf: ReadonlyMap<number, number>,
    arrays: ReadonlyMap<number, Arrays>,
    threads: number,
    { offsets, total }: { offsets: ReadonlyMap<number, number>; total: number },
  ) {
    const constAt = new Map<number, number>();
    let bytes = total;
    for (const [i, c] of arrays) constAt.set(i, bytes), (bytes += constantBytes(trace.ops[i] as Launch, c, threads));
    const base = bytes > 0 ? runtime().arena.alloc(bytes) : 0;
    const exts = new Set<Storage>();
    const resolve = (r: Ref): [Base, number, number] => {
      switch (r.k) {
        case 'block': {
          const s = slotOf.get(r.block);
          if (s !== undefined) return [OUT, s, r.off];
          const off = offsets.get(r.block);
          if (off === undefined) throw new AdjointError(`internal: compile: block ${r.block} has no place in the plan`);
          return [ABS, 0, base + off + r.off];
        }
        case 'input':
          return [IN, r.input, r.off];
        case 'ext':
          exts.add(r.storage);
          return [ABS, 0, r.storage.ptr + r.off];
        case 'abs':
          return [ABS, 0, r.ptr];
      }
    };
    // For the parallel schedule: the buffer a pointer points into and where. Plan blocks and
    // persistent tensors by address; the call's inputs and outputs (new memory each call) by position.
    const extent = (r: Ref | null): Extent | null => {
      if (r === null) return null;
      switch (r.k) {
        case 'block': {
          const s = slotOf.get(r.block);
          const bytes = Math.max(1, trace.blocks[r.block].bytes);
          return { key: s !== undefined ? `out${s}` : blockKey(r.block), lo: 0, hi: bytes, at: r.off };
        }
        case 'input':
          return { key: `in${r.input}`, lo: 0, hi: Math.max(1, trace.inputs[r.input].storage.bytes), at: r.off };
        case 'ext':
          return { key: '', lo: r.storage.ptr, hi: r.storage.ptr + Math.max(1, r.storage.bytes), at: r.storage.ptr + r.off };
        case 'abs':
          return r.ptr === 0 ? null : { key: '', lo: r.ptr, hi: r.ptr + 1, at: r.ptr };
      }
    };
    const patches: Patch[] = [];
    const binds: { arg: number; make: Derivation | null; count: number }[] = [];
    const tiled = (r: Run): TiledStep => ({
      w: false,
      tiled: true,
      n: r.n,
      tile: r.tile,
      threads: r.threads,
      ops: r.ops.map((f): TiledOp => {
        const base = f.args.slice();
        f.ptrs.forEach((i) => {
          const [b, idx, off] = resolve(f.refs[i]!);
          if (b === ABS) base[i] = off;
          else patches.push({ argv: base, i, base: b, idx, off });
        });
        const fixed = f.ptrs.map((i) => f.refs[i]!.k === 'block' && r.scratch.has((f.refs[i] as { block: number }).block));
        const pieces = Array.from({ length: r.threads }, () => base.slice());
        return { name: f.name, f: runtime().exports[f.name], base, pieces, ptrs: f.ptrs, steps: f.steps, fixed, count: f.count };
      }),
    });
    const runAt = new Map(runs.map((r) => [r.first, r]));
    const moved = new Set(runs.flatMap((r) => [...r.members, ...r.hoisted]));
    // Plan blocks that JS writes and fused runs use, by step (ScheduleOrder; launches have `touches`).
    const uses = new Map<object, readonly number[]>();
    const step = (traced: Trace['ops'][number], at: number): LaunchStep | WriteStep => {
      const c = arrays.get(at);
      const op = c === undefined || traced.kind === 'write' ? traced : constantLaunch(traced, c, threads, base + constAt.get(at)!);
      if (op.kind === 'write') {
        const [b, idx, off] = resolve(op.dest);
        let bind = -1;
        if (op.bind !== null) {
          const { arg, make } = op.bind;
          bind = binds.findIndex((x) => x.arg === arg && x.make === make);
          if (bind < 0) bind = binds.push({ arg, make, count: op.data.length }) - 1;
        }
        const w: WriteStep = { w: true, base: b, idx, off, elem: op.elem, data: op.data, bind };
        if (op.dest.k === 'block') uses.set(w, [op.dest.block]);
        return w;
      }
      const argv = op.jobs.map((a) => a.slice());
      op.refs.forEach((refs, j) =>
        refs.forEach((r, i) => {
          if (r === null) return;
          const [b, idx, off] = resolve(r);
          if (b === ABS) argv[j][i] = off;
          else patches.push({ argv: argv[j], i, base: b, idx, off });
        }),
      );
      const touches = op.refs.map((refs) => refs.map(extent));
      return { w: false, name: op.name, f: runtime().exports[op.name], pooled: op.pooled, argv, dyn: op.dyn, compute: op.compute, touches };
    };
    // A run replays where its first launch was, after the ops it hoists; its other ops are in it.
    const steps = trace.ops.flatMap((op, at): (LaunchStep | TiledStep | WriteStep)[] => {
      const run = runAt.get(at);
      if (run !== undefined) {
        const t = tiled(run);
        uses.set(t, [...run.touched]);
        return [...run.hoisted.map((i) => step(trace.ops[i], i)), t];
      }
      return moved.has(at) ? [] : [step(op, at)];
    });
    // The kernel argument block: launches that read it stay in place, so constant writes into it
    // (read by no planned launch) may wait for the end of their run.
    const placing = {
      defer: (s: LaunchStep | TiledStep | WriteStep): boolean =>
        s.w && s.base === ABS && s.bind < 0 && inArgs(s.off) && inArgs(s.off + s.data.byteLength - 1),
      stay: (s: LaunchStep | TiledStep | WriteStep): boolean =>
        !s.w && s.tiled !== true && s.touches.some((t) => t.some((x) => x !== null && x.key === '' && inArgs(x.at))),
    };
    return { base, bytes, steps: parallelize(steps, threads, placing), patches, binds, exts: [...exts], uses };
  }

  /** Whether every persistent tensor the schedule touches (and every one it returns) is still alive. */
  valid(): boolean {
    return !this.disposed && this.exts.every((s) => s.refs > 0) && this.outs.every((o) => o.k !== 'same' || !o.tensor.disposed);
  }

  /** Runs the schedule on new arguments; returns fn's result with fresh output tensors. */
  run(inputs: readonly Tensor[], data: readonly unknown[]): unknown {
    // Everything that can throw comes before the first kernel, so a failed call changes nothing:
    // bound arrays (crossEntropy validates its labels here), disposed inputs, allocating outputs.
    const read = new Map<number, Int32Array>(); // an int32 argument's values, read once per call
    const source = (arg: number): unknown => {
      if (arg < this.nData) return data[arg];
      const input = this.reads[arg - this.nData];
      let v = read.get(input);
      if (v === undefined) read.set(input, (v = inputs[input].toArray() as Int32Array));
      return v;
    };
    const bound =
      this.binds.length === 0
        ? NONE
        : this.binds.map(({ arg, make, count }) => {
            const v = (make === null ? source(arg) : make(source(arg) as never)) as ArrayLike<number>;
            if (v.length !== count)
              throw new AdjointError(`compile: argument data has ${v.length} values where the traced call had ${count}`);
            return v;
          });
    const inPtr = inputs.map((t) => t.ptr);
    const fresh: Tensor[] = [];
    try {
      for (const s of this.slots) fresh.push(Tensor.empty(s.shape, s.dtype));
      for (const p of this.patches) p.argv[p.i] = (p.base === IN ? inPtr[p.idx] : fresh[p.idx].ptr) + p.off;
      for (const s of this.exts) if (s.readers !== null) s.settleReaders(); // lazy copies (src/ops/shape.ts) of what the schedule may write in place
      this.execute(inPtr, fresh, bound);
    } catch (e) {
      for (const t of fresh) t.dispose();
      throw e;
    }
    if (this.single) {
      fresh[0].requiresGrad = (this.outs[0] as { requiresGrad: boolean }).requiresGrad;
      return fresh[0];
    }
    const outs = this.outs.map((o) => {
      if (o.k === 'input') return inputs[o.input];
      if (o.k === 'same') return o.tensor;
      const t = o.first ? fresh[o.slot] : fresh[o.slot].share(o.shape);
      t.requiresGrad = o.requiresGrad;
      return t;
    });
    return rebuild(this.template, outs);
  }

  private execute(inPtr: readonly number[], fresh: readonly Tensor[], bound: readonly ArrayLike<number>[]): void {
    holdPool(true); // the workers stay awake for the whole step, and sleep after it
    try {
      this.replay(inPtr, fresh, bound);
    } finally {
      holdPool(false);
    }
  }

  private replay(inPtr: readonly number[], fresh: readonly Tensor[], bound: readonly ArrayLike<number>[]): void {
    for (let i = 0; i < this.steps.length; i++) this.runStep(i, inPtr, fresh, bound);
  }

  /** Runs step i of the program (its own method so the thread benches can time each step in place). */
  private runStep(i: number, inPtr: readonly number[], fresh: readonly Tensor[], bound: readonly ArrayLike<number>[]): void {
    const s = this.steps[i];
    if ('phase' in s) return runPhase(s);
    if (s.w) {
      const at = s.base === ABS ? s.off : (s.base === IN ? inPtr[s.idx] : fresh[s.idx].ptr) + s.off;
      const v = views();
      const dst = s.elem === 'f32' ? v.f32 : s.elem === 'f64' ? v.f64 : s.elem === 'i32' ? v.i32 : v.u8;
      dst.set(s.bind >= 0 ? bound[s.bind] : s.data, at >> shiftOf(s.elem));
      return;
    }
    if (s.tiled) {
      if (!runTileLists(s.ops, s.n, s.tile, s.threads)) runTiles(s.ops, s.n, s.tile, s.threads);
      return;
    }
    if (s.compute !== null) {
      const vals = s.compute();
      for (const a of s.argv) for (let k = 0, at = a.length - s.dyn; k < s.dyn; k++) a[at + k] = vals[k];
    }
    if (s.pooled) runJobs(s.name, s.argv, s.f);
    else s.f.apply(null, s.argv[0]);
  }

  /** Frees the plan block. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.bytes > 0) runtime().arena.free(this.base, this.bytes);
  }
}

function rebuild(t: Template, outs: readonly Tensor[]): unknown {
  if ('out' in t) return outs[t.out];
  if ('arr' in t) return t.arr.map((x) => rebuild(x, outs));
  if ('obj' in t) return Object.fromEntries(t.obj.map(([k, x]) => [k, rebuild(x, outs)]));
  return t.val;
}
