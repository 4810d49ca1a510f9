#!/usr/bin/env python3
"""Every probe round of the auto runs given: whole-segment X2/X1 as the estimator
pools it (bytes over time) and as the fastest probe segment at N = 2 over the fastest
at N = 1, and after slow start; to see which statistic separates BBR from CUBIC.
    python3 rounds.py <out>/pars-model ..."""
import json, os, sys

def parse(tok):
    head, v = tok.split(':')
    kbps, _, ms = v.partition('@')
    return int(head[:-1]), head[-1], float(kbps), float(ms or 1000)

print('| run | rep | round | N | whole X2/X1 (mean) | whole X2/X1 (fastest) | steady X2/X1 |')
print('|---|---|---|---|---|---|---|')
for d in sys.argv[1:]:
    doc = json.load(open(os.path.join(d, 'results.json')))
    run = os.path.basename(os.path.dirname(d.rstrip('/')))
    for r in doc['runs']:
        for mode in ('auto', 'autoseg'):
            for i, e in enumerate(r['metrics'].get(mode + '_decisions') or []):
                ps = [parse(t) for t in e['probes'] or []]
                def mean(n, k):
                    b = sum(kb * ms for (m, kk, kb, ms) in ps if m == n and kk == k)
                    t = sum(ms for (m, kk, kb, ms) in ps if m == n and kk == k)
                    return b / t if t else 0
                def best(n, k):
                    return max([kb for (m, kk, kb, ms) in ps if m == n and kk == k] or [0])
                w = mean(2, 'w') / mean(1, 'w') if mean(1, 'w') else 0
                f = best(2, 'w') / best(1, 'w') if best(1, 'w') else 0
                s = mean(2, 's') / mean(1, 's') if mean(1, 's') else 0
                print(f'| {run} {mode} | {r["rep"]} | {i + 1} | {e["n"]} | {w:.2f} | {f:.2f} | {s:.2f} |')
