// A live line chart drawn with the canvas 2D API (no library): the last `capacity` samples of a few
// series, the y axis from 0 to a round number above the largest one shown, and a legend that names each
// series with its latest value. Series values may be null (not reported): no line is drawn there.

export const PALETTE = ['#e8590c', '#1c7ed6', '#2f9e44', '#ae3ec9', '#f59f00'];

export function formatNumber(v) {
  if (v === null || !Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${(v / 1e3).toFixed(1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

export function formatBytes(v) {
  if (v === null || !Number.isFinite(v)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  const digits = i === 0 || Number.isInteger(v) || Math.abs(v) >= 100 ? 0 : 1;
  return `${v.toFixed(digits)} ${units[i]}`;
}

// The y axis for values up to `v`: a top of 1, 2 or 5 times a power of ten (at least 1) and the number of
// steps that makes each step round (0.2, 0.5, 1 times that power). With `binary`, round in the unit of
// 1024^k that `v` is counted in (so bytes read 100 KiB, not 97.7 KiB).
function axis(v, binary) {
  const unit = binary && v >= 1024 ? 1024 ** Math.floor(Math.log(v) / Math.log(1024)) : 1;
  const scaled = v / unit;
  const p = scaled > 1 ? 10 ** Math.floor(Math.log10(scaled)) : 1;
  for (const [m, steps] of [[1, 5], [2, 4], [5, 5], [10, 5]]) {
    if (m * p >= scaled) return { top: m * p * unit, steps };
  }
  return { top: 10 * p * unit, steps: 5 };
}

export class LineChart {
  // Appends a <figure> to `parent`. series: names; format: number -> axis and legend text (formatBytes
  // also rounds the axis in KiB, MiB, ...).
  constructor(parent, { title, series, format = formatNumber, capacity = 120 }) {
    this.series = series;
    this.format = format;
    this.binary = format === formatBytes;
    this.capacity = capacity;
    this.samples = [];  // arrays of values, oldest first
    const figure = document.createElement('figure');
    figure.className = 'chart';
    const caption = document.createElement('figcaption');
    caption.textContent = title;
    this.canvas = document.createElement('canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute('aria-label', title);
    const legend = document.createElement('ul');
    legend.className = 'legend';
    this.legendValues = series.map((name, i) => {
      const item = document.createElement('li');
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.backgroundColor = PALETTE[i % PALETTE.length];  // CSSOM, which the CSP allows
      const value = document.createElement('span');
      value.className = 'legend-value';
      item.append(swatch, `${name} `, value);
      legend.append(item);
      return value;
    });
    figure.append(caption, this.canvas, legend);
    parent.append(figure);
  }

  push(values) {
    this.samples.push(values);
    if (this.samples.length > this.capacity) this.samples.shift();
    values.forEach((v, i) => {
      this.legendValues[i].textContent = this.format(v);
    });
    this.draw();
  }

  draw() {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const width = c.clientWidth;
    const height = c.clientHeight;
    if (width === 0 || height === 0) return;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(height * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(height * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    const style = getComputedStyle(document.documentElement);
    const muted = style.getPropertyValue('--muted').trim() || '#888';
    const grid = style.getPropertyValue('--grid').trim() || '#ddd';
    const box = { left: 64, right: width - 8, top: 8, bottom: height - 8 };
    const values = this.samples.flat().filter((v) => v !== null && Number.isFinite(v));
    const { top, steps } = axis(Math.max(0, ...values), this.binary);
    const y = (v) => box.bottom - (v / top) * (box.bottom - box.top);
    const x = (i) => box.right - ((this.samples.length - 1 - i) / (this.capacity - 1)) * (box.right - box.left);

    g.font = '11px system-ui, sans-serif';
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    g.lineWidth = 1;
    for (let k = 0; k <= steps; k++) {
      const v = (top * k) / steps;
      g.strokeStyle = grid;
      g.beginPath();
      g.moveTo(box.left, Math.round(y(v)) + 0.5);
      g.lineTo(box.right, Math.round(y(v)) + 0.5);
      g.stroke();
      g.fillStyle = muted;
      g.fillText(this.format(v), box.left - 6, y(v));
    }
    g.lineWidth = 2;
    this.series.forEach((_, s) => {
      g.strokeStyle = PALETTE[s % PALETTE.length];
      g.beginPath();
      let drawing = false;
      this.samples.forEach((sample, i) => {
        const v = sample[s];
        if (v === null || !Number.isFinite(v)) {
          drawing = false;
          return;
        }
        if (drawing) g.lineTo(x(i), y(v));
        else g.moveTo(x(i), y(v));
        drawing = true;
      });
      g.stroke();
    });
  }
}
