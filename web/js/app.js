// Entry point of the page served at / and /dashboard: wires the dashboard, the advisor and the playground,
// and asks for the API key when the server wants one.

import {apiKey, getJson, setApiKey} from './api.js';
import {Advisor} from './advisor.js';
import {Dashboard} from './dashboard.js';
import {Chat, SplitRun} from './playground.js';

let model = '';
const modelName = () => model;

const advisor = new Advisor(document);
const dashboard = new Dashboard(document, {
  onAuthNeeded: () => document.querySelector('#auth').classList.remove('hidden'),
  onServerInfo: (info) => {
    model = info.model;
    document.querySelector('#model').textContent =
        `${info.model} (${info.architecture}, ${info.max_context} context, ` +
        `max ${info.max_seqs} sequences × ${info.max_batch_tokens} rows per step)`;
    advisor.refresh();
  },
});
new Chat(document, modelName);
new SplitRun(document, modelName, {
  onSplit: (split, tokens) => {
    const known = split.prompt_tokens.filter((n) => n > 0);
    const mean = known.length ? Math.round(known.reduce((a, b) => a + b, 0) / known.length) : 0;
    advisor.set({questions: split.questions.length, tokens, promptTokens: mean,
      combinedPromptTokens: split.combined_prompt_tokens > 0 ? split.combined_prompt_tokens : 0});
  },
});

document.querySelector('#auth-form').addEventListener('submit', (e) => {
  e.preventDefault();
  setApiKey(document.querySelector('#auth-key').value.trim());
  document.querySelector('#auth').classList.add('hidden');
  dashboard.connect();
});
if (apiKey()) document.querySelector('#auth-key').value = apiKey();

// The model id is in the feed's first event; /v1/models is the fallback when the feed is slow to come.
getJson('/v1/models').then((m) => (model ||= m.data?.[0]?.id || '')).catch(() => {});
dashboard.connect();
