// docs/cache-spec.md §7 "kill -9 during a write", through the real server: `ember serve --ssd-cache DIR`
// answers prompts whose write-behind (§4.6: ~1 s after the insert) is seen to finish, then more prompts,
// and is killed with SIGKILL as soon as their write-behinds are queued (the writer usually mid-file).
// Then: `ember cache verify` finds no bad entry in DIR, and a server restarted on DIR serves the completed
// entries from the SSD tier (cached_tokens >= len - 1) with the same greedy replies, answers the others
// exactly as before too, and never fails a restore (a torn file would be one).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { emberBin, makeTinyModel, postJson, startServer, stats } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const COMPLETED = 2;  // prompts whose write-behind is seen durable before the kill
const IN_FLIGHT = 4;  // prompts whose write-behinds are queued or running at the kill

let model;
let dir;
before(async () => {
  // 8 KiB of KV a position (4 layers x K,V x 512 x f16) and ~800-token prompts: ~6.5 MB an entry, so
  // the queued writes take long enough to be interrupted.
  model = await makeTinyModel({ layers: 4, embd: 512, heads: 8, ff: 256, ctx: 4096, seed: 11 });
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-ssd-kill-'));
});
after(() => {
  model?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const request = (i) => ({
  model: 'm',
  messages: [{ role: 'user', content: `Prompt ${i}: ` + `item ${i} of the cold tier, `.repeat(120) }],
  max_tokens: 8,
  temperature: 0,
});

// Polls /stats until pred(ssd tier) holds; fails the test at the deadline instead of waiting forever.
async function untilSsd(url, pred, what, deadlineMs = 20000) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const ssd = (await stats(url)).cache.tiers.ssd;
    if (pred(ssd)) return ssd;
    assert.ok(Date.now() < end, `timed out after ${deadlineMs} ms waiting for ${what}: ${JSON.stringify(ssd)}`);
    await sleep(2);
  }
}

async function ask(url, i) {
  const r = await postJson(`${url}/v1/chat/completions`, request(i));
  assert.equal(r.status, 200, r.text);
  return r.json;
}

test('SIGKILL during write-behind: nothing corrupt on disk or served, the completed entries survive', { timeout: 120000 }, async (t) => {
  const args = ['--ssd-cache', dir, '--ssd-demote-idle', '0'];
  const replies = [];
  const first = await startServer(args, { model: model.path });
  let atKill;
  try {
    for (let i = 0; i < COMPLETED; i++) {
      replies.push((await ask(first.url, i)).choices[0].message.content);
      await untilSsd(first.url, (s) => s.spills >= i + 1 && s.write_queue_jobs === 0, `write-behind ${i}`);
    }
    // Inserted at about the same time, the in-flight entries' write-behinds come due on the same tick and
    // queue together; the kill comes at the first sight of one (queued or written).
    const inFlight = [];
    for (let i = COMPLETED; i < COMPLETED + IN_FLIGHT; i++) inFlight.push(ask(first.url, i));
    for (const r of await Promise.all(inFlight)) replies.push(r.choices[0].message.content);
    atKill = await untilSsd(first.url, (s) => s.write_queue_jobs > 0 || s.spills > COMPLETED, 'queued writes');
    process.kill(first.pid, 'SIGKILL');
  } finally {
    const exit = await first.stop();
    assert.equal(exit.signal, 'SIGKILL', `the server was to be killed, it exited ${JSON.stringify(exit)}: ${first.stderr()}`);
  }
  t.diagnostic(`at the kill: ${atKill.spills} entries written, ${atKill.write_queue_jobs} jobs queued`);
  assert.ok(atKill.spills < COMPLETED + IN_FLIGHT, `every write had finished before the kill: ${JSON.stringify(atKill)}`);

  // Offline, before any server scans (and cleans) the directory: every entry file verifies.
  const verify = execFileSync(emberBin, ['cache', 'verify', '--dir', dir], { encoding: 'utf8', timeout: 60000 });
  const m = verify.match(/(\d+) entries ok, (\d+) bad/);
  assert.ok(m, verify);
  assert.equal(Number(m[2]), 0, verify);
  assert.ok(Number(m[1]) >= COMPLETED, verify);

  const second = await startServer(args, { model: model.path });
  try {
    const start = (await stats(second.url)).cache.tiers.ssd;
    assert.ok(start.entries >= COMPLETED, JSON.stringify(start));
    assert.equal(start.corrupt_deleted, 0, JSON.stringify(start));
    for (let i = 0; i < COMPLETED + IN_FLIGHT; i++) {
      const again = await ask(second.url, i);
      assert.equal(again.choices[0].message.content, replies[i], `prompt ${i}: the reply after the restart differs`);
      if (i < COMPLETED) {
        const u = again.usage;
        assert.equal(u.prompt_tokens_details.cache_tier, 'ssd', `prompt ${i}: ${JSON.stringify(u)}`);
        assert.ok(u.prompt_tokens_details.cached_tokens >= u.prompt_tokens - 1, `prompt ${i}: ${JSON.stringify(u)}`);
      }
    }
    const end = (await stats(second.url)).cache.tiers.ssd;
    assert.equal(end.restore_failures, 0, JSON.stringify(end));
    assert.ok(end.restores >= COMPLETED, JSON.stringify(end));
  } finally {
    const exit = await second.stop();
    assert.equal(exit.code, 0, second.stderr());
  }
});
