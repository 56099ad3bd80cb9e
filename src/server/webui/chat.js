// The chat page: a conversation kept in the page and sent whole each turn (so every turn after the
// first finds the earlier ones in the server's prefix cache), streamed from /v1/chat/completions with
// the usage chunk, a model picker fed by /v1/models, Stop (aborting the fetch makes the server cancel
// the generation), and per turn: cached prompt tokens and their tier, TTFT, tok/s.
// Model output only ever reaches the page as text nodes.
import { apiFetch, errorMessage, initKeyControls } from './common.js';
import { readSse } from './sse.js';

const $ = (id) => document.getElementById(id);
const MODEL_STORAGE = 'ember.model';

const state = {
  history: [],       // the conversation sent with each turn: {role, content}
  controller: null,  // the running turn's AbortController
};

function setBusy(busy) {
  $('send').disabled = busy;
  $('new-chat').disabled = busy;
  $('stop').disabled = !busy;
  document.body.classList.toggle('busy', busy);
}

function showError(text) {
  $('error').textContent = text;
  $('error').hidden = !text;
}

// One message in the log: {root, text, meta}.
function addMessage(role, label, text) {
  const root = document.createElement('article');
  root.className = `msg ${role}`;
  const who = document.createElement('div');
  who.className = 'who';
  who.textContent = label;
  const body = document.createElement('div');
  body.className = 'text';
  body.textContent = text;
  const meta = document.createElement('div');
  meta.className = 'meta';
  root.append(who, body, meta);
  $('messages').append(root);
  $('messages').scrollTop = $('messages').scrollHeight;  // a new turn is always shown
  return { root, text: body, meta };
}

// Runs `change` on the message log, keeping it scrolled to the end if it was there (a reader who scrolled
// up to read stays where they are).
function followLog(change) {
  const log = $('messages');
  const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 48;
  change();
  if (atEnd) log.scrollTop = log.scrollHeight;
}

// Text for one reply as it streams, added to one text node (never parsed as markup) at most once per
// frame: a token per DOM change and layout would leave a long reply's page no time to answer a click.
class ReplyText {
  constructor(element) {
    this.node = document.createTextNode('');
    element.append(this.node);
    this.pending = '';
    this.frame = 0;
  }
  add(piece) {
    this.pending += piece;
    this.frame ||= requestAnimationFrame(() => this.flush());
  }
  flush() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (!this.pending) return;
    const text = this.pending;
    this.pending = '';
    followLog(() => this.node.appendData(text));
  }
}

function modelState(m) {
  if (typeof m.state === 'string') return m.state;
  if (typeof m.loaded === 'boolean') return m.loaded ? 'loaded' : 'not loaded';
  return '';
}

async function loadModels() {
  const res = await apiFetch('/v1/models');
  if (!res.ok) throw new Error(`models: ${await errorMessage(res)}`);
  const list = await res.json();
  const select = $('model');
  const wanted = sessionStorage.getItem(MODEL_STORAGE);
  select.replaceChildren();
  for (const m of list.data ?? []) {
    if (typeof m.id !== 'string') continue;
    const extra = modelState(m);
    select.append(new Option(extra ? `${m.id} (${extra})` : m.id, m.id, false, m.id === wanted));
  }
}

function numberInput(id, fallback) {
  const v = Number($(id).value);
  return Number.isFinite(v) && $(id).value !== '' ? v : fallback;
}

