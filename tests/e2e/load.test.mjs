// 16 concurrent clients x 50 requests: zero failures, and RSS stays flat once warm.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer } from './harness.mjs';

let server;
before(async () => {
  server = await startServer(['--max-queue', '64']);
});
after(async () => {
  await server.stop();
});

async function round(clients, perClient) {
  let failures = 0;
  const errors = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'x', maxRetries: 0 });
      for (let i = 0; i < perClient; i++) {
        try {
          const content = `echo: client ${c} request ${i}`;
          if (i % 2 === 0) {
            const r = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] });
            if (r.choices[0].message.content !== `client ${c} request ${i}`) throw new Error('wrong reply');
          } else {
            const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }], stream: true });
            let text = '';
            for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
            if (text !== `client ${c} request ${i}`) throw new Error('wrong streamed reply');
          }
        } catch (e) {
          failures++;
          errors.push(String(e));
        }
      }
    }),
  );
  return { failures, errors };
}

test('16 concurrent clients x 50 requests, 0 failures, flat RSS', async () => {
  const warm = await round(16, 10);
  assert.equal(warm.failures, 0, warm.errors.slice(0, 3).join('\n'));
  const rssBefore = server.rssKb();
  const load = await round(16, 50);
  const rssAfter = server.rssKb();
  assert.equal(load.failures, 0, load.errors.slice(0, 3).join('\n'));
  assert.ok(rssAfter - rssBefore < 16 * 1024, `RSS grew from ${rssBefore} kB to ${rssAfter} kB`);
});
