#!/usr/bin/env python3
"""The machine's 1-minute load average during each run of an fdspstudy or fdspsrt
log (run.log), from a load log of "UTC-ISO-time load1 load5 load15 ..." lines taken
every 30 s (round 3's loadlog). Prints CSV: start, end, what ran, load1 min and max
over the samples within [start, end + 30 s].

usage: load_per_run.py run.log load.log"""
import csv, re, sys
from datetime import datetime, timedelta

runlog, loadlog = sys.argv[1:3]
samples = []
for line in open(loadlog):
    f = line.split()
    if len(f) >= 2:
        samples.append((datetime.strptime(f[0], "%Y-%m-%dT%H:%M:%SZ"), float(f[1])))
day = samples[0][0].date() if samples else None
start_re = re.compile(r"^(\d\d:\d\d:\d\d) (RTT .*|\S+ over .*)$")  # a run starts (Table 1 and fdspsrt: "RTT ...", Table 2: "ASSET over LINK ...")
w = csv.writer(sys.stdout)
w.writerow(["start", "end", "run", "load1_min", "load1_max"])
cur = None
prev = None
for line in open(runlog):
    m = re.match(r"^(\d\d:\d\d:\d\d) ", line)
    if not m:
        continue
    t = datetime.combine(day, datetime.strptime(m.group(1), "%H:%M:%S").time())
    if (prev and t < prev - timedelta(hours=12)) or (not prev and t < samples[0][0] - timedelta(hours=12)):  # past midnight
        day += timedelta(days=1)
        t += timedelta(days=1)
    prev = t
    s = start_re.match(line)
    if s:
        cur = (t, s.group(2))
        continue
    if cur and ("rebuffer" in line):
        inside = [l for (ts, l) in samples if cur[0] <= ts <= t + timedelta(seconds=30)]
        if inside:
            w.writerow([cur[0].strftime("%H:%M:%S"), t.strftime("%H:%M:%S"), cur[1], min(inside), max(inside)])
        cur = None
