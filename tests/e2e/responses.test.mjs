// The Responses API (POST /v1/responses, GET/DELETE /v1/responses/{id}) through the official `openai`
// client. The HTTP shapes run on `ember serve --fake` (scripted replies); what the prompt cache gives a
// previous_response_id follow-up (cached_tokens > 0), also after a restart on the SSD tier, runs the real
// engine on a tiny generated model. Each server gets its own --ssd-cache directory (the store's files go to
// <dir>/responses).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { makeTinyModel, postJson, startServer } from './harness.mjs';

const dirs = [];
function tempDir(tag) {
  const d = mkdtempSync(path.join(os.tmpdir(), `ember-e2e-responses-${tag}-`));
  dirs.push(d);
  return d;
}
const clientFor = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });

let fakeDir;
let server;
let client;
before(async () => {
  fakeDir = tempDir('fake');
  server = await startServer(['--ssd-cache', fakeDir]);
  client = clientFor(server);
});
after(async () => {
  await server?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('responses.create: a plain string input', async () => {
  const r = await client.responses.create({ model: 'ember-fake', input: 'echo: Hello, responses' });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_[0-9a-f]{32}$/);
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, 'Hello, responses');  // the SDK folds the output items into output_text
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].content[0].type, 'output_text');
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.usage.input_tokens_details.cached_tokens, 0);  // the fake has no cache
  assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);
  assert.equal(r.store, true);
  assert.equal(r.error, null);
});

test('instructions, message items and metadata are accepted and echoed', async () => {
  const r = await client.responses.create({
    model: 'ember-fake',
    instructions: 'Answer in one word.',
    input: [
      { role: 'developer', content: 'Be terse.' },
      { role: 'user', content: [{ type: 'input_text', text: 'echo: ok' }] },
    ],
    metadata: { run: 'e2e' },
    max_output_tokens: 16,
  });
  assert.equal(r.instructions, 'Answer in one word.');
  assert.deepEqual(r.metadata, { run: 'e2e' });
  assert.equal(r.max_output_tokens, 16);
  assert.equal(r.output_text, 'ok');
});

test('streaming: stream:true yields the event sequence, numbered, ending in response.completed', async () => {
  const stream = await client.responses.create({ model: 'ember-fake', input: 'echo: streamed over several events', stream: true });
  const types = [];
  let text = '';
  let last;
  for await (const event of stream) {
    assert.equal(event.sequence_number, types.length);
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    last = event;
  }
  assert.equal(text, 'streamed over several events');
  const names = types.filter((t) => t !== 'response.output_text.delta');
  assert.deepEqual(names, ['response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added', 'response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed']);
  assert.equal(last.response.status, 'completed');
  assert.equal(last.response.output[0].content[0].text, text);
  // The SDK's own stream helper folds the same events into the final response.
  const helper = client.responses.stream({ model: 'ember-fake', input: 'echo: folded by the helper' });
  let deltas = '';
  helper.on('response.output_text.delta', (e) => (deltas += e.delta));
  const final = await helper.finalResponse();
  // (this SDK path adds no output_text convenience field: OpenAI's wire format has none either)
  assert.equal(final.output[0].content[0].text, 'folded by the helper');
  assert.equal(final.status, 'completed');
  assert.equal(deltas, 'folded by the helper');
});

test('retrieve and delete; store:false is never kept', async () => {
  const r = await client.responses.create({ model: 'ember-fake', input: 'echo: keep me' });
  const got = await client.responses.retrieve(r.id);
  assert.equal(got.id, r.id);
  assert.equal(got.output_text, 'keep me');
  await client.responses.delete(r.id);
  await assert.rejects(client.responses.retrieve(r.id), (e) => e.status === 404 && /not found/.test(e.message));
  await assert.rejects(client.responses.delete(r.id), (e) => e.status === 404);

  const unstored = await client.responses.create({ model: 'ember-fake', input: 'echo: forget me', store: false });
  assert.equal(unstored.store, false);
  await assert.rejects(client.responses.retrieve(unstored.id), (e) => e.status === 404);
});

