// Per-epoch progress: on a terminal a bar redrawn in place (at most ~10 times a second);
// in CI logs and pipes only the finished epoch's summary line, so logs stay readable.

export interface Sink {
  write(s: string): unknown;
  isTTY?: boolean;
}

const WIDTH = 24;
const CLEAR = '\r\x1b[2K';

export class Progress {
  private last = 0;
  constructor(
    private readonly out: Sink,
    private readonly label: string,
    private readonly steps: number,
  ) {}

  /** Step `done` of this epoch finished with the running mean loss `loss` after `seconds`. */
  tick(done: number, loss: number, seconds: number): void {
    if (!this.out.isTTY) return;
    const now = performance.now();
    if (done < this.steps && now - this.last < 100) return;
    this.last = now;
    const filled = Math.round((WIDTH * done) / this.steps);
    const bar = '='.repeat(filled) + (filled < WIDTH ? '>' + ' '.repeat(WIDTH - filled - 1) : '');
    this.out.write(`${CLEAR}${this.label} [${bar}] ${done}/${this.steps}  ${rate(done, seconds)} steps/s  loss ${loss.toFixed(4)}`);
  }

  /** Replaces the bar (if any) with the epoch's summary line. */
  finish(line: string): void {
    this.out.write(`${this.out.isTTY ? CLEAR : ''}${line}\n`);
  }
}

export function rate(steps: number, seconds: number): string {
  return seconds > 0 ? (steps / seconds).toFixed(0) : '-';
}

export const percent = (fraction: number): string => `${(100 * fraction).toFixed(2)}%`;

/** "1 thread", "2 threads": the pool a run got (after init's fallbacks), for a run's header. */
export const threadsText = (n: number): string => (n === 1 ? '1 thread' : `${n} threads`);
