// The official `@anthropic-ai/sdk` client against `ember serve --fake` (no prompt cache there: the cache's
// usage fields across turns are tested on the real engine in real_model.test.mjs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './harness.mjs';

let server;
let client;
before(async () => {
  server = await startServer();
  client = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  await server.stop();
});

test('messages, non-streaming', async () => {
  const msg = await client.messages.create({
    model: 'ember-fake',
    max_tokens: 100,
    system: 'be terse',
    messages: [{ role: 'user', content: 'echo: Bonjour' }],
  });
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content[0].type, 'text');
  assert.equal(msg.content[0].text, 'Bonjour');
  assert.equal(msg.stop_reason, 'end_turn');
  assert.ok(msg.usage.input_tokens > 0);
  assert.equal(typeof msg.usage.cache_read_input_tokens, 'number');
});

test('messages, streaming through the SDK event grammar', async () => {
  const stream = client.messages.stream({
    model: 'ember-fake',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'echo: streaming words here' }],
  });
  const events = [];
  let text = '';
  stream.on('streamEvent', (e) => events.push(e.type));
  stream.on('text', (t) => (text += t));
  const final = await stream.finalMessage();
  assert.equal(text, 'streaming words here');
  assert.equal(final.content[0].text, 'streaming words here');
  assert.equal(final.stop_reason, 'end_turn');
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  assert.ok(events.includes('message_delta'));
  assert.ok(final.usage.output_tokens > 0);
});

test('stop_sequences', async () => {
  const msg = await client.messages.create({
    model: 'm',
    max_tokens: 100,
    stop_sequences: ['###'],
    messages: [{ role: 'user', content: 'echo: before###after' }],
  });
  assert.equal(msg.content[0].text, 'before');
  assert.equal(msg.stop_reason, 'stop_sequence');
  assert.equal(msg.stop_sequence, '###');
});

test('tool use and tool_result round-trip, streaming and not', async () => {
  const tools = [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object' } }];
  const ask = 'echo: <tool_call>{"name":"get_weather","arguments":{"city":"Rome"}}</tool_call>';
  const msg = await client.messages.create({ model: 'm', max_tokens: 200, tools, messages: [{ role: 'user', content: ask }] });
  assert.equal(msg.stop_reason, 'tool_use');
  const use = msg.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, { city: 'Rome' });

  const stream = client.messages.stream({ model: 'm', max_tokens: 200, tools, messages: [{ role: 'user', content: ask }] });
  const streamed = await stream.finalMessage();
  const streamedUse = streamed.content.find((b) => b.type === 'tool_use');
  assert.deepEqual(streamedUse.input, { city: 'Rome' });
  assert.equal(streamed.stop_reason, 'tool_use');

  const follow = await client.messages.create({
    model: 'm',
    max_tokens: 100,
    tools,
    messages: [
      { role: 'user', content: ask },
      { role: 'assistant', content: msg.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: use.id, content: '22 degrees' },
          { type: 'text', text: 'echo: It is 22 degrees.' },
        ],
      },
    ],
  });
  assert.equal(follow.content[0].text, 'It is 22 degrees.');
});

test('count_tokens', async () => {
  const r = await client.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
  assert.ok(r.input_tokens > 5);
});

test('errors use the Anthropic shape', async () => {
  await assert.rejects(
    client.messages.create({ model: 'm', max_tokens: 'ten', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err.status === 400 && err.error?.type === 'error' && /max_tokens/.test(err.error.error.message),
  );
});
