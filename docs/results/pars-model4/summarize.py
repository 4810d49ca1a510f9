#!/usr/bin/env python3
"""The model part's decisions (docs/results/pars.md, "the model with BBR and CUBIC,
again"): per repetition the fixed-N throughput, best N, and for auto (samples after
slow start, the default) and autoseg (whole-segment samples) the N chosen at the end,
the N of every segment (2, 1, 2, 1 … are probes), the last probes (X2/X1 as the mode samples them and as
whole segments) and whether X2/X1 of the whole segments is within the estimator's bar
(OneFillsRatio(0.8) = 1.11; before 1cce880: 1.05).
    python3 summarize.py <out>/pars-model"""
import json, os, sys

doc = json.load(open(os.path.join(sys.argv[1], 'results.json')))
print('command:', doc.get('command'))
print('\n| rep | N=1 | N=2 | N=4 | best N | mode | final N | X2/X1 | whole X2/X1 | whole ≤ 1.11 | N per segment | at N=1 | note |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for r in doc['runs']:
    m = r['metrics']
    for mode in ('auto', 'autoseg'):
        seq = m.get(mode + '_sequence') or []
        x1, x2 = m.get(mode + '_x1_kbps'), m.get(mode + '_x2_kbps')
        w1, w2 = m.get(mode + '_whole_x1_kbps'), m.get(mode + '_whole_x2_kbps')
        rx = f'{x2/x1:.2f}' if x1 and x2 else '—'
        rw = f'{w2/w1:.2f}' if w1 and w2 else '—'
        ok = ('yes' if w2 / w1 <= 10 / 9 else 'no') if w1 and w2 else '—'
        print(f'| {r["rep"]} | {m.get("agg_x1_kbps")} | {m.get("agg_x2_kbps")} | {m.get("agg_x4_kbps")} | {m.get("best_n")} | {mode} | '
              f'{m.get(mode + "_connections")} | {rx} | {rw} | {ok} | {"".join(map(str, seq))} | {seq.count(1)}/{len(seq)} | {(m.get(mode + "_note") or "")[:100]} |')
