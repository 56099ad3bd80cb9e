#!/usr/bin/env node
// Issue #29's connection goal, measured: IDLE idle TCP connections plus SLOW connections that send a
// request head a byte a second, all from this one loopback client, against a running `ember serve`;
// meanwhile /health is timed (p50/p99/max over PROBES requests, each on a new connection) and one
// chat completion is run, and the server's RSS is read before and after. Bounded: it stops by itself.
//   node bench/hostile-connections.mjs --port 8080 --pid $(pgrep -f 'ember serve') [--idle 10000] [--slow 1000]
import net from 'node:net';
import http from 'node:http';
import fs from 'node:fs';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    port: { type: 'string', default: '8080' },
    pid: { type: 'string' },
    idle: { type: 'string', default: '10000' },
    slow: { type: 'string', default: '1000' },
    probes: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '20' },
  },
});
const port = Number(a.port);
const rssMb = () => {
  if (!a.pid) return NaN;
  const m = fs.readFileSync(`/proc/${a.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return m ? Number(m[1]) / 1024 : NaN;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function request(path, body) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ port, host: '127.0.0.1', path, method: body ? 'POST' : 'GET', agent: false,
      headers: body ? { 'content-type': 'application/json' } : {}, timeout: 30000 }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0, text }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

const chat = { messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 16, temperature: 0 };
const sockets = [];
let closedByServer = 0;
function open(slow) {
  const s = net.connect({ port, host: '127.0.0.1' });
  s.on('error', () => {});
  s.on('close', () => { closedByServer += 1; });
  if (slow) {
    const head = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ';
    let i = 0;
    s.on('connect', () => { s.write(head); });
    const timer = setInterval(() => { if (!s.destroyed) s.write('a'); if (++i > 120) clearInterval(timer); }, 1000);
    s.on('close', () => clearInterval(timer));
  }
  sockets.push(s);
}

const base = await request('/v1/chat/completions', chat);
const rss0 = rssMb();
const t0 = performance.now();
for (let i = 0; i < Number(a.idle); i++) { open(false); if (i % 500 === 499) await sleep(20); }
for (let i = 0; i < Number(a.slow); i++) { open(true); if (i % 500 === 499) await sleep(20); }
await sleep(1000);
const during = [];
let chatDuring = null;
const chatPromise = request('/v1/chat/completions', chat).then((r) => { chatDuring = r; });
const probes = Number(a.probes);
const gap = (Number(a.seconds) * 1000) / probes;
let failures = 0;
let rssPeak = rssMb();
for (let i = 0; i < probes; i++) {
  rssPeak = Math.max(rssPeak, rssMb());
  try {
    const r = await request('/health');
    if (r.status !== 200) failures += 1;
    during.push(r.ms);
  } catch { failures += 1; }
  await sleep(gap);
}
await chatPromise;
const rss1 = rssMb();
const open_ = sockets.filter((s) => !s.destroyed).length;
during.sort((x, y) => x - y);
const q = (p) => during[Math.min(during.length - 1, Math.floor(p * during.length))];
console.log(JSON.stringify({
  idle: Number(a.idle), slow: Number(a.slow), opened_in_s: ((performance.now() - t0) / 1000).toFixed(1),
  still_open_at_end: open_, closed_by_server: closedByServer,
  health: { n: during.length, failures, p50_ms: q(0.5)?.toFixed(2), p99_ms: q(0.99)?.toFixed(2), max_ms: during.at(-1)?.toFixed(2) },
  chat_alone_ms: base.ms.toFixed(0), chat_during_ms: chatDuring?.ms.toFixed(0), chat_status: chatDuring?.status,
  rss_mb_before: rss0.toFixed(1), rss_mb_peak: rssPeak.toFixed(1), rss_mb_after: rss1.toFixed(1),
  rss_growth_mb: (Math.max(rssPeak, rss1) - rss0).toFixed(1),
}, null, 1));
for (const s of sockets) s.destroy();
process.exit(0);
