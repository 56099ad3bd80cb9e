// The browser UI in a real browser: Debian's headless Chromium (/usr/bin/chromium) driven by
// playwright-core, against `ember serve` on a tiny real model with an API key and an SSD tier.
// The chat asks for the key, streams a reply into the page (the DOM grows while the stream runs), a
// second turn shows cached prompt tokens, the dashboard's numbers move after a request, Stop ends a long
// generation (and the server cancels it), and "Forget key" forgets it. No page needs anything the CSP
// blocks. Screenshots go to <build>/test-artifacts/webui/. The browser must be there: no skip.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { emberBin, makeTinyModel, startServer } from './harness.mjs';

const CHROMIUM = '/usr/bin/chromium';
const KEY = 'webui-e2e-key';
const artifacts = path.join(path.dirname(emberBin), 'test-artifacts', 'webui');

let model;
let cacheDir;
let profileDir;
let server;
let browser;  // a persistent context: its own fresh --user-data-dir
let page;
const consoleErrors = [];

async function api(pathName, init = {}) {
  const res = await fetch(`${server.url}${pathName}`, {
    ...init,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
  });
  assert.ok(res.ok, `${pathName}: ${res.status}`);
  return res;
}

const statsNow = async () => (await api('/stats')).json();

async function shot(name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
}

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/setup (Debian package chromium)`);
  mkdirSync(artifacts, { recursive: true });
  model = await makeTinyModel({ ctx: 4096 });
  cacheDir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-webui-cache-'));
  profileDir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-webui-profile-'));
  server = await startServer(['--api-key', KEY, '--ssd-cache', cacheDir, '--parallel', '2'], { model: model.path });
  browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on('console', (m) => {
    // Chromium logs every non-2xx fetch; the 401 that asks for the key is expected.
    if (m.type() === 'error' && !/status of 401/.test(m.text())) consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
});

after(async () => {
  await browser?.close();
  await server?.stop();
  model?.remove();
  for (const d of [cacheDir, profileDir]) if (d) rmSync(d, { recursive: true, force: true });
});

const assistants = () => page.locator('.msg.assistant');

// Sends `text` from the composer and resolves when the turn has ended; returns how the reply's length
// evolved while the page was still busy streaming.
async function sendAndWatch(text) {
  await page.evaluate(() => {
    window.__lengths = [];
    const observer = new MutationObserver(() => {
      const all = document.querySelectorAll('.msg.assistant .text');
      const last = all[all.length - 1];
      if (last) window.__lengths.push({ len: last.textContent.length, busy: document.body.classList.contains('busy') });
    });
    observer.observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
  });
  const before = await assistants().count();
  await page.fill('#prompt', text);
  await page.click('#send');
  await page.waitForFunction((n) => {
    const all = document.querySelectorAll('.msg.assistant');
    return all.length > n && all[all.length - 1].dataset.finish !== undefined;
  }, before, { timeout: 30000 });
  return page.evaluate(() => window.__lengths);
}

test('chat: asks for the key, streams, shows cached tokens on the second turn', async () => {
  const res = await page.goto(`${server.url}/`);
  assert.equal(res.status(), 200);
  assert.match(res.headers()['content-security-policy'], /script-src 'self'/);
  // /v1/models answered 401: the key form is shown.
  await page.locator('#key-form').waitFor({ state: 'visible', timeout: 10000 });
  assert.match(await page.textContent('#key-reason'), /needs an API key/);
  await shot('01-asks-for-key');
  await page.fill('#key-input', KEY);
  await page.click('#key-form button[type=submit]');
  await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
  assert.equal(await page.locator('#key-form').isVisible(), false);
  assert.equal(await page.textContent('#key-status'), 'key set');
  assert.equal(await page.inputValue('#model'), path.basename(model.path, '.gguf'));

  await page.fill('#max-tokens', '96');
  await page.fill('#temperature', '0');
  const lengths = await sendAndWatch('Hello! Tell me a story about a tiered cache.');
  const reply1 = assistants().nth(0);
  const final1 = (await reply1.locator('.text').textContent()).length;
  assert.ok(final1 > 0, 'the reply has text');
  const during = lengths.filter((l) => l.busy && l.len > 0 && l.len < final1);
  assert.ok(during.length >= 2, `the reply grew while streaming: ${JSON.stringify(lengths.slice(0, 20))}`);
  assert.ok(new Set(during.map((l) => l.len)).size >= 2, 'in more than one step');
  const meta1 = await reply1.evaluate((e) => ({ ...e.dataset }));
  assert.equal(Number(meta1.completionTokens) > 0, true, JSON.stringify(meta1));
  assert.ok(Number(meta1.ttftMs) > 0, JSON.stringify(meta1));
  assert.ok(meta1.finish === 'length' || meta1.finish === 'stop', JSON.stringify(meta1));
  assert.match(await reply1.locator('.meta').textContent(), /TTFT \d+ ms/);

  await sendAndWatch('And what happens on the second turn?');
  const reply2 = assistants().nth(1);
  const meta2 = await reply2.evaluate((e) => ({ ...e.dataset }));
  assert.ok(Number(meta2.cachedTokens) > 0, `turn 2 reuses turn 1 from the prefix cache: ${JSON.stringify(meta2)}`);
  assert.ok(Number(meta2.cachedTokens) >= Number(meta1.promptTokens) - 1, JSON.stringify({ meta1, meta2 }));
  assert.match(await reply2.locator('.meta').textContent(), /[1-9]\d* cached from ram/);
  assert.ok(Number(meta2.tokensPerSecond) > 0, JSON.stringify(meta2));
  await shot('02-two-turns');
});

test('dashboard: live numbers and charts move after a request', async () => {
  await page.click('#nav-dashboard');  // same tab: the key stays in sessionStorage
  await page.waitForURL(`${server.url}/dashboard`);
  await page.waitForFunction(() => Number(document.getElementById('poll-status').dataset.polls ?? 0) >= 1);
  assert.equal(await page.locator('#key-form').count(), 1);
  assert.equal(await page.locator('#key-form').isVisible(), false, 'the key came along');
  const card = (k) => page.locator(`[data-metric="${k}"] .value`);
  const value = async (k) => Number(await card(k).getAttribute('data-value'));
  assert.ok((await value('ram.entries')) >= 1);
  assert.ok((await value('tokens.generated')) > 0);
  assert.notEqual(await card('ssd.entries').textContent(), 'off', 'the SSD tier is reported');
  const hits = await value('ram.hits');
  const generated = await value('tokens.generated');

  const body = { messages: [{ role: 'user', content: 'Dashboard check: the same prompt twice.' }], max_tokens: 24,
                 temperature: 0 };
  for (let i = 0; i < 2; i++) await api('/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) });
  const s = await statsNow();
  assert.ok(s.tokens.generated >= generated + 24, JSON.stringify(s.tokens));

  await page.waitForFunction(({ hits, generated }) => {
    const v = (k) => Number(document.querySelector(`[data-metric="${k}"] .value`).dataset.value);
    return v('ram.hits') > hits && v('tokens.generated') >= generated + 24;
  }, { hits, generated }, { timeout: 10000 });
  // The charts drew something: opaque pixels on every canvas.
  const drawn = await page.$$eval('canvas', (cs) => cs.map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n += 1;
    return n;
  }));
  assert.equal(drawn.length, 5);
  for (const n of drawn) assert.ok(n > 100, `a chart is blank: ${drawn}`);
  assert.equal(await page.locator('#models').isVisible(), false, 'one model: no per-model table');
  await shot('03-dashboard');
});

test('chat: Stop ends a long generation and the server cancels it', async () => {
  await page.click('#nav-chat');
  await page.waitForURL(`${server.url}/`);
  await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
  const cancelledBefore = await cancelledGenerations();
  await page.fill('#max-tokens', '3500');
  await page.fill('#temperature', '0');
  await page.fill('#prompt', 'Write without end.');
  await page.click('#send');
  await page.waitForFunction(() => {
    const t = document.querySelector('.msg.assistant .text');
    return t && t.textContent.length > 40;
  }, null, { timeout: 20000 });
  assert.equal(await page.isEnabled('#stop'), true);
  await page.click('#stop');
  const reply = assistants().nth(0);
  await page.waitForFunction(() => document.querySelector('.msg.assistant')?.dataset.finish === 'stopped',
                             null, { timeout: 5000 });
  const stoppedAt = (await reply.locator('.text').textContent()).length;
  await page.waitForTimeout(500);
  assert.equal((await reply.locator('.text').textContent()).length, stoppedAt, 'no text after Stop');
  assert.equal(await page.isEnabled('#send'), true);
  assert.equal(await page.isEnabled('#stop'), false);
  assert.match(await reply.locator('.meta').textContent(), /stopped/);
  // The server noticed the closed stream and cancelled the generation long before its 3500 tokens.
  let s;
  for (let i = 0; i < 50; i++) {
    s = await statsNow();
    if (s.queue.running === 0 && (await cancelledGenerations()) > cancelledBefore) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(s.queue.running, 0, JSON.stringify(s.queue));
  assert.ok((await cancelledGenerations()) > cancelledBefore, 'ember_cancelled_generations_total rose');
  await shot('04-stopped');
});

async function cancelledGenerations() {
  const text = await (await api('/metrics')).text();
  const m = text.match(/^ember_cancelled_generations_total (\d+)/m);
  return m ? Number(m[1]) : 0;
}

test('forget key: the next load asks again', async () => {
  await page.click('#forget-key');
  assert.equal(await page.textContent('#key-status'), 'no key');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('ember.apiKey')), null);
  await page.reload();
  await page.locator('#key-form').waitFor({ state: 'visible', timeout: 10000 });
  assert.deepEqual(consoleErrors, [], 'no script errors and no CSP violations');
});

test('a foreign Host gets the 403 every route gives (DNS rebinding)', async () => {
  const { port } = new URL(server.url);
  for (const p of ['/', '/dashboard', '/ui/chat.js']) {
    const status = await new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: p, headers: { host: 'attacker.example' } },
                           (res) => { res.resume(); resolve(res.statusCode); });
      req.on('error', reject);
    });
    assert.equal(status, 403, p);
  }
});