test('previous_response_id: the conversation continues; unknown ids are a 400 naming the field', async () => {
  const first = await client.responses.create({ model: 'ember-fake', input: 'echo: one' });
  const second = await client.responses.create({ model: 'ember-fake', input: 'echo: two', previous_response_id: first.id });
  assert.equal(second.previous_response_id, first.id);
  assert.equal(second.output_text, 'two');
  // The stored conversation was in the prompt: it is longer than the same input alone.
  const alone = await client.responses.create({ model: 'ember-fake', input: 'echo: two', store: false });
  assert.ok(second.usage.input_tokens > alone.usage.input_tokens, `${second.usage.input_tokens} vs ${alone.usage.input_tokens}`);
  await assert.rejects(
    client.responses.create({ model: 'ember-fake', input: 'x', previous_response_id: 'resp_0000' }),
    (e) => e.status === 400 && e.code === 'previous_response_not_found' && e.param === 'previous_response_id');
});

test('function tools: a function_call item, then its function_call_output continues the conversation', async () => {
  const tools = [{ type: 'function', name: 'get_weather', description: 'Weather for a city', strict: true,
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
  const r = await client.responses.create({
    model: 'ember-fake',
    input: 'echo: <tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>',
    tools,
  });
  const call = r.output.find((o) => o.type === 'function_call');
  assert.ok(call, JSON.stringify(r.output));
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Oslo' });
  assert.match(call.call_id, /^call_/);
  const next = await client.responses.create({
    model: 'ember-fake',
    previous_response_id: r.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: 'echo: sunny' }],
    tools,
  });
  assert.equal(next.output_text, 'sunny');
  // Streaming the call: arguments arrive as function_call_arguments events.
  const stream = await client.responses.create({
    model: 'ember-fake',
    input: 'echo: <tool_call>{"name":"get_weather","arguments":{"city":"Rome"}}</tool_call>',
    tools,
    stream: true,
  });
  const events = [];
  for await (const e of stream) events.push(e);
  const done = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.ok(done, events.map((e) => e.type).join(','));
  assert.deepEqual(JSON.parse(done.arguments), { city: 'Rome' });
  assert.equal(events.at(-1).type, 'response.completed');
});

test('hostile bodies and ids are 4xx answers, and the server goes on', async () => {
  const deep = await postJson(`${server.url}/v1/responses`, `{"input":${'['.repeat(100000)}${']'.repeat(100000)}}`);
  assert.equal(deep.status, 400);
  assert.match(deep.json.error.message, /deeper than/);
  const deepArgs = await postJson(`${server.url}/v1/responses`, {
    input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '['.repeat(5000) + ']'.repeat(5000) }],
  });
  assert.equal(deepArgs.status, 400);
  assert.equal(deepArgs.json.error.param, 'input[0].arguments');
  for (const id of ['resp_' + 'f'.repeat(4000), '..%2F..%2Fetc%2Fpasswd', 'resp_%00', '%2e%2e']) {
    const g = await fetch(`${server.url}/v1/responses/${id}`);
    assert.ok(g.status === 404 || g.status === 400, `${id}: ${g.status}`);
    const d = await fetch(`${server.url}/v1/responses/${id}`, { method: 'DELETE' });
    assert.ok(d.status === 404 || d.status === 400, `${id}: ${d.status}`);
  }
  const many = await postJson(`${server.url}/v1/responses`, {
    input: Array.from({ length: 20000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' })),
  });
  assert.ok(many.status >= 400 && many.status < 500, many.text.slice(0, 200));
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
});

test('bad input is a 400 naming the field', async () => {
  await assert.rejects(
    client.responses.create({ model: 'ember-fake', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }),
    (e) => e.status === 400 && e.param === 'input[0].content[0].type');
  const raw = await postJson(`${server.url}/v1/responses`, { input: 42 });
  assert.equal(raw.status, 400);
  assert.equal(raw.json.error.param, 'input');
});

