// The drawing pad: strokes from pointer events (mouse, pen and touch alike), kept in coordinates
// relative to the pad so a resize or a device-pixel-ratio change redraws them crisply, and
// reduced to the 8×8 input the models were trained on.
//
// The UCI digits were made by scaling each scanned digit's bounding box into a 32×32 bitmap
// (height filling it, aspect kept, centred) and counting the ink in each 4×4 block (0..16, which
// data.digits() divides by 16). toDigit() does the same to the strokes, so a digit drawn small,
// off-centre or with a thin pen still looks to the model like the digits it learnt from.

export interface Point {
  x: number;
  y: number;
}
export type Stroke = Point[];

/** Pen width in the 32×32 bitmap: the UCI strokes are about one 4-pixel block wide. */
const PEN_32 = 5.5;

export class Sketch {
  strokes: Stroke[] = [];
  private active: number | null = null;
  private readonly ctx: CanvasRenderingContext2D;

  constructor(
    readonly canvas: HTMLCanvasElement,
    private readonly onChange: (final: boolean) => void,
  ) {
    this.ctx = canvas.getContext('2d')!;
    canvas.addEventListener('pointerdown', (e) => this.down(e));
    canvas.addEventListener('pointermove', (e) => this.move(e));
    for (const type of ['pointerup', 'pointercancel'] as const) canvas.addEventListener(type, (e) => this.up(e));
    new ResizeObserver(() => this.render()).observe(canvas);
  }

  get empty(): boolean {
    return this.strokes.length === 0;
  }

  clear(): void {
    this.strokes = [];
    this.active = null;
    this.render();
    this.onChange(true);
  }

  private point(e: PointerEvent): Point {
    const r = this.canvas.getBoundingClientRect();
    return { x: (e.clientX - r.left) / r.width, y: (e.clientY - r.top) / r.height };
  }

  private down(e: PointerEvent): void {
    if (this.active !== null || (e.pointerType === 'mouse' && e.button !== 0)) return;
    e.preventDefault();
    this.active = e.pointerId;
    this.canvas.setPointerCapture(e.pointerId);
    this.strokes.push([this.point(e)]);
    this.render();
    this.onChange(false);
  }

  private move(e: PointerEvent): void {
    if (e.pointerId !== this.active) return;
    e.preventDefault();
    const stroke = this.strokes[this.strokes.length - 1];
    // Coalesced events: every sample of a fast stroke, not one per frame.
    const events = typeof e.getCoalescedEvents === 'function' ? e.getCoalescedEvents() : [];
    for (const c of events.length > 0 ? events : [e]) stroke.push(this.point(c));
    this.render();
    this.onChange(false);
  }

  private up(e: PointerEvent): void {
    if (e.pointerId !== this.active) return;
    this.active = null;
    this.onChange(true);
  }

  /** Redraws the strokes at the canvas's current size and device pixel ratio. */
  render(): void {
    const { canvas, ctx } = this;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(canvas.clientWidth * dpr),
      h = Math.round(canvas.clientHeight * dpr);
    if (w === 0 || h === 0) return;
    if (canvas.width !== w || canvas.height !== h) Object.assign(canvas, { width: w, height: h });
    ctx.clearRect(0, 0, w, h);
    const style = getComputedStyle(canvas);
    ctx.strokeStyle = ctx.fillStyle = style.getPropertyValue('--ink').trim() || '#111';
    drawStrokes(ctx, this.strokes, (p) => ({ x: p.x * w, y: p.y * h }), 0.075 * w);
  }
}

/** Strokes as round-capped polylines; a lone tap is a dot. */
function drawStrokes(
  ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D,
  strokes: Stroke[],
  map: (p: Point) => Point,
  width: number,
): void {
  ctx.lineWidth = width;
  ctx.lineCap = ctx.lineJoin = 'round';
  for (const stroke of strokes) {
    const pts = stroke.map(map);
    if (pts.length === 1 || pts.every((p) => p.x === pts[0].x && p.y === pts[0].y)) {
      ctx.beginPath();
      ctx.arc(pts[0].x, pts[0].y, width / 2, 0, 2 * Math.PI);
      ctx.fill();
      continue;
    }
    ctx.beginPath();
    ctx.moveTo(pts[0].x, pts[0].y);
    for (const p of pts.slice(1)) ctx.lineTo(p.x, p.y);
    ctx.stroke();
  }
}

let bitmap: OffscreenCanvasRenderingContext2D | null = null;

/** The strokes as an 8×8 image, row-major, values 0..1 (null when nothing is drawn). */
export function toDigit(strokes: Stroke[], aspect = 1): Float32Array | null {
  const pts = strokes.flat();
  if (pts.length === 0) return null;
  // Work in pad pixels of equal size on both axes (aspect = width / height of the pad).
  const xs = pts.map((p) => p.x * aspect),
    ys = pts.map((p) => p.y);
  const x0 = Math.min(...xs),
    x1 = Math.max(...xs),
    y0 = Math.min(...ys),
    y1 = Math.max(...ys);
  const inner = 32 - PEN_32;
  const span = Math.max(x1 - x0, y1 - y0, 1e-6);
  // A dot or a dash stays small rather than being blown up to fill the box.
  const scale = Math.min(inner / span, inner / 0.15);
  const cx = (x0 + x1) / 2,
    cy = (y0 + y1) / 2;
  bitmap ??= new OffscreenCanvas(32, 32).getContext('2d', { willReadFrequently: true })!;
  bitmap.clearRect(0, 0, 32, 32);
  bitmap.fillStyle = bitmap.strokeStyle = '#000';
  drawStrokes(bitmap, strokes, (p) => ({ x: 16 + (p.x * aspect - cx) * scale, y: 16 + (p.y - cy) * scale }), PEN_32);
  const alpha = bitmap.getImageData(0, 0, 32, 32).data;
  const out = new Float32Array(64);
  for (let y = 0; y < 32; y++) {
    for (let x = 0; x < 32; x++) out[(y >> 2) * 8 + (x >> 2)] += alpha[(y * 32 + x) * 4 + 3] / 255;
  }
  for (let i = 0; i < 64; i++) out[i] = Math.min(1, out[i] / 16);
  return out;
}
