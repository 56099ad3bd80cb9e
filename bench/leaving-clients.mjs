#!/usr/bin/env node
// Issue #29's "clients that leave" goal, measured: N non-streaming chat completions with a long
// max_tokens, each client closing its socket after --leave-after ms; then /metrics is polled until no
// generation runs or waits, and the time from the last close to idle lanes is printed. Bounded.
//   node bench/leaving-clients.mjs --port 8080 [--clients 8] [--leave-after 1000]
import http from 'node:http';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    port: { type: 'string', default: '8080' },
    clients: { type: 'string', default: '8' },
    'leave-after': { type: 'string', default: '1000' },
    'max-tokens': { type: 'string', default: '4000' },
  },
});
const port = Number(a.port);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function get(path) {
  return new Promise((resolve, reject) => {
    const req = http.get({ port, host: '127.0.0.1', path, agent: false, timeout: 5000 }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

async function busy() {
  const m = await get('/metrics');
  const value = (name) => Number((m.match(new RegExp(`^${name} (\\S+)$`, 'm')) || [])[1]);
  return { running: value('ember_queue_running'), waiting: value('ember_queue_waiting') };
}

function leavingClient(i) {
  const body = JSON.stringify({
    model: 'any', max_tokens: Number(a['max-tokens']), temperature: 0.8, seed: i,
    messages: [{ role: 'user', content: `Write a very long story about lighthouse number ${i}.` }],
  });
  const req = http.request({ port, host: '127.0.0.1', path: '/v1/chat/completions', method: 'POST', agent: false,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
  req.on('error', () => {});
  req.end(body);
  return new Promise((resolve) => setTimeout(() => { req.destroy(); resolve(); }, Number(a['leave-after'])));
}

const clients = Number(a.clients);
const started = [];
for (let i = 0; i < clients; i++) started.push(leavingClient(i));
await sleep(Math.min(500, Number(a['leave-after']) / 2));
const during = await busy();
await Promise.all(started);
const closedAt = performance.now();
let idleMs = NaN;
while (performance.now() - closedAt < 30000) {
  const b = await busy();
  if (b.running === 0 && b.waiting === 0) { idleMs = performance.now() - closedAt; break; }
  await sleep(20);
}
console.log(JSON.stringify({ clients, leave_after_ms: Number(a['leave-after']), busy_before_leaving: during,
  idle_after_last_close_ms: Number.isNaN(idleMs) ? 'not within 30 s' : idleMs.toFixed(0) }, null, 1));
