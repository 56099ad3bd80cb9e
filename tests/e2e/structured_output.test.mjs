// Structured output through the official `openai` client against `ember serve` on a tiny random-weight
// model: every schema of the corpus (tests/grammar/schemas) through chat.completions.create with
// response_format json_schema, non-streaming and streaming, json_object, and chat.completions.parse. With
// random weights the only thing that can make a reply valid is the grammar, so every reply must
// JSON.parse and validate against its schema (ajv, with ajv-formats), and finish with "stop". A schema
// the compiler refuses is a 400 naming the keyword. The validity rates are printed as test diagnostics.
//
// A random model closes a string with a probability of about 1e-4 per token (only a few dozen of Llama 3's
// 128k tokens are a quote the grammar lets end it), so an unbounded string would rarely end within any
// max_tokens. The requests therefore raise the logits of the closing-quote tokens (logit_bias +6): the
// grammar's mask comes after the bias, so the bias only chooses among the tokens the grammar allows, and
// validity still rests on the grammar alone.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { makeTinyModel, postJson, startServer } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const schemaDir = path.resolve(here, '../grammar/schemas');
const corpus = readdirSync(schemaDir)
  .filter((f) => f.endsWith('.json') && f !== 'rejected.json')
  .sort()
  .map((f) => ({ name: f.replace(/\.json$/, ''), ...JSON.parse(readFileSync(path.join(schemaDir, f), 'utf8')) }));
const rejected = JSON.parse(readFileSync(path.join(schemaDir, 'rejected.json'), 'utf8'));

const PARALLEL = 4;
const SAMPLES = Number(process.env.EMBER_SCHEMA_SAMPLES ?? 2);  // replies per schema and mode
const MAX_TOKENS = 3000;

// Draft 4's boolean exclusiveMinimum / exclusiveMaximum, rewritten for ajv's 2020-12 dialect.
function toAjv(s) {
  if (Array.isArray(s)) return s.map(toAjv);
  if (s === null || typeof s !== 'object') return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if ((k === 'exclusiveMinimum' || k === 'exclusiveMaximum') && typeof v === 'boolean') continue;
    out[k] = k === 'enum' || k === 'const' || k === 'examples' || k === 'default' ? v : toAjv(v);
  }
  if (s.exclusiveMinimum === true && 'minimum' in s) { out.exclusiveMinimum = s.minimum; delete out.minimum; }
  if (s.exclusiveMaximum === true && 'maximum' in s) { out.exclusiveMaximum = s.maximum; delete out.maximum; }
  return out;
}

// Compiled once, before the server starts: compiling is synchronous and slow, and a client blocked for
// longer than ember's keep-alive idle time (5 s) can write its next request into a socket the server has
// just closed (undici has not yet run the close event).
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validators = new Map(corpus.map((c) => [c.name, ajv.compile(toAjv(c.schema))]));
const validator = (c) => validators.get(c.name);

let model;
let server;
let client;
const closers = {};  // token id -> bias, for the single tokens that can close a string
before(async () => {
  model = await makeTinyModel({ ctx: 8192 });
  server = await startServer(['--prompt-cache-bytes', '64M', '--no-ssd-cache', '--model-alias', 'tiny',
                              '--parallel', String(PARALLEL)], { model: model.path });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 600000 });
  for (const piece of ['"', '",', '"}', '"]', '":', '",\n', '"\n', '"},', '"],']) {
    const r = await postJson(`${server.url}/tokenize`, { content: piece, add_special: false });
    assert.equal(r.status, 200, r.text);
    if (r.json.tokens.length === 1) closers[r.json.tokens[0]] = 6;
  }
  assert.ok(Object.keys(closers).length >= 3, JSON.stringify(closers));
});
after(async () => {
  const r = await server?.stop();
  model?.remove();
  assert.equal(r?.code, 0, `ember serve exited ${JSON.stringify(r)}: ${server?.stderr()}`);
});

// Runs `jobs` (functions returning promises) PARALLEL at a time.
async function pool(jobs) {
  const results = new Array(jobs.length);
  let next = 0;
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]();
    }
  }));
  return results;
}

function request(c, seed, extra = {}) {
  return {
    model: 'tiny',
    messages: [{ role: 'user', content: `Reply with JSON for "${c.name}".` }],
    temperature: 1,
    seed,
    max_tokens: MAX_TOKENS,
    logit_bias: closers,
    response_format: { type: 'json_schema', json_schema: { name: c.name, schema: c.schema, strict: true } },
    ...extra,
  };
}

async function streamed(body) {
  const stream = await client.chat.completions.create({ ...body, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.choices.length === 0) continue;
    text += chunk.choices[0].delta.content ?? '';
    finish = chunk.choices[0].finish_reason ?? finish;
  }
  return { text, finish };
}

// One reply's verdict: {ok, why}.
function judge(c, validate, text, finish) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, why: `not JSON (${e.message}), finish ${finish}: ${text.slice(0, 300)}` };
  }
  if (!validate(value)) return { ok: false, why: `invalid: ${JSON.stringify(validate.errors)}: ${text.slice(0, 300)}` };
  if (finish !== 'stop') return { ok: false, why: `finish_reason ${finish}` };
  return { ok: true };
}

