#!/usr/bin/env node
// Issue #29's grammar goal, measured: an ordinary 16-token chat stream, timed alone (median of --runs),
// then beside a costly GBNF grammar on the same model under continuous batching, and the ratio printed
// (goal: <= 1.3x). Two costly cases:
//   up-front  the 197-byte `root ::= ( .? .? ...60... ){0,60}`, sent with each ordinary stream
//             (the mask work budget's probe refuses it with a 400 before it queues);
//   mid-reply the same after a fixed "Answer: ", so its first masks are cheap and it passes the probe:
//             it runs, sits steps out while its costly masks are computed in slices, and ends with the
//             budget error — the ordinary streams are timed while it is still running.
// Starts `ember serve MODEL --parallel 2` on a free port (or targets --url), stops what it started.
//   node scripts/grammar-neighbour.mjs [--model ~/.local/share/ember/demo-llama3-q8_0.gguf]
//        [--bin build/ember] [--url http://127.0.0.1:8080] [--runs 5] [--tokens 16]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    model: { type: 'string', default: path.join(os.homedir(), '.local/share/ember/demo-llama3-q8_0.gguf') },
    bin: { type: 'string', default: process.env.EMBER_BIN ?? 'build/ember' },
    url: { type: 'string' },
    runs: { type: 'string', default: '5' },
    tokens: { type: 'string', default: '16' },
  },
});
const runs = Number(a.runs);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const COSTLY = `root ::= (${' .?'.repeat(60)} ){0,60}`;
const COSTLY_MID = `root ::= "Answer: " (${' .?'.repeat(60)} ){0,60}`;
// Llama 3's end-of-generation ids banned, so the ordinary reply is always --tokens long.
const NO_EOG = { 128001: -100, 128008: -100, 128009: -100 };

async function startServer() {
  const home = mkdtempSync(path.join(os.tmpdir(), 'ember-grammar-neighbour-'));
  const help = execFileSync(a.bin, ['serve', '--help'], { encoding: 'utf8' });
  const args = ['serve', a.model, '--port', '0', '--parallel', '2'];
  if (help.includes('--no-ssd-cache')) args.push('--no-ssd-cache');
  const proc = spawn(a.bin, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, XDG_CACHE_HOME: home, XDG_DATA_HOME: home },
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ember did not start: ${err}`)), 120000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => reject(new Error(`ember exited with ${code}: ${err}`)));
  });
  const stop = async () => {
    const exited = new Promise((r) => proc.on('exit', r));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 15000);
    await exited;
    clearTimeout(t);
    rmSync(home, { recursive: true, force: true });
  };
  return { url, stop };
}

// One streamed chat completion; resolves with its wall time, the content and how it ended.
async function stream(url, body, signal) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal,
    body: JSON.stringify({ stream: true, ...body }),
  });
  if (res.status !== 200) return { ms: performance.now() - t0, status: res.status, error: await res.text() };
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
  }
  let content = '';
  let error = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const ev = JSON.parse(line.slice(6));
    if (ev.error) error = ev.error.message;
    content += ev.choices?.[0]?.delta?.content ?? '';
  }
  return { ms: performance.now() - t0, status: 200, content, error };
}

const ordinary = (url) => stream(url, {
  messages: [{ role: 'user', content: 'Tell me about the sea.' }],
  max_tokens: Number(a.tokens), temperature: 0, logit_bias: NO_EOG,
});
const costly = (url, grammar, signal) => stream(url, {
  messages: [{ role: 'user', content: 'Say anything.' }], max_tokens: 200, temperature: 0, grammar,
}, signal);

async function timeAlone(url) {
  await ordinary(url);  // warm-up
  const ms = [];
  for (let i = 0; i < runs; i++) ms.push((await ordinary(url)).ms);
  return ms;
}

async function besideUpFront(url) {
  const ms = [];
  const seen = new Map();
  for (let i = 0; i < runs; i++) {
    const side = costly(url, COSTLY).then((r) => {
      const key = `${r.status} ${(r.error ?? '').slice(0, 60)}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    });
    ms.push((await ordinary(url)).ms);
    await side;
  }
  return { ms, seen };
}

async function besideMidReply(url) {
  const ctl = new AbortController();
  let ended = null;
  const t0 = performance.now();
  const run = costly(url, COSTLY_MID, ctl.signal).then((r) => { ended = { ...r, at: performance.now() - t0 }; },
    (e) => { ended = { error: String(e), at: performance.now() - t0 }; });
  await sleep(1000);  // past its cheap prefix, into the costly masks
  const ms = [];
  let whileRunning = 0;
  for (let i = 0; i < runs; i++) {
    ms.push((await ordinary(url)).ms);
    if (ended === null) whileRunning += 1;
  }
  await run;
  return { ms, whileRunning, ended };
}

const server = a.url ? { url: a.url, stop: async () => {} } : await startServer();
try {
  const alone = await timeAlone(server.url);
  const up = await besideUpFront(server.url);
  const mid = await besideMidReply(server.url);
  const base = median(alone);
  const fmt = (xs) => xs.map((x) => x.toFixed(0)).join(' ');
  console.log(`ordinary ${a.tokens}-token stream alone: median ${base.toFixed(0)} ms (${fmt(alone)})`);
  console.log(`beside the costly grammar (up front): median ${median(up.ms).toFixed(0)} ms (${fmt(up.ms)}), ` +
              `ratio ${(median(up.ms) / base).toFixed(2)}x; costly replies: ` +
              [...up.seen].map(([k, n]) => `${n} x [${k}]`).join(', '));
  console.log(`beside the costly grammar (mid-reply): median ${median(mid.ms).toFixed(0)} ms (${fmt(mid.ms)}), ` +
              `ratio ${(median(mid.ms) / base).toFixed(2)}x; ${mid.whileRunning} of ${runs} finished while it ran; ` +
              `it ended after ${(mid.ended.at / 1000).toFixed(1)} s: status ${mid.ended.status}, ` +
              `error "${mid.ended.error}", content ${JSON.stringify((mid.ended.content ?? '').slice(0, 40))}`);
} finally {
  await server.stop();
}
