// A stand-in origin for developing the page without the Go server: FFmpeg makes a
// small VOD asset and a real-time live channel (DASH + HLS from FFmpeg's dash muxer),
// and a node http server serves them with /api/streams, /time and web/dist.
// Run by hand: node web/devtest/stub.mjs [port]   (Ctrl-C stops it)

import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SEGMENT_MS = 2000;

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.mpd': 'application/dash+xml',
  '.m3u8': 'application/vnd.apple.mpegurl',
  '.m4s': 'video/iso.segment',
  '.mp4': 'video/mp4',
};

const ENCODE = [
  '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25',
  '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
];
const X264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-profile:v', 'main', '-pix_fmt', 'yuv420p',
  '-g', '50', '-keyint_min', '50', '-sc_threshold', '0'];
const DASH = ['-c:a', 'aac', '-b:a', '96k', '-ac', '2', '-f', 'dash', '-seg_duration', String(SEGMENT_MS / 1000),
  '-use_template', '1', '-use_timeline', '0', '-hls_playlist', '1',
  '-adaptation_sets', 'id=0,streams=v id=1,streams=a'];

function makeVod(dir) {
  const r = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...ENCODE, '-t', '40',
    '-map', '0:v', '-map', '0:v', '-map', '1:a', ...X264,
    '-b:v:0', '800k', '-s:v:0', '640x360', '-b:v:1', '300k', '-s:v:1', '320x180',
    ...DASH, join(dir, 'manifest.mpd')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`ffmpeg (VOD) failed: ${r.status}`);
}

function startLive(dir, timeURL) {
  return spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-re', ...ENCODE,
    '-map', '0:v', '-map', '1:a', ...X264, '-tune', 'zerolatency', '-b:v', '800k',
    ...DASH, '-window_size', '8', '-extra_window_size', '4', '-utc_timing_url', timeURL,
    join(dir, 'manifest.mpd')], { stdio: ['ignore', 'inherit', 'inherit'] });
}

function tracks(live) {
  const v = (id, w, h, bw) => ({ id, kind: 'video', codec: 'avc1.4d401e', bandwidth: bw, width: w, height: h, frame_rate: '25', timescale: 12800 });
  const a = { id: 'a96', kind: 'audio', codec: 'mp4a.40.2', bandwidth: 96000, sample_rate: 48000, channels: 2, timescale: 48000 };
  return live ? [v('v360', 640, 360, 800000), a] : [v('v360', 640, 360, 800000), v('v180', 320, 180, 300000), a];
}

/** Starts the stub on 127.0.0.1:port (0 = any). Resolves once the live channel has 5 segments. */
export async function startStub({ port = 0, quiet = true } = {}) {
  if (!existsSync(join(WEB, 'dist', 'app.js'))) throw new Error('web/dist is empty: run `make web` first');
  const root = await mkdtemp(join(tmpdir(), 'streambed-stub-'));
  await mkdir(join(root, 'vod', 'demo'), { recursive: true });
  await mkdir(join(root, 'live', 'demo'), { recursive: true });
  makeVod(join(root, 'vod', 'demo'));

  const streams = [true, false].map((live) => {
    const base = `/${live ? 'live' : 'vod'}/demo`;
    return { name: 'demo', live, segment_duration_ms: SEGMENT_MS, dash: `${base}/manifest.mpd`, hls: `${base}/master.m3u8`, ws: live ? '/ws/demo' : undefined, tracks: tracks(live) };
  });
  // A stream whose manifests are missing, to show how the page reports player errors.
  streams.push({ name: 'broken', live: false, segment_duration_ms: SEGMENT_MS, dash: '/vod/broken/manifest.mpd', hls: '/vod/broken/master.m3u8', tracks: [] });

  let ready = false; // /api/streams answers 503 until the live channel has a window
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://stub');
    const p = url.pathname;
    if (!quiet) console.log(req.method, p);
    if (p === '/api/streams') {
      if (!ready) return send(res, 503, 'text/plain', 'live channel starting');
      return send(res, 200, 'application/json', JSON.stringify({ streams }));
    }
    if (p === '/time') return send(res, 200, 'text/plain', new Date().toISOString());
    let file;
    if (p.startsWith('/live/') || p.startsWith('/vod/')) file = join(root, normalize(p).replace(/^(\.\.[/\\])+/, ''));
    else file = join(WEB, 'dist', p === '/' ? 'index.html' : normalize(p).replace(/^(\.\.[/\\])+/, ''));
    try {
      const st = await stat(file);
      const ext = extname(file);
      // FFmpeg writes segments in place: do not serve one still being written.
      if (!st.isFile() || (ext === '.m4s' && Date.now() - st.mtimeMs < 150)) throw new Error('not ready');
      const headers = {
        'Content-Type': TYPES[ext] ?? 'application/octet-stream',
        'Cache-Control': ext === '.m4s' ? 'max-age=60' : 'no-store',
        'Access-Control-Allow-Origin': '*',
      };
      if (ext === '.mpd') {
        // FFmpeg suggests 2 s (one segment); the real origin suggests two segments.
        const mpd = (await readFile(file, 'utf8')).replace(/suggestedPresentationDelay="[^"]*"/, 'suggestedPresentationDelay="PT4S"');
        res.writeHead(200, { ...headers, 'Content-Length': Buffer.byteLength(mpd) });
        return res.end(mpd);
      }
      res.writeHead(200, { ...headers, 'Content-Length': st.size });
      createReadStream(file).pipe(res);
    } catch {
      send(res, 404, 'text/plain', 'not found');
    }
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  const baseURL = `http://127.0.0.1:${server.address().port}`;
  const live = startLive(join(root, 'live', 'demo'), `${baseURL}/time`);

  // Wait for five live segments (10 s), so the window is wider than the players' delay;
  // dash.js caps its live delay at the DVR window, and too short a window starves it.
  const fifth = join(root, 'live', 'demo', 'chunk-stream0-00005.m4s');
  const deadline = Date.now() + 30_000;
  while (!existsSync(fifth)) {
    if (Date.now() > deadline || live.exitCode != null) throw new Error('live ffmpeg produced no segments');
    await new Promise((r) => setTimeout(r, 200));
  }
  ready = true;
  return {
    baseURL,
    streams,
    async stop() {
      live.kill('SIGKILL');
      await new Promise((r) => server.close(r));
      await rm(root, { recursive: true, force: true });
    },
  };
}

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
  res.end(body);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const stub = await startStub({ port: Number(process.argv[2] ?? 8099), quiet: false });
  console.log(`stub origin at ${stub.baseURL}/`);
  const quit = async () => {
    await stub.stop();
    process.exit(0);
  };
  process.on('SIGINT', quit);
  process.on('SIGTERM', quit);
}