function report(label, verdicts, t) {
  const good = verdicts.filter((v) => v.ok).length;
  t.diagnostic(`${label}: ${good}/${verdicts.length} valid (${((100 * good) / verdicts.length).toFixed(1)} %)`);
  const bad = verdicts.filter((v) => !v.ok).slice(0, 5);
  assert.equal(good, verdicts.length, `${label}: invalid replies:\n${bad.map((v) => `${v.name}: ${v.why}`).join('\n')}`);
}

test('the corpus itself: valid examples pass ajv, invalid ones fail', () => {
  assert.ok(corpus.length >= 30, `${corpus.length} schemas`);
  for (const c of corpus) {
    const validate = validator(c);
    for (const v of [...c.valid, ...(c.not_emitted ?? [])]) assert.ok(validate(v), `${c.name}: ${JSON.stringify(v)} ${JSON.stringify(validate.errors)}`);
    for (const v of c.invalid) assert.ok(!validate(v), `${c.name}: ajv accepts the invalid ${JSON.stringify(v)}`);
  }
});

test('every corpus schema, non-streaming: every reply parses and validates', async (t) => {
  const jobs = [];
  for (const c of corpus) {
    const validate = validator(c);
    for (let s = 0; s < SAMPLES; s++) {
      jobs.push(async () => {
        const r = await client.chat.completions.create(request(c, 1000 + s));
        return { name: c.name, ...judge(c, validate, r.choices[0].message.content, r.choices[0].finish_reason) };
      });
    }
  }
  report('json_schema non-streaming', await pool(jobs), t);
});

test('every corpus schema, streaming: the concatenated deltas parse and validate', async (t) => {
  const jobs = [];
  for (const c of corpus) {
    const validate = validator(c);
    for (let s = 0; s < SAMPLES; s++) {
      jobs.push(async () => {
        const { text, finish } = await streamed(request(c, 2000 + s));
        return { name: c.name, ...judge(c, validate, text, finish) };
      });
    }
  }
  report('json_schema streaming', await pool(jobs), t);
});

test('json_object: every reply is a JSON object, streaming and not', async (t) => {
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const validate = Object.assign((v) => isObject(v), { errors: 'not an object' });
  const jobs = [];
  for (let s = 0; s < 8; s++) {
    const body = { ...request({ name: 'object' }, 3000 + s), response_format: { type: 'json_object' } };
    jobs.push(async () => {
      const r = await client.chat.completions.create(body);
      return { name: `json_object ${s}`, ...judge(null, validate, r.choices[0].message.content, r.choices[0].finish_reason) };
    });
    jobs.push(async () => {
      const { text, finish } = await streamed(body);
      return { name: `json_object streamed ${s}`, ...judge(null, validate, text, finish) };
    });
  }
  report('json_object', await pool(jobs), t);
});

test('chat.completions.parse returns the parsed value', async () => {
  for (const name of ['agent_classification', 'agent_calendar_event', 'recursive_tree']) {
    const c = corpus.find((x) => x.name === name);
    const r = await client.chat.completions.parse(request(c, 4000));
    const msg = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.deepEqual(msg.parsed, JSON.parse(msg.content));
    const validate = validator(c);
    assert.ok(validate(msg.parsed), `${name}: ${JSON.stringify(validate.errors)} ${msg.content}`);
  }
});

test('the completions endpoint takes response_format too', async () => {
  const c = corpus.find((x) => x.name === 'agent_search_query');
  const validate = validator(c);
  const r = await client.completions.create({
    model: 'tiny', prompt: 'JSON:', temperature: 1, seed: 5, max_tokens: MAX_TOKENS, logit_bias: closers,
    response_format: { type: 'json_schema', json_schema: { name: c.name, schema: c.schema } },
  });
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.ok(validate(JSON.parse(r.choices[0].text)), r.choices[0].text);
});

test('an unsupported schema is a 400 naming the keyword and where it is', async () => {
  for (const r of rejected) {
    await assert.rejects(
      client.chat.completions.create({
        model: 'tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 5,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: r.schema } },
      }),
      (e) => {
        assert.equal(e.status, 400, JSON.stringify(r.schema));
        assert.match(e.message, new RegExp(`unsupported JSON Schema keyword '${r.keyword.replace(/\$/g, '\\$')}'`));
        assert.ok(e.message.includes(` at ${r.at}`), e.message);
        return true;
      });
  }
});

test('a malformed response_format is a 400 naming the field', async () => {
  const cases = [
    [{ type: 'yaml' }, 'response_format.type'],
    [{ type: 'json_schema' }, 'response_format.json_schema'],
    [{ type: 'json_schema', json_schema: { name: 'x', schema: 'object' } }, 'response_format.json_schema.schema'],
  ];
  for (const [rf, param] of cases) {
    const r = await postJson(`${server.url}/v1/chat/completions`,
                             { model: 'tiny', messages: [{ role: 'user', content: 'x' }], response_format: rf });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param, r.text);
    assert.ok(r.json.error.message.includes(param), r.text);
  }
  // The server goes on.
  const ok = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 2 });
  assert.ok(ok.choices.length === 1);
});
