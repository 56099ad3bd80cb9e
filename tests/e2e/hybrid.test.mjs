// A qwen35 hybrid (gated delta net + attention, docs/hybrid.md) served for real: an agent loop whose
// last tool result is rewritten every turn resumes each turn from the checkpoint at that message's turn
// start (it recomputes only the rewritten messages), its replies are exactly those of a server with the
// prompt cache off, and after a restart the SSD tier serves the next turn from the checkpoints the
// first server wrote. /stats counts the checkpoints.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeTinyModel, postJson, startServer, stats } from './harness.mjs';

let model;
let dir;
before(async () => {
  model = await makeTinyModel({ arch: 'qwen35', tokenizer: 'qwen35', layers: 4, embd: 64, heads: 4, ff: 128,
                                ctx: 8192, extra: ['--head-dim', '16', '--ssm-state', '16', '--ssm-heads', '4'] });
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-hybrid-'));
});
after(() => {
  model?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const words = 'amber basalt cinder dune ember flint granite hearth iron jasper kiln lava'.split(' ');
const text = (n, seed) => Array.from({ length: n }, (_, i) => words[(i * 7 + seed * 13) % words.length]).join(' ');
const system = `You are a careful agent. ${text(600, 1)}`;

// Turn t: the conversation so far, then the agent's tool call and a tool result that differs every turn.
function turnMessages(t) {
  const msgs = [{ role: 'system', content: system }, { role: 'user', content: `Task: ${text(80, 2)}` }];
  for (let i = 0; i < t; ++i) {
    msgs.push({ role: 'assistant', content: `step ${i} done` }, { role: 'user', content: `go on ${text(10, 3 + i)}` });
  }
  msgs.push({ role: 'assistant', content: `calling the search tool, try ${t}` },
            { role: 'user', content: `tool result ${t}: ${text(60, 20 + t)}` });
  return msgs;
}

async function ask(url, t) {
  const r = await postJson(`${url}/v1/chat/completions`, { model: 'm', messages: turnMessages(t), max_tokens: 8, temperature: 0 });
  assert.equal(r.status, 200, r.text);
  return { text: r.json.choices[0].message.content, prompt: r.json.usage.prompt_tokens,
           cached: r.json.usage.prompt_tokens_details.cached_tokens };
}

test('a rewritten tool result resumes from its turn checkpoint, replies equal the uncached server, and checkpoints survive a restart', async () => {
  const args = ['--ssd-cache', dir, '--ssd-demote-idle', '0'];
  const warm = await startServer(args, { model: model.path });
  const cold = await startServer(['--prompt-cache-bytes', '0', '--no-ssd-cache'], { model: model.path });
  const replies = [];
  try {
    for (let t = 0; t < 5; ++t) {
      const w = await ask(warm.url, t);
      const c = await ask(cold.url, t);
      assert.equal(w.text, c.text, `turn ${t}: the cached reply differs from the uncached one`);
      assert.equal(c.cached, 0);
      replies.push(w.text);
      if (t === 0) {
        assert.equal(w.cached, 0);
      } else {
        // Everything before this turn's tool call comes from a checkpoint: only the call, the result
        // and the template's tail are computed (well under a fifth of the prompt).
        const recomputed = w.prompt - w.cached;
        assert.ok(w.cached > 0 && recomputed < w.prompt / 5, `turn ${t}: ${w.cached} of ${w.prompt} cached`);
      }
    }
    const s = await stats(warm.url);
    assert.ok(s.engine.values.checkpoints_stored >= 5, JSON.stringify(s.engine.values));
    assert.ok(s.engine.values.recurrent_state_bytes > 0);
    const flush = await postJson(`${warm.url}/admin/cache/flush`, {});
    assert.equal(flush.status, 200, flush.text);
  } finally {
    assert.equal((await warm.stop()).code, 0);
    await cold.stop();
  }
  const again = await startServer(args, { model: model.path });
  try {
    const w = await ask(again.url, 5);  // a new turn after the restart
    assert.ok(w.cached > 0 && w.prompt - w.cached < w.prompt / 5, `after restart: ${w.cached} of ${w.prompt} cached`);
    const r = await postJson(`${again.url}/v1/chat/completions`, { model: 'm', messages: turnMessages(4), max_tokens: 8, temperature: 0 });
    assert.equal(r.json.choices[0].message.content, replies[4], 'a restored checkpoint gives the same reply');
  } finally {
    await again.stop();
  }
});
