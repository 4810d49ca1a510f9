#!/usr/bin/env python3
"""ws-steady-summary.py OUT PAIRS KINDS — the medians of bench/ws-steady.sh's windows,
the ratios against nginx and the floors, and the A/B per pair."""
import json, os, statistics, sys
out, pairs, kinds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
if pairs == 0:
    sys.exit(0)
med = {}
for k in kinds:
    rows = [json.load(open(os.path.join(out, f"{k}-{i}.window.json"))) for i in range(1, pairs + 1)]
    us = [r["us_per_message"] for r in rows]
    med[k] = statistics.median(us)
    extra = ""
    if k.startswith("push"):
        extra = ", handoffs per message " + ", ".join(f"{r['handoffs']/max(r['messages'],1):.3f}" for r in rows)
    if all("packets_per_message" in r for r in rows):  # runs before 2026-11-25 noon have none
        extra += ", packets per message " + ", ".join(f"{r['packets_per_message']:.3f}" for r in rows)
    print(f"{k}: {med[k]:.2f} us per message (median; runs {', '.join(f'{u:.2f}' for u in us)}; "
          f"messages {', '.join(str(r['messages']) for r in rows)}){extra}")
for f in ("floor", "floor-sendfile", "floor-sendfile1"):
    if f in med and "nginx" in med:
        print(f"maximum ratio (nginx per request ÷ {f} per frame) = {med['nginx']/med[f]:.2f}")
for k in ("push-A", "push-B"):
    if k in med and "nginx" in med:
        print(f"{k} ÷ nginx per message = {med[k]/med['nginx']:.2f}; {k} ÷ floor = {med[k]/med['floor']:.2f}" if "floor" in med else f"{k} ÷ nginx = {med[k]/med['nginx']:.2f}")
if "push-A" in med and "push-B" in med:
    ra = [json.load(open(os.path.join(out, f"push-B-{i}.window.json")))["us_per_message"] /
          json.load(open(os.path.join(out, f"push-A-{i}.window.json")))["us_per_message"] for i in range(1, pairs + 1)]
    print(f"B ÷ A per pair: {', '.join(f'{r:.2f}' for r in ra)} (median {statistics.median(ra):.2f})")
