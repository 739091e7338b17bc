// Two traced calls of one signature must record the same schedule — same launches, same
// non-pointer arguments, pointers into the same buffers, same constant writes, same lifetimes —
// for the schedule to stand for every later call. A difference means fn's kernels depend on
// JS state that changes between calls (a counter, an unseeded draw not routed through perCall,
// a closure variable), and the first one found is named in compile()'s warning.
import type { Trace, Ref, Template } from './trace.js';

function sameRef(a: Ref | null, b: Ref | null): boolean {
  if (a === null || b === null) return a === b;
  switch (a.k) {
    case 'block':
      return b.k === 'block' && a.block === b.block && a.off === b.off;
    case 'input':
      return b.k === 'input' && a.input === b.input && a.off === b.off;
    case 'ext':
      return b.k === 'ext' && a.storage === b.storage && a.off === b.off;
    case 'abs':
      return b.k === 'abs' && a.ptr === b.ptr;
  }
}

function sameTemplate(a: Template, b: Template): boolean {
  if ('out' in a) return 'out' in b && a.out === b.out;
  if ('arr' in a) return 'arr' in b && a.arr.length === b.arr.length && a.arr.every((x, i) => sameTemplate(x, b.arr[i]));
  if ('obj' in a)
    return 'obj' in b && a.obj.length === b.obj.length && a.obj.every(([k, x], i) => k === b.obj[i][0] && sameTemplate(x, b.obj[i][1]));
  return 'val' in b && Object.is(a.val, b.val);
}

/** null when the two traces record the same schedule, else the first difference. */
export function scheduleDiff(a: Trace, b: Trace): string | null {
  if (a.blocks.length !== b.blocks.length) return `the calls allocated ${a.blocks.length} and ${b.blocks.length} buffers`;
  for (let i = 0; i < a.blocks.length; i++) {
    const x = a.blocks[i],
      y = b.blocks[i];
    if (x.bytes !== y.bytes || x.alloc !== y.alloc || x.free !== y.free)
      return `buffer ${i} (${x.bytes} bytes) had another size or lifetime`;
  }
  if (a.ops.length !== b.ops.length) return `the calls made ${a.ops.length} and ${b.ops.length} kernel launches and memory writes`;
  for (let i = 0; i < a.ops.length; i++) {
    const x = a.ops[i],
      y = b.ops[i];
    if (x.kind === 'write' || y.kind === 'write') {
      if (x.kind !== 'write' || y.kind !== 'write') return `step ${i} was a kernel launch in one call and a memory write in the other`;
      if (x.elem !== y.elem || x.data.length !== y.data.length || !sameRef(x.dest, y.dest))
        return `the memory write at step ${i} went elsewhere`;
      if ((x.bind?.arg ?? -1) !== (y.bind?.arg ?? -1)) return `the memory write at step ${i} came from different arguments`;
      if (x.bind === null && !x.data.every((v, j) => Object.is(v, y.data[j]))) {
        return `the ${x.data.length} values written from JS at step ${i} changed (computed in JS from something that changes between calls)`;
      }
      continue;
    }
    if (x.name !== y.name || x.pooled !== y.pooled || x.jobs.length !== y.jobs.length || x.dyn !== y.dyn) {
      return `step ${i} launched ${x.name} in one call and ${y.name} in the other`;
    }
    for (let j = 0; j < x.jobs.length; j++) {
      const n = x.jobs[j].length - x.dyn;
      for (let k = 0; k < n; k++) {
        const rx = x.refs[j][k],
          ry = y.refs[j][k];
        if (rx !== null || ry !== null ? !sameRef(rx, ry) : !Object.is(x.jobs[j][k], y.jobs[j][k])) {
          const show = (v: number, r: Ref | null) =>
            r === null
              ? String(v)
              : `a pointer into ${r.k === 'block' ? 'a temporary' : r.k === 'input' ? 'an argument' : 'a persistent tensor'}`;
          return `${x.name} (step ${i}) argument ${k} was ${show(x.jobs[j][k], rx)}, then ${show(y.jobs[j][k], ry)}`;
        }
      }
    }
  }
  if (a.outputs.length !== b.outputs.length || !sameTemplate(a.template, b.template))
    return "fn's result had another structure or non-tensor values";
  return null;
}
