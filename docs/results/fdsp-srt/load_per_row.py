#!/usr/bin/env python3
"""load_per_row.py RUN_DIR LOAD_LOG: writes RUN_DIR/load.csv, the 1-minute load
average (min and max of the samples) over each row of RUN_DIR/run.log, from a log
of `date -u +%FT%TZ` + /proc/loadavg lines taken every 30 s (round 4's format).
A row runs from its "RTT ..." line to the next one (the last to the run's end)."""
import csv, re, sys
from datetime import datetime

run_dir, load_log = sys.argv[1], sys.argv[2]
loads = []
for line in open(load_log):
    f = line.split()
    if len(f) >= 2:
        loads.append((datetime.strptime(f[0], "%Y-%m-%dT%H:%M:%SZ").time(), float(f[1])))
rows, last = [], None
for line in open(f"{run_dir}/run.log"):
    m = re.match(r"(\d\d:\d\d:\d\d) (RTT .*?)(?: \(repair.*)?$", line.rstrip())
    t = re.match(r"(\d\d:\d\d:\d\d) ", line)
    if t:
        last = t.group(1)
    if m:
        rows.append([m.group(1), None, m.group(2)])
for i, r in enumerate(rows):
    r[1] = rows[i + 1][0] if i + 1 < len(rows) else last
with open(f"{run_dir}/load.csv", "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["start", "end", "run", "load1_min", "load1_max"])
    for start, end, name in rows:
        s, e = datetime.strptime(start, "%H:%M:%S").time(), datetime.strptime(end, "%H:%M:%S").time()
        xs = [l for t, l in loads if s <= t <= e] or [l for t, l in loads if t <= s][-1:]
        w.writerow([start, end, name, f"{min(xs):.2f}" if xs else "", f"{max(xs):.2f}" if xs else ""])
