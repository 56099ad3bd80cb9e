// Continuous batching through the official `openai` client against `ember serve --parallel 8` on a tiny
// generated model: eight concurrent clients (half streaming) each get exactly the reply that request got
// alone (greedy), and usage.prompt_tokens_details.cached_tokens stays consistent (the positions the
// request did not compute: never more than the prompt, the shared system prompt reused by the later
// requests of a conversation). A request whose KV could never fit the budget is a 400 naming the numbers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { makeTinyModel, postJson, startServer, stats } from './harness.mjs';

// Llama 3 end-of-generation ids: banned so that every reply runs its full max_tokens.
const NO_EOG = { 128001: -100, 128008: -100, 128009: -100 };
const CLIENTS = 8;

let model;
let server;
let openai;
before(async () => {
  model = await makeTinyModel();
  // RAM cache only: no test may read or write the user's SSD cache directory. The KV budget is small
  // enough for the 400 test below and large enough for eight of these requests at once.
  server = await startServer(['--prompt-cache-bytes', '64M', '--no-ssd-cache', '--model-alias', 'tiny',
                              '--parallel', String(CLIENTS), '--step-tokens', '64', '--kv-budget', '256M'],
                             { model: model.path });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  const r = await server?.stop();
  model?.remove();
  assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${server?.stderr()}`);
});

const SYSTEM = 'You are a careful assistant. '.repeat(12);  // shared by every request (one namespace)

function request(i, stream, salt) {
  return {
    model: 'tiny',
    messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: `Question number ${i}: why ${'?'.repeat(i)}` }],
    temperature: 0,
    max_tokens: 12 + i,
    logit_bias: NO_EOG,
    cache_salt: salt,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
}

async function ask(req) {
  if (!req.stream) {
    const r = await openai.chat.completions.create(req);
    return { text: r.choices[0].message.content, usage: r.usage, finish: r.choices[0].finish_reason };
  }
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of await openai.chat.completions.create(req)) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (c?.delta?.content) text += c.delta.content;
    if (c?.finish_reason) finish = c.finish_reason;
  }
  return { text, usage, finish };
}

test('the server starts with the batching settings and prints the KV budget', async () => {
  assert.match(server.stderr(), /ember: KV budget 256\.00 MiB \(--kv-budget\)/);
  assert.match(server.stderr(), /ember: parallel 8 sequences per step, step tokens 64, step target 150 ms/);
});

test('eight concurrent clients each get exactly their solo reply, streaming and not', async () => {
  // Solo: one at a time, each in its own namespace, so each computes its whole prompt (the cold reply).
  const solo = [];
  for (let i = 0; i < CLIENTS; i++) solo.push(await ask(request(i, i % 2 === 1, `solo-${i}`)));
  // Together: all at once in one namespace, so the later ones reuse the system prompt the first one
  // computes (in flight, or from the cache once it finished).
  const together = await Promise.all(
    Array.from({ length: CLIENTS }, (_, i) => ask(request(i, i % 2 === 1, 'together'))));
  let reused = 0;
  for (let i = 0; i < CLIENTS; i++) {
    assert.equal(together[i].text, solo[i].text, `client ${i}: the batched reply differs from its solo reply`);
    assert.equal(together[i].finish, 'length');
    assert.equal(together[i].usage.completion_tokens, 12 + i);
    assert.equal(together[i].usage.prompt_tokens, solo[i].usage.prompt_tokens);
    assert.equal(solo[i].usage.prompt_tokens_details.cached_tokens, 0, `client ${i}: a fresh namespace shares nothing`);
    const cached = together[i].usage.prompt_tokens_details.cached_tokens;
    assert.ok(cached >= 0 && cached < together[i].usage.prompt_tokens, `client ${i}: cached ${cached}`);
    if (cached > 60) ++reused;  // the system prompt is ~80 tokens with the template's header
  }
  assert.ok(reused >= CLIENTS - 1, `all but the first reused the shared system prompt: ${reused}`);
  // The same prompts again: each finds its own reply entry, all but its last position.
  const again = await Promise.all(
    Array.from({ length: CLIENTS }, (_, i) => ask(request(i, i % 2 === 0, 'together'))));
  for (let i = 0; i < CLIENTS; i++) {
    assert.equal(again[i].text, solo[i].text, `client ${i}, third round`);
    assert.equal(again[i].usage.prompt_tokens_details.cached_tokens, again[i].usage.prompt_tokens - 1, `client ${i}`);
  }
});

test('--parallel 1 gives the same replies as --parallel 8: one generation path', async () => {
  // The serial server runs each request through the same step loop alone; greedy and seeded sampling,
  // all eight sent at once (the serial one queues them).
  const serial = await startServer(['--prompt-cache-bytes', '64M', '--no-ssd-cache', '--model-alias', 'tiny',
                                    '--parallel', '1'], { model: model.path });
  try {
    const client = new OpenAI({ baseURL: `${serial.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const req = (i) => ({ ...request(i, i % 2 === 1, 'p1vs8'),
                          ...(i % 3 === 0 ? { temperature: 0.9, seed: 1000 + i } : {}) });
    const batched = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => ask(req(i))));
    const alone = await Promise.all(Array.from({ length: CLIENTS }, async (_, i) => {
      const r = req(i);
      if (!r.stream) {
        const c = await client.chat.completions.create(r);
        return c.choices[0].message.content;
      }
      let text = '';
      for await (const chunk of await client.chat.completions.create(r)) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    }));
    for (let i = 0; i < CLIENTS; i++) {
      assert.ok(batched[i].text.length > 0, `client ${i}: empty reply`);
      assert.equal(alone[i], batched[i].text, `client ${i}: --parallel 1 and --parallel 8 differ`);
    }
  } finally {
    const r = await serial.stop();
    assert.equal(r.code, 0, serial.stderr());
  }
});

