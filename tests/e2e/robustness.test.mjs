// Hostile and unlucky clients: bad bodies, limits, disconnects, auth, shutdown.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { postJson, startServer, stats } from './harness.mjs';

let server;
before(async () => {
  server = await startServer(['--fake-token-delay-ms', '3', '--max-body-bytes', '65536']);
});
after(async () => {
  await server.stop();
});

const chat = (content, extra = {}) => ({ model: 'm', messages: [{ role: 'user', content }], ...extra });

test('malformed JSON is a 400 in the route flavour', async () => {
  const openai = await postJson(`${server.url}/v1/chat/completions`, '{"messages": [');
  assert.equal(openai.status, 400);
  assert.equal(openai.json.error.type, 'invalid_request_error');
  const anthropic = await postJson(`${server.url}/v1/messages`, 'nope');
  assert.equal(anthropic.status, 400);
  assert.equal(anthropic.json.type, 'error');
});

test('wrong types name the field', async () => {
  for (const [field, value] of [['max_tokens', 'x'], ['top_p', 'x'], ['stop', 3], ['seed', 1.5], ['messages', 'x']]) {
    const r = await postJson(`${server.url}/v1/chat/completions`, chat('echo: x', { [field]: value }));
    assert.equal(r.status, 400, field);
    assert.equal(r.json.error.param, field);
  }
});

test('oversized bodies get 413 and the server keeps serving', async () => {
  const r = await postJson(`${server.url}/v1/chat/completions`, chat('a'.repeat(200000)));
  assert.equal(r.status, 413);
  assert.match(r.json.error.message, /65536/);
  const ok = await postJson(`${server.url}/v1/chat/completions`, chat('echo: still here'));
  assert.equal(ok.json.choices[0].message.content, 'still here');
});

test('unknown routes are JSON 404s', async () => {
  const r = await fetch(`${server.url}/v2/whatever`);
  assert.equal(r.status, 404);
  assert.equal((await r.json()).error.type, 'not_found_error');
});

test('a client that disconnects mid-stream cancels its generation', async () => {
  const before = (await stats(server.url)).engine.values.cancelled_generations;
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const stream = await client.chat.completions.create(chat('[long]', { stream: true, max_tokens: 4000 }));
  let n = 0;
  for await (const _ of stream) {
    if (++n === 5) break;  // leaving the loop aborts the request
  }
  let after = before;
  for (let i = 0; i < 200 && after === before; i++) {
    await new Promise((r) => setTimeout(r, 25));
    after = (await stats(server.url)).engine.values.cancelled_generations;
  }
  assert.equal(after, before + 1);
  let running = 1;
  for (let i = 0; i < 200 && running !== 0; i++) {
    running = (await stats(server.url)).queue.running;
    if (running !== 0) await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal(running, 0);
});

test('API keys: 401 without, 200 with Bearer or x-api-key, /health open', async () => {
  const secured = await startServer(['--api-key', 'sekrit']);
  try {
    const none = await postJson(`${secured.url}/v1/chat/completions`, chat('echo: x'));
    assert.equal(none.status, 401);
    assert.equal(none.json.error.type, 'authentication_error');
    const bearer = await postJson(`${secured.url}/v1/chat/completions`, chat('echo: x'), { authorization: 'Bearer sekrit' });
    assert.equal(bearer.status, 200);
    const xkey = await postJson(`${secured.url}/v1/messages`, { max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      { 'x-api-key': 'sekrit' });
    assert.equal(xkey.status, 200);
    assert.equal((await fetch(`${secured.url}/health`)).status, 200);
  } finally {
    await secured.stop();
  }
});

// The fake has no cache, so this is about draining; that SIGTERM makes the real cache durable is
// ssd.test.mjs.
test('SIGTERM drains in-flight work, runs the flush, exits 0', async () => {
  const s = await startServer(['--fake-token-delay-ms', '20', '--shutdown-timeout', '10']);
  const inflight = postJson(`${s.url}/v1/chat/completions`, chat('echo: ' + 'x'.repeat(120)));
  // Signal only once the generation is running (40 tokens x 20 ms), so the test is about draining.
  for (let i = 0; i < 400 && (await stats(s.url)).queue.running === 0; i++) await new Promise((r) => setTimeout(r, 5));
  const exit = s.stop();
  const r = await inflight;
  assert.equal(r.status, 200);
  assert.equal(r.json.choices[0].message.content.length, 120);
  const { code } = await exit;
  assert.equal(code, 0);
  assert.match(s.stderr(), /cache flush: ok/);
});
