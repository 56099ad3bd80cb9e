#!/usr/bin/env node
// ember's llama.cpp oracle and peer: a thin JSON CLI over node-llama-cpp (pinned 3.21.1, CPU only).
// Every command prints one JSON object on stdout; errors print {"error": "..."} and exit 1.
//
//   meta MODEL                                   model metadata as llama.cpp sees it
//   tokenize MODEL (--text T | --text-file F) [--special] [--no-bos]
//   tokenize-batch MODEL --in STRINGS.json --out IDS.json [--special]   array of strings -> array of id arrays
//   detokenize MODEL --ids 1,2,3 [--special]
//   parity-batch MODEL --in STRINGS.json --out OUT.json   one load for ember's tokenizer parity test: writes
//        {ids: tokenize(s), ids_special: tokenize(s, special), text: detokenize(ids)} per string
//   tokenize-bench MODEL --text-file F [--runs N] [--special]
//        times model.tokenize alone on the file's text (best of N runs): ms, MB/s, token count
//   logits MODEL --tokens 1,2,3 [--out FILE] [--top K] [--kv f32|f16] [--threads N]
//        teacher-forced: row i = llama.cpp's softmax after tokens[0..i], float32 LE, n_tokens x n_vocab
//   logits-rows MODEL --tokens 1,2,3 --rows 5,9 [--argmax-from N] [--out FILE] [--kv f32|f16] [--threads N]
//        teacher-forced like `logits`, but writes only the probability rows of the listed positions (in the
//        given order) and reports llama.cpp's greedy token at every position >= N as "argmax" — far cheaper
//        for long sequences over a large vocabulary (each probability row costs ~1 s through the binding)
//   rows-batch - --jobs JOBS.json
//        `logits-rows` for many models in one process: JOBS.json = [{model, tokens_file (ids "1,2,3"), rows: [..],
//        out, kv, threads, argmax_from?}, ...] -> {results: [the logits-rows answer of each job]}
//   chat-batch - --jobs JOBS.json
//        the served path's oracle: JOBS.json = [{model, messages, gen, kv?, threads?}, ...]. Per job: the model's
//        chat template rendered by @huggingface/jinja (messages, add_generation_prompt, bos/eos tokens),
//        tokenized by llama.cpp with control tokens parsed and BOS prepended only when the model adds one and
//        the text does not already start with it (as llama-server), then `gen` greedy tokens (stopping at an
//        end-of-generation token) -> {results: [{prompt, prompt_ids, bos_count, reply_ids, reply_pieces}]}
//   bench MODEL --tokens 1,2,3 [--gen N] [--threads N] [--kv f16|f32]
//        prefill the tokens, then greedy-decode N tokens; prints timings
//   converse MODEL --turns-file TURNS.json [--gen N] [--threads N] [--mode warm|cold] [--only K]
//        [--save-state FILE] [--load-state FILE]
//        TURNS.json = [[ids of turn 1's full prompt], [turn 2's], ...]. Per turn, TTFT = evaluating the part
//        of the prompt the sequence does not already hold, up to the first generated token; then N-1 more
//        greedy tokens. warm: one context sequence reused across turns (its common prefix is kept); cold:
//        the sequence is cleared before every turn. --save-state writes the sequence after the last turn;
//        --load-state restores one before the first (its load time counts in that turn's TTFT).
//        --only K runs just turn K (1-based).
//   check-models - --list LIST.json
//        LIST.json = [{"path": ..., "tokens": [...]}, ...]; loads each model in one process, evaluates the
//        tokens, and reports per model: loaded, n_vocab, all probabilities finite, top token
import fs from "node:fs";
import path from "node:path";
import {Template} from "@huggingface/jinja";
import {getLlama, LlamaLogLevel, readGgufFileInfo} from "node-llama-cpp";

function parseArgs(argv) {
  const [cmd, model, ...rest] = argv;
  const opts = {};
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (!a.startsWith("--")) throw new Error(`unexpected argument '${a}'`);
    const key = a.slice(2);
    const next = rest[i + 1];
    if (next === undefined || next.startsWith("--")) opts[key] = true;
    else { opts[key] = next; i++; }
  }
  return {cmd, model, opts};
}

