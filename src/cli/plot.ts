// A small hand-written SVG line-plot writer for training curves: panels side by side, each
// with nice ticks (1-2-5 steps, or decades on a log axis), light grid lines, axis labels and a
// legend placed in the corner where it covers the fewest points. No dependencies; the output
// is a standalone .svg that browsers, GitHub and rsvg render alike. (JS Math here only lays
// out pixels; no tensor data is computed.)

export interface Series {
  label: string;
  color: string;
  points: readonly (readonly [number, number])[];
  dashed?: boolean;
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  /** Log-scaled y axis (non-positive values are dropped). */
  log?: boolean;
  /** Fixed y range; otherwise from the data (padded). */
  yRange?: readonly [number, number];
  /** Fixed x range; otherwise from 0 (or the least x) to the largest x. */
  xRange?: readonly [number, number];
  /** Formats a y tick (default: compact number). */
  yFormat?: (v: number) => string;
  /** Horizontal reference lines, drawn dotted and labelled at the right. */
  refs?: readonly { y: number; label: string }[];
}

const W = 380,
  H = 300;
const M = { left: 62, right: 16, top: 34, bottom: 48 };
const FONT = `font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"`;
const INK = '#222',
  MUTED = '#666',
  GRID = '#e6e6e6';

export const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number): string => Number(v.toPrecision(6)).toString();
const r1 = (v: number): string => (Math.round(v * 10) / 10).toString();

/** About `n` ticks covering [lo, hi] at a 1-2-5 step. */
export function niceTicks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n,
    mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Ticks of a log axis: decades, with 2 and 5 when the range spans fewer than three. */
function logTicks(lo: number, hi: number): number[] {
  const a = Math.floor(Math.log10(lo)),
    b = Math.ceil(Math.log10(hi));
  const mult = b - a <= 2 ? [1, 2, 5] : [1];
  const out: number[] = [];
  for (let e = a; e <= b; e++) for (const m of mult) out.push(Number((m * 10 ** e).toPrecision(12)));
  return out.filter((v) => v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9));
}

interface Scale {
  x: (v: number) => number;
  y: (v: number) => number;
  xTicks: number[];
  yTicks: number[];
}

function scaleFor(p: Panel, pts: readonly (readonly [number, number])[]): Scale {
  const xs = pts.map(([x]) => x),
    ys = pts.map(([, y]) => y);
  const [x0, x1] = p.xRange ?? [Math.min(0, ...xs), Math.max(...xs, Math.min(0, ...xs) + 1)];
  let [y0, y1] = p.yRange ?? [Math.min(...ys), Math.max(...ys)];
  if (p.log) {
    // Pad to the next half decade, so a curve never runs along the frame.
    y0 = 10 ** (Math.floor(Math.log10(Math.min(...ys)) * 2) / 2);
    y1 = 10 ** (Math.ceil(Math.log10(Math.max(...ys)) * 2) / 2);
  } else if (p.yRange === undefined) {
    const pad = (y1 - y0) * 0.06 || Math.abs(y0) * 0.1 || 1;
    [y0, y1] = [y0 - pad, y1 + pad];
  }
  const xTicks = niceTicks(x0, x1, 5);
  const yTicks = p.log ? logTicks(y0, y1) : niceTicks(y0, y1, 7);
  const pw = W - M.left - M.right,
    ph = H - M.top - M.bottom;
  const ty = p.log ? (v: number) => Math.log10(v) : (v: number) => v;
  return {
    x: (v) => M.left + ((v - x0) / (x1 - x0)) * pw,
    y: (v) => M.top + ph - ((ty(v) - ty(y0)) / (ty(y1) - ty(y0))) * ph,
    xTicks: xTicks.filter((v) => v >= x0 && v <= x1),
    yTicks,
  };
}

function axes(p: Panel, s: Scale): string[] {
  const out: string[] = [];
  const [l, r, t, b] = [M.left, W - M.right, M.top, H - M.bottom];
  const yf = p.yFormat ?? fmt;
  for (const v of s.yTicks) {
    const y = r1(s.y(v));
    out.push(`<line x1="${l}" y1="${y}" x2="${r}" y2="${y}" stroke="${GRID}"/>`);
    out.push(
      `<text x="${l - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" font-size="11" fill="${MUTED}">${esc(yf(v))}</text>`,
    );
  }
  for (const v of s.xTicks) {
    const x = r1(s.x(v));
    out.push(`<line x1="${x}" y1="${t}" x2="${x}" y2="${b}" stroke="${GRID}"/>`);
    out.push(`<text x="${x}" y="${b + 16}" text-anchor="middle" font-size="11" fill="${MUTED}">${esc(fmt(v))}</text>`);
  }
  out.push(`<rect x="${l}" y="${t}" width="${r - l}" height="${b - t}" fill="none" stroke="#999"/>`);
  out.push(`<text x="${(l + r) / 2}" y="${H - 10}" text-anchor="middle" font-size="12" fill="${INK}">${esc(p.xLabel)}</text>`);
  out.push(
    `<text transform="translate(15 ${(t + b) / 2}) rotate(-90)" text-anchor="middle" font-size="12" fill="${INK}">${esc(p.yLabel)}</text>`,
  );
  out.push(`<text x="${l}" y="${t - 12}" font-size="14" font-weight="600" fill="${INK}">${esc(p.title)}</text>`);
  return out;
}

