// Minimal SVG and DOM building helpers (hand-drawn charts; no chart library).

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs = {}, children = []) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c);
  return node;
}

export function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') node.textContent = v;
    else if (k === 'class') node.className = v;
    else if (k === 'style') node.style.cssText = v;  // CSSOM: allowed by the page's CSP, unlike style="".
    else node.setAttribute(k, String(v));
  }
  for (const c of children) node.append(c);
  return node;
}

export function title(text) {
  const t = document.createElementNS(SVG_NS, 'title');
  t.textContent = text;
  return t;
}

// A line chart of [{x, y}] series in a w×h box; y from 0 to the largest value. series: [{points, cls, label}].
export function lineChart(width, height, series, {xMin, xMax, yUnit = ''} = {}) {
  const pad = {l: 44, r: 8, t: 8, b: 18};
  const all = series.flatMap((s) => s.points);
  const x0 = xMin ?? Math.min(...all.map((p) => p.x), 0);
  const x1 = xMax ?? Math.max(...all.map((p) => p.x), x0 + 1);
  const yMax = Math.max(...all.map((p) => p.y), 1e-9);
  const sx = (x) => pad.l + ((x - x0) / Math.max(1e-9, x1 - x0)) * (width - pad.l - pad.r);
  const sy = (y) => height - pad.b - (y / yMax) * (height - pad.t - pad.b);
  const root = svg('svg', {viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img'});
  root.append(svg('line', {x1: pad.l, y1: sy(0), x2: width - pad.r, y2: sy(0), class: 'axis'}));
  const label = (v) => (yUnit === 's' ? formatSeconds(v) : `${+v.toPrecision(3)}${yUnit}`);
  for (const f of [0.5, 1]) {
    root.append(svg('line', {x1: pad.l, y1: sy(yMax * f), x2: width - pad.r, y2: sy(yMax * f), class: 'grid'}));
    const t = svg('text', {x: pad.l - 4, y: sy(yMax * f) + 4, class: 'tick', 'text-anchor': 'end'});
    t.textContent = label(yMax * f);
    root.append(t);
  }
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points.map((p, i) => `${i ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join('');
    root.append(svg('path', {d, class: `line ${s.cls}`}, [title(s.label)]));
  }
  return root;
}

export function formatSeconds(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  if (s < 1e-3) return `${(s * 1e6).toFixed(0)} µs`;
  if (s < 1) return `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)} ms`;
  return `${s.toFixed(s < 10 ? 2 : 1)} s`;
}
