// llama-server compatibility and Anthropic completeness through the shipped binary: the native routes a
// llama-server client uses (/completion, its SSE, /tokenize, /props, /slots), the llamacpp: metric names,
// the serve flags (-c, -n, --alias lists, --tags, --seed, --no-metrics, --no-slots), Anthropic's count_tokens through
// the official SDK, its error shapes, and on a tiny real model: timings.cache_n and metadata.user_id not
// splitting the prompt cache. (llama.cpp's own test files run by scripts/llamacpp-compat, not here.)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { makeTinyModel, postJson, startServer } from './harness.mjs';

let fake;
let model;
let real;
before(async () => {
  fake = await startServer(['--alias', 'zeta,compat', '--tags', 'chat,small', '-c', '512', '-n', '32', '--seed', '42', '--parallel', '2']);
  model = await makeTinyModel();
  real = await startServer(['--no-ssd-cache', '--parallel', '1', '--no-metrics', '--no-slots'], { model: model.path });
});
after(async () => {
  await fake?.stop();
  await real?.stop();
  model?.remove();
});

async function sse(url, body) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  const text = await res.text();
  return text.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => JSON.parse(f.slice(6)));
}

test('POST /completion: llama-server object, ids and mixed prompts', async () => {
  const r = await postJson(`${fake.url}/completion`, { prompt: 'echo: hello there', n_predict: 16, return_tokens: true });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.content, 'hello there');
  assert.equal(r.json.stop, true);
  assert.equal(r.json.stop_type, 'eos');
  assert.equal(r.json.model, 'compat');
  assert.equal(r.json.tokens.length, r.json.tokens_predicted);
  for (const k of ['prompt_n', 'prompt_ms', 'predicted_n', 'predicted_ms', 'predicted_per_second', 'cache_n']) {
    assert.equal(typeof r.json.timings[k], 'number', k);
  }
  const ids = await postJson(`${fake.url}/completion`, { prompt: [...Buffer.from('echo: ids')], n_predict: 8 });
  assert.equal(ids.json.content, 'ids');
  const mixed = await postJson(`${fake.url}/completion`, { prompt: [101, 'cho: mix'], n_predict: 8 });
  assert.equal(mixed.json.content, 'mix');
  const bad = await postJson(`${fake.url}/completion`, { prompt: 'x', n_predict: 'lots' });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'n_predict');
});

test('POST /completion streams llama-server chunks, then the final object', async () => {
  const chunks = await sse(`${fake.url}/completion`, { prompt: 'echo: a streamed reply', stream: true });
  const last = chunks.at(-1);
  assert.equal(last.stop, true);
  assert.equal(last.stop_type, 'eos');
  assert.ok(last.timings.predicted_n > 0);
  const body = chunks.slice(0, -1);
  assert.ok(body.length > 1);
  assert.ok(body.every((c) => c.stop === false && Array.isArray(c.tokens)));
  assert.equal(body.map((c) => c.content).join(''), 'a streamed reply');
});

test('-n is the default max tokens; /props, /slots and /models reflect the flags', async () => {
  const r = await postJson(`${fake.url}/completion`, { prompt: '[long]' });
  assert.equal(r.json.tokens_predicted, 32);
  const props = await (await fetch(`${fake.url}/props`)).json();
  assert.equal(props.total_slots, 2);
  assert.equal(props.default_generation_settings.n_ctx, 512);
  assert.equal(props.default_generation_settings.params.seed, 42);
  assert.equal(props.default_generation_settings.params.n_predict, 32);
  const slots = await (await fetch(`${fake.url}/slots`)).json();
  assert.equal(slots.length, 2);
  assert.ok(slots.every((s) => s.n_ctx === 512 && s.is_processing === false));
  const models = await (await fetch(`${fake.url}/models`)).json();
  assert.equal(models.data[0].id, 'compat');  // the first alias in sorted order, as llama-server's
  assert.deepEqual(models.data[0].aliases, ['compat', 'zeta']);
  assert.deepEqual(models.data[0].tags, ['chat', 'small']);
  const tok = await postJson(`${fake.url}/tokenize`, { content: 'h\u00e9', with_pieces: true });
  assert.deepEqual(tok.json.tokens, [{ id: 104, piece: 'h' }, { id: 0xc3, piece: [0xc3] }, { id: 0xa9, piece: [0xa9] }]);
});

