#!/usr/bin/env python3
"""Goodput of an adaptive run's TCP part after each step up in BP, against the
lowest goodput of the (up to) three parts before it: what the round-2 controller
predicted the larger part from. A part's bytes are not in the client's stats, so
they are the fixed-BP runs' TCP bytes per substream of the same clip and BP.

usage: goodput_steps.py FIXED_DIR[,FIXED_DIR..] AUTO_DIR[,AUTO_DIR..] > steps.csv
(prints a summary on stderr)"""
import csv, json, statistics, sys

fixed, auto = (a.split(",") for a in sys.argv[1:3])
per = {}
for d in fixed:
    for r in json.load(open(d + "/results.json")):
        if r["variant"].startswith("bp") and r["fdsp"]["substreams"]:
            per[(r["clip"], int(r["variant"][2:]))] = r["tcp_bytes"] / r["fdsp"]["substreams"]
w = csv.writer(sys.stdout)
w.writerow(["folder", "clip", "rtt_ms", "rep", "substream", "bp_from", "bp_to", "goodput_before_kB_s", "goodput_after_kB_s", "ratio"])
ratios = {}
for d in auto:
    for r in json.load(open(d + "/results.json")):
        if r["variant"] != "auto":
            continue
        bps, parts = r["fdsp"]["bps"], {p["substream"]: p for p in r["fdsp"].get("tcp_parts") or []}
        rate = {k: per[(r["clip"], bps[k])] / max(p["tcp_ms"], 1) for k, p in parts.items() if k < len(bps)}
        for k in range(1, len(bps)):
            before = [rate[j] for j in range(k - 3, k) if j in rate]
            if bps[k] > bps[k - 1] and k in rate and before:
                ratio = rate[k] / min(before)
                ratios.setdefault(bps[k], []).append(ratio)
                w.writerow([d, r["clip"], r["rtt_ms"], r["rep"], k, bps[k - 1], bps[k], round(min(before)), round(rate[k]), round(ratio, 2)])
for to, xs in sorted(ratios.items()):
    print("steps up to %d: %d; after ÷ lowest before: median %.2f (%.2f–%.2f); below 1 in %d" % (
        to, len(xs), statistics.median(xs), min(xs), max(xs), sum(x < 1 for x in xs)), file=sys.stderr)
