// The live dashboard: reads GET /dashboard/events (docs/server.md, "Dashboard feed") and draws the step
// timeline (rows per step split into prefill/decode, one lane per request, step time), the engine gauges,
// per-request progress and the per-second throughput / TTFT / ITL series.

import {HttpError, streamEvents} from './api.js';
import {el, formatSeconds, lineChart, svg, title} from './svg.js';

const VISIBLE_STEPS = 120;
const KEPT_STEPS = 600;
const MAX_LANES = 16;
const SERIES_SECONDS = 300;

export class Dashboard {
  constructor(root, {onAuthNeeded, onServerInfo}) {
    this.root = root;
    this.onAuthNeeded = onAuthNeeded;
    this.onServerInfo = onServerInfo;
    this.steps = [];
    this.requests = [];
    this.finished = [];
    this.series = new Map();
    this.engine = null;
    this.server = null;
    this.labels = new Map();
    this.peakRequestsInStep = 0;
    this.skipped = 0;
    this.pending = false;
    this.abort = null;
  }

  connect() {
    this.abort?.abort();
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.setStatus('connecting…', 'wait');
    streamEvents('/dashboard/events?interval_ms=250', {signal, onEvent: (e) => this.onEvent(e)})
      .then(() => this.retry('the server ended the feed'))
      .catch((error) => {
        if (signal.aborted) return;
        if (error instanceof HttpError && error.status === 401) {
          this.setStatus('API key needed', 'bad');
          this.onAuthNeeded?.();
          return;
        }
        this.retry(error.message);
      });
  }

  retry(why) {
    this.setStatus(`disconnected (${why}); retrying`, 'bad');
    setTimeout(() => this.connect(), 2000);
  }

  setStatus(text, cls) {
    const node = this.root.querySelector('#feed-status');
    node.textContent = text;
    node.className = `status ${cls}`;
  }

  onEvent({event, data}) {
    const u = JSON.parse(data);
    if (event === 'snapshot') {
      this.server = u.server;
      this.steps = [];
      this.series.clear();
      this.finished = [];
      this.onServerInfo?.(u.server);
      this.setStatus('live', 'ok');
    }
    for (const s of u.steps) {
      this.steps.push(s);
      if (s.chunks.length > this.peakRequestsInStep) this.peakRequestsInStep = s.chunks.length;
    }
    if (this.steps.length > KEPT_STEPS) this.steps.splice(0, this.steps.length - KEPT_STEPS);
    this.skipped += u.steps_skipped;
    this.requests = u.requests;
    for (const r of u.requests) this.labels.set(r.id, r.label);
    for (const f of u.finished) {
      this.finished.push(f);
      this.labels.set(f.id, f.label);
    }
    if (this.finished.length > 40) this.finished.splice(0, this.finished.length - 40);
    for (const s of u.series) this.series.set(s.second, s);
    const newest = Math.floor(u.t) - 1;
    for (const k of this.series.keys()) if (k < newest - SERIES_SECONDS) this.series.delete(k);
    this.now = u.t;
    this.engine = u.engine;
    if (!this.pending) {
      this.pending = true;
      requestAnimationFrame(() => {
        this.pending = false;
        this.render();
      });
    }
  }

  render() {
    this.renderGauges();
    this.renderTimeline();
    this.renderRequests();
    this.renderSeries();
  }

