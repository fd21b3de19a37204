// The playground: a chat box (the model's chat template, via POST /v1/chat/completions, streamed) and the
// "split and run in parallel" experiment — one combined multi-question prompt answered three ways (combined,
// parallel, sequential), each mode's requests drawn as timelines while they run.

import {postJson, streamChat} from './api.js';
import {el, formatSeconds, svg, title} from './svg.js';

export class Chat {
  constructor(root, model) {
    this.root = root;
    this.model = model;
    this.messages = [];
    root.querySelector('#chat-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.send();
    });
    root.querySelector('#chat-clear').addEventListener('click', () => {
      this.messages = [];
      root.querySelector('#chat-log').replaceChildren();
    });
  }

  async send() {
    const input = this.root.querySelector('#chat-input');
    const text = input.value.trim();
    if (!text || this.busy) return;
    input.value = '';
    this.busy = true;
    const log = this.root.querySelector('#chat-log');
    log.append(el('div', {class: 'msg user', text}));
    const answer = el('div', {class: 'msg assistant streaming'});
    const meta = el('div', {class: 'meta'});
    log.append(answer, meta);
    this.messages.push({role: 'user', content: text});
    const maxTokens = Number(this.root.querySelector('#chat-max-tokens').value) || 128;
    let deltas = 0;
    let thinking = null;  // the reply's reasoning, shown above it as it streams
    try {
      const r = await streamChat({
        model: this.model(),
        messages: this.messages,
        maxTokens,
        onReasoning: (thought) => {
          if (!thinking) {
            thinking = el('div', {class: 'msg reasoning'});
            answer.before(thinking);
          }
          thinking.textContent += thought;
          log.scrollTop = log.scrollHeight;
        },
        onDelta: (delta) => {
          answer.textContent += delta;
          answer.dataset.deltas = String(++deltas);
          log.scrollTop = log.scrollHeight;
        },
      });
      this.messages.push({role: 'assistant', content: r.text});
      meta.textContent = `${r.tokens} tokens · TTFT ${formatSeconds((r.firstTokenAt - r.start) / 1e3)} · ` +
          `${formatSeconds((r.endAt - r.start) / 1e3)} · finish: ${r.finishReason}`;
      answer.dataset.done = 'true';
    } catch (error) {
      meta.textContent = `error: ${error.message}`;
      meta.classList.add('bad');
      this.messages.pop();
    } finally {
      answer.classList.remove('streaming');
      this.busy = false;
    }
  }
}

const MODES = ['combined', 'parallel', 'sequential'];

export class SplitRun {
  constructor(root, model, {onSplit} = {}) {
    this.root = root;
    this.model = model;
    this.onSplit = onSplit;
    root.querySelector('#split-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.run();
    });
  }

  async run() {
    if (this.running) return;
    this.running = true;
    const panel = this.root.querySelector('#split-panel');
    panel.dataset.state = 'running';
    this.scaleMs = 0;
    this.drawn = {};
    const summary = this.root.querySelector('#split-summary');
    const tokens = Number(this.root.querySelector('#split-tokens').value) || 32;
    const text = this.root.querySelector('#split-input').value;
    try {
      const split = await postJson('/split', {text});
      this.onSplit?.(split, tokens);
      summary.textContent = `${split.questions.length} questions (${split.kind})` +
          (split.preamble ? `, shared instruction: “${split.preamble}”` : '');
      const walls = {};
      for (const mode of MODES) {
        walls[mode] = await this.runMode(mode, split, tokens, text);
      }
      const faster = (a, b) => (walls[a] <= walls[b] ? `${a} ${(walls[b] / walls[a]).toFixed(2)}× faster than ${b}`
                                                     : `${b} ${(walls[a] / walls[b]).toFixed(2)}× faster than ${a}`);
      summary.textContent += ` — ${faster('parallel', 'combined')}, ${faster('parallel', 'sequential')}`;
      // One time scale for all three, so they compare side by side.
      for (const [mode, d] of Object.entries(this.drawn)) this.drawMode(this.root.querySelector(`#mode-${mode}`), mode, d.spans, d.start, true);
      panel.dataset.state = 'done';
    } catch (error) {
      summary.textContent = `error: ${error.message}`;
      panel.dataset.state = 'error';
    } finally {
      this.running = false;
    }
  }

  // Runs one mode; resolves to its wall time in seconds while redrawing its timeline.
  async runMode(mode, split, tokens, text) {
    const box = this.root.querySelector(`#mode-${mode}`);
    const n = split.questions.length;
    const spans = [];
    const start = performance.now();
    this.drawn[mode] = {spans, start};
    let done = false;
    const draw = () => {
      this.drawMode(box, mode, spans, start, done);
      if (!done) requestAnimationFrame(draw);
    };
    requestAnimationFrame(draw);
    const one = async (content, maxTokens, i) => {
      const span = {label: i < 0 ? 'all questions' : `Q${i + 1}`, start: performance.now(), first: 0, end: 0, tokens: 0};
      spans.push(span);
      const r = await streamChat({
        model: this.model(),
        messages: [{role: 'user', content}],
        maxTokens,
        ignoreEos: true,
        temperature: 0,
        onDelta: (_, partial) => {
          span.first ||= partial.firstTokenAt;
          span.tokens = partial.tokens;
        },
      });
      span.first ||= r.firstTokenAt || r.endAt;
      span.end = r.endAt;
      span.tokens = r.tokens;
    };
    try {
      if (mode === 'combined') {
        await one(text, tokens * n, -1);
      } else if (mode === 'parallel') {
        await Promise.all(split.prompts.map((p, i) => one(p, tokens, i)));
      } else {
        for (let i = 0; i < n; ++i) await one(split.prompts[i], tokens, i);
      }
    } finally {
      done = true;
      this.drawMode(box, mode, spans, start, true);
    }
    const wall = (performance.now() - start) / 1e3;
    box.dataset.wall = String(wall);
    return wall;
  }

  drawMode(box, mode, spans, start, done) {
    const now = performance.now();
    const W = 300, laneH = 16, top = 22;
    const H = top + Math.max(1, spans.length) * laneH + 6;
    const elapsed = Math.max(1, ...spans.map((s) => (s.end || now) - start));
    const scale = this.scaleMs = Math.max(this.scaleMs || 0, elapsed);
    const sx = (t) => 4 + ((t - start) / scale) * (W - 8);
    const root = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'modeline', role: 'img'});
    const head = svg('text', {x: 4, y: 14, class: 'mode-title'});
    head.textContent = `${mode}: ${formatSeconds(elapsed / 1e3)}${done ? '' : ' …'}`;
    root.append(head);
    spans.forEach((s, i) => {
      const y = top + i * laneH;
      const end = s.end || now;
      const first = s.first || end;
      root.append(svg('rect', {x: sx(s.start), y, width: Math.max(1, sx(first) - sx(s.start)), height: laneH - 4,
        class: 'waiting'}, [title(`${s.label}: waiting for the first token`)]));
      root.append(svg('rect', {x: sx(first), y, width: Math.max(1, sx(end) - sx(first)), height: laneH - 4,
        class: 'decode'}, [title(`${s.label}: ${s.tokens} tokens`)]));
    });
    box.replaceChildren(root);
  }
}
