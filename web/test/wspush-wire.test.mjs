// Unit tests of the page's WebSocket push wire code (src/wspush.ts): binary message
// parsing as docs/protocols/wspush.md specifies it, and the push URL of a stream. No
// browser or server: the module is bundled with esbuild and imported.

import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const src = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'wspush.ts');
const out = await build({ entryPoints: [src], bundle: true, format: 'esm', platform: 'neutral', write: false, logLevel: 'silent' });
const { parseFrame, pushURL } = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);

const msg = (...bytes) => new Uint8Array(bytes).buffer;

describe('wspush binary messages', () => {
  test('an init: kind 1, track byte, sequence, payload', () => {
    const f = parseFrame(msg(0x01, 3, 0, 0xaa, 0xbb));
    assert.deepEqual({ ...f, payload: [...f.payload] }, { kind: 1, start: false, end: false, track: 3, sequence: 0, payload: [0xaa, 0xbb] });
  });

  test('chunk flags: 0x10 starts a segment, 0x20 completes it', () => {
    assert.deepEqual(pick(parseFrame(msg(0x12, 0, 7, 1))), { kind: 2, start: true, end: false, sequence: 7 });
    assert.deepEqual(pick(parseFrame(msg(0x22, 1, 49, 1))), { kind: 2, start: false, end: true, sequence: 49 });
    assert.deepEqual(pick(parseFrame(msg(0x32, 1, 0, 1))), { kind: 2, start: true, end: true, sequence: 0 });
  });

  test('uvarint sequences of one, two and three bytes', () => {
    assert.equal(parseFrame(msg(0x12, 0, 127, 9)).sequence, 127);
    const two = parseFrame(msg(0x12, 0, 0xc8, 0x01, 9)); // 200
    assert.equal(two.sequence, 200);
    assert.deepEqual([...two.payload], [9]);
    assert.equal(parseFrame(msg(0x12, 0, 0x80, 0x80, 0x01)).sequence, 16384);
  });

  test('an empty payload after the sequence is allowed', () => {
    assert.equal(parseFrame(msg(0x02, 0, 1)).payload.byteLength, 0);
  });

  test('unknown kinds and flags, short and unterminated messages are errors', () => {
    assert.throws(() => parseFrame(msg(0x03, 0, 0, 1)), /unknown kind/);
    assert.throws(() => parseFrame(msg(0x00, 0, 0, 1)), /unknown kind/);
    assert.throws(() => parseFrame(msg(0x42, 0, 0, 1)), /unknown kind or flags/);
    assert.throws(() => parseFrame(msg(0x82, 0, 0, 1)), /unknown kind or flags/);
    assert.throws(() => parseFrame(msg(0x02, 0)), /2-byte message/);
    assert.throws(() => parseFrame(msg(0x02, 0, 0x80)), /bad sequence/);
  });
});

describe('push URL of a stream', () => {
  const cases = [
    ['http://127.0.0.1:8080/live/demo/manifest.mpd', 'ws://127.0.0.1:8080/ws/demo'],
    ['http://127.0.0.1:8080/live/demo/master.m3u8?nowMS=1', 'ws://127.0.0.1:8080/ws/demo'],
    ['https://origin.example/vod/clip/manifest-timeline.mpd', 'wss://origin.example/ws/vod/clip'],
    ['/ws/news', 'wss://origin.example/ws/news'],
    ['/ws/vod/clip', 'wss://origin.example/ws/vod/clip'],
    ['ws://127.0.0.1:8080/ws/demo', 'ws://127.0.0.1:8080/ws/demo'],
  ];
  for (const [url, want] of cases) {
    test(`${url} → ${want}`, () => assert.equal(pushURL(url, 'https://origin.example/?stream=x'), want));
  }
  test('a URL that names no stream is an error', () => {
    assert.throws(() => pushURL('/api/streams', 'http://h/'), /not a stream URL/);
  });
});

function pick(f) {
  return { kind: f.kind, start: f.start, end: f.end, sequence: f.sequence };
}
