// The SSD cache directory is private to one user and one server (docs/coldtier.md "Directory safety"):
// a directory others could write to, or another user's, is refused with a warning and the server goes
// on with the RAM tier; a second server on the same directory says who holds it and goes on without it;
// what ember writes there is 0600/0700; `ember cache` refuses what a server refuses; a damaged
// weights-fingerprint memo cannot stop `ember serve`.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync,
  writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { emberBin, makeTinyModel, postJson, startServer, stats } from './harness.mjs';

let model;
let scratch;
before(async () => {
  model = await makeTinyModel();
  scratch = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-cachedir-'));
});
after(() => {
  model?.remove();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

let dirs = 0;
const freshDir = () => path.join(scratch, `c${dirs++}`);
const request = {
  model: 'm',
  messages: [{ role: 'user', content: 'Where does a prompt cache keep its files, and who may read them? '.repeat(3) }],
  max_tokens: 4,
  temperature: 0,
};
const serveArgs = (dir) => ['--ssd-cache', dir, '--ssd-demote-idle', '0'];
// A hang (e.g. opening a FIFO) fails as a timeout instead of stalling the suite.
const cache = (...args) => spawnSync(emberBin, ['cache', ...args], { encoding: 'utf8', timeout: 30000 });

// Serves one request and checks which tiers the server reports.
async function servesWith(server, { ssd }) {
  const r = await postJson(`${server.url}/v1/chat/completions`, request);
  assert.equal(r.status, 200, r.text);
  const s = await stats(server.url);
  assert.ok(s.cache.tiers.ram, JSON.stringify(s.cache.tiers));
  assert.equal(s.cache.tiers.ssd !== undefined, ssd, JSON.stringify(s.cache.tiers));
}

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    out.push(p);
    if (lstatSync(p).isDirectory()) walk(p, out);
  }
  return out;
}

test('a cache directory others may write to is refused with the fix; the RAM tier serves', async () => {
  const dir = freshDir();
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  const server = await startServer(serveArgs(dir), { model: model.path });
  try {
    assert.match(server.stderr(), /warning: ssd cache disabled: .* is writable by group or others \(mode 0777\)/);
    assert.ok(server.stderr().includes(`run \`chmod 700 ${dir}\``), server.stderr());
    assert.match(server.stderr(), /serving with the RAM tier only/);
    await servesWith(server, { ssd: false });
    assert.deepEqual(readdirSync(dir), []);  // nothing read or written there, not even the memo
  } finally {
    assert.equal((await server.stop()).code, 0);
  }
});

test('a bad --ssd-cache-bytes is an error even when the directory is refused', () => {
  const dir = freshDir();
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  const r = spawnSync(emberBin, ['serve', model.path, '--port', '0', ...serveArgs(dir), '--ssd-cache-bytes', '12zz'],
    { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 2, `${r.error} ${r.stderr}`);
  assert.match(r.stderr, /bad byte size unit in '12zz'/);
});

test("another user's cache directory is refused; the RAM tier serves", async () => {
  // As root, give a directory to "nobody"; as anyone else, "/" is someone else's (root's) already.
  let dir = '/';
  if (process.getuid() === 0) {
    dir = freshDir();
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 65534, 65534);
  }
  const server = await startServer(serveArgs(dir), { model: model.path });
  try {
    assert.match(server.stderr(), new RegExp(`ssd cache disabled: ${dir} is owned by uid \\d+, not by this user \\(uid ${process.getuid()}\\)`));
    await servesWith(server, { ssd: false });
  } finally {
    await server.stop();
  }
});

test('a second server on one directory names the holder and serves without the tier; the first keeps it', async () => {
  const dir = freshDir();
  const first = await startServer(serveArgs(dir), { model: model.path });
  try {
    await servesWith(first, { ssd: true });
    const second = await startServer(serveArgs(dir), { model: model.path });
    try {
      assert.match(second.stderr(), new RegExp(`is in use by another process \\(lock .* is held by pid ${first.pid}\\)`));
      assert.match(second.stderr(), /give this one its own --ssd-cache DIR/);
      await servesWith(second, { ssd: false });
    } finally {
      assert.equal((await second.stop()).code, 0);
    }
    // The first is unaffected: it still writes and flushes.
    const flush = await postJson(`${first.url}/admin/cache/flush`, {});
    assert.equal(flush.status, 200, flush.text);
    assert.ok((await stats(first.url)).cache.tiers.ssd.entries >= 1);
    // While it runs, gc leaves its directory alone and says why.
    const gc = cache('gc', '--dir', dir, '--max-bytes', '1');
    assert.equal(gc.status, 0, gc.stderr);
    assert.match(gc.stderr, new RegExp(`skipping .*: in use by a running server \\(lock .* held by pid ${first.pid}\\)`));
    assert.ok((await stats(first.url)).cache.tiers.ssd.entries >= 1);
    // Everything ember wrote is this user's alone: files 0600, directories 0700.
    const paths = walk(dir);
    assert.ok(paths.some((p) => p.endsWith('.entry')), paths.join('\n'));
    for (const p of [dir, ...paths]) {
      const st = lstatSync(p);
      assert.ok(st.isDirectory() || st.isFile(), p);
      assert.equal(st.mode & 0o777, st.isDirectory() ? 0o700 : 0o600, p);
    }
  } finally {
    assert.equal((await first.stop()).code, 0);
  }
  // Once the first is gone (its lock with it), the directory serves a new server from SSD.
  const third = await startServer(serveArgs(dir), { model: model.path });
  try {
    const r = await postJson(`${third.url}/v1/chat/completions`, request);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.usage.prompt_tokens_details.cache_tier, 'ssd');
  } finally {
    await third.stop();
  }
});

