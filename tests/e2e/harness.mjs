// Starts `ember serve --fake` on an ephemeral loopback port for one test file and stops it afterwards.
// The binary is $EMBER_BIN, else <repo>/build/ember.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const emberBin = process.env.EMBER_BIN ?? path.resolve(here, '../../build/ember');

export async function startServer(extraArgs = []) {
  const proc = spawn(emberBin, ['serve', '--fake', '--port', '0', ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ember did not start: ${stderr}`)), 15000);
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
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
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
