#!/usr/bin/env python3
"""Per auto run of the model part: every estimate (N, probe samples in kbit/s as
N + s (after slow start) or w (whole segment), reason) and the client's samples
("N:kbit/s", m = mixed), then the final N and the share of segments at N = 1.
    python3 decisions.py <out>/pars-model [auto|autoseg]"""
import json, os, sys

doc = json.load(open(os.path.join(sys.argv[1], 'results.json')))
modes = sys.argv[2:] or ['auto']
print('command:', doc.get('command'))
print('commit:', doc.get('commit'))
for r in doc['runs']:
    m = r['metrics']
    for mode in modes:
        seq = m.get(mode + '_sequence') or []
        print(f'\nrep {r["rep"]} {mode}: final N {m.get(mode + "_connections")}, N per segment {"".join(map(str, seq))}, '
              f'at N=1 {seq.count(1)}/{len(seq)}')
        for i, d in enumerate(m.get(mode + '_decisions') or []):
            w1, w2 = d['whole_x1_kbps'], d['whole_x2_kbps']
            rw = f'{w2 / w1:.2f}' if w1 and w2 else '-'
            rs = f'{d["x2_kbps"] / d["x1_kbps"]:.2f}' if d['x1_kbps'] and d['x2_kbps'] else '-'
            print(f'  estimate {i + 1}: N={d["n"]} whole X2/X1 {rw} steady X2/X1 {rs} probes {" ".join(d["probes"] or [])}')
            print(f'     {d["reason"]}')
        print('  samples:', ' '.join(m.get(mode + '_samples') or []))

# The table of docs/results/pars.md: per repetition the final N, the N of every
# estimate, segments at N = 1, and the fixed-N throughput (kbit/s, completed).
print('\n| rep | mode | final N | N per estimate | segments at N=1 | fixed N=1 / 2 / 4 kbit/s |')
print('|---|---|---|---|---|---|')
tot = {}
for r in doc['runs']:
    m = r['metrics']
    for mode in modes:
        seq = m.get(mode + '_sequence') or []
        ns = [d['n'] for d in (m.get(mode + '_decisions') or [])]
        t = tot.setdefault(mode, [0, 0, []])
        t[0] += seq.count(1)
        t[1] += len(seq)
        t[2].append(m.get(mode + '_connections'))
        print(f'| {r["rep"]} | {mode} | {m.get(mode + "_connections")} | {", ".join(map(str, ns))} | {seq.count(1)}/{len(seq)} | '
              f'{m.get("agg_x1_kbps")} / {m.get("agg_x2_kbps")} / {m.get("agg_x4_kbps")} |')
for mode, (one, n, finals) in tot.items():
    print(f'\n{mode}: final N {finals}; segments at N=1 {one}/{n} = {100 * one / max(n, 1):.0f}%')
