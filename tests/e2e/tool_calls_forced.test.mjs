// Forced tool calls through the official clients, on the real engine with two tiny random-weight models:
// one with the Llama 3 tokenizer (its template shows no tools, so calls take the bare Llama 3.x JSON
// form) and one with the Qwen3 tokenizer and its real chat template (<tool_call> blocks). With random
// weights only the grammar can make a reply a call, so every assertion is the strongest there is: every
// returned call names an offered tool (the named one when one is named) and its arguments validate
// against that tool's schema (ajv), streaming and not.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
import { emberBin, postJson, startServer } from './harness.mjs';

// Every string and array bounded, so any call the grammar allows fits max_tokens.
const TOOLS = {
  get_weather: {
    description: 'Current weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 24 },
        unit: { enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 1, maximum: 14 },
      },
      required: ['city'],
      additionalProperties: false,
    },
  },
  search: {
    description: 'Search the web',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 32 },
        tags: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 },
        exact: { type: 'boolean' },
      },
      required: ['query', 'exact'],
      additionalProperties: false,
    },
  },
  get_time: { description: 'The time now', parameters: { type: 'object', properties: {}, additionalProperties: false } },
};
const openaiTools = Object.entries(TOOLS).map(([name, t]) => ({
  type: 'function', function: { name, description: t.description, parameters: t.parameters },
}));
const anthropicTools = Object.entries(TOOLS).map(([name, t]) => ({
  name, description: t.description, input_schema: t.parameters,
}));
const ajv = new Ajv({ strict: false, allErrors: true });
const validators = Object.fromEntries(Object.entries(TOOLS).map(([n, t]) => [n, ajv.compile(t.parameters)]));

// A call is valid when it names an offered tool (`only` when given) and its arguments validate.
function assertValidCall(name, args, only = null) {
  assert.ok(name in TOOLS, `the call names an offered tool: ${name}`);
  if (only) assert.equal(name, only);
  const value = typeof args === 'string' ? JSON.parse(args) : args;
  const validate = validators[name];
  assert.ok(validate(value), `${name}(${JSON.stringify(value)}): ${ajv.errorsText(validate.errors)}`);
}

async function genModel(dir, name, extra) {
  const file = path.join(dir, name);
  const args = ['gen-model', '--out', file, '--n-layer', '1', '--n-embd', '64', '--n-head', '2', '--n-head-kv', '2',
                '--n-ff', '128', '--ctx', '4096', '--seed', '5', ...extra];
  await new Promise((resolve, reject) =>
    execFile(emberBin, args, { timeout: 180000 }, (err, _o, e) => (err ? reject(new Error(`${err.message} ${e}`)) : resolve())));
  return file;
}

