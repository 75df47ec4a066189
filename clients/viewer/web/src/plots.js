// SPDX-License-Identifier: BSD-3-Clause
// The plots under the 3-D view (SVG): series against time with a cursor that follows the
// timeline (click or drag a plot to seek), minima marked, collisions shaded.  When two plans are
// compared, the second one's series are dashed and the legend names each plan.

const SVG_NS = 'http://www.w3.org/2000/svg';
const GHOST_DASH = '5 3';

function niceTicks(lo, hi, count) {
  const span = hi - lo || 1;
  const raw = span / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) ticks.push(v);
  return ticks;
}
const fmt = (v) => Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toPrecision(3) :
  v === 0 ? '0' : v.toPrecision(2);
function svgEl(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}
function legendItem(label, swatchStyle) {
  const item = document.createElement('span');
  const swatch = document.createElement('i');
  Object.assign(swatch.style, swatchStyle);
  item.append(swatch, label);
  return item;
}

export class Plots {
  // duration: the time axis's end (s); plans: the plans' names, the shown one first; seek(t):
  // what a click on a plot does; now(): the time the cursors show.
  constructor(container, { duration, plans, seek, now }) {
    Object.assign(this, { container, duration, plans, seek, now });
    this.plots = [];
  }

  // series: [{name, plan (index into plans), t (s), values, color}];
  // options: markers [{t, value, label, plan}], collisions [{t, plan}] (shaded from t on),
  // includeZero (the value axis starts at 0 or below).
  add(id, title, unit, series, { markers = [], collisions = [], includeZero = true } = {}) {
    const div = document.createElement('div');
    div.className = 'plot';
    div.id = 'plot-' + id;
    const h2 = document.createElement('h2');
    const small = document.createElement('small');
    small.textContent = unit + (this.duration > 0 ? ' against time (s)' : '');
    h2.append(title + ' ', small);
    const svg = svgEl('svg', { role: 'img', 'aria-label': title });
    const legend = document.createElement('div');
    legend.className = 'legend';
    for (const s of series.filter((x) => x.plan === 0))
      legend.append(legendItem(s.name, { background: s.color }));
    if (this.plans.length > 1)  // line styles name the plans
      this.plans.forEach((name, k) => legend.append(legendItem(name, k === 0
        ? { background: '#5f6b76' }
        : { background: 'repeating-linear-gradient(to right, #5f6b76 0 4px, transparent 4px 7px)' })));
    div.append(h2, svg, legend);
    this.container.append(div);
    const plot = { id, svg, series, markers, collisions, includeZero, cursor: null, x: null };
    this.plots.push(plot);
    const seek = (ev) => {
      if (!plot.x || !(this.duration > 0)) return;
      const r = svg.getBoundingClientRect();
      this.seek(plot.x.invert(ev.clientX - r.left));
    };
    svg.addEventListener('pointerdown', (ev) => { svg.setPointerCapture(ev.pointerId); seek(ev); });
    svg.addEventListener('pointermove', (ev) => { if (ev.buttons & 1) seek(ev); });
    return plot;
  }

  drawAll() { this.plots.forEach((p) => this.draw(p)); }
  placeCursors() { this.plots.forEach((p) => this.placeCursor(p)); }

  draw(plot) {
    const svg = plot.svg;
    while (svg.firstChild) svg.firstChild.remove();
    const W = Math.max(svg.clientWidth, 50), H = Math.max(svg.clientHeight, 40);
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    const m = { l: 42, r: 16, t: 6, b: 18 };
    let lo = Infinity, hi = -Infinity;
    for (const s of plot.series)
      for (const v of s.values) if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (!Number.isFinite(lo)) { lo = 0; hi = 1; }
    if (plot.includeZero) lo = Math.min(lo, 0);
    if (hi - lo < 1e-9) { hi += 0.5; lo -= 0.5; }
    const pad = 0.05 * (hi - lo);
    lo -= plot.includeZero ? 0 : pad; hi += pad;
    const t1 = Math.max(this.duration, 1e-9);
    const X = (t) => m.l + (W - m.l - m.r) * t / t1;
    X.invert = (px) => (px - m.l) / (W - m.l - m.r) * t1;
    const Y = (v) => H - m.b - (H - m.t - m.b) * (v - lo) / (hi - lo);
    plot.x = X;
    for (const v of niceTicks(lo, hi, 4)) {
      svgEl('line', { class: 'grid', x1: m.l, x2: W - m.r, y1: Y(v), y2: Y(v) }, svg);
      svgEl('text', { x: m.l - 4, y: Y(v) + 3, 'text-anchor': 'end' }, svg).textContent = fmt(v);
    }
    if (this.duration > 0) {  // a rest pose has no time axis
      for (const t of niceTicks(0, t1, 8))
        svgEl('text', { x: X(t), y: H - 5, 'text-anchor': 'middle' }, svg).textContent = fmt(t);
    }
    for (const c of plot.collisions) {
      const x0 = X(c.t);
      svgEl('rect', { class: c.plan ? 'collision ghost' : 'collision', x: x0, y: m.t,
        width: Math.max(W - m.r - x0, 1), height: H - m.t - m.b }, svg);
    }
    svgEl('path', { class: 'axis', d: `M${m.l},${m.t}V${H - m.b}H${W - m.r}` }, svg);
    for (const s of plot.series) {
      let d = '';
      s.values.forEach((v, i) => {
        if (Number.isFinite(v)) d += (d ? 'L' : 'M') + X(s.t[i]).toFixed(1) + ',' + Y(v).toFixed(1);
      });
      if (s.values.length === 1 && d) d += 'H' + (W - m.r);
      const attrs = { class: s.plan ? 'series ghost' : 'series', d, stroke: s.color,
        'data-series': s.name, 'data-plan': this.plans[s.plan] };
      if (s.plan) attrs['stroke-dasharray'] = GHOST_DASH;
      svgEl('path', attrs, svg);
    }
    for (const mk of plot.markers) {
      const x = X(mk.t), y = Y(mk.value);
      svgEl('circle', { class: mk.plan ? 'min-marker ghost' : 'min-marker', cx: x, cy: y, r: 3.5 },
        svg);
      const label = svgEl('text', { class: mk.plan ? 'min-label ghost' : 'min-label',
        x: x + (x > W / 2 ? -6 : 6), y: y + (mk.plan ? 14 : -6),
        'text-anchor': x > W / 2 ? 'end' : 'start' }, svg);
      label.textContent = mk.label;
    }
    plot.cursor = svgEl('line', { class: 'cursor', y1: m.t, y2: H - m.b }, svg);
    this.placeCursor(plot);
  }

  placeCursor(plot) {
    if (!plot.cursor) return;
    const x = plot.x(this.now());
    plot.cursor.setAttribute('x1', x);
    plot.cursor.setAttribute('x2', x);
  }
}
