#!/usr/bin/env python3
"""Per FDSP row of fdspsrt results: were late UDP packets late against their own
access unit's deadline, and was any TCP part late? From the client's udp_parts and
tcp_parts (internal/transport/fdsp/udpparts.go). Prints CSV.

usage: udp_margins.py DIR[,DIR...]"""
import csv, json, os, statistics, sys

w = csv.writer(sys.stdout)
w.writerow(["run", "rtt_ms", "peer", "bps", "lost", "late", "late_parts", "max_late_ms",
            "min_margin_ms_median", "min_margin_ms_min", "late_tcp_parts", "rebuffer_count"])
for d in sys.argv[1].split(","):
    rows = json.load(open(os.path.join(d, "results.json")))
    for r in rows:
        s = (r.get("fdsp") or {}).get("fdsp")
        if not s:
            continue
        parts = s.get("udp_parts") or []
        margins = [p["min_margin_ms"] for p in parts if p["udp_packets"] > 0]
        late_tcp = sum(1 for t in s.get("tcp_parts") or [] if t.get("slack_known") and t["slack_ms"] < 0)
        w.writerow([os.path.basename(d.rstrip("/")), r["rtt_ms"], r["peer"], " ".join(map(str, s["bps"])),
                    s["lost_packets"], s["late_packets"],
                    " ".join(f'{p["substream"]}:{p["late"]}' for p in parts if p["late"]),
                    round(max([p["max_late_ms"] for p in parts] or [0]), 1),
                    round(statistics.median(margins), 1) if margins else "",
                    round(min(margins), 1) if margins else "", late_tcp, s["rebuffer_count"]])
