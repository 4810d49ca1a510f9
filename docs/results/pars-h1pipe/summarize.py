#!/usr/bin/env python3
"""Tables of docs/results/pars.md (section "2026-11-24: where the rest goes") from a
parsstudy throughput folder: python3 summarize.py <out>/pars-throughput [link_kbps]"""
import collections, csv, glob, json, os, statistics, sys

d = sys.argv[1]
link = float(sys.argv[2]) if len(sys.argv) > 2 else 10000.0
runs = json.load(open(os.path.join(d, 'results.json')))['runs']
cell = collections.defaultdict(list)  # (client, n) -> [(rep, metrics)]
for r in runs:
    if r.get('metrics'):
        cell[(r['cell']['client'], int(r['cell']['connections']))].append((r['rep'], r['metrics']))

def med(xs):
    return statistics.median(xs) if xs else float('nan')

clients = []
for (c, n) in cell:
    if c not in clients:
        clients.append(c)
ns = sorted({n for (_, n) in cell})
print('## throughput, Mbit/s: median (min-max) = share of the link')
print('| client | ' + ' | '.join(f'N={n}' for n in ns) + ' |')
print('|---|' + '---|' * len(ns))
for c in clients:
    row = []
    for n in ns:
        v = [m['throughput_kbps'] for _, m in cell.get((c, n), [])]
        row.append(f'{med(v)/1000:.2f} ({min(v)/1000:.1f}–{max(v)/1000:.1f}) = {med(v)/link:.0%}' if v else '—')
    print(f'| {c} | ' + ' | '.join(row) + ' |')

n = max(ns)
print(f'\n## per repetition at N={n}: throughput kbit/s, and ratio to pars and to tcp-bulk of the same repetition')
base = {rep: m['throughput_kbps'] for rep, m in cell.get(('pars', n), [])}
bulk = {rep: m['throughput_kbps'] for rep, m in cell.get(('tcp-bulk', n), [])}
for c in clients:
    xs = sorted(cell.get((c, n), []), key=lambda x: x[0])
    if not xs:
        continue
    print(c, '; '.join(f"rep {rep}: {m['throughput_kbps']:.0f} (×{m['throughput_kbps']/base[rep]:.2f} pars, ×{m['throughput_kbps']/bulk[rep]:.2f} bulk)" for rep, m in xs if rep in base and rep in bulk))

print(f'\n## where the connections\' time went at N={n} (medians over repetitions)')
keys = ['throughput_kbps', 'wire_kbps', 'idle_share', 'gaps', 'gap_ms_median', 'gap_ms_total', 'gap_request_ms_total', 'gap_nowork_ms_total', 'range_kb_median', 'body_kbps_median']
print('| client | ' + ' | '.join(keys) + ' |')
print('|---|' + '---|' * len(keys))
for c in clients:
    xs = [m for _, m in cell.get((c, n), [])]
    if not xs or 'idle_share' not in xs[0]:
        continue
    print(f'| {c} | ' + ' | '.join(f'{med([m[k] for m in xs if k in m]):g}' for k in keys) + ' |')

# After the first segment: bytes of the segments completed after segment 1 over the
# time from segment 1's completion to the last completion (8 s cells: no segment
# number repeats).
print(f'\n## after the first segment, N={n}: kbit/s per repetition (from the traces)')
for c in clients:
    out = []
    for f in sorted(glob.glob(os.path.join(d, 'traces', f'rep*-*-{c}-n{n}.csv'))):
        seg = collections.defaultdict(lambda: [0, 0.0])
        for r in csv.DictReader(open(f)):
            if r['done_ms'] and r['error'].lower() == 'false':
                s = seg[int(r['segment'])]
                s[0] += int(r['bytes'])
                s[1] = max(s[1], float(r['done_ms']))
        ks = sorted(seg)
        rep = int(os.path.basename(f).split('-')[0][3:])
        m = dict(cell.get((c, n), [])).get(rep)
        if len(ks) < 2 or m is None or m['segments'] > len(ks):
            continue  # the cell went round the asset: segment numbers repeat
        t1 = seg[ks[0]][1]
        b = sum(seg[k][0] for k in ks[1:])
        t = max(seg[k][1] for k in ks[1:])
        out.append(f"{os.path.basename(f).split('-')[0]}: {b*8/(t-t1):.0f} (segment 1 done at {t1:.0f} ms)")
    if out:
        print(c, '; '.join(out))

# The connections' idle time split by cause, from the traces: before the first byte
# (dial, index, first request), after their range of segment 1 (the first segment is
# fetched alone: waiting for its slowest range and the player's next request; in
# cells that go round the asset, segment 1's second visit counts here too), the
# request round trip of later ranges, waiting for work (the pipeline bound, Ahead),
# and after the last body (the end of the cell). Shares of N x the cell's duration.
print(f'\n## idle time by cause at N={n}, share of N x cell time, median over repetitions (from the traces)')
print('| client | before first byte | after segment 1 | request round trips | no work queued | after last body | total idle |')
print('|---|---|---|---|---|---|---|')
for c in clients:
    rows = []
    for f in sorted(glob.glob(os.path.join(d, 'traces', f'rep*-*-{c}-n{n}.csv'))):
        rep = int(os.path.basename(f).split('-')[0][3:])
        m = dict(cell.get((c, n), []))[rep] if rep in dict(cell.get((c, n), [])) else None
        tr = [r for r in csv.DictReader(open(f)) if r['first_byte_ms'] and r['done_ms']]
        if not tr or m is None:
            continue
        lanes = collections.defaultdict(list)
        for r in tr:
            lanes[r['lane']].append(r)
        end = max(float(r['done_ms']) for r in tr)
        total = n * end
        pre = seg1 = rtt = nowork = post = 0.0
        for us in lanes.values():
            us.sort(key=lambda r: float(r['first_byte_ms']))
            pre += float(us[0]['first_byte_ms'])
            post += end - float(us[-1]['done_ms'])
            for a, b in zip(us, us[1:]):
                gap = max(float(b['first_byte_ms']) - float(a['done_ms']), 0)
                if a['segment'] == '1':
                    seg1 += gap
                    continue
                w = min(max(float(b['picked_ms']) - float(a['done_ms']), 0), gap)
                nowork += w
                rtt += gap - w
        rows.append([pre / total, seg1 / total, rtt / total, nowork / total, post / total, (pre + seg1 + rtt + nowork + post) / total])
    if rows:
        print(f'| {c} | ' + ' | '.join(f'{med([r[i] for r in rows]):.1%}' for i in range(6)) + ' |')
