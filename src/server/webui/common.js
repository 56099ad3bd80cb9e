// What both pages share: the API key (asked for on a 401, kept in this tab's sessionStorage, sent as
// a Bearer token on every API call, forgettable) and the error text of a failed response.
// Nothing here writes markup: every text goes through textContent.

const KEY_STORAGE = 'ember.apiKey';

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) ?? '';
}

// The message of an OpenAI- or Anthropic-shaped error body, else the status line.
export async function errorMessage(res) {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text);
    if (typeof body?.error?.message === 'string') return `${res.status}: ${body.error.message}`;
  } catch {
    // not JSON: fall through
  }
  return `${res.status} ${res.statusText}`.trim();
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

// The header's key controls and the key form, built once per page.
const ui = {};
let pendingKey = null;  // one prompt however many calls are waiting for a key

function buildKeyControls() {
  if (ui.form) return;
  ui.status = el('span', { className: 'key-status', id: 'key-status' });
  ui.forget = el('button', { type: 'button', id: 'forget-key', className: 'quiet', textContent: 'Forget key' });
  ui.forget.addEventListener('click', () => {
    sessionStorage.removeItem(KEY_STORAGE);
    showKeyStatus();
  });
  document.getElementById('key-slot').append(ui.status, ui.forget);

  ui.reason = el('p', { id: 'key-reason' });
  ui.input = el('input', { id: 'key-input', type: 'password', autocomplete: 'off', spellcheck: false, required: true });
  ui.form = el('form', { id: 'key-form', className: 'key-form', hidden: true },
               ui.reason,
               el('label', {}, 'API key ', ui.input),
               el('button', { type: 'submit', textContent: 'Use key' }),
               el('p', { className: 'hint', textContent:
                 'Kept in this tab only (sessionStorage) and sent as an Authorization: Bearer header.' }));
  ui.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const key = ui.input.value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_STORAGE, key);
    ui.input.value = '';
    ui.form.hidden = true;
    showKeyStatus();
    const waiting = pendingKey;
    pendingKey = null;
    waiting?.resolve();
  });
  document.querySelector('header').after(ui.form);
  showKeyStatus();
}

function showKeyStatus() {
  const has = apiKey() !== '';
  ui.status.textContent = has ? 'key set' : 'no key';
  ui.forget.hidden = !has;
}

// Shows the key form with `reason`; resolves once a key has been entered.
function askForKey(reason) {
  buildKeyControls();
  ui.reason.textContent = reason;
  ui.form.hidden = false;
  ui.input.focus();
  if (!pendingKey) {
    let resolve;
    const promise = new Promise((r) => (resolve = r));
    pendingKey = { promise, resolve };
  }
  return pendingKey.promise;
}

export function initKeyControls() {
  buildKeyControls();
}

// fetch() of a same-origin API path with the key. A 401 asks for a key and retries with it, so a caller
// sees every answer but that one. `init.body` must be resendable (a string).
export async function apiFetch(path, init = {}) {
  for (;;) {
    const headers = new Headers(init.headers ?? {});
    const key = apiKey();
    if (key) headers.set('Authorization', `Bearer ${key}`);
    const res = await fetch(path, { ...init, headers });
    if (res.status !== 401) return res;
    const why = await errorMessage(res);
    if (key) sessionStorage.removeItem(KEY_STORAGE);
    const asked = askForKey(key ? `The key was refused (${why}). Enter another.` : 'This server needs an API key.');
    await (init.signal ? Promise.race([asked, abortOf(init.signal)]) : asked);
  }
}

// Rejects with the signal's reason once it aborts (a Stop pressed while the key form is open).
function abortOf(signal) {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
