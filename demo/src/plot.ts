// The live training plot, hand-drawn on one canvas: loss on a log scale above, accuracy below,
// sharing the epoch axis (the digits page); or, with `evals: 'loss'`, one loss panel with the
// training loss and the validation loss by step (the Shakespeare page). A charting library (uPlot is the smallest good one, ~50 KB) would
// have to be vendored, since the demo loads nothing from a CDN, and would still need this much
// glue for two panels, a log axis, smoothing, a faded previous run and theme colours; the whole
// plot is this file, redrawn at most once per animation frame.

/** What the plot shows: the x axis's title, and whether evaluations are an accuracy (own panel) or a loss. */
export interface PlotOptions {
  /** Title of the x axis (default 'epoch'). */
  xLabel?: string;
  /** 'accuracy' (default): train and test accuracy in a second panel; 'loss': the evaluations are a validation loss, drawn on the loss panel, the only one. */
  evals?: 'accuracy' | 'loss';
}

interface Run {
  label: string;
  /** Per training chunk: x (epoch or step), mean loss, mean batch accuracy (NaN when there is none). */
  epoch: number[];
  loss: number[];
  trainAcc: number[];
  /** Per evaluation: x, test accuracy (or validation loss). */
  evalEpoch: number[];
  testAcc: number[];
}

const emptyRun = (label: string): Run => ({ label, epoch: [], loss: [], trainAcc: [], evalEpoch: [], testAcc: [] });

/** Exponential moving average with bias correction, as TensorBoard's smoothing. */
function smooth(ys: number[], weight = 0.9): number[] {
  let m = 0,
    n = 0;
  return ys.map((y) => {
    m = weight * m + (1 - weight) * y;
    n = weight * n + (1 - weight);
    return m / n;
  });
}

/** 1, 2, 5 × 10^k ticks covering [lo, hi] on a linear axis. */
function linearTicks(lo: number, hi: number, target: number): number[] {
  const raw = (hi - lo) / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Decade ticks, with 2 and 5 in between when the range spans less than two decades. */
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  const decades = Math.log10(hi / lo);
  // Less than a decade (the GPT's losses): enough ticks to read the value off.
  const mults = decades < 0.99 ? [1, 1.5, 2, 3, 4, 5, 7] : decades <= 2.5 ? [1, 2, 5] : decades <= 4 ? [1, 3] : [1];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of mults) {
      const v = m * 10 ** k;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
  }
  return out;
}

/** The largest 1, 2 or 5 × 10^k at or below v, and the smallest at or above. */
function niceBelow(v: number): number {
  const k = 10 ** Math.floor(Math.log10(v));
  return [5, 2, 1].map((m) => m * k).find((n) => n <= v * 1.0001) ?? k;
}
function niceAbove(v: number): number {
  const k = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * k).find((n) => n >= v * 0.9999) ?? 10 * k;
}

const fmtTick = (v: number) => (v >= 1 ? String(Number(v.toPrecision(3))) : String(Number(v.toPrecision(2))));

export class TrainingPlot {
  private run = emptyRun('');
  private previous: Run | null = null;
  private frame = 0;
  private hover: number | null = null;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly xLabel: string;
  /** Evaluations are a validation loss on the one loss panel (no accuracy panel). */
  private readonly lossOnly: boolean;

  constructor(
    readonly canvas: HTMLCanvasElement,
    { xLabel = 'epoch', evals = 'accuracy' }: PlotOptions = {},
  ) {
    this.ctx = canvas.getContext('2d')!;
    this.xLabel = xLabel;
    this.lossOnly = evals === 'loss';
    new ResizeObserver(() => this.draw()).observe(canvas);
    canvas.addEventListener('pointermove', (e) => {
      this.hover = e.clientX - canvas.getBoundingClientRect().left;
      this.schedule();
    });
    canvas.addEventListener('pointerleave', () => {
      this.hover = null;
      this.schedule();
    });
  }