const ids = (s) => String(s).split(",").filter((x) => x.length).map((x) => {
  const n = Number(x);
  if (!Number.isInteger(n) || n < 0) throw new Error(`bad token id '${x}'`);
  return n;
});

let llamaPromise = null;
function llama() {
  llamaPromise ??= getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error, progressLogs: false});
  return llamaPromise;
}

async function loadModel(modelPath, vocabOnly = false) {
  if (!modelPath || !fs.existsSync(modelPath)) throw new Error(`model file not found: ${modelPath}`);
  return (await llama()).loadModel({modelPath, vocabOnly, useMmap: true});
}

function peerInfo(l) {
  const pkg = JSON.parse(fs.readFileSync(new URL("./node_modules/node-llama-cpp/package.json", import.meta.url)));
  return {stack: "llama.cpp", binding: "node-llama-cpp", version: pkg.version, build: l?.buildType ?? null,
          cpu_variant: cpuVariant()};
}

function cpuVariant() {
  // The CPU backend library ggml loaded for this machine (e.g. libggml-cpu-zen4.so).
  try {
    const maps = fs.readFileSync("/proc/self/maps", "utf8");
    const m = maps.match(/libggml-cpu-[\w-]+\.so/);
    return m ? m[0] : null;
  } catch { return null; }
}

async function makeSequence(model, n, opts) {
  const kv = String(opts.kv ?? "f16").toUpperCase();
  const threads = opts.threads ? Number(opts.threads) : 0;
  const context = await model.createContext({
    contextSize: Math.max(256, n + 8), batchSize: Math.max(1, Math.min(512, n)), sequences: 1,
    flashAttention: false, threads: threads ? {ideal: threads, min: threads} : undefined,
    experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv,
  });
  return {context, seq: context.getSequence()};
}

async function checkOne(item) {
  let model = null;
  try {
    model = await loadModel(item.path);
    const {context, seq} = await makeSequence(model, item.tokens.length, {});
    const input = item.tokens.map((t, i) => i === item.tokens.length - 1
        ? [t, {generateNext: {probabilities: true, options: {temperature: 0}}}] : t);
    const res = await seq.controlledEvaluate(input);
    const probs = res[item.tokens.length - 1]?.next?.probabilities;
    let finite = !!probs && probs.size > 0, sum = 0, top = null, topP = -1;
    for (const [tok, p] of probs ?? []) {
      if (!Number.isFinite(p)) finite = false;
      sum += p;
      if (p > topP) { topP = p; top = tok; }
    }
    await context.dispose();
    return {path: item.path, loaded: true, n_vocab: model.tokens.vocabularySize ?? null, finite,
            prob_sum: sum, top, top_p: topP};
  } catch (e) {
    return {path: item.path, loaded: false, error: String(e?.message ?? e)};
  } finally {
    await model?.dispose();
  }
}

// Teacher-forced probability rows of the listed positions and llama.cpp's greedy token from argmax-from on.
async function logitsRows(model, tokens, rows, o) {
  if (!tokens.length) throw new Error("--tokens is empty");
  const argmaxFrom = o["argmax-from"] !== undefined && o["argmax-from"] !== null ? Number(o["argmax-from"])
                                                                                : tokens.length;
  for (const r of rows) if (r >= tokens.length) throw new Error(`row ${r} is past the last token`);
  const nVocab = model.tokens.vocabularySize ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length;
  const {context, seq} = await makeSequence(model, tokens.length, o);
  const rowIndex = new Map(rows.map((r, i) => [r, i]));
  const input = tokens.map((t, i) => {
    const probabilities = rowIndex.has(i);
    const token = i >= argmaxFrom;
    return probabilities || token ? [t, {generateNext: {probabilities, token, options: {temperature: 0}}}] : t;
  });
  const out = new Float32Array(rows.length * nVocab);
  const argmax = [];
  const t0 = performance.now();
  await seq.controlledEvaluate(input, {onTokenResult(i, r) {
    const probs = r?.next?.probabilities;
    if (rowIndex.has(i)) {
      if (!probs) throw new Error(`no probabilities at position ${i}`);
      const base = rowIndex.get(i) * nVocab;
      for (const [tok, p] of probs) out[base + tok] = p;
      r.next.probabilities = undefined;  // rows of a large vocabulary add up: keep only the copy
    }
    if (i >= argmaxFrom) argmax.push([i, r?.next?.token ?? null]);
  }});
  const ms = performance.now() - t0;
  if (o.out) fs.writeFileSync(o.out, Buffer.from(out.buffer));
  argmax.sort((a, b) => a[0] - b[0]);
  const threads = context.currentThreads ?? null;
  await context.dispose();
  return {n_tokens: tokens.length, n_vocab: nVocab, rows, argmax, out: o.out ?? null, eval_ms: ms,
          kv: String(o.kv ?? "f16").toLowerCase(), threads, flash_attention: false,
          peer: peerInfo(await llama())};
}

