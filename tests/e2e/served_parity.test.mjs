// The served path against llama.cpp: a chat request through `ember serve` (F16 KV, 2 threads, Q8_0
// weights) must see the same prompt ids and give the same greedy reply as llama.cpp (node-llama-cpp,
// same KV type and threads, flash attention off) for the same messages, with exactly one BOS where the
// model has one. The oracle side (peers/llamacpp/runner.mjs chat-batch) renders the model's chat
// template with @huggingface/jinja and tokenizes it with llama.cpp's tokenizer, as llama-server does.
// ember's prompt ids are not in its reply, so they are read back through the prefix cache: after the
// chat request the cache holds ember's prompt + reply, and a completion request with the ORACLE's ids
// reports how many leading ids it found there — all of them only if every id is equal.
// Fails (never skips) when node-llama-cpp is missing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { emberBin, postJson, startServer } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const runner = path.resolve(here, '../../peers/llamacpp/runner.mjs');
const GEN = 16;

// Untied output (a tied random model mostly repeats its input token), wide enough output to be decisive.
const FAMILIES = [
  { name: 'llama3', args: ['--arch', 'llama', '--tokenizer', 'llama3', '--seed', '5'], bos: 1 },
  { name: 'qwen3', args: ['--arch', 'qwen3', '--tokenizer', 'qwen3', '--seed', '6'], bos: 0 },
  { name: 'gemma3', args: ['--arch', 'gemma3', '--tokenizer', 'gemma3', '--seed', '7'], bos: 1 },
];
const SHAPE = ['--n-layer', '2', '--n-embd', '128', '--n-head', '2', '--n-head-kv', '1', '--n-ff', '256',
               '--type', 'q8_0', '--untied', '--output-std', '1', '--ctx', '2048'];

const MESSAGES = [
  { role: 'system', content: 'You are a terse assistant. Answer in one line.' },
  { role: 'user', content: 'What is the capital of France?' },
  { role: 'assistant', content: 'Paris.' },
  { role: 'user', content: 'And of Italy — with a café emoji ☕, please.' },
];

const run = (bin, args, timeout = 300000) =>
  new Promise((resolve, reject) =>
    execFile(bin, args, { timeout, maxBuffer: 64 << 20 }, (err, out, errText) =>
      err ? reject(new Error(`${bin} ${args[0]} failed: ${err.message} ${errText} ${out}`)) : resolve(out)));

let dir;
let oracle;  // family name -> chat-batch result
before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ember-served-parity-'));
  const jobs = [];
  for (const f of FAMILIES) {
    f.model = path.join(dir, `${f.name}.gguf`);
    await run(emberBin, ['gen-model', '--out', f.model, ...f.args, ...SHAPE]);
    jobs.push({ model: f.model, messages: MESSAGES, gen: GEN, kv: 'f16', threads: 2 });
  }
  writeFileSync(path.join(dir, 'jobs.json'), JSON.stringify(jobs));
  const out = JSON.parse(await run('node', [runner, 'chat-batch', '-', '--jobs', path.join(dir, 'jobs.json')]));
  assert.equal(out.results?.length, FAMILIES.length, JSON.stringify(out));
  oracle = Object.fromEntries(FAMILIES.map((f, i) => [f.name, out.results[i]]));
});
after(() => rmSync(dir, { recursive: true, force: true }));

for (const f of FAMILIES) {
  test(`${f.name}: a chat request's prompt ids and greedy reply equal llama.cpp's`, async () => {
    const want = oracle[f.name];
    assert.equal(want.bos_count, f.bos, `llama.cpp's prompt has ${want.bos_count} BOS`);
    if (f.bos) assert.equal(want.prompt_ids[0], want.bos);
    assert.equal(want.reply_eog, false, 'the chosen seed replies GEN tokens without an end token');
    const server = await startServer(['--threads', '2', '--no-ssd-cache', '--prompt-cache-bytes', '64M',
                                      '--model-alias', f.name], { model: f.model });
    try {
      // The rendering: ember's template engine against the reference Jinja, for the same messages.
      const rendered = await postJson(`${server.url}/apply-template`, { messages: MESSAGES });
      assert.equal(rendered.status, 200, rendered.text);
      assert.equal(rendered.json.prompt, want.prompt);

      const chat = await postJson(`${server.url}/v1/chat/completions`, {
        model: f.name, messages: MESSAGES, temperature: 0, max_tokens: GEN, logprobs: true,
      });
      assert.equal(chat.status, 200, chat.text);
      const { usage, choices } = chat.json;
      assert.equal(usage.prompt_tokens, want.prompt_ids.length, 'prompt length (a second BOS would add one)');
      assert.equal(usage.completion_tokens, want.reply_ids.length);
      // Token by token where the binding can say (it returns a piece that is part of a UTF-8 character
      // as U+FFFD; the prefix-cache probe below compares those ids exactly).
      const pieces = choices[0].logprobs.content.map((t) => t.bytes);
      assert.equal(pieces.length, want.reply_pieces.length);
      want.reply_pieces.forEach((p, i) => {
        if (!Buffer.from(p).toString('utf8').includes('\ufffd')) assert.deepEqual(pieces[i], p, `reply token ${i}`);
      });
      assert.equal(choices[0].message.content, want.reply_text);

      // Every id of ember's prompt and reply: the cache entry the chat left is ember's prompt + all but the
      // last reply token; the oracle's ids find all of it only if they are ember's ids.
      const ids = [...want.prompt_ids, ...want.reply_ids];
      const probe = await postJson(`${server.url}/v1/completions`, {
        model: f.name, prompt: ids, max_tokens: 1, temperature: 0,
      });
      assert.equal(probe.status, 200, probe.text);
      assert.equal(probe.json.usage.prompt_tokens_details.cached_tokens, ids.length - 1,
                   "the oracle's ids are the ids ember's chat request forwarded");
    } finally {
      const r = await server.stop();
      assert.equal(r.code, 0, `ember serve exited ${JSON.stringify(r)}: ${server.stderr()}`);
    }
  });
}