test('/stats shows the batch, the KV budget and the lanes', async () => {
  const s = await stats(server.url);
  const text = JSON.stringify(s);
  for (const name of ['steps', 'decode_rows', 'kv_budget_bytes', 'kv_reserved_bytes', 'occupancy']) {
    assert.ok(text.includes(`"${name}"`), `/stats names ${name}: ${text}`);
  }
});

test('a request whose KV could never fit the budget is a 400 naming the numbers', async () => {
  // The tiny model's KV: 2 layers x 2 heads x 32 dims x K and V x f16 = 512 bytes a position; 256 MiB
  // is 524,288 positions, far over the context, so this needs a smaller budget: a second server.
  const small = await startServer(['--prompt-cache-bytes', '1M', '--no-ssd-cache', '--model-alias', 'tiny',
                                   '--parallel', '2', '--kv-budget', '256K'], { model: model.path });
  try {
    const r = await postJson(`${small.url}/v1/chat/completions`, {
      model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000, temperature: 0,
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.error.message, /KV positions .* max_tokens\) = \d+ bytes .* KV budget of 262144 bytes/);
    const ok = await postJson(`${small.url}/v1/chat/completions`, {
      model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8, temperature: 0,
    });
    assert.equal(ok.status, 200, ok.text);
  } finally {
    const r = await small.stop();
    assert.equal(r.code, 0, small.stderr());
  }
});

test('bad batching flags are refused with a clear error', async () => {
  for (const [flag, value, pattern] of [['--parallel', '0', /--parallel/], ['--parallel', '65', /--parallel/],
                                        ['--step-tokens', '8', /--step-tokens/], ['--step-ms', '-1', /--step-ms/],
                                        ['--kv-budget', '0', /--kv-budget 0/],
                                        ['--kv-budget', 'lots', /byte size/]]) {
    await assert.rejects(startServer([flag, value, '--no-ssd-cache'], { model: model.path }), pattern,
                         `${flag} ${value}`);
  }
});