// One chat job of `chat-batch`.
// The --jobs file's jobs in order, each with its model loaded (and disposed after): {results, peer}.
async function eachJobModel(o, run) {
  const jobs = JSON.parse(fs.readFileSync(o.jobs, "utf8"));
  if (!Array.isArray(jobs) || !jobs.length) throw new Error("--jobs must hold a non-empty array");
  const results = [];
  for (const j of jobs) {
    const model = await loadModel(path.resolve(j.model));
    try {
      results.push(await run(model, j));
    } finally {
      await model.dispose();
    }
  }
  return {results, peer: peerInfo(await llama())};
}

async function chatGreedy(model, job) {
  const source = model.fileInfo?.metadata?.tokenizer?.chat_template;
  if (!source) throw new Error(`${job.model}: no tokenizer.chat_template`);
  const piece = (t) => (t == null ? "" : model.detokenize([t], true));
  const prompt = new Template(source).render({messages: job.messages, add_generation_prompt: true,
                                              bos_token: piece(model.tokens.bos), eos_token: piece(model.tokens.eos)});
  let promptIds = Array.from(model.tokenize(prompt, true));
  const bos = model.tokens.bos;
  if (model.tokens.shouldPrependBosToken && bos != null && promptIds[0] !== bos) promptIds = [bos, ...promptIds];
  const nGen = Number(job.gen ?? 16);
  const {context, seq} = await makeSequence(model, promptIds.length + nGen + 1, job);
  const res = await seq.controlledEvaluate(promptIds.map((t, i) => i === promptIds.length - 1
      ? [t, {generateNext: {token: true, options: {temperature: 0}}}] : t));
  const reply = [res[promptIds.length - 1]?.next?.token];
  if (!model.isEogToken(reply[0])) {
    for await (const tok of seq.evaluate([reply[0]], {temperature: 0})) {
      reply.push(tok);
      if (reply.length >= nGen || model.isEogToken(tok)) break;
    }
  }
  await context.dispose();
  return {prompt, prompt_ids: promptIds, bos_count: promptIds.filter((t) => t === bos).length, bos,
          reply_ids: reply, reply_eog: model.isEogToken(reply[reply.length - 1]),
          reply_pieces: reply.map((t) => Array.from(Buffer.from(model.detokenize([t], false), "utf8"))),
          reply_text: model.detokenize(reply.filter((t) => !model.isEogToken(t)), false)};
}

