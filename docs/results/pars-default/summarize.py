#!/usr/bin/env python3
"""Tables of docs/results/pars.md (section "2026-11-24: pipelined ParS by default")
from a parsstudy throughput folder:
    python3 summarize.py <out>/pars-throughput [link_kbps]
pars is the client as by default, pars-nopipe the previous default
(--pars-pipeline=false); ratios are within one repetition."""
import collections, json, os, statistics, sys

d = sys.argv[1]
link = float(sys.argv[2]) if len(sys.argv) > 2 else 10000.0
doc = json.load(open(os.path.join(d, 'results.json')))
print('command:', doc.get('command'))
cell = collections.defaultdict(dict)  # (client, n) -> rep -> metrics
for r in doc['runs']:
    if r.get('metrics'):
        cell[(r['cell']['client'], int(r['cell']['connections']))][r['rep']] = r['metrics']
    elif r.get('error'):
        print('error:', r['cell'], r['rep'], r['error'])
ns = sorted({n for (_, n) in cell})
clients = list(dict.fromkeys(c for (c, _) in cell))

def fmt(v):
    return f'{statistics.median(v)/1000:.2f} ({min(v)/1000:.2f}–{max(v)/1000:.2f}) = {statistics.median(v)/link:.0%}'

print('\n| client | ' + ' | '.join(f'N={n}' for n in ns) + ' |')
print('|---|' + '---|' * len(ns))
for c in clients:
    row = []
    for n in ns:
        v = [m['throughput_kbps'] for m in cell.get((c, n), {}).values()]
        row.append(fmt(v) if v else '—')
    print(f'| {c} | ' + ' | '.join(row) + ' |')

for n in ns:
    p, q = cell.get(('pars', n), {}), cell.get(('pars-nopipe', n), {})
    r = [p[k]['throughput_kbps'] / q[k]['throughput_kbps'] for k in sorted(p) if k in q]
    if r:
        print(f'\nN={n}: pars ÷ pars-nopipe per repetition: ' + ', '.join(f'{x:.2f}' for x in r) +
              f'; median {statistics.median(r):.2f}; ahead in {sum(x > 1 for x in r)} of {len(r)}')

n = max(ns)
aria = next((c for c in clients if c.startswith('aria2c')), 'aria2c')
bulk = next((c for c in clients if c.startswith('tcp-bulk')), 'tcp-bulk')
cols = ['pars', 'pars-nopipe', aria, bulk]
reps = sorted(cell.get(('pars', n), {}))
print(f'\nPer repetition at N={n} (kbit/s):\n')
print('| rep | pars | pars-nopipe | aria2c | tcp-bulk | pars ÷ nopipe | pars ÷ aria2c | pars ÷ bulk |')
print('|---|---|---|---|---|---|---|---|')
for k in reps:
    v = [cell.get((c, n), {}).get(k, {}).get('throughput_kbps') for c in cols]
    ratio = lambda a, b: f'{a/b:.2f}' if a and b else '—'
    print(f'| {k} | ' + ' | '.join(f'{x:.0f}' if x else '—' for x in v) +
          f' | {ratio(v[0], v[1])} | {ratio(v[0], v[2])} | {ratio(v[0], v[3])} |')
med = lambda c: statistics.median([m['throughput_kbps'] for m in cell.get((c, n), {}).values()] or [float('nan')])
print(f'| median (share) | ' + ' | '.join(f'{med(c)/1000:.2f} ({med(c)/link:.0%})' for c in cols) + ' | | | |')

keys = ['idle_share', 'gap_ms_median', 'gap_request_ms_total', 'gap_nowork_ms_total', 'range_kb_median', 'wire_kbps', 'retries', 'wasted']
print(f'\nConnections at N={n}, medians over repetitions:\n')
print('| client | ' + ' | '.join(keys) + ' |')
print('|---|' + '---|' * len(keys))
for c in ('pars', 'pars-nopipe'):
    xs = list(cell.get((c, n), {}).values())
    if xs:
        print(f'| {c} | ' + ' | '.join(f'{statistics.median([m[k] for m in xs if k in m]):g}' if any(k in m for m in xs) else '—' for k in keys) + ' |')
