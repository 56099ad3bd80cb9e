// Speculative decoding through the official OpenAI client on the real engine (docs/speculative.md):
// greedy replies of a server with --spec ngram are exactly those of a plain server (serial and
// --parallel 2 with concurrent requests, stop strings included), the usage reports accepted/rejected
// prediction tokens, /stats counts them, and a draft model with another vocabulary is refused at start.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';
import { emberBin, makeTinyModel, startServer, stats } from './harness.mjs';

let model;
const servers = {};
const PROMPTS = [
  'The quick brown fox jumps over the lazy dog. The quick brown fox',
  'a b c d a b c d a b c d',
  'Once upon a time',
];

before(async () => {
  model = await makeTinyModel({ seed: 11 });
  servers.plain = await startServer(['--no-ssd-cache', '--parallel', '1'], { model: model.path });
  servers.spec = await startServer(['--no-ssd-cache', '--parallel', '1', '--spec', 'ngram'], { model: model.path });
  servers.specBatched = await startServer(['--no-ssd-cache', '--parallel', '2', '--spec', 'ngram', '--draft-max', '6'],
                                          { model: model.path });
});

after(async () => {
  for (const s of Object.values(servers)) await s.stop();
  model?.remove();
});

const client = (s) => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'none' });

async function complete(s, prompt, extra = {}) {
  return client(s).completions.create({ model: 'm', prompt, max_tokens: 48, temperature: 0, ...extra });
}

test('greedy replies with prompt lookup equal the plain ones, serial and batched', async () => {
  let drafted = 0;
  for (const prompt of PROMPTS) {
    const want = await complete(servers.plain, prompt);
    const got = await complete(servers.spec, prompt);
    assert.equal(got.choices[0].text, want.choices[0].text, prompt);
    assert.equal(got.choices[0].finish_reason, want.choices[0].finish_reason);
    assert.equal(got.usage.completion_tokens, want.usage.completion_tokens);
    const d = got.usage.completion_tokens_details;
    if (d) {
      assert.ok(d.accepted_prediction_tokens >= 0 && d.rejected_prediction_tokens >= 0);
      drafted += d.accepted_prediction_tokens + d.rejected_prediction_tokens;
    }
    assert.equal(want.usage.completion_tokens_details, undefined, 'a plain server reports no predictions');
  }
  assert.ok(drafted > 0, 'prompt lookup drafted on these prompts');
  // Concurrent requests through the batch runner: each reply is the plain one.
  const wants = await Promise.all(PROMPTS.map((p) => complete(servers.plain, p)));
  const gots = await Promise.all(PROMPTS.map((p) => complete(servers.specBatched, p)));
  for (let i = 0; i < PROMPTS.length; i++) assert.equal(gots[i].choices[0].text, wants[i].choices[0].text, PROMPTS[i]);
  const st = await stats(servers.spec.url);
  const values = JSON.stringify(st);
  assert.match(values, /"draft_tokens"/);
  assert.match(values, /"draft_acceptance"/);
});

test('a stop string inside an accepted run ends the reply as without speculation', async () => {
  const prompt = PROMPTS[1];
  const full = (await complete(servers.plain, prompt)).choices[0].text;
  const words = full.trim().split(/\s+/);
  assert.ok(words.length > 3, `a reply to cut: '${full}'`);
  const stop = words[2];
  const want = await complete(servers.plain, prompt, { stop: [stop] });
  const got = await complete(servers.spec, prompt, { stop: [stop] });
  assert.equal(got.choices[0].text, want.choices[0].text);
  assert.equal(got.choices[0].finish_reason, want.choices[0].finish_reason);
});

test('a draft model with another vocabulary is refused at start, naming it', async () => {
  const other = path.join(model.dir, 'qwen.gguf');
  await new Promise((resolve, reject) =>
    execFile(emberBin, ['gen-model', '--out', other, '--arch', 'qwen3', '--tokenizer', 'qwen3', '--n-layer', '1',
                        '--n-embd', '64', '--n-head', '2', '--n-head-kv', '2', '--n-ff', '128'],
             { timeout: 120000 }, (err) => (err ? reject(err) : resolve())));
  const r = spawnSync(emberBin, ['serve', model.path, '--port', '0', '--no-ssd-cache', '--draft-model', other],
                      { encoding: 'utf8', timeout: 60000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /draft model: vocabulary/);
});
