// SPDX-License-Identifier: BSD-3-Clause
// The plots under the 3-D view (SVG): series against time with a cursor that follows the
// timeline (click or drag a plot to seek), minima marked, collisions shaded.  When two plans are
// compared, the second one's series are dashed and the legend names each plan.

const SVG_NS = 'http://www.w3.org/2000/svg';
const GHOST_DASH = '5 3';

// At most `count` ticks 1, 2 or 5 times a power of ten apart, each labelled with the decimals
// its step needs (0.5 s apart: "1.5", never "1.50").
function niceTicks(lo, hi, count) {
  const span = hi - lo || 1;
  const raw = span / Math.max(count, 1), mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw * (1 - 1e-9)) || 10 * mag;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const ticks = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * span; ++k)
    ticks.push({ value: k * step, label: k ? (k * step).toFixed(decimals) : '0' });
  return ticks;
}
// Plot labels take this much room (px) at 10 px type: a time tick's, a value tick's height.
const TIME_TICK_PX = 42, VALUE_TICK_PX = 24;

// Whether two rectangles {x, y, width, height} overlap.
const overlaps = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width &&
  a.y < b.y + b.height && b.y < a.y + a.height;
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
    // Drawn again at its new size when the layout changes it (a still's column, a narrow window).
    new ResizeObserver(() => {
      if (plot.drawn && (svg.clientWidth !== plot.drawn.W || svg.clientHeight !== plot.drawn.H))
        this.draw(plot);
    }).observe(svg);
    return plot;
  }

  drawAll() { this.plots.forEach((p) => this.draw(p)); }
  placeCursors() { this.plots.forEach((p) => this.placeCursor(p)); }

  draw(plot) {
    const svg = plot.svg;
    while (svg.firstChild) svg.firstChild.remove();
    plot.drawn = { W: svg.clientWidth, H: svg.clientHeight };
    const W = Math.max(svg.clientWidth, 50), H = Math.max(svg.clientHeight, 40);
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    const m = { l: 42, r: 16, t: 6, b: 20 };
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
    // As many ticks as fit without their labels touching.
    for (const { value, label } of niceTicks(lo, hi,
      Math.min(4, Math.floor((H - m.t - m.b) / VALUE_TICK_PX)))) {
      svgEl('line', { class: 'grid', x1: m.l, x2: W - m.r, y1: Y(value), y2: Y(value) }, svg);
      svgEl('text', { x: m.l - 4, y: Y(value) + 3, 'text-anchor': 'end' }, svg).textContent = label;
    }
    if (this.duration > 0) {  // a rest pose has no time axis
      for (const { value, label } of niceTicks(0, t1,
        Math.min(8, Math.floor((W - m.l - m.r) / TIME_TICK_PX))))
        svgEl('text', { x: X(value), y: H - 4, 'text-anchor': 'middle' }, svg).textContent = label;
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
    // Each marker's label beside it, inside the plot, above or below it where another label
    // already is.
    const placed = [];
    for (const mk of plot.markers) {
      const x = X(mk.t), y = Y(mk.value);
      svgEl('circle', { class: mk.plan ? 'min-marker ghost' : 'min-marker', cx: x, cy: y, r: 3.5 },
        svg);
      if (!mk.label) continue;
      const label = svgEl('text', { class: mk.plan ? 'min-label ghost' : 'min-label' }, svg);
      label.textContent = mk.label;
      const width = label.getComputedTextLength(), height = 11;
      const inside = (left) => Math.min(Math.max(left, m.l + 2), W - m.r - width);
      const before = inside(x - 6 - width), after = inside(x + 6);
      const lefts = x > W / 2 ? [before, after] : [after, before];
      const bases = [y - 6, y + 14, y - 18, y + 26].map((base) =>
        Math.min(Math.max(base, m.t + height), H - m.b - 2));
      const boxes = lefts.flatMap((left) => bases.map((base) =>
        ({ x: left, y: base - height + 2, width, height })));
      // Where every place is taken (a plot too small), the marker stays without its label.
      const box = boxes.find((b) => !placed.some((p) => overlaps(p, b)));
      if (!box) { label.remove(); continue; }
      label.setAttribute('x', box.x);
      label.setAttribute('y', box.y + height - 2);
      placed.push(box);
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
