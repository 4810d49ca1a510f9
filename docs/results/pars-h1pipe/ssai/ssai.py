#!/usr/bin/env python3
"""tcp_slow_start_after_idle A/B (docs/results/pars.md): per run, ParS N=4 throughput
and, from the traces, the idle gaps longer than 200 ms (about the retransmission
timeout here) and the body rate of the range that follows such a gap against the
connection's other ranges. python3 ssai.py (in this folder)"""
import csv, glob, json, os, statistics
for d in sorted(glob.glob('run*-ssai*')):
    if not os.path.isdir(d):
        continue
    r = json.load(open(os.path.join(d, 'pars-throughput/results.json')))
    thr = {}
    for x in r['runs']:
        if x.get('metrics'):
            thr.setdefault(x['cell']['client'], []).append(round(x['metrics']['throughput_kbps']))
    after, other, long_gaps = [], [], 0
    for f in glob.glob(os.path.join(d, 'pars-throughput/traces/*.csv')):
        lanes = {}
        for u in csv.DictReader(open(f)):
            if u['first_byte_ms'] and u['done_ms'] and u['error'].lower() == 'false':
                lanes.setdefault(u['lane'], []).append(u)
        for us in lanes.values():
            us.sort(key=lambda u: float(u['first_byte_ms']))
            for a, b in zip(us, us[1:]):
                gap = float(b['first_byte_ms']) - float(a['done_ms'])
                rate = int(b['bytes']) * 8 / max(float(b['done_ms']) - float(b['first_byte_ms']), 1)
                if gap > 200:
                    long_gaps += 1
                    after.append(rate)
                else:
                    other.append(rate)
    med = lambda xs: round(statistics.median(xs)) if xs else None
    print(d, 'throughput kbit/s', thr, '| gaps > 200 ms:', long_gaps,
          '| body kbit/s of the range after such a gap (median):', med(after), 'other ranges:', med(other))
