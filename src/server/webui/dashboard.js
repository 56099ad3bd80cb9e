// The cache dashboard: polls /stats every second and shows the cache tiers (entries, bytes, hits,
// restores), lanes, queue and token throughput as current values and live charts. Rates are deltas of
// the /stats counters between two polls. A multi-model server's /stats carries a `models` array (one
// /stats-shaped object per loaded model): the totals then add up its entries and a table lists them.
import { apiFetch, errorMessage, initKeyControls } from './common.js';
import { LineChart, formatBytes, formatNumber } from './charts.js';

const INTERVAL_MS = 1000;
const $ = (id) => document.getElementById(id);

function views(stats) {
  return Array.isArray(stats.models) && stats.models.length > 0 ? stats.models : [stats];
}

function num(v) {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
}

function sum(list, get) {
  return list.reduce((total, v) => total + num(get(v)), 0);
}

function tierOf(view, tier) {
  return view?.cache?.tiers?.[tier] ?? null;
}

// The numbers the page shows, from one /stats answer. An SSD tier that no view reports is null.
function snapshot(stats) {
  const vs = views(stats);
  const tier = (name, field) => (vs.some((v) => tierOf(v, name)) ? sum(vs, (v) => tierOf(v, name)?.[field]) : null);
  const lanes = vs.flatMap((v) => (Array.isArray(v.lanes) ? v.lanes : []));
  const tokens = (field) => (stats.tokens ? num(stats.tokens[field]) : sum(vs, (v) => v.tokens?.[field]));
  const busy = lanes.filter((l) => l.state === 'running').length;
  return {
    model: vs.map((v) => v.model).filter((m) => typeof m === 'string').join(', '),
    uptime: num(stats.uptime_s ?? Math.max(0, ...vs.map((v) => num(v.uptime_s)))),
    ram: { entries: tier('ram', 'entries'), bytes: tier('ram', 'bytes'), hits: tier('ram', 'hits'),
           misses: tier('ram', 'misses') },
    ssd: { entries: tier('ssd', 'entries'), bytes: tier('ssd', 'bytes'), hits: tier('ssd', 'hits'),
           restores: tier('ssd', 'restores') },
    lanes: { running: busy, idle: lanes.length - busy },
    queue: { waiting: sum(vs, (v) => v.queue?.waiting), running: sum(vs, (v) => v.queue?.running),
             completed: sum(vs, (v) => v.queue?.completed), rejected: sum(vs, (v) => v.queue?.rejected) },
    tokens: { prompt: tokens('prompt'), cached: tokens('cached'), generated: tokens('generated') },
  };
}

// Per second between two snapshots; 0 at the first poll or after a counter went back (a restart).
function rates(prev, cur, seconds) {
  const rate = (a, b) => (prev && seconds > 0 && b >= a ? (b - a) / seconds : 0);
  return {
    generated: rate(prev?.tokens.generated, cur.tokens.generated),
    prompt: rate(prev?.tokens.prompt, cur.tokens.prompt),
    cached: rate(prev?.tokens.cached, cur.tokens.cached),
  };
}

