// The `grammar` request field (llama-server's GBNF) through the official openai client against the real
// engine on a tiny generated model (random weights, real Llama 3 vocabulary): whatever the model would
// say, the reply is a sentence of the grammar. Both routes, streaming and not, greedy and sampled, the
// serial and the batched path; a bad grammar is a 400 naming the field.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { makeTinyModel, serveTakes, startServer } from './harness.mjs';

let model;
const servers = [];
const clients = {};
before(async () => {
  model = await makeTinyModel();
  for (const parallel of ['1', '2']) {
    const args = ['--prompt-cache-bytes', '128M', '--model-alias', 'tiny', '--parallel', parallel];
    if (serveTakes('--no-ssd-cache')) args.push('--no-ssd-cache');
    const server = await startServer(args, { model: model.path });
    servers.push(server);
    clients[parallel] = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  }
});
after(async () => {
  for (const s of servers) {
    const r = await s.stop();
    assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${s.stderr()}`);
  }
  model?.remove();
});

const YES_NO = 'root ::= "yes" | "no"';
const JSONISH = `root ::= "{" ws "\\"answer\\":" ws ("true" | "false") "," ws "\\"n\\":" ws [0-9]{1,4} ws "}"
ws ::= " "?`;
const JSONISH_RE = /^\{ ?"answer": ?(true|false), ?"n": ?[0-9]{1,4} ?\}$/;

for (const parallel of ['1', '2']) {
  test(`chat: the reply is yes or no (--parallel ${parallel})`, async () => {
    for (const temperature of [0, 1.2]) {
      const r = await clients[parallel].chat.completions.create({
        model: 'tiny',
        messages: [{ role: 'user', content: 'Is the sea blue?' }],
        temperature,
        seed: 11,
        max_tokens: 16,
        grammar: YES_NO,
      });
      assert.ok(['yes', 'no'].includes(r.choices[0].message.content), JSON.stringify(r.choices[0]));
      assert.equal(r.choices[0].finish_reason, 'stop');
    }
  });

  test(`completions: digits only (--parallel ${parallel})`, async () => {
    const r = await clients[parallel].completions.create({
      model: 'tiny',
      prompt: 'The year was',
      temperature: 0.9,
      seed: 3,
      max_tokens: 32,
      grammar: 'root ::= [0-9]{1,8}',
    });
    assert.match(r.choices[0].text, /^[0-9]{1,8}$/);
    assert.equal(r.choices[0].finish_reason, 'stop');
  });

  test(`chat streaming: the deltas add up to a sentence (--parallel ${parallel})`, async () => {
    const stream = await clients[parallel].chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'Answer in JSON.' }],
      temperature: 1,
      seed: 5,
      max_tokens: 64,
      stream: true,
      grammar: JSONISH,
    });
    let text = '';
    let finish = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c?.delta?.content) text += c.delta.content;
      if (c?.finish_reason) finish = c.finish_reason;
    }
    assert.match(text, JSONISH_RE);
    assert.equal(finish, 'stop');
  });
}

test('a grammar too ambiguous to match is a 400 naming the limit, and the server goes on', async () => {
  // a20 ::= a19 "b" | a19 "c" ...: 2^20 parse stacks under the first character (docs/grammar.md).
  const levels = ['a0 ::= "x"'];
  for (let k = 1; k <= 20; k++) levels.push(`a${k} ::= a${k - 1} "b" | a${k - 1} "c"`);
  const started = Date.now();
  await assert.rejects(
    clients['1'].chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
      grammar: `root ::= a20\n${levels.join('\n')}\n`,
    }),
    (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /too ambiguous/);
      assert.match(e.message, /max_state_work/);
      return true;
    },
  );
  assert.ok(Date.now() - started < 30000, 'refused without running the grammar for long');
  const ok = await clients['1'].chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2,
    grammar: 'root ::= ((((("a"? | "")+++)+++)+++)+++)+++ "b"',
  });
  assert.match(ok.choices[0].message.content, /^a*b?$/);
});

test('a bad grammar is a 400 naming the field and the position', async () => {
  await assert.rejects(
    clients['1'].chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
      grammar: 'root ::= item\n',
    }),
    (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /grammar/);
      assert.match(e.message, /undefined rule 'item'/);
      assert.match(e.message, /1:10/);
      return true;
    },
  );
});