  renderGauges() {
    const e = this.engine;
    if (!e) return;
    const set = (id, text) => (this.root.querySelector(id).textContent = text);
    set('#stat-running', e.running);
    set('#stat-waiting', e.waiting);
    set('#stat-steps', e.steps.toLocaleString());
    set('#stat-tokens', e.generation_tokens_total.toLocaleString());
    set('#stat-hit', !e.prefix_caching ? 'off' : e.prefix_cache_hit_ratio === null ? 'no data yet'
        : `${(e.prefix_cache_hit_ratio * 100).toFixed(1)} %`);
    set('#stat-finished',
        `stop ${e.finished.stop} · length ${e.finished.length} · cancelled ${e.finished.cancelled} · error ${e.finished.error}`);
    set('#stat-preempt', e.preemptions_total);
    const total = Math.max(1, e.kv_blocks_total);
    const kv = this.root.querySelector('#kv-bar');
    // Cached blocks (findable by their hash) are in use or idle; idle ones also count as free.
    kv.replaceChildren(el('span', {class: 'kv-used', style: `width:${(100 * e.kv_blocks_used) / total}%`}));
    set('#stat-kv', `${e.kv_blocks_used} used · ${e.kv_blocks_free} free of ${e.kv_blocks_total} ` +
        `(${e.block_tokens} tokens each) · ${e.kv_blocks_cached} cached` +
        (e.prefix_caching ? '' : ' (prefix caching off)') +
        (e.recurrent_slots_total > 0
          ? ` · recurrent state slots ${e.recurrent_slots_used} used of ${e.recurrent_slots_total}` : ''));
    const recent = this.steps.slice(-VISIBLE_STEPS);
    const maxInWindow = recent.reduce((m, s) => Math.max(m, s.chunks.length), 0);
    set('#stat-batch', `${maxInWindow} now · ${this.peakRequestsInStep} peak`);
    this.root.querySelector('#timeline').dataset.peakRequests = String(this.peakRequestsInStep);
  }

