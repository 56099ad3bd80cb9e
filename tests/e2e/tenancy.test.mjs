// API keys are cache tenants, through real HTTP with the official SDKs and the real engine on a tiny
// generated model, RAM and SSD tiers, across a restart: with keys A and B, B never gets a cached token
// from a prompt only A sent (`cached_tokens` / `cache_read_input_tokens` say nothing about A's traffic),
// on /v1/chat/completions and /v1/messages; A still gets its own hits, from RAM and, after the restart,
// from SSD; `cache_salt` separates tenants under one key on both APIs; and no cache file holds a key, a
// key's identity or a salt. Issue 29's budgets (on the fake backend): B cannot evict A's stored
// responses, nor read the counters (/stats, /metrics need --admin-key); echoed tools that never reached
// the prompt are not stored; a failing model load names the model, never a path; a large /tokenize
// reply is bounded and its memory comes back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { makeTinyModel, postJson, startServer } from './harness.mjs';

// Long, distinctive secrets, so finding one in a file's bytes cannot be a coincidence of KV data.
const KEY_A = 'key-alpha-3f9c1e7b2d5a4086';
const KEY_B = 'key-bravo-8e2d6a0c4b1f7395';
const ADMIN = 'key-admin-0b7e4c2a9d1f6358';
const SALTS = ['salt-tenant-one-5c8e2a9f7b', 'salt-tenant-two-1d4b7e0a3c'];

let model;
let dir;
before(async () => {
  model = await makeTinyModel();
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-tenancy-'));
});
after(() => {
  model?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const serve = () => startServer(['--ssd-cache', dir, '--ssd-demote-idle', '0', '--prompt-cache-bytes', '256M',
                                 '--api-key', KEY_A, '--api-key', KEY_B, '--admin-key', ADMIN], { model: model.path });

// ~900 tokens; each test prompt starts with its own word, so two differ right after the template's opening.
const prompt = (tag) => `${tag}: ` + 'The quick brown fox jumps over the lazy dog near the river bank. '.repeat(70);

function clients(url, key) {
  return {
    openai: new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 }),
    anthropic: new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 }),
  };
}

// {prompt, cached, tier} of one greedy one-token reply on either API.
async function chat(c, content, extra = {}) {
  const r = await c.openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }],
                                                    max_tokens: 1, temperature: 0, ...extra });
  const d = r.usage.prompt_tokens_details;
  return { prompt: r.usage.prompt_tokens, cached: d.cached_tokens, tier: d.cache_tier };
}
async function messages(c, content, extra = {}) {
  const r = await c.anthropic.messages.create({ model: 'm', messages: [{ role: 'user', content }],
                                               max_tokens: 1, temperature: 0, ...extra });
  const u = r.usage;
  return { prompt: u.input_tokens + u.cache_read_input_tokens, cached: u.cache_read_input_tokens, tier: u.cache_tier };
}

// Tokens every prompt of one tenant shares: the template's opening, before the message text. A tenant
// may reuse these from its own earlier requests, and nothing more from a prompt it never sent.
async function templateHead(url) {
  const r = await postJson(`${url}/tokenize`, { content: '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n',
                                                add_special: false }, { authorization: `Bearer ${KEY_A}` });
  assert.equal(r.status, 200, r.text);
  return r.json.tokens.length;
}

