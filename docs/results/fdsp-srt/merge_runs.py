#!/usr/bin/env python3
"""Merge one fdspsrt run's FDSP rows with another run's SRT rows (same clip, seed
and settings; the SRT run made with -srt-input stdin) into OUT/results.json, so
that `fdspsrt -summarize OUT` checks the goal per row against the SRT run whose
input lost nothing before SRT.

usage: merge_runs.py FDSP_DIR SRT_DIR OUT_DIR"""
import json, os, sys

fdsp_dir, srt_dir, out = sys.argv[1:4]
fdsp = [r for r in json.load(open(os.path.join(fdsp_dir, "results.json"))) if r["peer"] != "srt"]
srt = [r for r in json.load(open(os.path.join(srt_dir, "results.json"))) if r["peer"] == "srt"]
rows = []
for key in sorted({(r["rtt_ms"], r["multiplier"]) for r in fdsp + srt}):
    rows += [r for r in srt if (r["rtt_ms"], r["multiplier"]) == key]
    rows += [r for r in fdsp if (r["rtt_ms"], r["multiplier"]) == key]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(rows, f, indent=1)
with open(os.path.join(out, "SOURCES"), "w") as f:
    f.write(f"FDSP rows from {fdsp_dir}\nSRT rows from {srt_dir}\n")
