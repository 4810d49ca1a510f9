#!/usr/bin/env python3
"""Start-up table of docs/results/pars.md (section "pipelined ParS by default"):
    python3 startup.py <out>/pars-startup
startup_delay_ms per content and mode: median (min–max) over repetitions, and the
per-repetition difference pars − pars-nopipe."""
import collections, json, os, statistics, sys

doc = json.load(open(os.path.join(sys.argv[1], 'results.json')))
print('command:', doc.get('command'))
cell = collections.defaultdict(dict)
for r in doc['runs']:
    if r.get('metrics'):
        cell[(r['cell']['content'], r['cell']['mode'])][r['rep']] = r['metrics']['startup_delay_ms']
    elif r.get('error'):
        print('error:', r['cell'], r['rep'], r['error'])
contents = list(dict.fromkeys(c for c, _ in cell))
modes = list(dict.fromkeys(m for _, m in cell))
print('\n| content | ' + ' | '.join(modes) + ' | pars − pars-nopipe per repetition |')
print('|---|' + '---|' * (len(modes) + 1))
for c in contents:
    row = []
    for m in modes:
        v = list(cell[(c, m)].values())
        row.append(f'{statistics.median(v):.0f} ({min(v):.0f}–{max(v):.0f})' if v else '—')
    p, q = cell.get((c, 'pars'), {}), cell.get((c, 'pars-nopipe'), {})
    diff = ', '.join(f'{p[k] - q[k]:+.0f}' for k in sorted(p) if k in q)
    print(f'| {c} | ' + ' | '.join(row) + f' | {diff} |')
