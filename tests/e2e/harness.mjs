// Starts `ember serve --fake` (or `ember serve MODEL`) on an ephemeral loopback port for one test file
// and stops it afterwards. The binary is $EMBER_BIN, else <repo>/build/ember. The fake (no model) is for
// the HTTP stack only; a test about the prompt cache serves a model from makeTinyModel().
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const emberBin = process.env.EMBER_BIN ?? path.resolve(here, '../../build/ember');

// `fake: false` without a model serves what the args (or a scan) name; `env` adds environment variables.
export async function startServer(extraArgs = [], { model = null, fake = true, env = {} } = {}) {
  const target = model ? [model] : fake ? ['--fake'] : [];
  const proc = spawn(emberBin, ['serve', ...target, '--port', '0', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ember did not start: ${stderr}`)), 60000);
    proc.stdout.on('data', (d) => {
      stdout += d;
      const m = stdout.match(/on (http:\/\/[\d.]+:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`ember exited with ${code}: ${stderr}`)));
  });
  // Bounded, and a failure: a server that never turns healthy must not let the test go on (or hang).
  let healthy = false;
  for (let i = 0; i < 200 && !healthy; i++) {
    healthy = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) }).then((r) => r.ok, () => false);
    if (!healthy) await new Promise((r) => setTimeout(r, 50));
  }
  if (!healthy) {
    proc.kill('SIGKILL');
    throw new Error(`ember at ${url} never answered /health with 200: ${stderr}`);
  }
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    url,
    pid: proc.pid,
    stderr: () => stderr,
    rssKb: () => Number(readFileSync(`/proc/${proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]),
    // SIGTERM, then SIGKILL if it has not drained within `graceMs`.
    async stop(graceMs = 15000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
}

export async function stats(url) {
  return (await fetch(`${url}/stats`)).json();
}

// A tiny random-weight model with the real Llama 3 tokenizer and chat template (`ember gen-model`): a few
// seconds to write, milliseconds per token. `arch`, `tokenizer` and `extra` (more gen-model flags) pick
// another family, e.g. the qwen35 hybrid. Returns {path, dir, remove()}.
export async function makeTinyModel({ layers = 2, embd = 64, heads = 2, ff = 128, ctx = 2048, seed = 7,
                                      arch = 'llama', tokenizer = 'llama3', extra = [] } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ember-e2e-model-'));
  const file = path.join(dir, `tiny-${arch}.gguf`);
  const args = ['gen-model', '--out', file, '--arch', arch, '--tokenizer', tokenizer, '--n-layer', String(layers),
                '--n-embd', String(embd), '--n-head', String(heads), '--n-head-kv', String(heads),
                '--n-ff', String(ff), '--ctx', String(ctx), '--seed', String(seed), ...extra];
  await new Promise((resolve, reject) =>
    execFile(emberBin, args, { timeout: 120000 }, (err, _out, errText) =>
      err ? reject(new Error(`gen-model failed: ${err.message} ${errText}`)) : resolve()));
  return { path: file, dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

// Whether this ember's `serve` takes a flag (the SSD tier's flags arrive in a later build).
export function serveTakes(flag) {
  try {
    return execFileSync(emberBin, ['serve', '--help'], { encoding: 'utf8' }).includes(flag);
  } catch {
    return false;
  }
}