test('/metrics has the llamacpp: names beside ember_*; --no-metrics and --no-slots are 501', async () => {
  await postJson(`${fake.url}/completion`, { prompt: 'echo: counted', n_predict: 8 });
  const res = await fetch(`${fake.url}/metrics`);
  assert.ok(res.headers.get('process-start-time-unix'));
  const text = await res.text();
  for (const name of ['prompt_tokens_total', 'prompt_seconds_total', 'tokens_predicted_total', 'n_decode_total',
                      'tokens_predicted_seconds_total', 'n_tokens_max', 'prompt_tokens_cached_total']) {
    assert.match(text, new RegExp(`# TYPE llamacpp:${name} counter\\n`), name);
  }
  for (const name of ['requests_processing', 'requests_deferred', 'kv_cache_usage_ratio', 'prompt_tokens_seconds',
                      'predicted_tokens_seconds', 'n_busy_slots_per_decode']) {
    assert.match(text, new RegExp(`# TYPE llamacpp:${name} gauge\\n`), name);
  }
  assert.ok(Number(text.match(/\nllamacpp:tokens_predicted_total (\d+)/)[1]) > 0);
  assert.match(text, /ember_completion_tokens_total/);
  assert.equal((await fetch(`${real.url}/metrics`)).status, 501);
  assert.equal((await fetch(`${real.url}/slots`)).status, 501);
});

test('Anthropic count_tokens through the SDK, and error shapes for 4xx', async () => {
  const client = new Anthropic({ baseURL: fake.url, apiKey: 'unused', maxRetries: 0 });
  const base = { model: 'compat', messages: [{ role: 'user', content: 'hello' }] };
  const n = (await client.messages.countTokens(base)).input_tokens;
  assert.ok(n > 0);
  const withSystem = (await client.messages.countTokens({ ...base, system: 'be brief' })).input_tokens;
  assert.ok(withSystem > n);
  const msg = await client.messages.create({ ...base, max_tokens: 4 });
  assert.equal(msg.usage.input_tokens, n);  // count_tokens counts what a generation is given
  await assert.rejects(client.messages.create({ model: 'compat', max_tokens: 4, messages: [] }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'invalid_request_error');
    return true;
  });
  const missing = await fetch(`${fake.url}/v1/messages/batches`);
  assert.equal(missing.status, 404);
  assert.deepEqual(Object.keys(await missing.json()).sort(), ['error', 'type']);
  const method = await fetch(`${fake.url}/v1/messages`);
  assert.equal(method.status, 405);
  assert.equal(method.headers.get('allow'), 'POST');
  assert.equal((await method.json()).type, 'error');
});

test('tiny model: timings.cache_n on a repeat, and metadata.user_id does not split the cache', async () => {
  const prompt = 'the quick brown fox jumps over the lazy dog, again and again and again';
  const first = await postJson(`${real.url}/completion`, { prompt, n_predict: 4, temperature: 0 });
  const second = await postJson(`${real.url}/completion`, { prompt, n_predict: 4, temperature: 0 });
  assert.equal(first.json.timings.cache_n, 0);
  assert.ok(second.json.timings.cache_n > 0, JSON.stringify(second.json.timings));
  assert.equal(second.json.content, first.json.content);
  const ask = (user) => postJson(`${real.url}/v1/messages`, {
    model: 'm', max_tokens: 1, temperature: 0, metadata: { user_id: user },
    system: 'A long shared system prompt that every user of this application sends first, word for word.',
    messages: [{ role: 'user', content: `hello from ${user}` }],
  });
  assert.equal((await ask('user-a')).status, 200);
  const b = await ask('user-b');
  assert.equal(b.status, 200, b.text);
  assert.ok(b.json.usage.cache_read_input_tokens > 10, JSON.stringify(b.json.usage));
  const salted = await postJson(`${real.url}/v1/messages`, {
    model: 'm', max_tokens: 1, cache_salt: 'tenant-x', metadata: { user_id: 'user-a' },
    system: 'A long shared system prompt that every user of this application sends first, word for word.',
    messages: [{ role: 'user', content: 'hello from user-a' }],
  });
  assert.equal(salted.json.usage.cache_read_input_tokens, 0);  // cache_salt is what separates tenants
});
