// Unit tests of the lab client's request timings (web/scripts/reqtiming.mjs): no
// browser, DevTools events replayed by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { requestKind, phases, summarise, watchTimings } from '../scripts/reqtiming.mjs';

test('requestKind names LL-HLS and DASH requests', () => {
  const base = 'http://o:8080/live/ch';
  assert.equal(requestKind(`${base}/v1/playlist.m3u8?_HLS_msn=5&_HLS_part=2`), 'reload');
  assert.equal(requestKind(`${base}/v1/playlist.m3u8`), 'playlist');
  assert.equal(requestKind(`${base}/master.m3u8`), 'playlist');
  assert.equal(requestKind(`${base}/manifest.mpd`), 'playlist');
  assert.equal(requestKind(`${base}/v1/45738673.8.m4s`), 'part');
  assert.equal(requestKind(`${base}/v1/45738673.m4s`), 'segment');
  assert.equal(requestKind(`${base}/v1/init.mp4`), 'init');
  assert.equal(requestKind('http://o:8080/time'), 'clock');
  assert.equal(requestKind('http://o:8080/api/streams'), 'other');
  assert.equal(requestKind('not a url'), 'other');
});

test('phases splits a request into queue, connect, wait and body', () => {
  // Issued at 10.000 s; Chromium's requestTime 10.020 s; connect 20–70 ms, sent at 71,
  // head at 171 ms, last byte at 10.250 s.
  const p = phases({
    kind: 'part',
    path: '/p',
    issued: 10,
    finished: 10.25,
    timing: { requestTime: 10.02, connectStart: 20, connectEnd: 70, sendStart: 71, sendEnd: 72, receiveHeadersEnd: 172 },
    reused: false,
  });
  assert.equal(p.connect, 50);
  assert.equal(p.queue, 41); // 20 + 71 − 50: waiting, not connecting
  assert.equal(p.wait, 100);
  assert.equal(p.body, 58);
  assert.equal(p.total, 250);
});

test('summarise counts new connections, slow bodies, aborts and reload gaps', () => {
  const r = (kind, path, at, o) => ({ kind, path, at, queue: 1, connect: 0, wait: 50, body: 5, total: 60, reused: true, conn: 1, ...o });
  const done = [
    r('reload', '/v/playlist.m3u8', 0),
    r('reload', '/v/playlist.m3u8', 200),
    r('reload', '/v/playlist.m3u8', 900), // 700 ms after the last: late
    r('part', '/v/1.0.m4s', 10, { reused: false, connect: 50, conn: 2 }),
    r('part', '/v/1.1.m4s', 210, { body: 450, queue: 60 }),
    r('part', '/v/1.2.m4s', 400, { aborted: 'canceled' }),
  ];
  const s = summarise(done);
  assert.equal(s.requests, 5);
  assert.deepEqual(s.aborted, { part: 1 });
  assert.equal(s.connections, 2);
  assert.equal(s.kinds.part.new_connections, 1);
  assert.equal(s.kinds.part.body_200ms, 1);
  assert.equal(s.kinds.part.queued_50ms, 1);
  assert.equal(s.reload_gaps_over_400ms, 1);
  assert.equal(s.reload_gap_ms.max, 700);
  assert.equal(s.slowest[0].path, '/v/1.1.m4s');
});

test('watchTimings follows DevTools events, failed ones as aborted', () => {
  const cdp = new EventEmitter();
  const w = watchTimings(cdp);
  const url = 'http://o/live/ch/v1/7.3.m4s';
  cdp.emit('Network.requestWillBeSent', { requestId: 'a', type: 'XHR', timestamp: 1, wallTime: 1000, request: { url } });
  cdp.emit('Network.responseReceived', {
    requestId: 'a',
    response: { status: 200, connectionReused: true, connectionId: 9, protocol: 'http/1.1', timing: { requestTime: 1, connectStart: -1, connectEnd: -1, sendStart: 1, sendEnd: 1, receiveHeadersEnd: 51 } },
  });
  cdp.emit('Network.dataReceived', { requestId: 'a', timestamp: 1.052, dataLength: 1000 });
  cdp.emit('Network.dataReceived', { requestId: 'a', timestamp: 1.12, dataLength: 500 });
  cdp.emit('Network.dataReceived', { requestId: 'a', timestamp: 1.2, dataLength: 300 });
  cdp.emit('Network.loadingFinished', { requestId: 'a', timestamp: 1.21 });
  cdp.emit('Network.requestWillBeSent', { requestId: 'b', type: 'XHR', timestamp: 1.1, wallTime: 1000.1, request: { url: 'http://o/live/ch/v1/playlist.m3u8?_HLS_msn=7' } });
  cdp.emit('Network.loadingFailed', { requestId: 'b', timestamp: 1.2, canceled: true });
  cdp.emit('Network.requestWillBeSent', { requestId: 'c', type: 'Document', timestamp: 1, request: { url } });
  const s = w.result();
  assert.equal(s.requests, 1);
  assert.deepEqual(s.aborted, { reload: 1 });
  assert.equal(s.kinds.part.wait_ms.median, 50);
  const log = w.log(1000 * 1000);
  assert.equal(log.rows.length, 2);
  assert.deepEqual(log.rows[0].slice(0, 3), [0, 'part', 'v1/7.3.m4s']);
  assert.equal(log.rows[1][10], 'canceled');
  // First body bytes 52 ms after asking; 1000 by 100 ms, 1500 by 150 ms, 1800 in all.
  assert.deepEqual(log.rows[0].slice(11), [52, 1000, 1500, 1800]);
});