  /** Starts a new run; the current one (if it has data) stays on the plot, faded, for comparison. */
  reset(label: string): void {
    if (this.run.epoch.length > 1) this.previous = this.run;
    this.run = emptyRun(label);
    this.schedule();
  }

  addProgress(epoch: number, loss: number, trainAcc = Number.NaN): void {
    if (!Number.isFinite(loss)) return;
    this.run.epoch.push(epoch);
    this.run.loss.push(loss);
    this.run.trainAcc.push(trainAcc);
    this.schedule();
  }

  addEval(epoch: number, testAcc: number): void {
    const r = this.run;
    // Several evaluations at one point (pause, then load) keep only the last.
    if (r.evalEpoch.length > 0 && r.evalEpoch[r.evalEpoch.length - 1] === epoch) {
      r.testAcc[r.testAcc.length - 1] = testAcc;
    } else {
      r.evalEpoch.push(epoch);
      r.testAcc.push(testAcc);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.frame === 0)
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw();
      });
  }

  draw(): void {
    const { canvas, ctx } = this;
    const dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth,
      H = canvas.clientHeight;
    if (W === 0 || H === 0) return;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const css = getComputedStyle(canvas);
    const color = (name: string) => css.getPropertyValue(name).trim();
    const c = {
      text: color('--muted'),
      grid: color('--grid'),
      loss: color('--c-loss'),
      train: color('--c-train'),
      test: color('--c-test'),
      prev: color('--c-prev'),
    };
    ctx.font = '11px system-ui, sans-serif';

    const runs = this.previous ? [this.previous, this.run] : [this.run];
    const maxEpoch = Math.max(1, ...runs.map((r) => Math.max(r.epoch[r.epoch.length - 1] ?? 0, r.evalEpoch[r.evalEpoch.length - 1] ?? 0)));
    const items: [string, string][] = this.lossOnly
      ? [
          [c.loss, 'training loss'],
          [c.test, 'validation loss'],
        ]
      : [
          [c.loss, 'training loss'],
          [c.train, 'train accuracy'],
          [c.test, 'test accuracy'],
        ];
    if (this.previous) items.push([c.prev, 'previous run']);
    const left = 40,
      right = W - 14,
      gap = 34,
      bottom = H - 24;
    // The legend shares the first line with the panel title when it fits, else gets a line of its own.
    const legendW = items.reduce((a, [, label]) => a + ctx.measureText(label).width + 28, 0);
    const ownLine = left + ctx.measureText('loss (log scale)').width + 24 + legendW > right;
    const top = ownLine ? 44 + 15 * (this.legend(items, 8, 0, right, false) - 1) : 26;
    const panelH = this.lossOnly ? bottom - top : (bottom - top - gap) / 2;
    const lossBox = { y0: top, y1: top + panelH };
    // With one panel, the x axis sits under the loss panel (accBox is then that same box).
    const accBox = this.lossOnly ? lossBox : { y0: top + panelH + gap, y1: bottom };
    const xOf = (e: number) => left + (e / maxEpoch) * (right - left);

    // Loss range from every run's data (smoothed and raw), padded to whole ticks.
    const losses = runs.flatMap((r) => (this.lossOnly ? [...r.loss, ...r.testAcc] : r.loss)).filter((v) => v > 0);
    let lo = losses.length ? Math.min(...losses) : 0.1,
      hi = losses.length ? Math.max(...losses) : 3;
    // The digits' loss falls by decades; a language model's by a factor of two or three.
    lo = Math.max(1e-4, niceBelow(this.lossOnly ? lo * 0.95 : Math.min(lo, hi / 10)));
    hi = niceAbove(hi);
    const yLoss = (v: number) => lossBox.y1 - (Math.log10(v / lo) / Math.log10(hi / lo)) * (lossBox.y1 - lossBox.y0);
    const yAcc = (v: number) => accBox.y1 - v * (accBox.y1 - accBox.y0);

    // Grids and axes.
    ctx.strokeStyle = c.grid;
    ctx.fillStyle = c.text;
    ctx.lineWidth = 1;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const v of logTicks(lo, hi)) this.hline(yLoss(v), left, right, fmtTick(v));
    if (!this.lossOnly) for (const v of [0, 0.2, 0.4, 0.6, 0.8, 1]) this.hline(yAcc(v), left, right, `${v * 100}%`);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const titleW = ctx.measureText(this.xLabel).width + 12;
    for (const e of linearTicks(0, maxEpoch, Math.max(2, Math.floor((right - left) / 70)))) {
      const x = xOf(e);
      if (x > right - titleW) continue; // the axis title sits there
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, accBox.y1);
      ctx.lineTo(Math.round(x) + 0.5, accBox.y1 + 4);
      ctx.stroke();
      ctx.fillText(fmtTick(e), x, accBox.y1 + 6);
    }
    ctx.textAlign = 'right';
    ctx.fillText(this.xLabel, right, accBox.y1 + 6);
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    ctx.fillText('loss (log scale)', left, lossBox.y0 - 8);
    if (!this.lossOnly) ctx.fillText('accuracy', left, accBox.y0 - 8);

    // Legend, top right.
    this.legend(items, ownLine ? 8 : right - legendW + 12, ownLine ? 14 : lossBox.y0 - 8, right);

    ctx.save();
    ctx.beginPath();
    ctx.rect(left, 0, right - left + 2, H);
    ctx.clip();
    // Evaluations go on the loss axis when they are a validation loss.
    const yEval = this.lossOnly ? yLoss : yAcc;
    if (this.previous) this.drawRun(this.previous, { loss: c.prev, train: c.prev, test: c.prev }, xOf, yLoss, yEval, true);
    this.drawRun(this.run, c, xOf, yLoss, yEval, false);
    ctx.restore();

    // The latest test accuracy (or validation loss), labelled at the end of its line.
    const r = this.run;
    if (r.testAcc.length > 0) {
      const a = r.testAcc[r.testAcc.length - 1],
        x = xOf(r.evalEpoch[r.evalEpoch.length - 1]);
      ctx.fillStyle = c.test;
      ctx.beginPath();
      ctx.arc(x, yEval(a), 3.5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.font = '600 12px system-ui, sans-serif';
      ctx.textAlign = x > right - 60 ? 'right' : 'left';
      ctx.textBaseline = 'bottom';
      const label = this.lossOnly ? a.toFixed(3) : `${(a * 100).toFixed(1)}%`;
      ctx.fillText(label, x > right - 60 ? x - 4 : x + 6, Math.max(accBox.y0 + 14, yEval(a) - 4));
    }
    if (this.hover !== null) this.drawHover(this.hover, maxEpoch, left, right, top, bottom, c);
  }

  private hline(y: number, x0: number, x1: number, label: string): void {
    const { ctx } = this;
    ctx.beginPath();
    ctx.moveTo(x0, Math.round(y) + 0.5);
    ctx.lineTo(x1, Math.round(y) + 0.5);
    ctx.stroke();
    ctx.fillText(label, x0 - 6, y);
  }

  /** Legend entries left to right from x0, wrapping at `right`; returns the number of lines. */
  private legend(items: [string, string][], x0: number, y: number, right: number, paint = true): number {
    const { ctx } = this;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'alphabetic';
    let x = x0,
      lines = 1;
    for (const [col, label] of items) {
      const w = ctx.measureText(label).width;
      if (x + 16 + w > right && x > x0) {
        x = x0;
        y += 15;
        lines++;
      }
      if (paint) {
        ctx.fillStyle = col;
        ctx.fillRect(x, y - 5, 12, 3);
        ctx.fillText(label, x + 16, y);
      }
      x += w + 28;
    }
    return lines;
  }

  private line(
    xs: number[],
    ys: number[],
    x: (v: number) => number,
    y: (v: number) => number,
    color: string,
    width: number,
    alpha = 1,
    dash: number[] = [],
  ): void {
    if (xs.length === 0) return;
    const { ctx } = this;
    ctx.strokeStyle = color;
    ctx.globalAlpha = alpha;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.lineJoin = 'round';
    ctx.beginPath();
    // One vertex per device pixel column at most: long runs stay cheap to draw.
    let lastX = -Infinity;
    for (let i = 0; i < xs.length; i++) {
      const px = x(xs[i]);
      if (px - lastX < 0.5 && i !== xs.length - 1) continue;
      lastX = px;
      if (i === 0) ctx.moveTo(px, y(ys[i]));
      else ctx.lineTo(px, y(ys[i]));
    }
    ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.setLineDash([]);
  }

  private drawRun(
    r: Run,
    c: { loss: string; train: string; test: string },
    x: (v: number) => number,
    yLoss: (v: number) => number,
    yAcc: (v: number) => number,
    faded: boolean,
  ): void {
    const dash = faded ? [4, 3] : [];
    if (!faded) this.line(r.epoch, r.loss, x, yLoss, c.loss, 1, 0.25);
    this.line(r.epoch, smooth(r.loss), x, yLoss, c.loss, faded ? 1.25 : 2, faded ? 0.7 : 1, dash);
    if (!this.lossOnly) this.line(r.epoch, smooth(r.trainAcc, 0.8), x, yAcc, c.train, faded ? 1 : 1.5, faded ? 0.5 : 0.9, dash);
    this.line(r.evalEpoch, r.testAcc, x, yAcc, c.test, faded ? 1.25 : 2.25, faded ? 0.7 : 1, dash);
  }

  private drawHover(
    px: number,
    maxEpoch: number,
    left: number,
    right: number,
    top: number,
    bottom: number,
    c: Record<string, string>,
  ): void {
    const r = this.run;
    if (px < left || px > right || r.epoch.length === 0) return;
    const e = ((px - left) / (right - left)) * maxEpoch;
    const near = (xs: number[]) => {
      let best = 0;
      for (let i = 1; i < xs.length; i++) if (Math.abs(xs[i] - e) < Math.abs(xs[best] - e)) best = i;
      return best;
    };
    const i = near(r.epoch),
      j = near(r.evalEpoch);
    const { ctx } = this;
    ctx.strokeStyle = c.text;
    ctx.globalAlpha = 0.5;
    ctx.beginPath();
    ctx.moveTo(Math.round(px) + 0.5, top);
    ctx.lineTo(Math.round(px) + 0.5, bottom);
    ctx.stroke();
    ctx.globalAlpha = 1;
    const lines = [
      this.lossOnly ? `${this.xLabel} ${Math.round(r.epoch[i])}` : `${this.xLabel} ${r.epoch[i].toFixed(2)}`,
      `loss ${smooth(r.loss)[i].toPrecision(3)}`,
    ];
    if (r.testAcc.length > 0) lines.push(this.lossOnly ? `val ${r.testAcc[j].toFixed(3)}` : `test ${(r.testAcc[j] * 100).toFixed(1)}%`);
    ctx.font = '11px system-ui, sans-serif';
    const w = Math.max(...lines.map((l) => ctx.measureText(l).width)) + 12;
    const bx = px + w + 10 > right ? px - w - 8 : px + 8;
    ctx.fillStyle = getComputedStyle(this.canvas).getPropertyValue('--tooltip-bg').trim() || 'rgba(0,0,0,.75)';
    ctx.fillRect(bx, top + 4, w, lines.length * 15 + 8);
    ctx.fillStyle = getComputedStyle(this.canvas).getPropertyValue('--tooltip-fg').trim() || '#fff';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'top';
    lines.forEach((l, k) => ctx.fillText(l, bx + 6, top + 8 + k * 15));
  }
}
