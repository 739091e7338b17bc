// The grid of test digits with the model's current predictions: a fixed sample of the test set,
// or every mistake. Images are drawn once (8×8 canvases scaled up with pixelated rendering);
// an evaluation only rewrites the captions.

const SAMPLE = 60;
type Filter = 'sample' | 'mistakes';

export class DigitGrid {
  private pixels: Float32Array = new Float32Array(0);
  private labels: Int32Array = new Int32Array(0);
  private predictions: Int32Array | null = null;
  private filter: Filter = 'sample';
  private readonly tiles = new Map<number, HTMLElement>();

  constructor(
    private readonly root: HTMLElement,
    private readonly summary: HTMLElement,
    private readonly mistakesButton: HTMLButtonElement,
  ) {}

  get size(): number {
    return this.labels.length;
  }

  setData(pixels: Float32Array, labels: Int32Array): void {
    this.pixels = pixels;
    this.labels = labels;
    this.render();
  }

  setPredictions(p: Int32Array | null): void {
    this.predictions = p;
    this.render();
  }

  setFilter(f: Filter): void {
    this.filter = f;
    this.render();
  }

  private tile(i: number): HTMLElement {
    let el = this.tiles.get(i);
    if (el) return el;
    el = document.createElement('figure');
    el.className = 'tile';
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 8;
    const ctx = canvas.getContext('2d')!;
    const img = ctx.createImageData(8, 8);
    for (let k = 0; k < 64; k++) {
      // Dark ink on paper, like the drawing pad.
      const v = Math.round(255 - 225 * this.pixels[i * 64 + k]);
      img.data.set([v, v, Math.min(255, v + 6), 255], k * 4);
    }
    ctx.putImageData(img, 0, 0);
    const caption = document.createElement('figcaption');
    el.append(canvas, caption);
    this.tiles.set(i, el);
    return el;
  }

  private render(): void {
    const n = this.labels.length,
      p = this.predictions;
    const wrong: number[] = [];
    if (p) for (let i = 0; i < n; i++) if (p[i] !== this.labels[i]) wrong.push(i);
    const showMistakes = this.filter === 'mistakes' && p !== null;
    const shown = showMistakes ? wrong.slice(0, SAMPLE) : Array.from({ length: Math.min(SAMPLE, n) }, (_, i) => i);
    const nodes = shown.map((i) => {
      const el = this.tile(i);
      const bad = p !== null && p[i] !== this.labels[i];
      el.classList.toggle('wrong', bad);
      el.title = p ? `label ${this.labels[i]}, predicted ${p[i]}` : `label ${this.labels[i]}`;
      const caption = el.querySelector('figcaption')!;
      caption.innerHTML = p === null ? '<b>?</b>' : bad ? `<b>${p[i]}</b><small>is ${this.labels[i]}</small>` : `<b>${p[i]}</b>`;
      return el;
    });
    this.root.replaceChildren(...nodes);
    if (showMistakes && wrong.length === 0) this.root.innerHTML = '<p class="empty">No mistakes on the test set.</p>';
    this.mistakesButton.textContent = p ? `Mistakes (${wrong.length})` : 'Mistakes';
    if (p === null) this.summary.textContent = `${n} test digits, not evaluated yet`;
    else {
      const right = n - wrong.length;
      const rest = showMistakes && wrong.length > SAMPLE ? `, showing the first ${SAMPLE}` : '';
      this.summary.textContent = `${right} of ${n} test digits right, ${wrong.length} wrong${rest}`;
    }
  }
}
