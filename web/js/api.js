// HTTP helpers for the dashboard and playground: every call sends the API key (kept in localStorage when the
// user gives one), and Server-Sent Events are read from fetch() bodies (EventSource cannot send headers).

const KEY_STORAGE = 'lockstep.apiKey';

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) || '';
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra = {}) {
  const h = {...extra};
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

async function errorOf(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    const m = body?.error?.message ?? body?.error;
    if (typeof m === 'string') message = m;
  } catch {
    // not JSON: keep the status line
  }
  return new HttpError(response.status, message);
}

export async function getJson(path, signal) {
  const response = await fetch(path, {headers: headers(), signal});
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

export async function postJson(path, body, signal) {
  const response = await fetch(path, {
    method: 'POST',
    headers: headers({'Content-Type': 'application/json'}),
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

// Incremental SSE parser (https://html.spec.whatwg.org/multipage/server-sent-events.html): feed text, get
// {event, data} for every completed event.
export class SseParser {
  constructor() {
    this.buffer = '';
    this.event = '';
    this.data = [];
  }

  feed(text) {
    this.buffer += text;
    const out = [];
    let nl;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      let line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (this.data.length) out.push({event: this.event, data: this.data.join('\n')});
        this.event = '';
        this.data = [];
      } else if (!line.startsWith(':')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') this.data.push(value);
        else if (field === 'event') this.event = value;
      }
    }
    return out;
  }
}

// Opens an SSE stream (GET, or POST with a JSON body) and calls onEvent({event, data}) for each event until
// the stream ends; resolves then. Rejects with HttpError on a non-2xx answer.
export async function streamEvents(path, {body, signal, onEvent}) {
  const init = {headers: headers({Accept: 'text/event-stream'}), signal};
  if (body !== undefined) {
    init.method = 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await errorOf(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    for (const e of parser.feed(decoder.decode(value, {stream: true}))) onEvent(e);
  }
}

// One streamed chat completion. onDelta(text) for each content delta, onReasoning(text) for each
// reasoning_content delta (a thinking model's <think> block); resolves to
// {text, reasoning, finishReason, tokens, ttft_s, duration_s, start, firstTokenAt, endAt} (times from
// performance.now()).
export async function streamChat({model, messages, maxTokens, ignoreEos = false, temperature, signal, onDelta,
                                  onReasoning}) {
  const start = performance.now();
  const result = {text: '', reasoning: '', finishReason: '', tokens: 0, start, firstTokenAt: 0, endAt: 0,
                  usage: null};
  const body = {model, messages, max_tokens: maxTokens, stream: true, stream_options: {include_usage: true}};
  if (ignoreEos) body.ignore_eos = true;
  if (temperature !== undefined) body.temperature = temperature;
  await streamEvents('/v1/chat/completions', {
    body,
    signal,
    onEvent: ({data}) => {
      if (data === '[DONE]') return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message || 'generation failed');
      if (chunk.usage) result.usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return;
      const thought = choice.delta?.reasoning_content;
      if (thought) {
        if (!result.firstTokenAt) result.firstTokenAt = performance.now();
        result.reasoning += thought;
        result.tokens += 1;
        onReasoning?.(thought, result);
      }
      const delta = choice.delta?.content;
      if (delta) {
        if (!result.firstTokenAt) result.firstTokenAt = performance.now();
        result.text += delta;
        result.tokens += 1;
        onDelta?.(delta, result);
      }
      if (choice.finish_reason) result.finishReason = choice.finish_reason;
    },
  });
  result.endAt = performance.now();
  if (result.usage?.completion_tokens) result.tokens = result.usage.completion_tokens;
  return result;
}