const families = [
  { name: 'llama3', gen: ['--arch', 'llama', '--tokenizer', 'llama3'], parallel: false, callStart: '{"name": "' },
  { name: 'qwen3', gen: ['--arch', 'qwen3', '--tokenizer', 'qwen3'], parallel: true,
    callStart: '<tool_call>\n{"name": "' },
];
let dir;
before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-tools-'));
  for (const f of families) {
    f.model = await genModel(dir, `${f.name}.gguf`, f.gen);
    f.server = await startServer(['--prompt-cache-bytes', '64M', '--no-ssd-cache', '--model-alias', f.name,
                                  '--parallel', '2'], { model: f.model });
    f.openai = new OpenAI({ baseURL: `${f.server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300000 });
    f.anthropic = new Anthropic({ baseURL: f.server.url, apiKey: 'unused', maxRetries: 0, timeout: 300000 });
  }
});
after(async () => {
  for (const f of families) {
    const r = await f.server?.stop();
    assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${f.server?.stderr()}`);
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const chat = (f, extra) => ({
  model: f.name,
  messages: [{ role: 'user', content: 'What is the weather in Paris, and what time is it?' }],
  tools: openaiTools,
  max_tokens: 1500,
  ...extra,
});

for (const f of families) {
  test(`${f.name}: tool_choice required forces valid calls (several seeds)`, async () => {
    for (const seed of [1, 2, 3, 4]) {
      const r = await f.openai.chat.completions.create(chat(f, { tool_choice: 'required', seed, logprobs: true }));
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
      // The reply's own text (its tokens) is in the family's syntax, told from the model's template.
      const raw = choice.logprobs.content.map((t) => t.token).join('');
      assert.ok(raw.startsWith(f.callStart), raw);
      const calls = choice.message.tool_calls;
      assert.ok(calls.length >= 1);
      if (!f.parallel) assert.equal(calls.length, 1, 'Llama 3.x: one call per turn');
      for (const c of calls) {
        assert.equal(c.type, 'function');
        assert.match(c.id, /\S/);
        assertValidCall(c.function.name, c.function.arguments);
      }
      assert.equal(choice.message.content, null, 'a forced call has no text around it');
    }
  });

  test(`${f.name}: a named function is the only one called`, async () => {
    for (const [name, seed] of [['search', 1], ['get_weather', 2], ['get_time', 3]]) {
      const r = await f.openai.chat.completions.create(
        chat(f, { tool_choice: { type: 'function', function: { name } }, seed }));
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      for (const c of r.choices[0].message.tool_calls) assertValidCall(c.function.name, c.function.arguments, name);
    }
  });

  test(`${f.name}: streaming forced calls are well-formed deltas the client assembles`, async () => {
    // The SDK's stream helper assembles tool-call deltas by index and refuses malformed ones.
    const stream = f.openai.chat.completions.stream(chat(f, { tool_choice: 'required', seed: 7 }));
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    const calls = final.choices[0].message.tool_calls;
    assert.ok(calls.length >= 1);
    for (const c of calls) assertValidCall(c.function.name, c.function.arguments);
    // Streaming and not agree on the same seed.
    const plain = await f.openai.chat.completions.create(chat(f, { tool_choice: 'required', seed: 7 }));
    assert.deepEqual(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
                     plain.choices[0].message.tool_calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]));

    // Raw chunks: every tool_calls delta carries its index; the first of each call its id, type and name.
    const raw = await f.openai.chat.completions.create(
      chat(f, { tool_choice: { type: 'function', function: { name: 'search' } }, seed: 8, stream: true }));
    const byIndex = new Map();
    let finish = null;
    for await (const chunk of raw) {
      const ch = chunk.choices[0];
      if (!ch) continue;
      for (const d of ch.delta.tool_calls ?? []) {
        assert.equal(typeof d.index, 'number');
        if (!byIndex.has(d.index)) {
          assert.match(d.id, /\S/);
          assert.equal(d.type, 'function');
          byIndex.set(d.index, { name: d.function.name, args: '' });
        }
        byIndex.get(d.index).args += d.function?.arguments ?? '';
      }
      if (ch.finish_reason) finish = ch.finish_reason;
    }
    assert.equal(finish, 'tool_calls');
    assert.ok(byIndex.size >= 1);
    for (const c of byIndex.values()) assertValidCall(c.name, c.args, 'search');
  });

  test(`${f.name}: parallel_tool_calls false gives exactly one call`, async () => {
    for (const seed of [1, 2, 3]) {
      for (const stream of [false, true]) {
        const params = chat(f, { tool_choice: 'required', parallel_tool_calls: false, seed });
        const r = stream ? await f.openai.chat.completions.stream(params).finalChatCompletion()
                         : await f.openai.chat.completions.create(params);
        const calls = r.choices[0].message.tool_calls;
        assert.equal(calls.length, 1, JSON.stringify(calls));
        assertValidCall(calls[0].function.name, calls[0].function.arguments);
      }
    }
  });

  const messages = (f, extra) => ({
    model: f.name,
    max_tokens: 1500,
    tools: anthropicTools,
    messages: [{ role: 'user', content: 'Search for ember and tell me the weather.' }],
    ...extra,
  });

  test(`${f.name}: Anthropic tool_choice any and tool force valid tool_use blocks`, async () => {
    for (const [tool_choice, only] of [[{ type: 'any' }, null], [{ type: 'tool', name: 'get_weather' }, 'get_weather']]) {
      for (const stream of [false, true]) {
        const params = messages(f, { tool_choice, temperature: 1, top_k: 40 });
        const m = stream ? await f.anthropic.messages.stream(params).finalMessage()
                         : await f.anthropic.messages.create(params);
        assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
        const uses = m.content.filter((b) => b.type === 'tool_use');
        assert.ok(uses.length >= 1);
        assert.equal(m.content.length, uses.length, 'no text beside a forced call');
        for (const u of uses) {
          assert.match(u.id, /^toolu_/);
          assertValidCall(u.name, u.input, only);
        }
      }
    }
  });

  test(`${f.name}: Anthropic disable_parallel_tool_use gives one tool_use`, async () => {
    const m = await f.anthropic.messages.create(
      messages(f, { tool_choice: { type: 'any', disable_parallel_tool_use: true } }));
    const uses = m.content.filter((b) => b.type === 'tool_use');
    assert.equal(uses.length, 1);
    assertValidCall(uses[0].name, uses[0].input);
  });
}

