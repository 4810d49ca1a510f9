// Unit tests of the stall evidence (web/scripts/stalls.mjs) on a hand-made run: no
// browser, no lab.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { causeOf, classify, connPorts, lateRequests, netAround, senderDuring, stallsOf } from '../scripts/stalls.mjs';

const t0 = 1_000_000;
const columns = ['t_ms', 'kind', 'path', 'queue_ms', 'connect_ms', 'wait_ms', 'body_ms', 'total_ms', 'new_conn', 'conn', 'aborted', 'bytes'];
const run = {
  t0_ms: t0,
  samples: [
    { t: 9, state: 'playing', current_time: 100 },
    { t: 9.5, state: 'playing', current_time: 100.5 },
    { t: 10, state: 'stalled', current_time: 100.7 },
    { t: 10.5, state: 'playing', current_time: 100.8 },
  ],
  waits: [{ at: 100.7, ms: 450 }, { at: 100.9, ms: 40 }],
  request_log: {
    columns,
    rows: [
      [8000, 'part', 'v720/1.3.m4s', 1, 0, 50, 20, 71, 0, 7, '', 37000], // on time
      [9200, 'part', 'v720/1.4.m4s', 1, 0, 55, 900, 956, 0, 7, '', 37000], // the late one
      [9300, 'reload', 'v720/playlist.m3u8', 1, 0, 180, 2, 183, 0, 8, '', 2000],
      [12000, 'part', 'v720/1.9.m4s', 1, 0, 55, 900, 956, 0, 7, '', 37000], // after the stall
    ],
  },
  link_drops: {
    'server>client': [[t0 + 9300, 'loss', 8080, 41000, 'AP', 1400, 5]],
    'client>server': [[t0 + 4000, 'loss', 41002, 8080, 'A', 0, 6]], // too early
  },
  client_tcp: {
    connections: [{ port: 41002, bytes_received: 2500 }, { port: 41000, bytes_received: 112000 }],
    server_sockets: {
      columns: ['ms', 'client_port', 'cwnd', 'unacked', 'pacing_kbps', 'delivery_kbps', 'bbr_bw_kbps', 'total_retrans', 'lost'],
      rows: [
        [t0 + 9100, 41000, 20, 0, 5000, 5000, 5000, 1, 0],
        [t0 + 9300, 41000, 4, 1, 40, 40, 40, 2, 0],
        [t0 + 9300, 41002, 10, 0, 6000, 6000, 6000, 0, 0],
        [t0 + 11000, 41000, 2, 0, 10, 10, 10, 2, 0], // after the part
      ],
    },
    events: [
      [t0 + 9290, 'server', 'open', 41000],
      [t0 + 9600, 'server', 'loss', 41000],
      [t0 + 9650, 'server', 'retransmit', 41000],
    ],
  },
};

test('stallsOf places the page waits of 100 ms or more in session time', () => {
  const s = stallsOf(run);
  assert.equal(s.length, 1);
  assert.equal(s[0].ms, 450);
  assert.ok(Math.abs(s[0].at - 9700) < 1, `at ${s[0].at}, want 9700 (9.5 s + 0.2 s of media)`);
});

test('stallsOf falls back to hls.js warnings, one per 1.5 s', () => {
  const s = stallsOf({ page_events: [[3000, 'bufferStalledError a'], [3500, 'bufferStalledError b'], [9000, 'bufferStalledError c'], [9500, 'other']] });
  assert.deepEqual(s.map((x) => x.at), [3000, 9000]);
});

test('lateRequests keeps the slow requests around the stall, slowest first', () => {
  const late = lateRequests(run.request_log, 9700);
  assert.deepEqual(late.map((r) => r.path), ['v720/1.4.m4s']);
});

test('netAround and causeOf name the lost packet and the recovery', () => {
  const net = netAround(run, 9700);
  assert.deepEqual(net.drops.map((d) => [d.dir, d.what, d.port]), [['down', 'response data', 41000]]);
  assert.deepEqual(net.events.map((e) => e.kind), ['loss', 'retransmit']);
  const cause = causeOf(lateRequests(run.request_log, 9700), net);
  assert.match(cause, /part v720\/1\.4\.m4s 956 ms \(body 900 ms\)/);
  assert.match(cause, /lost: response data down/);
  assert.match(cause, /server RTO ×1/);
});

test('connPorts pairs connection ids with ports by when losses hit their requests, else by bytes', () => {
  const ports = connPorts(run);
  assert.equal(ports.get(7), 41000);
  assert.equal(ports.get(8), 41002);
  // Bytes alone would pair them the other way: the drop inside conn 7's part decides.
  const misleading = { ...run, client_tcp: { ...run.client_tcp, connections: [{ port: 41002, bytes_received: 999999 }, { port: 41000, bytes_received: 10 }] } };
  assert.equal(connPorts(misleading).get(7), 41000);
  assert.equal(connPorts(misleading).get(8), 41002);
});

test('senderDuring gives the slowest sampled sender state while a response loaded', () => {
  assert.deepEqual(senderDuring(run, 41000, 9255, 10156), { pacing_kbps: 40, cwnd: 4 });
  assert.equal(senderDuring(run, 5, 0, 1), null);
});

test('classify tells a loss in the response from a slow sender after an earlier loss', () => {
  const late = lateRequests(run.request_log, 9700);
  const k = classify(run, late, connPorts(run));
  assert.equal(k.cls, 'response loss');
  assert.equal(k.port, 41000);
  assert.equal(k.pacing_kbps, 40);
  // Without the drop in the response, but with a retransmission on its connection 0.5 s
  // before it was asked for: the sender was slow after recovering a loss.
  const quiet = { ...run, link_drops: {}, client_tcp: { ...run.client_tcp, events: [[t0 + 8700, 'server', 'retransmit', 41000]] } };
  assert.equal(classify(quiet, late, connPorts(quiet)).cls, 'slow after a loss');
  const none = { ...quiet, client_tcp: { ...quiet.client_tcp, events: [] } };
  assert.equal(classify(none, late, connPorts(none)).cls, 'no loss on its connection');
  // The request itself lost on the way up.
  const up = { ...none, link_drops: { 'client>server': [[t0 + 9210, 'loss', 41000, 8080, 'AP', 300, 1]] } };
  assert.equal(classify(up, late, connPorts(up)).cls, 'request lost');
});