function filesUnder(root) {
  const out = [];
  for (const name of readdirSync(root)) {
    const p = path.join(root, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

test('keys A and B never share cached prefixes, in RAM or on SSD, across a restart, on both APIs', async () => {
  const first = await serve();
  let head;
  try {
    head = await templateHead(first.url);
    assert.ok(head >= 3 && head <= 8, `template head ${head}`);
    const a = clients(first.url, KEY_A);
    const b = clients(first.url, KEY_B);

    // RAM, chat completions. B's very first request: A's prompt. Before keys were tenants: 913 cached.
    const p1 = prompt('Apples');
    assert.equal((await chat(a, p1)).cached, 0);
    const bFirst = await chat(b, p1);
    assert.ok(bFirst.prompt > 800, `${bFirst.prompt} prompt tokens`);
    assert.equal(bFirst.cached, 0, 'B learns nothing about what A sent');
    const aAgain = await chat(a, p1);
    assert.ok(aAgain.cached >= aAgain.prompt - 1 && aAgain.tier === "ram", JSON.stringify(aAgain));
    const bAgain = await chat(b, p1);
    assert.ok(bAgain.cached >= bAgain.prompt - 1, `B reuses its own: ${JSON.stringify(bAgain)}`);

    // RAM, Messages API.
    const p2 = prompt('Bridges');
    const aFirstMsg = await messages(a, p2);
    assert.ok(aFirstMsg.cached <= head, `${JSON.stringify(aFirstMsg)} head ${head}`);
    assert.ok((await messages(b, p2)).cached <= head, 'only the template head B itself sent before');
    const aMsg = await messages(a, p2);
    assert.ok(aMsg.cached >= aMsg.prompt - 1, JSON.stringify(aMsg));

    // cache_salt under one key, on both APIs (the Anthropic SDK sends the extra body field as is).
    const p3 = prompt('Candles');
    assert.equal((await chat(a, p3, { cache_salt: SALTS[0] })).cached, 0);
    assert.equal((await chat(a, p3, { cache_salt: SALTS[1] })).cached, 0, 'another salt, another tenant');
    assert.ok((await chat(a, p3, { cache_salt: SALTS[0] })).cached > 800);
    assert.equal((await messages(a, p3, { cache_salt: SALTS[1] })).cached > 800, true, 'same salt across APIs');
    assert.equal((await messages(b, p3, { cache_salt: SALTS[0] })).cached, 0, 'one salt under two keys');

    // Only A sends these before the restart: B must not find them on SSD afterwards.
    assert.ok((await chat(a, prompt('Deserts'))).cached <= head);
    assert.ok((await messages(a, prompt('Engines'))).cached <= head);
    const refused = await postJson(`${first.url}/admin/cache/flush`, {}, { authorization: `Bearer ${KEY_A}` });
    assert.equal(refused.status, 403, 'an API key is not the admin key');
    const flush = await postJson(`${first.url}/admin/cache/flush`, {}, { authorization: `Bearer ${ADMIN}` });
    assert.equal(flush.status, 200, flush.text);
  } finally {
    assert.equal((await first.stop()).code, 0, first.stderr());
  }

  // What the SSD tier wrote: entries, and in none of their bytes a key, a key's identity or a salt.
  const files = filesUnder(dir);
  assert.ok(files.filter((f) => f.endsWith('.entry')).length >= 4, files.join('\n'));
  const identity = (key) => createHash('sha256').update(`ember-api-key-v1;${key}`).digest('hex');
  const secrets = [KEY_A, KEY_B, identity(KEY_A), identity(KEY_B), ...SALTS];
  for (const f of files) {
    const bytes = readFileSync(f);
    for (const s of secrets) assert.equal(bytes.indexOf(s), -1, `${f} holds '${s}'`);
  }

  const second = await serve();  // a restart: RAM is empty, the SSD tier has A's and B's entries
  try {
    const a = clients(second.url, KEY_A);
    const b = clients(second.url, KEY_B);
    const bChat = await chat(b, prompt('Deserts'));
    assert.ok(bChat.cached <= head, `B after the restart: ${JSON.stringify(bChat)}`);
    const aChat = await chat(a, prompt('Deserts'));
    assert.ok(aChat.cached >= aChat.prompt - 1 && aChat.tier === 'ssd', JSON.stringify(aChat));
    const bMsg = await messages(b, prompt('Engines'));
    assert.ok(bMsg.cached <= head, JSON.stringify(bMsg));
    const aMsg = await messages(a, prompt('Engines'));
    assert.ok(aMsg.cached >= aMsg.prompt - 1 && aMsg.tier === 'ssd', JSON.stringify(aMsg));
  } finally {
    assert.equal((await second.stop()).code, 0, second.stderr());
  }
});

const bearer = (key) => ({ authorization: `Bearer ${key}` });

test('key B cannot evict key A\'s stored responses nor read the counters; echoed tools are not stored', async () => {
  // A 1 MiB store: each key's share is 512 KiB, so B's 16 x 100 KiB turns evict B's own oldest turns only.
  const server = await startServer(['--no-ssd-cache', '--responses-store-size', '1M', '--fake-context-length', '400000',
                                    '--api-key', KEY_A,
                                    '--api-key', KEY_B, '--admin-key', ADMIN]);
  try {
    const post = (key, body) => postJson(`${server.url}/v1/responses`, { model: 'ember-fake', max_output_tokens: 4, ...body },
                                         bearer(key));
    const get = (key, id) => fetch(`${server.url}/v1/responses/${id}`, { headers: bearer(key) });
    const a = await post(KEY_A, { input: 'echo: tenant A remembers this' });
    assert.equal(a.status, 200, a.text);

    const big = 'x'.repeat(100 << 10);
    const tools = [{ type: 'function', name: 'pad', description: 'y'.repeat(300 << 10), parameters: { type: 'object' } }];
    const bIds = [];
    for (let i = 0; i < 16; i++) {
      const b = await post(KEY_B, { input: `echo: ${i} ${big}`, tools, tool_choice: 'none' });
      assert.equal(b.status, 200, b.text.slice(0, 300));
      assert.equal(b.json.tools.length, 1, 'the reply echoes the tools');
      bIds.push(b.json.id);
    }
    assert.equal((await get(KEY_B, bIds[0])).status, 404, 'B filled its share: its own oldest turn went');
    const newest = await (await get(KEY_B, bIds[15])).json();
    assert.deepEqual(newest.tools, [], 'tools offered under tool_choice "none" never reached the prompt: not stored');
    assert.equal((await get(KEY_A, a.json.id)).status, 200, 'A\'s response survived B\'s flood');
    const next = await post(KEY_A, { input: 'echo: and continues', previous_response_id: a.json.id });
    assert.equal(next.status, 200, next.text);
    assert.equal((await get(KEY_B, a.json.id)).status, 404, 'B cannot see A\'s response');

    for (const route of ['/stats', '/metrics']) {
      const asB = await fetch(`${server.url}${route}`, { headers: bearer(KEY_B) });
      assert.equal(asB.status, 403, `${route} as B`);
      assert.match((await asB.json()).error.message, /--admin-key/);
      assert.equal((await fetch(`${server.url}${route}`)).status, 401, `${route} without a key`);
      assert.equal((await fetch(`${server.url}${route}`, { headers: bearer(ADMIN) })).status, 200, `${route} as admin`);
    }
    assert.equal((await fetch(`${server.url}/health`)).status, 200, '/health stays open');
  } finally {
    assert.equal((await server.stop()).code, 0, server.stderr());
  }
});

test('a model that fails to load is named in the error, never its path', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-tenancy-models-'));
  try {
    mkdirSync(path.join(dir, 'models'));
    const broken = path.join(dir, 'models', 'broken.gguf');
    copyFileSync(model.path, broken);
    copyFileSync(model.path, path.join(dir, 'models', 'good.gguf'));
    truncateSync(broken, Math.floor(statSync(broken).size / 2));  // its header reads, its tensors do not
    const server = await startServer(['--models-dir', path.join(dir, 'models'), '--no-ssd-cache'], { fake: false });
    try {
      const r = await postJson(`${server.url}/v1/chat/completions`,
                               { model: 'broken', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
      assert.ok(r.status >= 400, r.text);
      const message = r.json.error.message;
      assert.match(message, /broken/);
      assert.ok(!message.includes('/'), `no path in: ${message}`);
      assert.ok(!message.includes(dir), message);
      const listed = (await (await fetch(`${server.url}/v1/models`)).json()).data.find((m) => m.id === 'broken');
      assert.ok(listed, 'broken is listed');
      assert.ok(listed.error === null || !listed.error.includes('/'), `no path in: ${listed.error}`);
      assert.match(server.stderr(), new RegExp(`${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
                   'the operator\'s log keeps the path');
    } finally {
      assert.equal((await server.stop()).code, 0, server.stderr());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a large /tokenize reply is bounded, and its memory comes back', async () => {
  const server = await startServer(['--no-ssd-cache']);  // the fake: one token per byte
  try {
    const tokenize = (content, with_pieces) => postJson(`${server.url}/tokenize`, { content, with_pieces });
    const baseline = server.rssKb();
    // 2 MiB of text with pieces: ~44 MB of reply, past the 32 MiB limit (4 x --max-body-bytes).
    const over = await tokenize('a'.repeat(2 << 20), true);
    assert.equal(over.status, 413, over.text.slice(0, 200));
    assert.match(over.json.error.message, /reply limit of 33554432 bytes/);
    const ids = await tokenize('a'.repeat(2 << 20), false);
    assert.equal(ids.status, 200);
    assert.equal(ids.json.tokens.length, 2 << 20);
    const replies = await Promise.all(Array.from({ length: 6 }, () => tokenize('b'.repeat(1 << 20), true)));
    for (const r of replies) {
      assert.equal(r.status, 200);
      assert.equal(r.json.tokens.length, 1 << 20);
      assert.deepEqual(r.json.tokens[1], { id: 98, piece: 'b' });
    }
    let after = server.rssKb();
    for (let i = 0; i < 50 && after - baseline > 150 * 1024; i++) {
      await new Promise((res) => setTimeout(res, 100));
      after = server.rssKb();
    }
    assert.ok(after - baseline <= 150 * 1024, `RSS ${baseline} kB -> ${after} kB after the replies`);
  } finally {
    assert.equal((await server.stop()).code, 0, server.stderr());
  }
});