test('qwen3: Anthropic is_error results reach the prompt and the next forced call still holds', async () => {
  const f = families[1];
  const history = (isError) => [
    { role: 'user', content: 'Weather in Atlantis?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Atlantis' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', is_error: isError, content: 'unknown city' }] },
  ];
  const count = async (isError) =>
    (await f.anthropic.messages.countTokens({ model: f.name, tools: anthropicTools, messages: history(isError) })).input_tokens;
  assert.ok((await count(true)) > (await count(false)), 'the error mark is part of the prompt');
  const m = await f.anthropic.messages.create({
    model: f.name, max_tokens: 1500, tools: anthropicTools, messages: history(true), tool_choice: { type: 'tool', name: 'search' },
  });
  assert.equal(m.stop_reason, 'tool_use');
  for (const u of m.content) assertValidCall(u.name, u.input, 'search');
});

test('tool_choice none offers no tools to the template, on both APIs', async () => {
  const f = families[1];
  const base = { model: f.name, messages: [{ role: 'user', content: 'hi' }] };
  const withNone = await f.anthropic.messages.countTokens({ ...base, tools: anthropicTools, tool_choice: { type: 'none' } });
  const without = await f.anthropic.messages.countTokens(base);
  const withTools = await f.anthropic.messages.countTokens({ ...base, tools: anthropicTools });
  assert.equal(withNone.input_tokens, without.input_tokens);
  assert.ok(withTools.input_tokens > without.input_tokens);
  const r = await f.openai.chat.completions.create({ ...base, tools: openaiTools, tool_choice: 'none', max_tokens: 4 });
  const plain = await f.openai.chat.completions.create({ ...base, max_tokens: 4 });
  assert.equal(r.usage.prompt_tokens, plain.usage.prompt_tokens);
});

test('refusals are 400s naming the field', async () => {
  const f = families[0];
  const cases = [
    [{ tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice', /'nope'/],
    [{ tool_choice: 'required', tools: undefined }, 'tool_choice', /no tools/],
    [{ tool_choice: 'required', tools: [{ type: 'function', function: { name: 'f', parameters: {
      type: 'object', patternProperties: { '^x': { type: 'string' } } } } }] },
     'tools[0].function.parameters', /'f'.*patternProperties/],
  ];
  for (const [extra, param, message] of cases) {
    const r = await postJson(`${f.server.url}/v1/chat/completions`, chat(f, extra));
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param, r.text);
    assert.match(r.json.error.message, message);
  }
  const a = await postJson(`${f.server.url}/v1/messages`, { model: f.name, max_tokens: 8, tools: anthropicTools,
    messages: [{ role: 'user', content: 'hi' }], tool_choice: { type: 'tool', name: 'nope' } });
  assert.equal(a.status, 400, a.text);
  assert.equal(a.json.type, 'error');
  assert.match(a.json.error.message, /'nope'/);
});