const commands = {
  async "check-models"(_unused, o) {
    const list = JSON.parse(fs.readFileSync(o.list, "utf8"));
    const results = [];
    for (const item of list) results.push(await checkOne(item));
    return {results, peer: peerInfo(await llama())};
  },

  async meta(modelPath) {
    const info = await readGgufFileInfo(modelPath, {readTensorInfo: true});
    const model = await loadModel(modelPath);
    const md = JSON.parse(JSON.stringify(info.metadata, (k, v) =>
      Array.isArray(v) && v.length > 16 ? {array_length: v.length, head: v.slice(0, 8)} :
      typeof v === "bigint" ? Number(v) : v));
    return {peer: peerInfo(await llama()), metadata: md, tensor_count: info.tensorInfo?.length ?? null,
            vocab_size: model.tokens.vocabularySize ?? null, train_context_size: model.trainContextSize,
            vocabulary_type: model.vocabularyType, size_bytes: model.size,
            bos: model.tokens.bos, eos: model.tokens.eos};
  },

  async tokenize(modelPath, o) {
    const model = await loadModel(modelPath, true);
    const text = o["text-file"] ? fs.readFileSync(o["text-file"], "utf8") : String(o.text ?? "");
    let out = model.tokenize(text, !!o.special);
    if (!o["no-bos"] && model.tokens.shouldPrependBosToken && model.tokens.bos != null)
      out = [model.tokens.bos, ...out];
    return {ids: Array.from(out)};
  },

  async "tokenize-batch"(modelPath, o) {
    const model = await loadModel(modelPath, true);
    const strings = JSON.parse(fs.readFileSync(o.in, "utf8"));
    const result = strings.map((s) => Array.from(model.tokenize(s, !!o.special)));
    fs.writeFileSync(o.out, JSON.stringify(result));
    return {count: result.length, out: o.out, add_bos: model.tokens.shouldPrependBosToken, bos: model.tokens.bos};
  },

  async detokenize(modelPath, o) {
    const model = await loadModel(modelPath, true);
    return {text: model.detokenize(ids(o.ids), !!o.special)};
  },

  async "parity-batch"(modelPath, o) {
    const model = await loadModel(modelPath, true);
    const strings = JSON.parse(fs.readFileSync(o.in, "utf8"));
    const ids = strings.map((s) => Array.from(model.tokenize(s, false)));
    const idsSpecial = strings.map((s) => Array.from(model.tokenize(s, true)));
    const text = ids.map((l) => model.detokenize(l, false));
    fs.writeFileSync(o.out, JSON.stringify({ids, ids_special: idsSpecial, text}));
    return {count: strings.length, out: o.out};
  },

  async "tokenize-bench"(modelPath, o) {
    const model = await loadModel(modelPath, true);
    const text = fs.readFileSync(o["text-file"], "utf8");
    const bytes = Buffer.byteLength(text, "utf8");
    let best = Infinity, n = 0;
    for (let r = 0; r < Number(o.runs ?? 3); r++) {
      const t0 = performance.now();
      const ids = model.tokenize(text, !!o.special);
      const ms = performance.now() - t0;
      best = Math.min(best, ms);
      n = ids.length;
    }
    return {bytes, n_tokens: n, best_ms: best, mb_per_s: bytes / 1e6 / (best / 1000), peer: peerInfo(await llama())};
  },

  async logits(modelPath, o) {
    const tokens = ids(o.tokens);
    if (!tokens.length) throw new Error("--tokens is empty");
    const model = await loadModel(modelPath);
    // node-llama-cpp exposes no vocabulary size: llama.cpp's n_vocab is the tokenizer token count.
    const nVocab = model.tokens.vocabularySize ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length;
    const {seq} = await makeSequence(model, tokens.length, o);
    const input = tokens.map((t) => [t, {generateNext: {probabilities: true, options: {temperature: 0}}}]);
    const t0 = performance.now();
    const res = await seq.controlledEvaluate(input);
    const ms = performance.now() - t0;
    const rows = new Float32Array(tokens.length * nVocab);
    const topK = Number(o.top ?? 5);
    const top = [];
    res.forEach((r, i) => {
      const probs = r?.next?.probabilities;
      if (!probs) throw new Error(`no probabilities at position ${i}`);
      for (const [tok, p] of probs) rows[i * nVocab + tok] = p;
      top.push(Array.from(probs.entries()).slice(0, topK));
    });
    if (o.out) fs.writeFileSync(o.out, Buffer.from(rows.buffer));
    return {n_tokens: tokens.length, n_vocab: nVocab, kind: "probabilities", out: o.out ?? null, top, eval_ms: ms,
            peer: peerInfo(await llama())};
  },

  async "logits-rows"(modelPath, o) {
    const model = await loadModel(modelPath);
    try {
      return await logitsRows(model, ids(o.tokens), ids(o.rows ?? ""), o);
    } finally {
      await model.dispose();
    }
  },

  async "rows-batch"(_unused, o) {
    // One process for many models (loading the binding costs seconds; a model of a tiny generated file
    // costs little), so a test file spawns the oracle once.
    return eachJobModel(o, (model, j) => logitsRows(model, ids(fs.readFileSync(j.tokens_file, "utf8")), j.rows, {
      out: j.out, kv: j.kv, threads: j.threads, "argmax-from": j.argmax_from}));
  },
  async "chat-batch"(_unused, o) {
    return eachJobModel(o, chatGreedy);
  },

  async bench(modelPath, o) {
    const tokens = ids(o.tokens);
    const nGen = Number(o.gen ?? 0);
    const model = await loadModel(modelPath);
    const {seq} = await makeSequence(model, tokens.length + nGen + 1, o);
    const t0 = performance.now();
    const first = await seq.controlledEvaluate(
        tokens.map((t, i) => i === tokens.length - 1 ? [t, {generateNext: {token: true, options: {temperature: 0}}}] : t));
    const t1 = performance.now();
    let next = first[tokens.length - 1]?.next?.token;
    const generated = [next];
    const tGen0 = performance.now();
    if (nGen > 1) {
      const it = seq.evaluate([next], {temperature: 0});
      for await (const tok of it) {
        generated.push(tok);
        if (generated.length >= nGen) break;
      }
    }
    const t2 = performance.now();
    return {prompt_tokens: tokens.length, prefill_ms: t1 - t0, prefill_tok_s: tokens.length / ((t1 - t0) / 1000),
            generated: generated.length, decode_ms: t2 - tGen0,
            decode_tok_s: generated.length > 1 ? (generated.length - 1) / ((t2 - tGen0) / 1000) : null,
            tokens: generated, threads: o.threads ? Number(o.threads) : null, peer: peerInfo(await llama())};
  },
};

