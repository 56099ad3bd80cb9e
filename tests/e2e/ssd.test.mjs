// The SSD prompt cache across a real restart: `ember serve MODEL --ssd-cache DIR` answers a prompt,
// flushes, is stopped with SIGTERM, is started again on the same DIR, and answers the same prompt from
// the SSD tier (cached_tokens >= len - 1, cache_tier "ssd") with exactly the same greedy output; and a
// SIGTERM alone (no flush request) makes the RAM tier durable the same way.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeTinyModel, postJson, serveTakes, startServer, stats } from './harness.mjs';

// The SSD tier is part of every build: a `serve` without its flag (or a --help that cannot be read)
// is a failure here, never a skip.
function requireSsdTier() {
  assert.ok(serveTakes('--ssd-cache'), '`ember serve --help` does not list --ssd-cache: the SSD tier is missing');
}

let model;
let dir;
let sigtermDir;
before(async () => {
  model = await makeTinyModel();
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-ssd-'));
  sigtermDir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-ssd-sigterm-'));
});
after(() => {
  model?.remove();
  for (const d of [dir, sigtermDir]) if (d) rmSync(d, { recursive: true, force: true });
});

const request = {
  model: 'm',
  messages: [{ role: 'user', content: 'Tell me about the cold tier of a prompt cache, in detail, twice over. '.repeat(4) }],
  max_tokens: 12,
  temperature: 0,
};

test('a prefix cached before a restart is served from SSD after it, with identical output', async () => {
  requireSsdTier();
  const args = ['--ssd-cache', dir, '--ssd-demote-idle', '0'];
  const first = await startServer(args, { model: model.path });
  let before;
  try {
    before = await postJson(`${first.url}/v1/chat/completions`, request);
    assert.equal(before.status, 200, before.text);
    assert.equal(before.json.usage.prompt_tokens_details.cached_tokens, 0);
    const flush = await postJson(`${first.url}/admin/cache/flush`, {});
    assert.equal(flush.status, 200, flush.text);
    assert.equal(flush.json.flushed, true);
    const s = await stats(first.url);
    assert.ok(s.cache.tiers.ssd.entries >= 1, JSON.stringify(s.cache.tiers.ssd));
    assert.ok(s.cache.tiers.ssd.last_durable_flush_unix_s > 0);
  } finally {
    const exit = await first.stop();
    assert.equal(exit.code, 0);
  }
  const second = await startServer(args, { model: model.path });
  try {
    const again = await postJson(`${second.url}/v1/chat/completions`, request);
    assert.equal(again.status, 200, again.text);
    const prompt = again.json.usage.prompt_tokens;
    assert.ok(again.json.usage.prompt_tokens_details.cached_tokens >= prompt - 1);
    assert.equal(again.json.usage.prompt_tokens_details.cache_tier, 'ssd');
    assert.equal(again.json.choices[0].message.content, before.json.choices[0].message.content);
    const s = await stats(second.url);
    assert.equal(s.cache.tiers.ssd.restores, 1);
    const metrics = await (await fetch(`${second.url}/metrics`)).text();
    assert.match(metrics, /ember_cache_restores_total\{tier="ssd"\} 1/);
    assert.match(metrics, /ember_cache_restore_ms_bucket\{tier="ssd",le="\+Inf"\} 1/);
  } finally {
    await second.stop();
  }
});

// Moved from robustness.test.mjs, whose fake has no cache to flush: the shutdown flush is the real one.
test('SIGTERM alone flushes the RAM tier to SSD: the restarted server serves the prefix from there', async () => {
  requireSsdTier();
  // No flush request, and SIGTERM right after the answer: the write-behind's 1 s debounce has usually not
  // fired yet, so the shutdown's flush writes the entry (either way it must be on disk after exit 0).
  const args = ['--ssd-cache', sigtermDir, '--ssd-demote-idle', '0'];
  const first = await startServer(args, { model: model.path });
  let before;
  try {
    before = await postJson(`${first.url}/v1/chat/completions`, request);
    assert.equal(before.status, 200, before.text);
  } finally {
    const exit = await first.stop();
    assert.equal(exit.code, 0, first.stderr());
    assert.match(first.stderr(), /cache flush: ok/);
  }
  const second = await startServer(args, { model: model.path });
  try {
    const again = await postJson(`${second.url}/v1/chat/completions`, request);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.usage.prompt_tokens_details.cache_tier, 'ssd');
    assert.ok(again.json.usage.prompt_tokens_details.cached_tokens >= again.json.usage.prompt_tokens - 1);
    assert.equal(again.json.choices[0].message.content, before.json.choices[0].message.content);
  } finally {
    await second.stop();
  }
});
