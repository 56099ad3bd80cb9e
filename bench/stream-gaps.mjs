#!/usr/bin/env node
// Issue #30's goal: while three greedy streams decode, a long prompt arrives. Reports the streams'
// median and longest gap between two tokens, and the long prompt's time to first token beside them and
// alone (interleaved rounds, medians). Starts its own server per setting so settings never share a run.
//
//   node bench/stream-gaps.mjs --bin build/ember --model MODEL [--rounds 3] [--prompt-tokens 4000]
//        [--settings "step-ms=0;step-ms=150"] [--threads 2]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({ options: {
  bin: { type: 'string', default: 'build/ember' }, model: { type: 'string' },
  rounds: { type: 'string', default: '3' }, 'prompt-tokens': { type: 'string', default: '4000' },
  settings: { type: 'string', default: 'step-ms=0;step-ms=150' }, threads: { type: 'string', default: '2' },
  port: { type: 'string', default: '18931' }, streams: { type: 'string', default: '3' },
  'stream-tokens': { type: 'string', default: '400' } } });
if (!a.model) { console.error('--model MODEL is required'); process.exit(2); }
const port = Number(a.port), base = `http://127.0.0.1:${port}`;
const median = (v) => {
  const s = [...v].sort((x, y) => x - y);
  if (!s.length) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Common English words, about one token each; each call orders them differently (the prompt cache is
// off anyway, so nothing is served from an earlier call).
let salt = 0;
const vocab = ('river stone quiet lamp orbit maple signal copper meadow falcon garden winter paper ' +
  'window silver harbor forest candle market thunder valley mirror bridge pocket').split(' ');
function text(words) {
  const out = [];
  salt += 1;
  for (let i = 0; i < words; i++) out.push(vocab[(i * 7 + salt * 13 + (i >> 3) + (i >> 6)) % vocab.length]);
  return out.join(' ');
}

async function startServer(flags) {
  const args = ['serve', a.model, '--port', String(port), '--parallel', '4', '--threads', a.threads,
    '--no-ssd-cache', '--prompt-cache-bytes', '0', ...flags];
  const p = spawn(a.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(`${base}/health`)).ok) return p; } catch {}
    if (p.exitCode !== null) throw new Error(`server exited: ${err}`);
    await sleep(100);
  }
  p.kill('SIGKILL');
  throw new Error('server did not start within 60 s');
}

// Streams completion tokens; returns the arrival times (ms) of each token event.
async function stream(prompt, maxTokens) {
  const res = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, stream: true }) });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const times = [];
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (ev.startsWith('data: {') && ev.includes('"text"')) times.push(performance.now());
    }
  }
  return times;
}

async function longAlone() {
  const t0 = performance.now();
  const t = await stream(text(Math.round(Number(a['prompt-tokens']) / 1.083)), 1);  // ~1.08 tokens a word
  return t.length ? t[0] - t0 : NaN;
}

async function longBesideStreams() {
  const n = Number(a.streams);
  const streams = Array.from({ length: n }, () => stream(text(40), Number(a['stream-tokens'])));
  await sleep(2500);  // the streams are decoding
  const t0 = performance.now();
  const ttft = await longAlone();
  const t1 = performance.now();
  const all = await Promise.all(streams);
  const gaps = [], during = [];
  for (const times of all) {
    for (let i = 1; i < times.length; i++) {
      const g = times[i] - times[i - 1];
      gaps.push(g);
      if (times[i] >= t0 && times[i - 1] <= t1 + 1) during.push(g);
    }
  }
  return { ttft, median: median(gaps), longest: Math.max(...gaps), duringMedian: median(during) };
}

const settings = a.settings.split(';').filter(Boolean);
const rows = Object.fromEntries(settings.map((s) => [s, { alone: [], beside: [], median: [], longest: [], during: [] }]));
for (let r = 0; r < Number(a.rounds); r++) {
  for (const s of settings) {
    const flags = s.split(',').flatMap((kv) => { const [k, v] = kv.split('='); return [`--${k}`, v]; });
    const srv = await startServer(flags);
    try {
      await longAlone();  // warm-up: pages, the cost model's first steps
      const alone = await longAlone();
      const b = await longBesideStreams();
      const row = rows[s];
      row.alone.push(alone); row.beside.push(b.ttft); row.median.push(b.median);
      row.longest.push(b.longest); row.during.push(b.duringMedian);
      console.error(`round ${r + 1} ${s}: alone ${alone.toFixed(0)} ms, beside ${b.ttft.toFixed(0)} ms, ` +
        `gaps median ${b.median.toFixed(0)} ms, longest ${b.longest.toFixed(0)} ms, median while prefilling ${b.duringMedian.toFixed(0)} ms`);
    } finally {
      srv.kill('SIGTERM');
      await new Promise((r2) => srv.once('exit', r2));
    }
  }
}
// Ratios are taken per round (each round's alone and beside runs are on one server, minutes apart),
// then the median over rounds: the machine's speed drifts between rounds more than within one.
console.log(`| setting | long TTFT alone | beside ${a.streams} streams | ratio (median of rounds) | streams' median gap | longest gap | longest / median gap |`);
console.log('|---|---|---|---|---|---|---|');
for (const s of settings) {
  const r = rows[s];
  const ratio = median(r.beside.map((b, i) => b / r.alone[i]));
  const spread = median(r.longest.map((l, i) => l / r.median[i]));
  console.log(`| ${s} | ${median(r.alone).toFixed(0)} ms | ${median(r.beside).toFixed(0)} ms | ${ratio.toFixed(2)} | ` +
    `${median(r.median).toFixed(0)} ms | ${median(r.longest).toFixed(0)} ms | ${spread.toFixed(1)} |`);
}