// Length of the common prefix of two token arrays.
function commonPrefix(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

commands.converse = async function converse(modelPath, o) {
  const turns = JSON.parse(fs.readFileSync(o["turns-file"], "utf8"));
  if (!Array.isArray(turns) || !turns.length || !turns.every((t) => Array.isArray(t) && t.length))
    throw new Error("--turns-file must hold a non-empty array of non-empty id arrays");
  const nGen = Math.max(1, Number(o.gen ?? 16));
  const mode = String(o.mode ?? "warm");
  if (mode !== "warm" && mode !== "cold") throw new Error("--mode must be warm or cold");
  const only = o.only ? Number(o.only) : 0;
  const longest = Math.max(...turns.map((t) => t.length));
  const model = await loadModel(modelPath);
  const {context, seq} = await makeSequence(model, longest + nGen + 8, o);
  const out = [];
  let pendingLoad = o["load-state"] ?? null;
  for (let k = 0; k < turns.length; k++) {
    if (only && k + 1 !== only) continue;
    const ids = turns[k];
    const t0 = performance.now();
    if (pendingLoad) {
      await seq.loadStateFromFile(pendingLoad, {acceptRisk: true});
      pendingLoad = null;
    }
    if (mode === "cold") await seq.clearHistory();
    let keep = commonPrefix(seq.contextTokens, ids);
    if (keep >= ids.length) keep = ids.length - 1;  // the last prompt token is evaluated to get logits
    if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{start: keep, end: seq.nextTokenIndex}]);
    const suffix = ids.slice(keep);
    const res = await seq.controlledEvaluate(
        suffix.map((t, i) => i === suffix.length - 1 ? [t, {generateNext: {token: true, options: {temperature: 0}}}] : t));
    const t1 = performance.now();
    const first = res[suffix.length - 1]?.next?.token;
    const generated = [first];
    if (nGen > 1) {
      for await (const tok of seq.evaluate([first], {temperature: 0})) {
        generated.push(tok);
        if (generated.length >= nGen) break;
      }
    }
    out.push({turn: k + 1, ttft_ms: t1 - t0, prompt_tokens: ids.length, cached_tokens: keep,
              evaluated_tokens: suffix.length, generated: generated.length});
  }
  let savedBytes = null;
  if (o["save-state"]) savedBytes = (await seq.saveStateToFile(o["save-state"])).fileSize;
  await context.dispose();
  return {mode, turns: out, threads: o.threads ? Number(o.threads) : null, saved_state_bytes: savedBytes,
          peer: peerInfo(await llama())};
};

async function main() {
  const {cmd, model, opts} = parseArgs(process.argv.slice(2));
  if (!commands[cmd]) throw new Error(`unknown command '${cmd}'; one of: ${Object.keys(commands).join(", ")}`);
  const out = await commands[cmd](model && path.resolve(model), opts);
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().then(() => process.exit(0)).catch((e) => {
  process.stdout.write(JSON.stringify({error: String(e?.message ?? e)}) + "\n");
  process.exit(1);
});