function lines(p: Panel, s: Scale): string[] {
  const out: string[] = [];
  for (const ref of p.refs ?? []) {
    const y = r1(s.y(ref.y));
    out.push(`<line x1="${M.left}" y1="${y}" x2="${W - M.right}" y2="${y}" stroke="#888" stroke-dasharray="2 3"/>`);
    out.push(
      `<text x="${W - M.right - 4}" y="${s.y(ref.y) - 4}" text-anchor="end" font-size="10" fill="${MUTED}">${esc(ref.label)}</text>`,
    );
  }
  for (const se of p.series) {
    const pts = se.points.filter(([, y]) => Number.isFinite(y) && (!p.log || y > 0));
    if (pts.length === 0) continue;
    const d = pts.map(([x, y], i) => `${i ? 'L' : 'M'}${r1(s.x(x))} ${r1(s.y(y))}`).join(' ');
    const dash = se.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(`<path d="${d}" fill="none" stroke="${se.color}" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"${dash}/>`);
    if (pts.length === 1) out.push(`<circle cx="${r1(s.x(pts[0][0]))}" cy="${r1(s.y(pts[0][1]))}" r="3" fill="${se.color}"/>`);
  }
  return out;
}

/** Points every few pixels along a polyline, so the legend also avoids the segments between samples. */
function trace(pts: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = pts.slice(0, 1).map(([x, y]) => [x, y]);
  for (let i = 1; i < pts.length; i++) {
    const [ax, ay] = pts[i - 1],
      [bx, by] = pts[i];
    const n = Math.max(1, Math.ceil(Math.hypot(bx - ax, by - ay) / 4));
    for (let k = 1; k <= n; k++) out.push([ax + ((bx - ax) * k) / n, ay + ((by - ay) * k) / n]);
  }
  return out;
}

/** The legend's entries from (x0, y0): a line sample and the label, one row each. */
function entries(series: readonly Series[], x0: number, y0: number): string[] {
  return series.flatMap((se, i) => {
    const y = y0 + 12.5 + 17 * i;
    const dash = se.dashed ? ' stroke-dasharray="6 4"' : '';
    return [
      `<line x1="${r1(x0 + 8)}" y1="${y}" x2="${r1(x0 + 32)}" y2="${y}" stroke="${se.color}" stroke-width="2"${dash}/>`,
      `<text x="${r1(x0 + 38)}" y="${y}" dominant-baseline="middle" font-size="11" fill="${INK}">${esc(se.label)}</text>`,
    ];
  });
}

/**
 * The legend, boxed in the plot corner that covers none of the curves (nor a reference label);
 * when every corner would cover some, it goes under the panel instead and `below` says how tall it is.
 */
function legend(p: Panel, s: Scale): { svg: string[]; below: number } {
  if (p.series.length === 0) return { svg: [], below: 0 };
  const w = 14 + 26 + 6.4 * Math.max(...p.series.map((se) => se.label.length)),
    h = 8 + 17 * p.series.length;
  const [l, r, t, b] = [M.left + 6, W - M.right - 6, M.top + 6, H - M.bottom - 6];
  const corners = [
    [r - w, t],
    [r - w, b - h],
    [l, b - h],
    [l, t],
  ] as const;
  const pts = p.series.flatMap((se) =>
    trace(se.points.filter(([, y]) => Number.isFinite(y) && (!p.log || y > 0)).map(([x, y]) => [s.x(x), s.y(y)] as const)),
  );
  for (const ref of p.refs ?? [])
    pts.push(
      ...trace([
        [W - M.right - 110, s.y(ref.y) - 8],
        [W - M.right, s.y(ref.y) - 8],
        [W - M.right, s.y(ref.y)],
        [l, s.y(ref.y)],
      ]),
    );
  const cover = ([cx, cy]: readonly [number, number]) =>
    pts.filter(([x, y]) => x >= cx - 4 && x <= cx + w + 4 && y >= cy - 4 && y <= cy + h + 4).length;
  const best = corners.find((c) => cover(c) === 0);
  if (best === undefined) return { svg: entries(p.series, M.left - 8, H - 4), below: h };
  const [x0, y0] = best;
  return {
    svg: [
      `<rect x="${r1(x0)}" y="${r1(y0)}" width="${r1(w)}" height="${h}" rx="3" fill="#fff" fill-opacity="0.88" stroke="#ccc"/>`,
      ...entries(p.series, x0, y0),
    ],
    below: 0,
  };
}

function panel(p: Panel): { svg: string[]; below: number } {
  const pts = p.series.flatMap((se) => se.points).filter(([, y]) => Number.isFinite(y) && (!p.log || y > 0));
  if (pts.length === 0) {
    return {
      svg: [`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" font-size="12" fill="${MUTED}">${esc(`${p.title}: no data`)}</text>`],
      below: 0,
    };
  }
  const s = scaleFor(p, [...pts, ...(p.refs ?? []).map((r) => [pts[0][0], r.y] as const)]);
  const key = legend(p, s);
  return { svg: [...axes(p, s), ...lines(p, s), ...key.svg], below: key.below };
}

/** A standalone SVG document: a title line, an optional subtitle, and the panels left to right. */
export function renderSvg(title: string, panels: readonly Panel[], subtitle = ''): string {
  const head = subtitle === '' ? 34 : 52;
  const drawn = panels.map(panel);
  const width = W * panels.length + 20,
    height = H + head + 8 + Math.max(0, ...drawn.map((d) => d.below));
  const body = drawn.map((d, i) => `<g transform="translate(${10 + W * i} ${head})">\n${d.svg.join('\n')}\n</g>`);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT}>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${10 + M.left}" y="24" font-size="16" font-weight="700" fill="${INK}">${esc(title)}</text>`,
    subtitle === '' ? '' : `<text x="${10 + M.left}" y="42" font-size="12" fill="${MUTED}">${esc(subtitle)}</text>`,
    ...body,
    '</svg>',
    '',
  ]
    .filter((l) => l !== '')
    .join('\n');
}