  renderTimeline() {
    const steps = this.steps.slice(-VISIBLE_STEPS);
    const box = this.root.querySelector('#timeline');
    if (!steps.length) {
      box.replaceChildren(el('p', {class: 'muted', text: 'No steps yet: send a request (the playground below).'}));
      return;
    }
    // Lanes: the requests seen in the visible steps, newest last.
    const ids = new Set();
    for (const s of steps) {
      for (const c of s.chunks) ids.add(c[0]);
      for (const id of s.waiting) ids.add(id);
      for (const id of s.preempted_waiting) ids.add(id);
    }
    const lanes = [...ids].sort((a, b) => a - b).slice(-MAX_LANES);
    const laneIndex = new Map(lanes.map((id, i) => [id, i]));
    const W = 960, labelW = 130, barH = 70, laneH = 14, timeH = 40, gap = 10;
    const colW = (W - labelW) / VISIBLE_STEPS;
    const H = barH + gap + lanes.length * laneH + gap + timeH + 14;
    const root = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'timeline', role: 'img'});
    const maxRows = Math.max(1, ...steps.map((s) => s.prefill + s.decode));
    const maxMs = Math.max(1e-3, ...steps.map((s) => s.ms));
    const x0 = labelW + (VISIBLE_STEPS - steps.length) * colW;
    const text = (x, y, t, cls = 'tick', anchor = 'end') => {
      const n = svg('text', {x, y, class: cls, 'text-anchor': anchor});
      n.textContent = t;
      return n;
    };
    root.append(text(labelW - 6, 12, `rows (max ${maxRows})`));
    root.append(text(labelW - 6, barH, 'prefill / decode'));
    const laneTop = barH + gap;
    lanes.forEach((id, i) => {
      const label = this.labels.get(id) || '';
      const lane = text(labelW - 6, laneTop + i * laneH + laneH - 3, `#${id} ${label.slice(-10)}`);
      lane.append(title(label));
      root.append(lane);
    });
    const timeTop = laneTop + lanes.length * laneH + gap;
    root.append(text(labelW - 6, timeTop + 12, 'step time'));
    root.append(text(labelW - 6, timeTop + 26, `max ${formatSeconds(maxMs / 1e3)}`));
    steps.forEach((s, i) => {
      const x = x0 + i * colW;
      const decodeH = (s.decode / maxRows) * barH;
      const prefillH = (s.prefill / maxRows) * barH;
      const tip = `step ${s.step}: ${s.chunks.length} requests, ${s.decode} decode + ${s.prefill} prefill rows, ` +
          `${s.ms.toFixed(2)} ms`;
      const g = svg('g', {}, [title(tip)]);
      g.append(svg('rect', {x, y: barH - decodeH, width: colW * 0.9, height: decodeH, class: 'decode'}));
      g.append(svg('rect', {x, y: barH - decodeH - prefillH, width: colW * 0.9, height: prefillH, class: 'prefill'}));
      const cell = (id, cls) => {
        const lane = laneIndex.get(id);
        if (lane === undefined) return;
        g.append(svg('rect', {x, y: laneTop + lane * laneH + 1, width: colW * 0.95, height: laneH - 2, class: cls}));
      };
      for (const [id, , kind] of s.chunks) cell(id, kind === 'd' ? 'decode' : 'prefill');
      for (const id of s.waiting) cell(id, 'waiting');
      for (const id of s.preempted_waiting) cell(id, 'preempted');
      for (const id of s.preempted) cell(id, 'preempted');
      const th = (s.ms / maxMs) * timeH;
      g.append(svg('rect', {x, y: timeTop + timeH - th, width: colW * 0.9, height: th, class: 'steptime'}));
      root.append(g);
    });
    const last = steps[steps.length - 1];
    root.append(text(W, H - 2, `steps ${steps[0].step}–${last.step}` +
        (this.skipped ? ` (${this.skipped} steps not shown: too fast to send)` : ''), 'tick', 'end'));
    box.replaceChildren(root);
  }

  renderRequests() {
    const body = this.root.querySelector('#requests tbody');
    const rows = [];
    for (const r of this.requests) {
      const pct = Math.min(100, (100 * r.generated) / Math.max(1, r.max_tokens));
      rows.push(el('tr', {class: `state-${r.state}`}, [
        el('td', {text: `#${r.id}`}),
        el('td', {text: r.label, class: 'label'}),
        el('td', {text: r.state}),
        el('td', {}, [el('div', {class: 'progress'}, [el('span', {style: `width:${pct}%`})]),
          el('small', {text: `${r.generated} / ${r.max_tokens}`})]),
        el('td', {text: formatSeconds(r.ttft_s)}),
        el('td', {text: r.tokens_per_s === null ? '—' : r.tokens_per_s.toFixed(1)}),
        el('td', {text: '—'}),
      ]));
    }
    for (const f of [...this.finished].reverse().slice(0, 12)) {
      const tps = f.tpot_s > 0 ? (1 / f.tpot_s).toFixed(1) : '—';
      rows.push(el('tr', {class: 'finished'}, [
        el('td', {text: `#${f.id}`}),
        el('td', {text: f.label, class: 'label'}),
        el('td', {text: 'finished'}),
        el('td', {text: `${f.generated} tokens`}),
        el('td', {text: formatSeconds(f.ttft_s)}),
        el('td', {text: tps}),
        el('td', {text: f.finish_reason, class: `reason-${f.finish_reason}`}),
      ]));
    }
    if (!rows.length) rows.push(el('tr', {}, [el('td', {colspan: 7, class: 'muted', text: 'No requests yet.'})]));
    body.replaceChildren(...rows);
  }

  renderSeries() {
    const newest = Math.floor(this.now ?? 0) - 1;
    const from = newest - SERIES_SECONDS + 1;
    const tokens = [], ttft = [], itl = [];
    for (let s = Math.max(0, from); s <= newest; ++s) {
      const d = this.series.get(s);
      tokens.push({x: s - newest, y: d ? d.tokens : 0});
      if (d?.ttft_s != null) ttft.push({x: s - newest, y: d.ttft_s});
      if (d?.itl_s != null) itl.push({x: s - newest, y: d.itl_s});
    }
    const opts = {xMin: -SERIES_SECONDS + 1, xMax: 0};
    this.root.querySelector('#chart-throughput').replaceChildren(
        lineChart(460, 120, [{points: tokens, cls: 'tokens', label: 'tokens/s'}], opts));
    this.root.querySelector('#chart-latency').replaceChildren(
        lineChart(460, 120, [{points: ttft, cls: 'ttft', label: 'TTFT (s)'},
          {points: itl, cls: 'itl', label: 'inter-token latency (s)'}], {...opts, yUnit: 's'}));
  }
}
