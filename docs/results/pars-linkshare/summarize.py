#!/usr/bin/env python3
"""Tables of docs/results/pars.md (section "2026-11-24: one link share for every
client") from a parsstudy throughput folder:
    python3 summarize.py <out>/pars-throughput
link_share is the one definition for every client: body bytes delivered to the
client from its start to the end of the cell's window (the budget) over link rate x
window (delivered_kbps, window_s); completed_* are the segments handed to the player
(ParS) or the files aria2c reported done, over the time to the last one (what the
tables before this section reported as throughput_kbps); tcp-bulk has no completions."""
import collections, json, os, statistics, sys

d = sys.argv[1]
doc = json.load(open(os.path.join(d, 'results.json')))
print('command:', doc.get('command'))
cell = collections.defaultdict(dict)  # client -> rep -> metrics
for r in doc['runs']:
    if r.get('metrics'):
        cell[r['cell']['client']][r['rep']] = r['metrics']
    elif r.get('error'):
        print('error:', r['cell'], r['rep'], r['error'])
clients = list(cell)

def stat(c, key, scale=1.0):
    v = [m[key] * scale for m in cell[c].values() if m.get(key) is not None]
    if not v:
        return '—'
    return f'{statistics.median(v):.3g} ({min(v):.3g}–{max(v):.3g})'

print('\n| client | link share (delivered) | delivered Mbit/s | completed share | completed Mbit/s | window s |')
print('|---|---|---|---|---|---|')
for c in clients:
    print(f'| {c} | {stat(c, "link_share", 100)}% | {stat(c, "delivered_kbps", 1e-3)} | '
          f'{stat(c, "completed_share", 100)}{"%" if stat(c, "completed_share") != "—" else ""} | '
          f'{stat(c, "completed_kbps", 1e-3)} | {stat(c, "window_s")} |')

reps = sorted({k for c in clients for k in cell[c]})
print('\nPer repetition, link share delivered (completed), %:\n')
print('| rep | ' + ' | '.join(clients) + ' | pars ÷ aria2c | pars ÷ tcp-bulk |')
print('|---|' + '---|' * (len(clients) + 2))
for k in reps:
    row = []
    for c in clients:
        m = cell[c].get(k)
        if not m:
            row.append('—')
            continue
        s = f'{100*m["link_share"]:.1f}'
        if m.get('completed_share') is not None:
            s += f' ({100*m["completed_share"]:.1f})'
        row.append(s)
    p, a, b = (cell.get(x, {}).get(k, {}).get('link_share') for x in ('pars', 'aria2c', 'tcp-bulk'))
    ratio = lambda x, y: f'{x/y:.2f}' if x and y else '—'
    print(f'| {k} | ' + ' | '.join(row) + f' | {ratio(p, a)} | {ratio(p, b)} |')
ge = sum(1 for m in cell.get('pars', {}).values() if m['link_share'] >= 0.85)
print(f'\npars at or above 85% of the link (delivered): {ge} of {len(cell.get("pars", {}))} repetitions')