// The turn's figures, as text and as data-* attributes of the message (what the tests read).
function showTurnMeta(reply, t) {
  const parts = [];
  if (t.usage) {
    const details = t.usage.prompt_tokens_details ?? {};
    const cached = details.cached_tokens ?? 0;
    const tier = cached > 0 && details.cache_tier ? ` from ${details.cache_tier}` : '';
    parts.push(`prompt ${t.usage.prompt_tokens} tokens, ${cached} cached${tier}`);
    parts.push(`${t.usage.completion_tokens} generated`);
    reply.root.dataset.cachedTokens = cached;
    reply.root.dataset.promptTokens = t.usage.prompt_tokens;
    reply.root.dataset.completionTokens = t.usage.completion_tokens;
  } else {
    parts.push(`${t.chunks} chunks received`);
  }
  if (t.ttftMs !== null) {
    parts.push(`TTFT ${t.ttftMs.toFixed(0)} ms`);
    reply.root.dataset.ttftMs = t.ttftMs.toFixed(1);
  }
  if (t.tokensPerSecond !== null) {
    parts.push(`${t.tokensPerSecond.toFixed(1)} tok/s`);
    reply.root.dataset.tokensPerSecond = t.tokensPerSecond.toFixed(2);
  }
  parts.push(t.finish);
  reply.root.dataset.finish = t.finish;
  reply.meta.textContent = parts.join(' · ');
}

function newFigures() {
  return { text: '', usage: null, finish: 'incomplete', chunks: 0, ttftMs: null, tokensPerSecond: null };
}

// Streams one reply into `reply`, filling the figures `t` as it goes (so a stopped turn keeps what it
// got). Throws on HTTP and stream errors, and with an AbortError when stopped.
async function streamReply(messages, reply, signal, t) {
  const body = {
    model: $('model').value || undefined,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: Math.max(1, Math.floor(numberInput('max-tokens', 256))),
    temperature: numberInput('temperature', 0.7),
  };
  const start = performance.now();
  const out = new ReplyText(reply.text);
  let first = null;
  const res = await apiFetch('/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw new Error(await errorMessage(res));
  try {
    for await (const data of readSse(res.body)) {
      if (data === '[DONE]') break;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message ?? 'the stream failed');
      if (chunk.usage) t.usage = chunk.usage;
      const choice = chunk.choices?.[0];
      const piece = choice?.delta?.content;
      if (typeof piece === 'string' && piece !== '') {
        first ??= performance.now();
        t.text += piece;
        t.chunks += 1;
        out.add(piece);
      }
      if (choice?.finish_reason) t.finish = choice.finish_reason;
    }
  } finally {
    out.flush();
    // TTFT from the request to the first text; tok/s over the tokens after the first.
    const end = performance.now();
    if (first !== null) t.ttftMs = first - start;
    const n = t.usage?.completion_tokens ?? t.chunks;
    if (first !== null && n > 1 && end > first) t.tokensPerSecond = ((n - 1) * 1000) / (end - first);
  }
}

async function send(text) {
  showError('');
  const turn = { role: 'user', content: text };
  addMessage('user', 'you', text);
  const reply = addMessage('assistant', $('model').value || 'assistant', '');
  const t = newFigures();
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  try {
    await streamReply([...state.history, turn], reply, controller.signal, t);
    state.history.push(turn, { role: 'assistant', content: t.text });
    showTurnMeta(reply, t);
  } catch (e) {
    if (e?.name === 'AbortError') {
      // What was shown stays part of the conversation, as the user saw it.
      if (t.text) state.history.push(turn, { role: 'assistant', content: t.text });
      showTurnMeta(reply, { ...t, usage: null, finish: 'stopped' });
    } else {
      reply.root.classList.add('failed');
      reply.meta.textContent = 'failed';
      showError(String(e?.message ?? e));
    }
  } finally {
    state.controller = null;
    setBusy(false);
  }
}

function init() {
  initKeyControls();
  setBusy(false);
  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const text = $('prompt').value.trim();
    if (!text || state.controller) return;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => state.controller?.abort());
  $('new-chat').addEventListener('click', () => {
    state.history = [];
    $('messages').replaceChildren();
    showError('');
  });
  $('model').addEventListener('change', () => sessionStorage.setItem(MODEL_STORAGE, $('model').value));
  loadModels().catch((e) => showError(String(e?.message ?? e)));
}

init();