function duration(s) {
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${Math.floor(s % 60)} s` : `${s.toFixed(0)} s`;
}

const text = (v) => v;
// [data-metric key, label, value of (snapshot, rates), format]
const CARDS = [
  ['model', 'Model', (s) => s.model, text],
  ['uptime', 'Uptime', (s) => s.uptime, duration],
  ['ram.entries', 'RAM entries', (s) => s.ram.entries, formatNumber],
  ['ram.bytes', 'RAM bytes', (s) => s.ram.bytes, formatBytes],
  ['ram.hits', 'RAM hits', (s) => s.ram.hits, formatNumber],
  ['ram.misses', 'RAM misses', (s) => s.ram.misses, formatNumber],
  ['ssd.entries', 'SSD entries', (s) => s.ssd.entries, formatNumber],
  ['ssd.bytes', 'SSD bytes', (s) => s.ssd.bytes, formatBytes],
  ['ssd.hits', 'SSD hits', (s) => s.ssd.hits, formatNumber],
  ['ssd.restores', 'SSD restores', (s) => s.ssd.restores, formatNumber],
  ['lanes.running', 'Lanes running', (s) => s.lanes.running, formatNumber],
  ['lanes.idle', 'Lanes idle', (s) => s.lanes.idle, formatNumber],
  ['queue.waiting', 'Queue waiting', (s) => s.queue.waiting, formatNumber],
  ['queue.running', 'Queue running', (s) => s.queue.running, formatNumber],
  ['queue.completed', 'Completed', (s) => s.queue.completed, formatNumber],
  ['queue.rejected', 'Rejected (429)', (s) => s.queue.rejected, formatNumber],
  ['tokens.prompt', 'Prompt tokens', (s) => s.tokens.prompt, formatNumber],
  ['tokens.cached', 'Cached tokens', (s) => s.tokens.cached, formatNumber],
  ['tokens.generated', 'Generated tokens', (s) => s.tokens.generated, formatNumber],
  ['rate.generated', 'Generated tokens/s', (s, r) => r.generated, formatNumber],
  ['rate.prompt', 'Prompt tokens/s', (s, r) => r.prompt, formatNumber],
];

const CHARTS = [
  { title: 'Cache entries', series: ['RAM', 'SSD'], get: (s) => [s.ram.entries, s.ssd.entries] },
  { title: 'Cache bytes', series: ['RAM', 'SSD'], format: formatBytes, get: (s) => [s.ram.bytes, s.ssd.bytes] },
  { title: 'Cache hits and restores (since start)', series: ['RAM hits', 'SSD hits', 'SSD restores'],
    get: (s) => [s.ram.hits, s.ssd.hits, s.ssd.restores] },
  { title: 'Lanes and queue', series: ['lanes running', 'lanes idle', 'queue waiting'],
    get: (s) => [s.lanes.running, s.lanes.idle, s.queue.waiting] },
  { title: 'Throughput (tokens/s)', series: ['generated', 'prompt', 'cached'],
    get: (s, r) => [r.generated, r.prompt, r.cached] },
];

function buildCards() {
  return CARDS.map(([key, label, get, format]) => {
    const card = document.createElement('div');
    card.className = 'card';
    card.dataset.metric = key;
    const name = document.createElement('span');
    name.className = 'label';
    name.textContent = label;
    const value = document.createElement('span');
    value.className = 'value';
    value.textContent = '–';
    card.append(name, value);
    $('cards').append(card);
    return { value, get, format };
  });
}

function showModels(stats) {
  const list = Array.isArray(stats.models) ? stats.models : [];
  $('models').hidden = list.length === 0;
  const rows = list.map((v) => {
    const s = snapshot(v);
    const row = document.createElement('tr');
    for (const cell of [s.model, s.ram.entries, s.ram.hits, s.ssd.entries, s.ssd.restores, s.lanes.running,
                        s.queue.waiting]) {
      const td = document.createElement('td');
      td.textContent = typeof cell === 'number' ? formatNumber(cell) : (cell ?? '–');
      row.append(td);
    }
    return row;
  });
  $('models-body').replaceChildren(...rows);
}

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = !message;
}

function start() {
  initKeyControls();
  const cards = buildCards();
  const charts = CHARTS.map((c) => ({ chart: new LineChart($('charts'), c), get: c.get }));
  let prev = null;
  let prevAt = 0;
  let polls = 0;
  const poll = async () => {
    try {
      const res = await apiFetch('/stats');
      if (!res.ok) throw new Error(`/stats: ${await errorMessage(res)}`);
      const stats = await res.json();
      const now = performance.now();
      const s = snapshot(stats);
      const r = rates(prev, s, (now - prevAt) / 1000);
      prev = s;
      prevAt = now;
      for (const c of cards) {
        const v = c.get(s, r);
        c.value.textContent = v === null ? 'off' : c.format(v);
        c.value.dataset.value = v === null ? '' : String(v);
      }
      for (const c of charts) c.chart.push(c.get(s, r));
      showModels(stats);
      showError('');
      polls += 1;
      $('poll-status').dataset.polls = String(polls);
      $('poll-status').textContent = `updated ${new Date().toLocaleTimeString()} · every ${INTERVAL_MS / 1000} s`;
    } catch (e) {
      showError(String(e?.message ?? e));
      $('poll-status').textContent = 'not updating';
    }
    setTimeout(poll, INTERVAL_MS);
  };
  poll();
  window.addEventListener('resize', () => charts.forEach((c) => c.chart.draw()));
}

start();
