// A hand-drawn canvas chart of buffer level and bitrate over the last minute, with
// stalls shaded. Redrawn on every stats tick; cheap at 4 Hz and ~240 points.

export interface Sample {
  /** performance.now() in ms */
  t: number;
  bufferS: number;
  bitrateBps: number | null;
  stalled: boolean;
}

const WINDOW_MS = 60_000;
const COLORS = {
  grid: '#e3e6ea',
  axis: '#5f6b7a',
  buffer: '#1f6feb',
  bufferFill: 'rgba(31, 111, 235, 0.12)',
  bitrate: '#d9730d',
  stall: 'rgba(207, 34, 46, 0.18)',
};

export class Chart {
  private samples: Sample[] = [];
  private readonly ctx: CanvasRenderingContext2D;

  constructor(private readonly canvas: HTMLCanvasElement) {
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('canvas 2d context unavailable');
    this.ctx = ctx;
  }

  clear(): void {
    this.samples = [];
    this.draw();
  }

  push(s: Sample): void {
    this.samples.push(s);
    const cutoff = s.t - WINDOW_MS - 1000;
    while (this.samples.length && this.samples[0].t < cutoff) this.samples.shift();
    this.draw();
  }

  /** Size the backing store to the element's CSS size times the device pixel ratio. */
  private fit(): { w: number; h: number } {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, this.canvas.clientWidth);
    const h = Math.max(1, this.canvas.clientHeight);
    if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
      this.canvas.width = Math.round(w * dpr);
      this.canvas.height = Math.round(h * dpr);
    }
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { w, h };
  }

  draw(): void {
    const { w, h } = this.fit();
    const c = this.ctx;
    c.clearRect(0, 0, w, h);
    const pad = { l: 34, r: 40, t: 10, b: 22 };
    const pw = w - pad.l - pad.r;
    const ph = h - pad.t - pad.b;
    if (pw < 20 || ph < 20) return;

    const now = this.samples.length ? this.samples[this.samples.length - 1].t : performance.now();
    const x = (t: number) => pad.l + pw * (1 - (now - t) / WINDOW_MS);
    const maxBuf = axisMax(Math.max(4, ...this.samples.map((s) => s.bufferS)) * 1.05);
    const maxRate = axisMax((Math.max(0.4e6, ...this.samples.map((s) => s.bitrateBps ?? 0)) * 1.1) / 1e6);
    const yBuf = (v: number) => pad.t + ph * (1 - Math.min(v, maxBuf) / maxBuf);
    const yRate = (bps: number) => pad.t + ph * (1 - Math.min(bps / 1e6, maxRate) / maxRate);

    c.font = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    c.lineWidth = 1;

    // Grid and axes: 4 horizontal lines, a vertical line every 10 s.
    c.strokeStyle = COLORS.grid;
    c.fillStyle = COLORS.axis;
    c.textBaseline = 'middle';
    for (let i = 0; i <= 4; i++) {
      const y = pad.t + (ph * i) / 4;
      c.beginPath();
      c.moveTo(pad.l, y + 0.5);
      c.lineTo(pad.l + pw, y + 0.5);
      c.stroke();
      const frac = 1 - i / 4;
      c.textAlign = 'right';
      c.fillStyle = COLORS.buffer;
      c.fillText(trim(maxBuf * frac), pad.l - 6, y);
      c.textAlign = 'left';
      c.fillStyle = COLORS.bitrate;
      c.fillText(trim(maxRate * frac), pad.l + pw + 6, y);
    }
    c.textAlign = 'center';
    c.textBaseline = 'top';
    c.fillStyle = COLORS.axis;
    for (let s = 0; s <= 60; s += 10) {
      const xx = pad.l + pw * (1 - s / 60);
      c.strokeStyle = COLORS.grid;
      c.beginPath();
      c.moveTo(xx + 0.5, pad.t);
      c.lineTo(xx + 0.5, pad.t + ph);
      c.stroke();
      c.fillText(s === 0 ? 'now' : `−${s} s`, xx, pad.t + ph + 5);
    }

    const pts = this.samples.filter((s) => now - s.t <= WINDOW_MS);
    if (pts.length < 2) return;

    // Stalls: shaded bands.
    c.fillStyle = COLORS.stall;
    for (let i = 0; i < pts.length - 1; i++) {
      if (pts[i].stalled) c.fillRect(x(pts[i].t), pad.t, x(pts[i + 1].t) - x(pts[i].t), ph);
    }

    // Buffer level: filled area and line.
    c.beginPath();
    c.moveTo(x(pts[0].t), yBuf(0));
    for (const p of pts) c.lineTo(x(p.t), yBuf(p.bufferS));
    c.lineTo(x(pts[pts.length - 1].t), yBuf(0));
    c.closePath();
    c.fillStyle = COLORS.bufferFill;
    c.fill();
    c.beginPath();
    pts.forEach((p, i) => (i ? c.lineTo(x(p.t), yBuf(p.bufferS)) : c.moveTo(x(p.t), yBuf(p.bufferS))));
    c.strokeStyle = COLORS.buffer;
    c.lineWidth = 1.5;
    c.stroke();

    // Bitrate: a step line (it changes only at switches).
    c.beginPath();
    let started = false;
    let lastY = 0;
    for (const p of pts) {
      if (p.bitrateBps == null) {
        started = false;
        continue;
      }
      const y = yRate(p.bitrateBps);
      if (!started) {
        c.moveTo(x(p.t), y);
        started = true;
      } else {
        c.lineTo(x(p.t), lastY);
        c.lineTo(x(p.t), y);
      }
      lastY = y;
    }
    c.strokeStyle = COLORS.bitrate;
    c.lineWidth = 2;
    c.stroke();
  }
}

/** The top of an axis with 4 intervals: 4 × a step of 1, 2, 2.5 or 5 times a power of ten. */
function axisMax(v: number): number {
  const raw = Math.max(v, 1e-9) / 4;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return 4 * m * p;
  return 40 * p;
}

function trim(v: number): string {
  return String(Number(v.toFixed(2)));
}
