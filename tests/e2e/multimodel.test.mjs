// Several models in one server (docs/server.md, "Several models"), through the official clients.
// On fake models (`--fake-models`): `model` selects the backend on both APIs, an unknown one is a 404
// naming the served models in each SDK's error, /v1/models lists every model with its loaded state,
// --max-loaded 1 swaps them, --idle-unload unloads an unused one. On real tiny models (`--models-dir`,
// `ember gen-model`): load on demand, LRU unload with --max-loaded 1, and the reload warm from the SSD
// tier (cached_tokens > 0, cache_tier "ssd", the same greedy reply). And `ember serve` with no model
// serves what the data dir holds (or exits 2 when it holds nothing).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { emberBin, makeTinyModel, postJson, startServer, stats } from './harness.mjs';

const clients = (url) => ({
  openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 }),
  anthropic: new Anthropic({ baseURL: url, apiKey: 'unused', maxRetries: 0 }),
});

const models = async (url) => Object.fromEntries((await (await fetch(`${url}/v1/models`)).json()).data.map((m) => [m.id, m]));

test('fake models: `model` picks one on both APIs; unknown names are 404s naming the served ones', async () => {
  const server = await startServer(['--fake-models', 'beta,alpha', '--max-loaded', '1']);
  try {
    const { openai, anthropic } = clients(server.url);
    const a = await openai.chat.completions.create({ model: 'alpha', messages: [{ role: 'user', content: 'echo: from alpha' }] });
    assert.equal(a.model, 'alpha');
    assert.equal(a.choices[0].message.content, 'from alpha');
    let list = await openai.models.list();
    assert.deepEqual(list.data.map((m) => m.id), ['alpha', 'beta']);
    assert.deepEqual(list.data.map((m) => m.loaded), [true, false]);

    const b = await anthropic.messages.create({ model: 'beta', max_tokens: 32, messages: [{ role: 'user', content: 'echo: from beta' }] });
    assert.equal(b.model, 'beta');
    assert.equal(b.content[0].text, 'from beta');
    // --max-loaded 1: alpha made room for beta
    const m = await models(server.url);
    assert.equal(m.alpha.state, 'unloaded');
    assert.equal(m.beta.state, 'loaded');
    assert.equal((await openai.models.retrieve('beta')).loaded, true);

    await assert.rejects(openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }), (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, String(e));
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      assert.match(e.message, /'gpt-4o'.*alpha, beta/);
      return true;
    });
    await assert.rejects(anthropic.messages.create({ model: 'claude-x', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }), (e) => {
      assert.ok(e instanceof Anthropic.NotFoundError, String(e));
      assert.equal(e.error.error.type, 'not_found_error');
      assert.match(e.error.error.message, /alpha, beta/);
      return true;
    });
    await assert.rejects(openai.models.retrieve('nope'), (e) => e instanceof OpenAI.NotFoundError);
    // Streaming selects the model too.
    const stream = await openai.chat.completions.create({ model: 'alpha', stream: true, messages: [{ role: 'user', content: 'echo: streamed' }] });
    let text = '';
    for await (const chunk of stream) {
      assert.equal(chunk.model, 'alpha');
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.equal(text, 'streamed');
    const s = await stats(server.url);
    assert.equal(s.router.lru_unloads, 2);
    assert.deepEqual(s.models.map((x) => [x.name, x.state]), [['alpha', 'loaded'], ['beta', 'unloaded']]);
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('fake models: --idle-unload unloads a model nobody used for that long', async () => {
  const server = await startServer(['--fake-models', 'alpha,beta', '--idle-unload', '1']);
  try {
    const r = await postJson(`${server.url}/v1/chat/completions`, { model: 'alpha', messages: [{ role: 'user', content: 'echo: hi' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal((await models(server.url)).alpha.loaded, true);
    let state = 'loaded';
    for (let i = 0; i < 100 && state !== 'unloaded'; i++) {
      await new Promise((res) => setTimeout(res, 100));
      state = (await models(server.url)).alpha.state;
    }
    assert.equal(state, 'unloaded');
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /ember_model_unloads_total\{reason="idle"\} 1/);
    assert.deepEqual((await (await fetch(`${server.url}/health`)).json()).models_loaded, []);
  } finally {
    await server.stop();
  }
});

test('fake models: a request for a model that needs the room of one in use waits for it (--load-wait), or is a 503 with --load-wait 0', async () => {
  for (const wait of ['60', '0']) {
    const server = await startServer(['--fake-models', 'alpha,beta', '--max-loaded', '1', '--fake-token-delay-ms', '25',
      '--load-wait', wait]);
    try {
      const { openai } = clients(server.url);
      const stream = await openai.chat.completions.create({ model: 'alpha', stream: true,
        messages: [{ role: 'user', content: 'echo: 0123456789abcdefghij' }] });
      const it = stream[Symbol.asyncIterator]();
      await it.next();  // alpha is generating: its lease holds the only slot
      const beta = openai.chat.completions.create({ model: 'beta', messages: [{ role: 'user', content: 'echo: from beta' }] })
        .then((r) => ({ r, at: Date.now() }), (e) => ({ e, at: Date.now() }));
      let text = '';
      for (let c = await it.next(); !c.done; c = await it.next()) text += c.value.choices[0]?.delta?.content ?? '';
      const alphaDone = Date.now();
      const got = await beta;
      if (wait === '0') {
        assert.ok(got.e instanceof OpenAI.APIError, String(got.e));
        assert.equal(got.e.status, 503);
        assert.equal(got.e.code, 'model_busy');
        assert.ok(got.at <= alphaDone, 'refused at once, not after alpha finished');
      } else {
        assert.ok(!got.e, String(got.e));
        assert.equal(got.r.choices[0].message.content, 'from beta');
        assert.ok(got.at >= alphaDone, 'beta answered after alpha finished');
        assert.equal((await models(server.url)).alpha.state, 'unloaded');
      }
      assert.match(text, /abcdefghij$/);  // alpha's stream was not cut short either way
    } finally {
      await server.stop();
    }
  }
});

let dir;
let cold;
before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-multimodel-'));
  mkdirSync(path.join(dir, 'models'));
  for (const [name, seed] of [['tiny-a', 7], ['tiny-b', 8]]) {
    const m = await makeTinyModel({ seed });
    copyFileSync(m.path, path.join(dir, 'models', `${name}.gguf`));
    m.remove();
  }
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

test('real models: loaded on demand, swapped by --max-loaded 1, and reloaded warm from SSD', async () => {
  const server = await startServer(['--models-dir', path.join(dir, 'models'), '--max-loaded', '1', '--parallel', '1',
                                    '--ssd-cache', path.join(dir, 'ssd'), '--ssd-demote-idle', '0'], { fake: false });
  try {
    const { openai, anthropic } = clients(server.url);
    let m = await models(server.url);
    assert.deepEqual(Object.keys(m).sort(), ['tiny-a', 'tiny-b']);
    assert.ok(!m['tiny-a'].loaded && !m['tiny-b'].loaded, 'nothing is loaded before a request');
    assert.equal(m['tiny-a'].arch, 'llama');
    assert.ok(m['tiny-a'].size_bytes > 0);
    assert.equal(m['tiny-a'].context_length, 2048);

    const request = {
      model: 'tiny-a',
      messages: [{ role: 'user', content: 'Several models share one server and its prompt cache. '.repeat(4) }],
      max_tokens: 8,
      temperature: 0,
    };
    cold = await openai.chat.completions.create(request);
    assert.equal(cold.model, 'tiny-a');
    assert.equal(cold.usage.prompt_tokens_details.cached_tokens, 0);
    m = await models(server.url);
    assert.equal(m['tiny-a'].state, 'loaded');

    const b = await anthropic.messages.create({ model: 'tiny-b', max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] });
    assert.equal(b.model, 'tiny-b');
    m = await models(server.url);
    assert.equal(m['tiny-a'].state, 'unloaded', 'tiny-a made room for tiny-b');
    assert.equal(m['tiny-b'].state, 'loaded');

    const warm = await openai.chat.completions.create(request);
    const prompt = warm.usage.prompt_tokens;
    assert.ok(warm.usage.prompt_tokens_details.cached_tokens >= prompt - 1, JSON.stringify(warm.usage));
    assert.equal(warm.usage.prompt_tokens_details.cache_tier, 'ssd');
    assert.equal(warm.choices[0].message.content, cold.choices[0].message.content);

    const s = await stats(server.url);
    assert.equal(s.router.lru_unloads, 2);
    const a = s.models.find((x) => x.name === 'tiny-a');
    assert.equal(a.loads, 2);
    assert.equal(a.cache.tiers.ssd.restores, 1);
    assert.ok(a.memory_bytes > a.size_bytes, 'a loaded model is charged its weights and its KV budget');
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('no MODEL: serves what the data dir holds, by name', async () => {
  const data = path.join(dir, 'data');
  mkdirSync(path.join(data, 'ember'), { recursive: true });
  copyFileSync(path.join(dir, 'models', 'tiny-b.gguf'), path.join(data, 'ember', 'demo.gguf'));
  const env = { XDG_DATA_HOME: data, HOME: path.join(dir, 'empty-home') };
  const server = await startServer(['--no-ssd-cache'], { fake: false, env });
  try {
    assert.deepEqual(Object.keys(await models(server.url)), ['demo']);
    // One model: a request that names none gets it.
    const r = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.model, 'demo');
  } finally {
    await server.stop();
  }
  const empty = path.join(dir, 'no-data');
  const result = await new Promise((resolve) =>
    execFile(emberBin, ['serve', '--port', '0'], { env: { ...process.env, XDG_DATA_HOME: empty, HOME: empty }, timeout: 30000 },
             (err, _out, errText) => resolve({ code: err ? err.code : 0, errText })));
  assert.equal(result.code, 2);
  assert.match(result.errText, /no runnable model found/);
});