test('a corrupt weights-fingerprint memo is recomputed, not fatal', async () => {
  const dir = freshDir();
  mkdirSync(dir, { mode: 0o700 });
  const st = statSync(model.path, { bigint: true });
  const key = `${st.size} ${st.mtimeNs / 1000n}`;
  // The exact key of this model with a hash that is not hex: std::stoull threw on it and ended the process.
  writeFileSync(path.join(dir, 'weights-fingerprints'),
    `${key} zzzzzzzzzzzzzzzz ${model.path}\n\u0000\u00ff garbage\n${'9'.repeat(40)} 1 2 /x\n`);
  const server = await startServer(serveArgs(dir), { model: model.path });
  try {
    await servesWith(server, { ssd: true });
  } finally {
    await server.stop();
  }
  const memo = readFileSync(path.join(dir, 'weights-fingerprints'), 'utf8');
  assert.match(memo, new RegExp(`^${key} [0-9a-f]{16} ${model.path}\\n$`));  // healed
});

test('`ember cache` refuses what a server refuses, with the reason, and exits 1', async () => {
  const dir = freshDir();
  const server = await startServer(serveArgs(dir), { model: model.path });
  try {
    await servesWith(server, { ssd: true });
    assert.equal((await postJson(`${server.url}/admin/cache/flush`, {})).status, 200);
  } finally {
    await server.stop();
  }
  for (const args of [['ls'], ['ls', '--json'], ['verify'], ['gc']]) {
    assert.equal(cache(...args, '--dir', dir).status, 0, args.join(' '));
  }
  chmodSync(dir, 0o777);
  for (const args of [['ls'], ['ls', '--json'], ['verify'], ['verify', '--delete'], ['gc'], ['gc', '--dry-run']]) {
    const r = cache(...args, '--dir', dir);
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stdout} ${r.stderr}`);
    assert.ok(r.stderr.includes(`refused: ${dir} is writable by group or others (mode 0777)`), r.stderr);
    assert.doesNotMatch(r.stdout, /no cache directories|now holds|entries ok/);  // no summary of an unread dir
  }
  chmodSync(dir, 0o700);
  // One identity directory opened up: named, skipped, exit 1; its entries are not deleted by gc.
  const identity = readdirSync(dir).find((n) => lstatSync(path.join(dir, n)).isDirectory());
  chmodSync(path.join(dir, identity), 0o757);
  const gc = cache('gc', '--dir', dir, '--max-bytes', '1');
  assert.equal(gc.status, 1, gc.stderr);
  assert.ok(gc.stderr.includes(`${path.join(dir, identity)} is writable by group or others`), gc.stderr);
  assert.match(gc.stdout, /now holds 0 B \(not counting refused directories\)/);
  chmodSync(path.join(dir, identity), 0o700);
  assert.ok(walk(dir).some((p) => p.endsWith('.entry')));
});

test('`ember cache ls` shows a hostile identity.json as unknown instead of crashing', async () => {
  const dir = freshDir();
  mkdirSync(path.join(dir, 'llama-0123456789abcdef'), { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  for (const about of ['{"model_path": 5, "kv_dtype": []}', '[1, 2]', '"text"', '{"model_path": {"a": 1}}']) {
    writeFileSync(path.join(dir, 'llama-0123456789abcdef', 'identity.json'), about);
    const text = cache('ls', '--dir', dir);
    assert.equal(text.status, 0, `${about}: ${text.stderr}`);
    assert.match(text.stdout, /llama-0123456789abcdef\s+0 entries/);
    const json = cache('ls', '--json', '--dir', dir);
    assert.equal(json.status, 0, `${about}: ${json.stderr}`);
    assert.equal(JSON.parse(json.stdout).identities.length, 1);
  }
  // Not regular files where ember expects files: a FIFO (opening one waits for a writer: `ls` hung on
  // it before) and an oversized identity.json are not shown; a FIFO at an entry name is a bad entry.
  const id = path.join(dir, 'llama-0123456789abcdef');
  rmSync(path.join(id, 'identity.json'));
  assert.equal(spawnSync('mkfifo', [path.join(id, 'identity.json')]).status, 0);
  mkdirSync(path.join(id, '00000000000000aa'), { mode: 0o700 });
  assert.equal(spawnSync('mkfifo', [path.join(id, '00000000000000aa', '00000000000000bb.entry')]).status, 0);
  const ls = cache('ls', '--entries', '--dir', dir);
  assert.equal(ls.status, 0, `${ls.error} ${ls.stderr}`);
  assert.match(ls.stdout, /llama-0123456789abcdef\s+1 entries/);
  const verify = cache('verify', '--dir', dir);
  assert.equal(verify.status, 1, `${verify.error} ${verify.stderr}`);
  assert.match(verify.stdout, /not a regular file/);
  assert.match(verify.stdout, /0 entries ok, 1 bad/);
  const gc = cache('gc', '--dir', dir);
  assert.equal(gc.status, 0, `${gc.error} ${gc.stderr}`);
  assert.match(gc.stdout, /delete .*00000000000000bb\.entry \(corrupt header\)/);
  rmSync(path.join(id, 'identity.json'));
  writeFileSync(path.join(id, 'identity.json'), `{"model_path": "${'x'.repeat(1 << 20)}"}`);
  const big = cache('ls', '--dir', dir);
  assert.equal(big.status, 0, big.stderr);
  assert.doesNotMatch(big.stdout, /xxxx/);
});
