// The official `openai` and `@anthropic-ai/sdk` clients against `ember serve` running the real engine on a
// tiny generated model (random weights, real Llama 3 tokenizer and chat template). The replies are
// gibberish, so every assertion is structural or compares the server with itself: greedy decoding is
// deterministic, streaming must equal non-streaming, stop strings cut a known reply, the prefix cache
// must report reused tokens on a follow-up turn.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { makeTinyModel, postJson, serveTakes, startServer, stats } from './harness.mjs';

// Llama 3 end-of-generation ids (<|end_of_text|>, <|eom_id|>, <|eot_id|>): banned where a test needs
// exactly max_tokens tokens, since a random model may pick one at any step.
const NO_EOG = { 128001: -100, 128008: -100, 128009: -100 };

let model;
let server;
let openai;
let anthropic;
before(async () => {
  model = await makeTinyModel();
  // RAM cache only: these tests must not read or write the user's SSD cache directory.
  const args = ['--prompt-cache-bytes', '256M', '--model-alias', 'tiny'];
  if (serveTakes('--no-ssd-cache')) args.push('--no-ssd-cache');
  server = await startServer(args, { model: model.path });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  const r = await server?.stop();
  model?.remove();
  assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${server?.stderr()}`);
});

const greedy = (content, extra = {}) => ({
  model: 'tiny',
  messages: [{ role: 'user', content }],
  temperature: 0,
  max_tokens: 16,
  ...extra,
});

test('the real engine is behind the server', async () => {
  const s = await stats(server.url);
  assert.equal(s.model, 'tiny');
  assert.notEqual(s.engine.name, 'fake');
  assert.ok(s.engine.values.threads >= 1, JSON.stringify(s.engine));
  assert.ok('ram' in s.cache.tiers, 'the RAM prompt cache is on');
  const models = await openai.models.list();
  assert.equal(models.data[0].id, 'tiny');
});

test('chat completion, non-streaming: usage adds up and the reply is real text', async () => {
  const r = await openai.chat.completions.create(greedy('Name three colours.', { cache_salt: 'plain' }));
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, 'tiny');
  const msg = r.choices[0].message;
  assert.equal(msg.role, 'assistant');
  assert.equal(typeof msg.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 10, `the chat template adds header tokens: ${r.usage.prompt_tokens}`);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 16);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0, 'a fresh cache_salt shares nothing');
});

test('greedy decoding is deterministic; the repeat is served from the prefix cache', async () => {
  const req = greedy('Tell me about the sea.', { cache_salt: 'determinism', logit_bias: NO_EOG });
  const a = await openai.chat.completions.create(req);
  const b = await openai.chat.completions.create(req);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  assert.equal(a.usage.completion_tokens, 16);
  assert.equal(b.usage.completion_tokens, 16);
  assert.equal(a.usage.prompt_tokens_details.cached_tokens, 0);
  const cached = b.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached > 0 && cached <= b.usage.prompt_tokens, `cached ${cached} of ${b.usage.prompt_tokens}`);
});

test('streaming sends the same text as the non-streaming reply, then usage', async () => {
  const req = greedy('Count to five.', { cache_salt: 'stream', logit_bias: NO_EOG });
  const whole = await openai.chat.completions.create(req);
  const stream = await openai.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let contentChunks = 0;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c?.delta?.content) {
      text += c.delta.content;
      contentChunks++;
    }
    if (c?.finish_reason) finish = c.finish_reason;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, 'length');
  assert.ok(contentChunks > 1, 'tokens arrive as several chunks');
  assert.equal(usage.completion_tokens, 16);
  assert.ok(usage.prompt_tokens_details.cached_tokens > 0, 'the non-streaming call cached this prompt');
});

test('completions endpoint: text prompt and token-id prompt, max_tokens gives finish_reason length', async () => {
  const r = await openai.completions.create({
    model: 'tiny', prompt: 'Once upon a time', max_tokens: 5, temperature: 0, logit_bias: NO_EOG,
  });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 5);
  const tok = await postJson(`${server.url}/tokenize`, { content: 'Once upon a time', add_special: true });
  assert.equal(tok.status, 200, tok.text);
  const ids = tok.json.tokens ?? tok.json.ids;
  assert.ok(Array.isArray(ids) && ids.length === r.usage.prompt_tokens, tok.text);
  const byIds = await openai.completions.create({
    model: 'tiny', prompt: ids, max_tokens: 5, temperature: 0, logit_bias: NO_EOG,
  });
  assert.equal(byIds.choices[0].text, r.choices[0].text, 'the same ids give the same greedy continuation');
  assert.ok(byIds.usage.prompt_tokens_details.cached_tokens > 0);
});

test('stop strings cut a known reply and are never sent', async () => {
  const req = greedy('Write a long sentence.', { cache_salt: 'stop', logit_bias: NO_EOG, max_tokens: 24 });
  const full = (await openai.chat.completions.create(req)).choices[0].message.content;
  // A stop string taken from the middle of the greedy reply; the reply must end just before its first
  // occurrence.
  const chars = [...full];
  assert.ok(chars.length >= 6, `reply too short to cut: ${JSON.stringify(full)}`);
  const stop = chars.slice(Math.floor(chars.length / 2), Math.floor(chars.length / 2) + 2).join('');
  const expected = full.slice(0, full.indexOf(stop));
  const cut = await openai.chat.completions.create({ ...req, stop: [stop] });
  assert.equal(cut.choices[0].message.content, expected);
  assert.equal(cut.choices[0].finish_reason, 'stop');
  const stream = await openai.chat.completions.create({ ...req, stop: stop, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, expected);
});

test('two-turn conversation: turn 2 reuses turn 1 from the prefix cache (OpenAI and Anthropic usage)', async () => {
  const messages = [
    { role: 'system', content: 'You are a helpful assistant that answers in one sentence.' },
    { role: 'user', content: 'What is the capital of France?' },
  ];
  const t1 = await openai.chat.completions.create({ model: 'tiny', messages, temperature: 0, max_tokens: 8,
                                                      cache_salt: 'conversation' });
  assert.equal(t1.usage.prompt_tokens_details.cached_tokens, 0);
  messages.push({ role: 'assistant', content: t1.choices[0].message.content });
  messages.push({ role: 'user', content: 'And of Italy?' });
  const t2 = await openai.chat.completions.create({ model: 'tiny', messages, temperature: 0, max_tokens: 8,
                                                      cache_salt: 'conversation' });
  const cached = t2.usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached >= t1.usage.prompt_tokens - 1, `turn 2 cached ${cached}, turn 1 prompt ${t1.usage.prompt_tokens}`);
  assert.ok(cached < t2.usage.prompt_tokens);

  // The same through the Messages API (no cache salt there: the default namespace, which has not seen
  // this system prompt, so turn 1 can share at most the few template tokens before it).
  const system = 'You answer in French, briefly.';
  const a1 = await anthropic.messages.create({ model: 'tiny', max_tokens: 8, temperature: 0, system,
                                               messages: [{ role: 'user', content: 'Bonjour !' }] });
  const a1Prompt = a1.usage.input_tokens + a1.usage.cache_read_input_tokens;
  assert.ok(a1.usage.cache_read_input_tokens < 8, JSON.stringify(a1.usage));
  const a2 = await anthropic.messages.create({
    model: 'tiny', max_tokens: 8, temperature: 0, system,
    messages: [
      { role: 'user', content: 'Bonjour !' },
      { role: 'assistant', content: a1.content.map((b) => b.text).join('') || '.' },
      { role: 'user', content: 'Comment ça va ?' },
    ],
  });
  assert.ok(a2.usage.cache_read_input_tokens >= a1Prompt - 1, `${JSON.stringify(a2.usage)} vs turn 1 ${a1Prompt}`);
  assert.ok(a2.usage.input_tokens > 0, 'input_tokens counts the uncached part');
});

// Moved here from openai/anthropic.test.mjs, which ran it against the fake's own prefix memory: on the real
// cache, each turn of one conversation finds the whole previous prompt cached (all but the one token
// recomputed for its logits), so cached_tokens / cache_read_input_tokens rise turn after turn.
test('cached tokens rise across four turns of one conversation, on both APIs', async () => {
  const messages = [{ role: 'user', content: 'Give me a word.' }];
  const prompts = [];
  const cached = [];
  for (let turn = 0; turn < 4; turn++) {
    const r = await openai.chat.completions.create({ model: 'tiny', messages, temperature: 0, max_tokens: 6,
                                                     cache_salt: 'four-turns' });
    prompts.push(r.usage.prompt_tokens);
    cached.push(r.usage.prompt_tokens_details.cached_tokens);
    assert.equal(r.usage.prompt_tokens_details.cache_tier, turn === 0 ? 'none' : 'ram', `turn ${turn}`);
    messages.push({ role: 'assistant', content: r.choices[0].message.content || '.' });
    messages.push({ role: 'user', content: `And another, number ${turn + 2}?` });
  }
  assert.equal(cached[0], 0);
  for (let i = 1; i < 4; i++) {
    assert.ok(cached[i] > cached[i - 1], `cached ${cached}`);
    assert.ok(cached[i] >= prompts[i - 1] - 1 && cached[i] < prompts[i], `cached ${cached}, prompts ${prompts}`);
  }

  const turns = [{ role: 'user', content: 'Un mot, s\'il vous plaît.' }];
  const reads = [];
  const inputs = [];
  for (let turn = 0; turn < 3; turn++) {
    const msg = await anthropic.messages.create({ model: 'tiny', max_tokens: 6, temperature: 0, messages: turns,
                                                  cache_salt: 'three-turns' });
    reads.push(msg.usage.cache_read_input_tokens);
    inputs.push(msg.usage.input_tokens + msg.usage.cache_read_input_tokens);
    turns.push({ role: 'assistant', content: msg.content.map((b) => b.text).join('') || '.' });
    turns.push({ role: 'user', content: `Encore un, le numéro ${turn + 2} ?` });
  }
  assert.equal(reads[0], 0);
  for (let i = 1; i < 3; i++) {
    assert.ok(reads[i] > reads[i - 1] && reads[i] >= inputs[i - 1] - 1, `reads ${reads}, prompts ${inputs}`);
  }
  const s = await stats(server.url);
  assert.ok(s.cache.tiers.ram.hits >= 5, JSON.stringify(s.cache.tiers.ram));
});

test('messages: the same greedy reply as chat completions, streaming and not; max_tokens stop reason', async () => {
  const content = 'Describe a mountain.';
  const oa = await openai.chat.completions.create(greedy(content, { max_tokens: 12 }));
  const msg = await anthropic.messages.create({ model: 'tiny', max_tokens: 12, temperature: 0,
                                                messages: [{ role: 'user', content }] });
  assert.equal(msg.type, 'message');
  assert.equal(msg.content[0]?.text ?? '', oa.choices[0].message.content);
  assert.equal(msg.stop_reason, oa.choices[0].finish_reason === 'length' ? 'max_tokens' : 'end_turn');
  assert.equal(msg.usage.output_tokens, oa.usage.completion_tokens);

  const stream = anthropic.messages.stream({ model: 'tiny', max_tokens: 12, temperature: 0,
                                             messages: [{ role: 'user', content }] });
  const events = [];
  let text = '';
  stream.on('streamEvent', (e) => events.push(e.type));
  stream.on('text', (t) => (text += t));
  const final = await stream.finalMessage();
  assert.equal(text, oa.choices[0].message.content);
  assert.equal(final.stop_reason, msg.stop_reason);
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  assert.ok(final.usage.cache_read_input_tokens > 0, 'the earlier calls cached this prompt');
});

test('bad requests are 400s with OpenAI- and Anthropic-shaped errors', async () => {
  await assert.rejects(
    openai.chat.completions.create(greedy('x', { temperature: 'hot' })),
    (err) => err.status === 400 && err.param === 'temperature' && err.type === 'invalid_request_error',
  );
  const raw = await postJson(`${server.url}/v1/chat/completions`, { model: 'tiny', messages: 'hello' });
  assert.equal(raw.status, 400);
  assert.deepEqual(Object.keys(raw.json.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(raw.json.error.param, 'messages');
  // The context is 2048 tokens: a max_tokens beyond it is refused, naming both numbers.
  await assert.rejects(
    openai.chat.completions.create(greedy('x', { max_tokens: 5000 })),
    (err) => err.status === 400 && /5000/.test(err.message) && /2048/.test(err.message),
  );
  const bad = await postJson(`${server.url}/v1/messages`, { model: 'tiny', messages: [] });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.type, 'error');
  assert.equal(bad.json.error.type, 'invalid_request_error');
  // The server is still healthy after all that.
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
});
