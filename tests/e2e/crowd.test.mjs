// More clients than lanes on the real engine: 32 streaming clients on `ember serve --parallel 4` with a
// tiny generated model. Half finish; a quarter abort mid-stream (after a few tokens) and a quarter abort
// right after sending, behind 28 others (queued). Every finished reply is exactly its solo reply (greedy
// or seeded sampling), what an aborting client saw is a prefix of its solo reply, and the server ends
// idle with every request accounted for and still answers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTinyModel, startServer, stats } from './harness.mjs';

// Llama 3 end-of-generation ids: banned so that every reply runs its full max_tokens.
const NO_EOG = { 128001: -100, 128008: -100, 128009: -100 };
const CLIENTS = 32;
const LANES = 4;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Client i: 0 finishes, 1 aborts mid-stream, 2 finishes, 3 aborts while queued (it is sent last).
const role = (i) => ['finish', 'midstream', 'finish', 'queued'][i % 4];

let model;
let server;
before(async () => {
  model = await makeTinyModel();
  server = await startServer(['--no-ssd-cache', '--prompt-cache-bytes', '64M', '--parallel', String(LANES),
                              '--max-queue', '64'], { model: model.path });
});
after(async () => {
  const r = await server?.stop();
  model?.remove();
  assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${server?.stderr()}`);
});

// Even clients greedy, odd ones sampled with their own seed; the aborting ones would run longer.
function request(i, salt) {
  const sampled = i % 2 === 1;
  return {
    model: 'm',
    messages: [{ role: 'user', content: `Client ${i} asks: what comes after ${'step '.repeat(1 + (i % 5))}?` }],
    max_tokens: role(i) === 'finish' ? 12 + (i % 6) : 40,
    temperature: sampled ? 0.9 : 0,
    ...(sampled ? { seed: 1000 + i } : {}),
    logit_bias: NO_EOG,
    cache_salt: salt,
    stream: true,
  };
}

// Streams request i; aborts after `abortAfter` content chunks (0: once the request is sent). Returns
// {text, finish, aborted}.
async function stream(i, salt, { abortAfter = -1 } = {}) {
  const ac = new AbortController();
  const deadline = AbortSignal.timeout(30000);  // a stalled stream fails the test, it does not hang it
  const signal = AbortSignal.any([ac.signal, deadline]);
  let text = '';
  let finish = null;
  let chunks = 0;
  try {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request(i, salt)), signal,
    });
    assert.equal(res.status, 200, `client ${i}: ${res.status}`);
    if (abortAfter === 0) ac.abort();
    const decoder = new TextDecoder();
    let buf = '';
    for await (const bytes of res.body) {
      buf += decoder.decode(bytes, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, nl);
        buf = buf.slice(nl + 2);
        if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
        const c = JSON.parse(event.slice(6)).choices[0];
        if (c?.delta?.content) {
          text += c.delta.content;
          if (++chunks === abortAfter) ac.abort();
        }
        if (c?.finish_reason) finish = c.finish_reason;
      }
    }
  } catch (e) {
    if (!ac.signal.aborted) throw new Error(`client ${i}: ${e.message}${deadline.aborted ? ' (30 s deadline)' : ''}`);
  }
  return { text, finish, aborted: ac.signal.aborted };
}

async function cancelledGenerations() {
  const text = await (await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  return Number(text.match(/^ember_cancelled_generations_total (\d+)$/m)?.[1] ?? 0);
}

test('32 clients on 4 lanes, half aborting mid-stream or queued: every finished reply equals its solo run', { timeout: 90000 }, async (t) => {
  // Solo: one at a time, each in its own namespace, so each computes its whole prompt alone.
  const solo = [];
  for (let i = 0; i < CLIENTS; i++) {
    const r = await stream(i, `solo-${i}`);
    assert.equal(r.finish, 'length', `solo ${i}`);
    solo.push(r.text);
  }
  const before = await stats(server.url);
  const cancelledBefore = await cancelledGenerations();

  // The crowd: everyone but the queued aborters at once, then those (28 requests ahead of them).
  const ids = (want) => [...Array(CLIENTS).keys()].filter((i) => role(i) === want);
  const crowd = {};
  const running = [...ids('finish'), ...ids('midstream')].map((i) =>
    stream(i, 'crowd', { abortAfter: role(i) === 'midstream' ? 3 : -1 }).then((r) => (crowd[i] = r)));
  const waiting = ids('queued').map((i) => stream(i, 'crowd', { abortAfter: 0 }).then((r) => (crowd[i] = r)));
  await Promise.all([...running, ...waiting]);

  for (let i = 0; i < CLIENTS; i++) {
    const r = crowd[i];
    if (role(i) === 'finish') {
      assert.equal(r.aborted, false, `client ${i}`);
      assert.equal(r.finish, 'length', `client ${i}`);
      assert.equal(r.text, solo[i], `client ${i}: the reply among 32 clients differs from its solo reply`);
    } else {
      assert.equal(r.aborted, true, `client ${i} (${role(i)}) was to abort`);
      assert.ok(solo[i].startsWith(r.text), `client ${i} (${role(i)}): saw ${JSON.stringify(r.text)}, not a prefix of its solo reply`);
    }
  }

  // Every crowd request ends (the aborted ones cancelled), the lanes go idle, and the server still answers.
  const end = Date.now() + 10000;
  let s = await stats(server.url);
  while (s.queue.completed < before.queue.completed + CLIENTS || s.queue.running > 0 || s.queue.waiting > 0) {
    assert.ok(Date.now() < end, `the server did not settle within 10 s: ${JSON.stringify(s.queue)}`);
    await sleep(50);
    s = await stats(server.url);
  }
  assert.equal(s.queue.completed, before.queue.completed + CLIENTS, JSON.stringify(s.queue));
  assert.equal(s.queue.rejected, before.queue.rejected);
  assert.ok(s.lanes.every((l) => l.state === 'idle'), JSON.stringify(s.lanes));
  // Each aborted request is cut short (a queued one skipped) rather than run to its 40 tokens.
  const cancelled = (await cancelledGenerations()) - cancelledBefore;
  const unseen = ids('queued').filter((i) => crowd[i].text === '').length;
  t.diagnostic(`cancelled generations: ${cancelled}; queued aborters that saw no text: ${unseen} of ${ids('queued').length}`);
  assert.equal(cancelled, CLIENTS / 2, 'every aborting client\'s generation was cancelled');
  const last = await stream(0, 'after');
  assert.equal(last.text, solo[0]);
});
