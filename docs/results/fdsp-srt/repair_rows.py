#!/usr/bin/env python3
"""repair_rows.py RUN_DIR...: per FDSP row with repair, what repair did — packets
NACKed, repaired in time, late, resent needlessly (the original came after all),
left unNACKed for lack of time, repair bytes as a share of the bytes received,
the RTT estimate at the end — and the BPs played, as a Markdown table."""
import json, sys

print("| run | RTT ms | peer | BPs | PLR % | NACKed | repaired | late | duplicate | no time | repair bytes % | RTT est. ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for d in sys.argv[1:]:
    for r in json.load(open(f"{d}/results.json")):
        f = (r.get("fdsp") or {}).get("fdsp")
        if not f or not f.get("repair"):
            continue
        p = f["repair"]
        got = f["tcp_bytes"] + f["udp_bytes"]
        print(f"| {d.rstrip('/').split('/')[-1]} | {r['rtt_ms']:.0f} | {r['peer']} | {','.join(map(str, f['bps']))} | {100*r['plr']:.3f} | "
              f"{p['nacked']} | {p['repaired']} | {p['repair_late']} | {p['repair_duplicate']} | {p['no_time']} | "
              f"{100*p['repair_bytes']/got:.2f} | {p['rtt_ms']:.0f} |")
