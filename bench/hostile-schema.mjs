#!/usr/bin/env node
// Issue #29's schema goal, measured against a running `ember serve`: the server's CPU time (utime +
// stime from /proc/PID/stat, 10 ms ticks) spent answering hostile JSON schemas on every route that
// compiles one, and how soon a client that leaves mid-compile stops costing CPU. Bounded: each request
// times out after 30 s.
//   node bench/hostile-schema.mjs --port 8080 --pid $(pgrep -f 'ember serve')
import http from 'node:http';
import fs from 'node:fs';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({ options: { port: { type: 'string', default: '8080' }, pid: { type: 'string' } } });
const port = Number(a.port);
if (!a.pid) throw new Error('--pid is required (the server process, for its CPU time)');
const cpuSeconds = () => {
  const f = fs.readFileSync(`/proc/${a.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;  // utime, stime (fields 14, 15)
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function post(path, body, { abortAfterMs } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.request({ port, host: '127.0.0.1', path, method: 'POST', agent: false, timeout: 30000,
      headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0, text }));
    });
    req.on('error', (e) => resolve({ status: 0, ms: performance.now() - t0, text: String(e) }));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(JSON.stringify(body));
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(new Error('left')), abortAfterMs);
  });
}

const props = (n, each = { type: 'string' }) =>
  ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, each])) });
const msg = [{ role: 'user', content: 'hi' }];
const routes = {
  'chat response_format': (s) => ['/v1/chat/completions', { messages: msg, max_tokens: 4, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: s } } }],
  'messages tool_choice any': (s) => ['/v1/messages', { messages: msg, max_tokens: 4, tools: [{ name: 'f', input_schema: s }], tool_choice: { type: 'any' } }],
  'responses text.format': (s) => ['/v1/responses', { input: 'hi', max_output_tokens: 4, text: { format: { type: 'json_schema', name: 'x', schema: s } } }],
  'completion json_schema': (s) => ['/completion', { prompt: 'hi', n_predict: 4, json_schema: s }],
};

console.log('| schema | route | bytes | status | wall ms | server CPU s |');
console.log('|---|---|---|---|---|---|');
for (const [name, schema] of [['20,000 properties', props(20000)], ['8,000 properties', props(8000)],
                              ['8,000 anyOf properties', props(8000, { anyOf: [{ type: 'string' }, { type: 'integer' }] })]]) {
  for (const [route, make] of Object.entries(routes)) {
    const [path, body] = make(schema);
    const c0 = cpuSeconds();
    const r = await post(path, body);
    await sleep(50);  // let the reply's last tick land
    const cpu = cpuSeconds() - c0;
    const why = r.status === 200 ? '' : ` ${(JSON.parse(r.text || '{}').error?.message ?? r.text).slice(0, 70)}`;
    console.log(`| ${name} | ${route} | ${JSON.stringify(body).length} | ${r.status}${why} | ${r.ms.toFixed(0)} | ${cpu.toFixed(2)} |`);
  }
}

// A client that leaves 50 ms into the compile of the costliest shape there is (a oneOf whose every pair
// of branches is compared): the server's CPU in the second after it left.
const oneOf = { oneOf: Array.from({ length: 6000 }, (_, i) => ({ type: 'object', properties: { k: { const: i }, [`x${i}`]: { type: 'string' } }, required: ['k'] })) };
const [path, body] = routes['chat response_format'](oneOf);
const c0 = cpuSeconds();
const left = post(path, body, { abortAfterMs: 50 });
await left;
const cLeft = cpuSeconds();
await sleep(1000);
const cAfter = cpuSeconds();
console.log(`\nclient left after 50 ms (oneOf of 6,000 branches, ${JSON.stringify(body).length} bytes): ` +
            `server CPU ${(cLeft - c0).toFixed(2)} s until it left, ${(cAfter - cLeft).toFixed(2)} s in the next second`);
