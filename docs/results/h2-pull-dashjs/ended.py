#!/usr/bin/env python3
"""Link utilisation of the h2-pull-dashjs runs with the session ended where the media
ended: 3 of the 16 runs (dash.js over HTTP/2) reached the end of the 91 s asset but
the video element never fired 'ended', so the lab client waited to its cap (210 s)
and link_utilisation counted that wait. This recomputes, from each run's own samples
(every 0.5 s), the session as the time the playhead first reached its final position,
and the utilisation as media bytes * 8 / that time / the link rate. The lab client
now ends there itself (web/scripts/labclient.mjs, `atEnd`).

    python3 docs/results/h2-pull-dashjs/ended.py docs/results/h2-pull-dashjs/results.json
"""
import json
import statistics
import sys

res = json.load(open(sys.argv[1]))
cells = {}
print("cell,rep,ended_event,session_s,session_to_media_end_s,link_utilisation,link_utilisation_to_media_end")
for run in res["runs"]:
    m = run.get("metrics") or {}
    s = m.get("samples") or []
    if run.get("error") or not s:
        continue
    final = s[-1]["current_time"]
    t_end = next(x["t"] for x in s if x["current_time"] >= final - 0.1)
    u = m["media_bytes"] * 8 / t_end / (m["link_rate_kbps"] * 1000)
    ended = m["end_reason"] == "ended"
    print(f'{run["key"]},{run["rep"]},{ended},{m["session_s"]},{t_end},{m["link_utilisation"]},{u:.3f}')
    cells.setdefault(run["key"], []).append(u)
print()
print("cell,n,median_link_utilisation_to_media_end,min,max")
for k, v in cells.items():
    print(f"{k},{len(v)},{statistics.median(v):.3f},{min(v):.3f},{max(v):.3f}")
