// The mask work budget (docs/grammar.md) against the real engine on a tiny generated model (real Llama 3
// vocabulary), --parallel 2: the 197-byte grammar is a 400 before it queues, on both the
// streaming and the non-streaming path; a grammar costly only after a fixed prefix passes that probe,
// then ends with the budget error (an error event on a stream), and an ordinary reply running beside it
// is exactly its solo reply.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTinyModel, postJson, serveTakes, startServer } from './harness.mjs';

const COSTLY = `root ::= (${' .?'.repeat(60)} ){0,60}`;
const COSTLY_MID = `root ::= "Answer: " (${' .?'.repeat(60)} ){0,60}`;
let model;
let server;
before(async () => {
  model = await makeTinyModel();
  const args = ['--prompt-cache-bytes', '0', '--parallel', '2'];
  if (serveTakes('--no-ssd-cache')) args.push('--no-ssd-cache');
  server = await startServer(args, { model: model.path });
});
after(async () => {
  const r = await server?.stop();
  assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${server?.stderr()}`);
  model?.remove();
});

const chat = (extra) => ({ messages: [{ role: 'user', content: 'Say something.' }], temperature: 0, ...extra });

async function streamEvents(body) {
  const ctl = AbortSignal.timeout(120000);
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal: ctl,
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await res.text();
  const events = text.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));
  return { status: res.status, events, text };
}

test('the costly grammar is refused up front with a 400 naming the field', async () => {
  const r = await postJson(`${server.url}/v1/chat/completions`, chat({ max_tokens: 8, grammar: COSTLY }));
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.type, 'invalid_request_error');
  assert.equal(r.json.error.param, 'grammar');
  assert.match(r.json.error.message, /grammar too costly/);
  const s = await streamEvents(chat({ max_tokens: 8, grammar: COSTLY }));
  assert.equal(s.status, 400, s.text);
  assert.match(s.text, /grammar too costly/);
});

test('costly mid-reply: the budget error ends it, and the neighbour equals its solo run', async () => {
  const ordinary = chat({ max_tokens: 16, seed: 5, temperature: 0.8, logit_bias: { 128001: -100, 128009: -100 } });
  const solo = await postJson(`${server.url}/v1/chat/completions`, ordinary);
  assert.equal(solo.status, 200, solo.text);
  const costly = streamEvents(chat({ max_tokens: 40, grammar: COSTLY_MID }));
  await new Promise((r) => setTimeout(r, 300));
  const beside = await postJson(`${server.url}/v1/chat/completions`, ordinary);
  assert.equal(beside.status, 200, beside.text);
  assert.equal(beside.json.choices[0].message.content, solo.json.choices[0].message.content);
  const c = await costly;
  assert.equal(c.status, 200, c.text);
  const err = c.events.find((e) => e.error);
  assert.ok(err, `no error event: ${c.text.slice(-400)}`);
  assert.match(err.error.message, /grammar too costly: mask work budget exhausted/);
  const content = c.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
  assert.ok('Answer: '.startsWith(content) || content.startsWith('Answer: '), content);
  const nonStream = await postJson(`${server.url}/v1/chat/completions`, chat({ max_tokens: 40, grammar: COSTLY_MID }));
  assert.equal(nonStream.status, 400, nonStream.text);
  assert.match(nonStream.json.error.message, /mask work budget exhausted/);
});
