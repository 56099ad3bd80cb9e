// The official `openai` client against `ember serve --fake`: the HTTP API's shapes, streaming, stop strings,
// seeds, tool calls and errors. The fake has no prompt cache (cached_tokens is always 0); what the cache
// does is tested on the real engine in real_model, ssd, tenancy and cachedir.test.mjs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './harness.mjs';

let server;
let client;
before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  await server.stop();
});

test('chat completion, non-streaming', async () => {
  const r = await client.chat.completions.create({
    model: 'ember-fake',
    messages: [{ role: 'user', content: 'echo: Hello, world' }],
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, 'ember-fake');
  assert.equal(r.choices[0].message.content, 'Hello, world');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

test('chat completion, streaming with include_usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'ember-fake',
    messages: [{ role: 'user', content: 'echo: streamed reply text' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.choices.length > 0) {
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'streamed reply text');
  assert.equal(finish, 'stop');
  assert.ok(chunks > 3);
  assert.ok(usage.completion_tokens > 0);
});

test('completions endpoint', async () => {
  const r = await client.completions.create({ model: 'ember-fake', prompt: 'echo: legacy api', max_tokens: 3 });
  assert.equal(r.choices[0].text, 'legacy ap');
  assert.equal(r.choices[0].finish_reason, 'length');
});

test('stop strings are never emitted, streaming or not', async () => {
  const messages = [{ role: 'user', content: 'echo: alpha beta<END>gamma' }];
  const r = await client.chat.completions.create({ model: 'm', messages, stop: ['<END>', 'zzz'] });
  assert.equal(r.choices[0].message.content, 'alpha beta');
  const stream = await client.chat.completions.create({ model: 'm', messages, stop: '<END>', stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'alpha beta');
});

test('same seed gives the same output; another seed another', async () => {
  const ask = (seed) =>
    client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'tell me something' }],
      seed,
      temperature: 0.8,
    });
  const [a, b, c] = await Promise.all([ask(7), ask(7), ask(8)]);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.notEqual(a.choices[0].message.content, c.choices[0].message.content);
});

test('tool calls round-trip, role tool included', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
  const r = await client.chat.completions.create({
    model: 'm',
    tools,
    messages: [{ role: 'user', content: 'echo: <tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>' }],
  });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const call = r.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  const follow = await client.chat.completions.create({
    model: 'm',
    tools,
    messages: [
      { role: 'user', content: 'weather?' },
      r.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      { role: 'user', content: 'echo: It is sunny.' },
    ],
  });
  assert.equal(follow.choices[0].message.content, 'It is sunny.');
  assert.equal(follow.choices[0].finish_reason, 'stop');
});

test('wrong types are 400 errors naming the field', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }),
    (err) => err.status === 400 && err.param === 'temperature' && err.type === 'invalid_request_error',
  );
  await assert.rejects(
    client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 99999 }),
    (err) => err.status === 400 && /99999/.test(err.message) && /4096/.test(err.message),
  );
});

test('models list', async () => {
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'ember-fake');
});