test('stored responses survive a restart on the same directory', async () => {
  const r = await client.responses.create({ model: 'ember-fake', input: 'echo: durable' });
  assert.ok(existsSync(path.join(fakeDir, 'responses', `${r.id}.json`)), readdirSync(fakeDir).join(','));
  const exit = await server.stop();
  assert.equal(exit.code, 0);
  // Planted or damaged files beside it are skipped with a log line, never trusted, never a crash.
  const planted = `resp_${'ab'.repeat(16)}`;
  writeFileSync(path.join(fakeDir, 'responses', `${planted}.json`), 'ember-response 1 ' + '0'.repeat(64) + '\n{"id":1}');
  writeFileSync(path.join(fakeDir, 'responses', `resp_${'cd'.repeat(16)}.json`), '['.repeat(100000));
  server = await startServer(['--ssd-cache', fakeDir]);
  client = clientFor(server);
  assert.match(server.stderr(), new RegExp(`responses store: skipped .*${planted}\\.json: checksum mismatch`));
  await assert.rejects(client.responses.retrieve(planted), (e) => e.status === 404);
  const got = await client.responses.retrieve(r.id);
  assert.equal(got.output_text, 'durable');
  const next = await client.responses.create({ model: 'ember-fake', input: 'echo: after', previous_response_id: r.id });
  assert.equal(next.output_text, 'after');
});

test('--no-ssd-cache keeps stored responses in RAM only', async () => {
  const home = tempDir('home');  // where the default --ssd-cache would be (the child inherits the variable)
  const saved = process.env.XDG_CACHE_HOME;
  process.env.XDG_CACHE_HOME = home;
  const ram = await startServer(['--no-ssd-cache']);
  let id;
  try {
    const c = clientFor(ram);
    const r = await c.responses.create({ model: 'ember-fake', input: 'echo: in ram' });
    id = r.id;
    assert.equal((await c.responses.retrieve(id)).output_text, 'in ram');
  } finally {
    await ram.stop();
  }
  assert.deepEqual(readdirSync(home), []);  // nothing written
  const again = await startServer(['--no-ssd-cache']);
  try {
    await assert.rejects(clientFor(again).responses.retrieve(id), (e) => e.status === 404);  // gone with the process
  } finally {
    await again.stop();
    if (saved === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = saved;
  }
});

// ---- The real engine: the earlier turns come from the prefix cache ----

test('a previous_response_id follow-up reports the earlier turns as cached, also after a restart on the SSD tier', async (t) => {
  const model = await makeTinyModel();
  const dir = tempDir('ssd');
  const args = ['--ssd-cache', dir, '--ssd-demote-idle', '0', '--parallel', '1'];
  let real = await startServer(args, { model: model.path });
  try {
    let c = clientFor(real);
    const question = 'Tell me about prompt caches and what they keep between the turns of a chat. '.repeat(3);
    const t1 = await c.responses.create({ model: 'm', input: question, temperature: 0, max_output_tokens: 8 });
    assert.equal(t1.usage.input_tokens_details.cached_tokens, 0);
    const t2 = await c.responses.create({ model: 'm', input: 'And then?', previous_response_id: t1.id,
      temperature: 0, max_output_tokens: 8 });
    const cached2 = t2.usage.input_tokens_details.cached_tokens;
    assert.ok(cached2 >= t1.usage.input_tokens - 1, `turn 2 cached ${cached2}, turn 1 prompt ${t1.usage.input_tokens}`);
    assert.ok(t2.usage.input_tokens > t1.usage.input_tokens);
    const flush = await postJson(`${real.url}/admin/cache/flush`, {});
    assert.equal(flush.status, 200, flush.text);
    assert.equal((await real.stop()).code, 0);

    real = await startServer(args, { model: model.path });
    c = clientFor(real);
    const t3 = await c.responses.create({ model: 'm', input: 'Once more?', previous_response_id: t2.id,
      temperature: 0, max_output_tokens: 8 });
    const cached3 = t3.usage.input_tokens_details.cached_tokens;
    assert.ok(cached3 >= t1.usage.input_tokens - 1, `after the restart turn 3 cached ${cached3}: ${JSON.stringify(t3.usage)}`);
    assert.equal(t3.usage.input_tokens_details.cache_tier, 'ssd');
    assert.equal((await c.responses.retrieve(t2.id)).output_text, t2.output_text);
    t.diagnostic(`turn 1 input ${t1.usage.input_tokens}; turn 2 input ${t2.usage.input_tokens}, cached ${cached2} ` +
                 `(${t2.usage.input_tokens_details.cache_tier}); after restart turn 3 input ${t3.usage.input_tokens}, ` +
                 `cached ${cached3} (${t3.usage.input_tokens_details.cache_tier})`);
  } finally {
    await real.stop();
    model.remove();
  }
});
