#!/usr/bin/env python3
"""The 1-minute load average (model.load, every 20 s) during each run:
    python3 load.py model.load <out>/pars-model ..."""
import json, os, sys
samples = []
for line in open(sys.argv[1]):
    t, l1 = line.split()[:2]
    samples.append((t, float(l1)))
for d in sys.argv[2:]:
    doc = json.load(open(os.path.join(d, 'results.json')))
    a, b = doc['started'][11:19], doc['finished'][11:19]
    ls = [l for t, l in samples if a <= t <= b]  # same UTC day within a run
    if a > b:  # over midnight
        ls = [l for t, l in samples if t >= a or t <= b]
    print(f'{d}: {a}–{b} UTC, load {min(ls):.1f}–{max(ls):.1f} ({len(ls)} readings)' if ls else f'{d}: no readings')
