// Runs the headless player, `streambed play --json`, beside the browser: the browser
// tests and scripts compare its latency with the page's (web/test/headless-latency,
// web/scripts/headless-latency.mjs).

import { spawn } from 'node:child_process';
import { streambedBin } from './server.mjs';

/**
 * Runs `streambed play URL --json --duration SECONDS s --sample-interval 500ms` and
 * resolves to { rep, code, stderr, command }: its JSON report, exit code, stderr and
 * command line. Rejects when no JSON report comes out.
 */
export function headlessPlay(url, { seconds, extra = [] }) {
  const args = ['play', url, '--json', '--quiet', '--duration', `${seconds}s`, '--sample-interval', '500ms', ...extra];
  const command = `streambed ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    const child = spawn(streambedBin(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      try {
        resolve({ rep: JSON.parse(out), code, stderr: err, command });
      } catch (e) {
        reject(new Error(`${command} exited ${code}, no JSON report (${e.message}):\n${err}\n${out.slice(0, 2000)}`));
      }
    });
  });
}

/** The values after the first quarter (start-up and steering), as latency.mjs leaves out. */
export function steady(values) {
  return values.slice(Math.floor(values.length / 4)).filter((x) => typeof x === 'number' && Number.isFinite(x));
}

/** The headless report's latency samples, seconds. */
export function headlessLatencies(rep) {
  return (rep.samples ?? []).map((s) => (s.latency_ms == null ? null : s.latency_ms / 1000));
}

/** The low-latency paths both players have, for a channel on a server at baseURL. */
export function lowLatencyPaths(baseURL, channel) {
  return [
    { name: 'WebSocket push', player: 'wspush', url: `${baseURL.replace(/^http/, 'ws')}/ws/${channel}`, source: 'push-rule' },
    { name: 'LL-DASH (dash.js)', player: 'dashjs', url: `${baseURL}/live/${channel}/manifest.mpd`, source: 'service-description' },
    // Both request the parts listed, reload the playlists blocking on the next part and
    // start PART-HOLD-BACK behind hls.js's live edge (internal/player/hls/parts.go).
    { name: 'LL-HLS (hls.js)', player: 'hlsjs', url: `${baseURL}/live/${channel}/master.m3u8`, source: 'part-hold-back' },
  ];
}
