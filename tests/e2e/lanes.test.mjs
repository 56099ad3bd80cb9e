// The scheduler's lanes and memory admission through the real binary (`ember serve --fake`, whose
// fake backend runs --parallel lanes, default 4, and takes --fake-kv-budget-tokens): several clients
// of the official SDKs generate at once, each gets its own reply, a request over the whole KV budget is
// a 400 naming the numbers, and one that does not fit yet waits for memory (visible in /stats).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startServer } from './harness.mjs';

const bounded = { timeout: 60000 };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const statsOf = async (url) => (await fetch(`${url}/stats`, { signal: AbortSignal.timeout(5000) })).json();
async function until(url, pred) {
  let s;
  for (let i = 0; i < 400; i++) {
    s = await statsOf(url);
    if (pred(s)) return s;
    await sleep(25);
  }
  return s;
}

test('four lanes: four streams generate at once, a fifth waits, every reply is its own', bounded, async () => {
  const s = await startServer(['--fake-token-delay-ms', '20']);
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
  try {
    const replies = Array.from({ length: 5 }, (_, i) => (async () => {
      const stream = await client.chat.completions.create({
        model: 'm', stream: true, messages: [{ role: 'user', content: `echo: reply of client ${i} ` + 'z'.repeat(30) }],
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    })());
    const busy = await until(s.url, (st) => st.queue.running === 4 && st.queue.waiting === 1);
    assert.equal(busy.queue.lanes, 4);
    assert.equal(busy.queue.running, 4, JSON.stringify(busy.queue));
    assert.equal(busy.queue.waiting, 1);
    assert.equal(busy.lanes.filter((l) => l.state === 'running').length, 4);
    const texts = await Promise.all(replies);
    texts.forEach((t, i) => assert.equal(t, `reply of client ${i} ` + 'z'.repeat(30)));
    const done = await until(s.url, (st) => st.queue.completed === 5);
    assert.equal(done.lanes.reduce((n, l) => n + l.completed, 0), 5);
    assert.equal(done.lanes.reduce((n, l) => n + l.requests, 0), 5);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    assert.match(metrics, /^ember_queue_lanes 4$/m);
    assert.match(metrics, /^ember_lane_busy\{lane="3"\} 0$/m);
  } finally {
    await s.stop();
  }
});

test('KV budget: over the whole budget is a 400 naming the numbers; what does not fit yet waits', bounded, async () => {
  const s = await startServer(['--fake-kv-budget-tokens', '200', '--fake-token-delay-ms', '20']);
  const openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const anthropic = new Anthropic({ baseURL: s.url, apiKey: 'x', maxRetries: 0 });
  try {
    await assert.rejects(
      openai.chat.completions.create({ model: 'm', max_tokens: 500, messages: [{ role: 'user', content: 'echo: big' }] }),
      (e) => e.status === 400 && /max_tokens 500/.test(e.message) && /KV budget is 200 tokens/.test(e.message));
    await assert.rejects(
      anthropic.messages.create({ model: 'm', max_tokens: 500, messages: [{ role: 'user', content: 'echo: big' }] }),
      (e) => e.status === 400 && e.error?.error?.type === 'invalid_request_error' && /KV budget is 200/.test(e.message));
    // Two requests of 195 tokens each: the second waits for the first's memory, then runs.
    const ask = (i) => openai.chat.completions.create({
      model: 'm', max_tokens: 100, messages: [{ role: 'user', content: `echo: turn ${i} ` + 'y'.repeat(60) }] });
    const first = ask(1);
    await until(s.url, (st) => st.queue.running === 1);
    const second = ask(2);
    const waiting = await until(s.url, (st) => st.queue.waiting_for_memory === 1);
    assert.equal(waiting.queue.waiting_for_memory, 1, JSON.stringify(waiting.queue));
    assert.equal(waiting.queue.running, 1);
    assert.equal(waiting.batch.values.kv_budget_tokens, 200);
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.choices[0].message.content, 'turn 1 ' + 'y'.repeat(60));
    assert.equal(b.choices[0].message.content, 'turn 2 ' + 'y'.repeat(60));
    const after = await statsOf(s.url);
    assert.equal(after.queue.admission_waits, 1);
    assert.equal(after.batch.values.kv_used_tokens, 0);
  } finally {
    await s.stop();
  }
});
