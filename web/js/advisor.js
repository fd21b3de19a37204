// The latency advisor panel: GET /advisor predicts combined / parallel / sequential wall times for N
// questions × M tokens from the engine's fitted step-time model, and says which to use.

import {getJson} from './api.js';
import {el, formatSeconds} from './svg.js';

export class Advisor {
  constructor(root) {
    this.root = root;
    root.querySelector('#advisor-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.refresh();
    });
  }

  // Fills the inputs (e.g. from the playground's split) and asks again.
  set({questions, tokens, promptTokens, combinedPromptTokens}) {
    const f = this.root.querySelector('#advisor-form');
    if (questions) f.questions.value = questions;
    if (tokens) f.tokens.value = tokens;
    if (promptTokens) f.prompt_tokens.value = promptTokens;
    this.combined = combinedPromptTokens || 0;
    this.refresh();
  }

  async refresh() {
    const f = this.root.querySelector('#advisor-form');
    const q = new URLSearchParams({questions: f.questions.value, tokens: f.tokens.value,
      prompt_tokens: f.prompt_tokens.value});
    if (this.combined) q.set('combined_prompt_tokens', this.combined);
    const out = this.root.querySelector('#advisor-result');
    try {
      const a = await getJson(`/advisor?${q}`);
      const longest = Math.max(...a.modes.map((m) => m.wall_s), 1e-9);
      const bars = a.modes.map((m) => el('div', {class: `advice-row ${m.name === a.recommended ? 'best' : ''}`}, [
        el('span', {class: 'name', text: m.name}),
        el('span', {class: 'bar'}, [el('span', {class: m.name, style: `width:${(100 * m.wall_s) / longest}%`})]),
        el('span', {class: 'value', text: `${formatSeconds(m.wall_s)} (TTFT ${formatSeconds(m.ttft_s)})`}),
      ]));
      const fit = a.step_time_model;
      out.replaceChildren(...bars,
          el('p', {class: 'advice', text: `Use ${a.recommended}: ${a.reason}.`}),
          el('p', {class: a.confident ? 'muted' : 'bad', text: a.confident ? '' : a.note}),
          el('p', {class: 'muted', text: `step ≈ ${formatSeconds(fit.intercept_s)} + ` +
            `${formatSeconds(fit.per_decode_row_s)}/decode row + ${formatSeconds(fit.per_prefill_row_s)}/prefill row + ` +
            `${(fit.per_attended_position_s * 1e9).toFixed(1)} ns/attended position, from ${fit.samples} steps ` +
            `(rms error ${(fit.rms_relative_error * 100).toFixed(0)} %)`}));
      out.dataset.recommended = a.recommended;
    } catch (error) {
      out.replaceChildren(el('p', {class: 'bad', text: `advisor: ${error.message}`}));
    }
  }
}
