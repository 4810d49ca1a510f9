// Starts the real streambed binary for the browser tests and stops it afterwards.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** $STREAMBED_BIN, resolved against the working directory; default bin/streambed in the repo. */
export function streambedBin() {
  const env = process.env.STREAMBED_BIN;
  if (!env) return resolve(REPO_ROOT, 'bin/streambed');
  return isAbsolute(env) ? env : resolve(process.cwd(), env);
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

/**
 * Runs `streambed serve --http 127.0.0.1:PORT --https "" [--assets DIR] [--channel SPEC]...`
 * (with `https`, TLS on another port) and waits until GET /api/streams answers 200.
 * Returns { baseURL, httpsURL, streams, output(), stop() }.
 * `channels` are `serve --channel` values (NAME=ASSET[,dvr=60s][,chunk=40ms]...); given,
 * they replace the demo channel, so list `demo=demo,dvr=60s` to keep it.
 */
export async function startStreambed({
  bin = streambedBin(),
  assets = process.env.STREAMBED_TEST_ASSETS,
  channels = [],
  // More `serve` flags, e.g. ['--ingest', 'studio,token=T'] for a publishing point.
  args: extraArgs = [],
  // Also serve TLS (h2, self-signed) on another free port: the result's httpsURL.
  https = false,
  // The server may package the demo asset on its first start when no assets are given.
  readyTimeoutMs = Number(process.env.STREAMBED_TEST_READY_TIMEOUT_MS) || 180_000,
} = {}) {
  if (!existsSync(bin)) {
    throw new Error(`streambed binary not found at ${bin}: build it first (make), or set STREAMBED_BIN`);
  }
  const port = await freePort();
  const tlsPort = https ? await freePort() : 0;
  const args = ['serve', '--http', `127.0.0.1:${port}`, '--https', https ? `127.0.0.1:${tlsPort}` : ''];
  if (assets) args.push('--assets', resolve(process.cwd(), assets));
  for (const c of channels) args.push('--channel', c);
  args.push(...extraArgs);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b) => {
    out += b.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = null;
  const exit = new Promise((r) => child.on('exit', (code, signal) => r((exited = { code, signal }))));
  // Never leave the server behind, even when the test process ends abruptly.
  const reap = () => exited || child.kill('SIGKILL');
  process.once('exit', reap);
  const output = () => out;
  const stop = async () => {
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(timer);
    process.removeListener('exit', reap);
  };

  const baseURL = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (exited) {
      throw new Error(`${bin} ${args.join(' ')} exited (${JSON.stringify(exited)}) before serving:\n${out}`);
    }
    try {
      const res = await fetch(`${baseURL}/api/streams`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) {
        const doc = await res.json();
        const httpsURL = https ? `https://127.0.0.1:${tlsPort}` : null;
        return { baseURL, httpsURL, streams: doc.streams ?? [], output, stop, command: `${bin} ${args.join(' ')}` };
      }
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err.message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`${baseURL}/api/streams not ready after ${readyTimeoutMs} ms (${last}):\n${out}`);
}
