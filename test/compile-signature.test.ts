// What a compiled step's schedule depends on besides shapes and dtypes, each once ignored by a
// replay (bit-for-bit comparisons with eager mode): whether a tensor argument requires grad, an
// SGD group's momentum switched on or Nesterov toggled (a replay wrote the momentum through a
// null buffer pointer), and which optimizer parameter is passed as an argument (a replay used the
// traced parameter's momentum or Adam moments).
import { describe, it, expect } from 'vitest';
import * as A from '../src/index.js';
import type { Tensor } from '../src/index.js';
import { arr } from './helpers.js';

await A.init();

describe('compile(): the signature and guards', () => {
  it('a tensor argument that requires grad traces apart from one that does not', () => {
    const c = A.compile((x: Tensor) => A.sum(A.square(x)));
    for (let i = 0; i < 4; i++) c(A.randn([3], { seed: 1 })).dispose();
    const x = A.randn([3], { seed: 1, requiresGrad: true });
    const r = c(x);
    expect(r.requiresGrad).toBe(true);
    r.backward();
    expect(arr(x.grad!)).toEqual(arr(A.mul(x, 2)));
  });

  const toggled = (compiled: boolean, change: 'momentum' | 'nesterov') => {
    const w = A.full([3], 1, { requiresGrad: true }),
      v = A.full([3], 2, { requiresGrad: true }),
      low = A.full([64], 7); // memory near address 0 stays as it was
    const opt = new A.optim.SGD([w, v], { lr: 0.1, momentum: change === 'nesterov' ? 0.9 : 0 });
    const fn = () => {
      const l = A.add(A.sum(A.square(w)), A.sum(A.mul(v, 3)));
      l.backward();
      opt.step();
      opt.zeroGrad();
      return l;
    };
    const step = compiled ? A.compile(fn) : () => A.tidy(fn);
    for (let i = 0; i < 7; i++) {
      if (i === 4) {
        if (change === 'nesterov') opt.paramGroups[0].nesterov = true;
        else opt.paramGroups[0].momentum = 0.9;
      }
      step().dispose();
    }
    expect(arr(low).every((q) => q === 7)).toBe(true);
    return [...arr(w), ...arr(v), Object.keys(opt.stateDict()).length];
  };
  it('SGD momentum switched on, or Nesterov switched on, between replays: as eager, bit for bit', () => {
    for (const change of ['momentum', 'nesterov'] as const) expect(toggled(true, change)).toEqual(toggled(false, change));
  });

  const paramArg = (compiled: boolean, kind: 'sgd' | 'adam') => {
    const p1 = A.tensor([1, 2, 3, 4], { requiresGrad: true }),
      p2 = A.tensor([-1, 0.5, 2, -3], { requiresGrad: true });
    const opt = kind === 'adam' ? new A.optim.Adam([p1, p2], { lr: 0.1 }) : new A.optim.SGD([p1, p2], { lr: 0.1, momentum: 0.9 });
    for (const p of [p1, p2])
      A.tidy(() => {
        A.sum(p).backward();
        opt.step();
        opt.zeroGrad();
      });
    const fn = (p: Tensor) => {
      const l = A.sum(A.sin(p));
      l.backward();
      opt.step();
      opt.zeroGrad();
      return l;
    };
    const step = compiled ? A.compile(fn) : (p: Tensor) => A.tidy(() => fn(p));
    for (let i = 0; i < 4; i++) step(p1).dispose();
    step(p2).dispose();
    step(p1).dispose();
    return [...arr(p1), ...arr(p2), ...Object.values(opt.stateDict()).flatMap((t) => (t instanceof A.Tensor ? arr(t) : []))];
  };
  it("an optimizer's parameter passed as the argument: each one's own state, as eager", () => {
    for (const kind of ['sgd', 'adam'] as const) expect(paramArg(true, kind)).toEqual(paramArg(false, kind));
  });
});

describe('compile() of Jacobians, and where a read in JS happened', () => {
  it('compile(hessian), compile(jacfwd(grad)) and compile(jacrev(grad)) replay, bit for bit as eager', () => {
    const f = (x: Tensor) => A.sum(A.mul(A.tanh(x), A.sin(x)));
    for (const t of [A.hessian(f), A.jacfwd(A.grad(f) as (x: Tensor) => Tensor), A.jacrev(A.grad(f) as (x: Tensor) => Tensor)]) {
      const c = A.compile(t as (x: Tensor) => Tensor);
      for (let i = 0; i < 5; i++) {
        const x = A.randn([4], { seed: i, dtype: 'float64' });
        expect(arr(c(x))).toEqual(arr(t(x) as Tensor));
      }
      expect(c.stats.replayed).toBeGreaterThan(0);
      expect(c.stats.fallback).toBeNull();
    }
  });
  it("a value read with .item() is reported at the caller's line, not inside the library", () => {
    const c = A.compile((x: Tensor) => A.mul(x, A.sum(x).item()));
    for (let i = 0; i < 4; i++) c(A.randn([3], { seed: i })).dispose();
    expect(c.stats.fallback).toMatch(/fn reads tensor values into JS \(.*compile-signature\.test\.ts:\d+/);
    expect(c.stats.fallback).not.toMatch(/views|Trace\.access/);
  });
});
