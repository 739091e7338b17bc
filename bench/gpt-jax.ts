// The GPT training step of bench/gpt.ts in jax-js (wasm device): the same model (4 layers, 4
// heads, width 128, context 64, batch 12, vocab 65, tied head), forward + backward + global-norm
// clipping at 1.0 + AdamW (betas 0.9/0.99, weight decay 0.1 on matrices), as one jit-compiled
// function. jax-js has no fused attention kernel: nn.dotProductAttention composes it from
// matmuls and a softmax. Token ids enter as one-hot rows (the embedding is a matmul). Random
// data: the speed of a step does not depend on the text.

const V = 65,
  E = 128,
  H = 4,
  L = 4,
  T = 64,
  B = 12;

/** Median wall and process-CPU ms of `steps` jitted steps after 3 warm-up steps. */
export async function jaxGptStep(steps: number): Promise<{ ms: number; cpuMs: number }> {
  const jax: any = await import('@jax-js/jax');
  const devices = await jax.init('wasm');
  if (!devices.includes('wasm')) throw new Error(`jax-js init('wasm') returned [${devices}]`);
  jax.defaultDevice('wasm');
  const { numpy: np, nn, jit, valueAndGrad, tree, random } = jax;
  let key = random.key(0);
  const normal = (shape: number[], std: number) => {
    const [k1, k2] = random.split(key, 2);
    key = k1;
    return np.multiply(random.normal(k2, shape), std);
  };
  const zeros = (shape: number[]) => np.zeros(shape);
  const ones = (shape: number[]) => np.ones(shape);
  const p0: any[] = [normal([V, E], 0.02), normal([T, E], 0.02)];
  for (let l = 0; l < L; l++) {
    p0.push(ones([E]), zeros([E]), normal([3 * E, E], 0.02), zeros([3 * E]), normal([E, E], 0.02), zeros([E]));
    p0.push(ones([E]), zeros([E]), normal([4 * E, E], 0.02), zeros([4 * E]), normal([E, 4 * E], 0.02), zeros([E]));
  }
  p0.push(ones([E]), zeros([E]));
  const decays = p0.map((p) => p.shape.length >= 2);

  const layerNorm = (x: any, w: any, b: any) => np.add(np.multiply(nn.standardize(x, -1, { epsilon: 1e-5 }), w), b);
  const linear = (x: any, w: any, b: any) => np.add(np.matmul(x, np.transpose(w)), b);
  const loss = (p: any[], x: any, y: any) => {
    // Move semantics: every use consumes an array, so a value used twice is passed as .ref once.
    let h = np.add(np.reshape(np.matmul(x, p[0].ref), [B, T, E]), p[1]);
    for (let l = 0; l < L; l++) {
      const q = p.slice(2 + 12 * l, 14 + 12 * l);
      const a = layerNorm(h.ref, q[0], q[1]);
      const qkv = np.reshape(linear(a, q[2], q[3]), [B, T, 3, H, E / H]);
      // [B, H, T, d] each; attention composed (nn.dotProductAttention's einsum needs Node 22's iterator helpers).
      const [qq, kk, vv] = np.split(qkv, 3, 2).map((t: any) => np.transpose(np.squeeze(t, 2), [0, 2, 1, 3]));
      const scores = np.multiply(np.matmul(qq, np.transpose(kk, [0, 1, 3, 2])), 1 / Math.sqrt(E / H));
      const att = nn.softmax(np.where(np.tri(T, T, 0, { dtype: np.bool }), scores, -Infinity), -1);
      const o = np.reshape(np.transpose(np.matmul(att, vv), [0, 2, 1, 3]), [B, T, E]);
      h = np.add(h, linear(o, q[4], q[5]));
      const m = linear(nn.gelu(layerNorm(h.ref, q[6], q[7]), { approximate: false }), q[8], q[9]);
      h = np.add(h, linear(m, q[10], q[11]));
    }
    const f = layerNorm(h, p[2 + 12 * L], p[3 + 12 * L]);
    const logits = np.matmul(np.reshape(f, [B * T, E]), np.transpose(p[0]));
    return np.multiply(np.sum(np.multiply(nn.logSoftmax(logits, -1), y)), -1 / (B * T));
  };

  const lr = 1e-3,
    b1 = 0.9,
    b2 = 0.99,
    eps = 1e-8,
    wd = 0.1;
  const step = jit((ps: any[], ms: any[], vs: any[], t: any, x: any, y: any) => {
    const [l, g] = valueAndGrad((q: any[]) => loss(q, x, y))(tree.ref(ps));
    const norm = np.sqrt(g.reduce((s: any, gi: any) => np.add(s, np.sum(np.square(gi.ref))), np.array(0)));
    const coef = np.minimum(np.divide(1, np.add(norm, 1e-6)), 1);
    const gs = g.map((gi: any) => np.multiply(gi, coef.ref));
    const m2 = ms.map((m: any, i: number) => np.add(np.multiply(m, b1), np.multiply(gs[i].ref, 1 - b1)));
    const v2 = vs.map((v: any, i: number) => np.add(np.multiply(v, b2), np.multiply(np.square(gs[i]), 1 - b2)));
    const c1 = np.subtract(1, np.power(b1, t.ref)),
      c2 = np.subtract(1, np.power(b2, t));
    coef.dispose();
    const p2 = ps.map((w: any, i: number) => {
      const upd = np.divide(np.divide(m2[i].ref, c1.ref), np.add(np.sqrt(np.divide(v2[i].ref, c2.ref)), eps));
      const decayed = decays[i] ? np.multiply(w, 1 - lr * wd) : w;
      return np.subtract(decayed, np.multiply(upd, lr));
    });
    c1.dispose();
    c2.dispose();
    return [l, p2, m2, v2];
  });

  const onehot = (seed: number) => {
    const ids = new Int32Array(B * T);
    for (let i = 0; i < ids.length; i++) ids[i] = (i * 7 + seed * 13) % V;
    return nn.oneHot(np.array(ids, { dtype: np.int32 }), V).astype(np.float32);
  };
  let ps = p0,
    ms = p0.map((p) => np.zeros(p.shape)),
    vs = p0.map((p) => np.zeros(p.shape));
  const wall: number[] = [],
    cpu: number[] = [];
  for (let s = 0; s < steps + 3; s++) {
    const x = onehot(s),
      y = onehot(s + 1);
    const t0 = performance.now(),
      c0 = process.cpuUsage();
    const [l, p2, m2, v2] = step(ps, ms, vs, np.array(s + 1), x, y);
    [ps, ms, vs] = [p2, m2, v2];
    await jax.blockUntilReady([l, ps]);
    const d = process.cpuUsage(c0);
    if (s >= 3) wall.push(performance.now() - t0), cpu.push((d.user + d.system) / 1000);
    l.dispose();
  }
  for (const a of [ps, ms, vs]) tree.dispose(a);
  step.dispose?.();
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
  return { ms: median(wall), cpuMs: median(cpu) };
}

if (process.argv.includes('--jax-main')) {
  console.log(JSON.stringify(await jaxGptStep(Number(process.argv[process.argv.indexOf('--steps') + 1] ?? 5))));
}
