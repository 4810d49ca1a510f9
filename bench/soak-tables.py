#!/usr/bin/env python3
"""soak-tables.py SOAK.json — the Markdown tables of docs/results/soak.md from a
`streambed load --soak --out` report: viewers, origin slopes (whole steady part and
its second half, least squares as the Go code fits them), the origin every 5 minutes,
response times per minute."""
import json
import sys


def fit(xs, ys):
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0:
        return None
    b = sxy / sxx
    r2 = sxy * sxy / (sxx * syy) if syy > 0 else 0
    return b * 3600, my, r2


r = json.load(open(sys.argv[1]))
steady = [s for s in r["samples"] if s["phase"] == "steady"]
end = max(s["t_s"] for s in steady)
half = (r["ramp_s"] + end) / 2
print("| kind | slots | slow slots | sessions | vanished | healthy segments | healthy skips | healthy stalls | healthy errors | slow readers' segments | slow readers' skips |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for k in r["kinds"]:
    print(f"| {k['kind']} | {k['viewers']} | {k['slow_slots']} | {k['sessions']} | {k['vanished']} | {k['healthy_segments']} | {k['healthy_skips']} | {k['healthy_stalls']} | {k['healthy_errors']} | {k['slow_segments']} | {k['slow_skips']} |")
errs = [e for k in r["kinds"] for e in k.get("healthy_error_samples", [])]
if errs:
    print("\nHealthy viewers' errors (samples):", "; ".join(errs))
print()
units = {"goroutines": 1, "open_fds": 1, "rss_bytes": 2**20, "heap_inuse_bytes": 2**20}
names = {"goroutines": "goroutines", "open_fds": "open descriptors", "rss_bytes": "RSS (MiB)", "heap_inuse_bytes": "heap in use (MiB)"}
print("| origin metric | mean (steady) | slope, steady part (per hour) | r² | mean, second half | slope, second half (per hour) | r² |")
print("|---|---|---|---|---|---|---|")
for m in ["goroutines", "open_fds", "rss_bytes", "heap_inuse_bytes"]:
    u = units[m]
    a = fit([s["t_s"] for s in steady if s["t_s"] >= r["ramp_s"]], [s[m] / u for s in steady if s["t_s"] >= r["ramp_s"]])
    b = fit([s["t_s"] for s in steady if s["t_s"] >= half], [s[m] / u for s in steady if s["t_s"] >= half])
    if a and b:
        print(f"| {names[m]} | {a[1]:.1f} | {a[0]:+.1f} ({100*a[0]/a[1]:+.2f}%) | {a[2]:.2f} | {b[1]:.1f} | {b[0]:+.1f} ({100*b[0]/b[1]:+.2f}%) | {b[2]:.2f} |")
print()
b, a = r["baseline"], r["after"]
print(f"Baseline → after every viewer left: goroutines {b['goroutines']:.0f} → {a['goroutines']:.0f}, "
      f"open descriptors {b['open_fds']:.0f} → {a['open_fds']:.0f}, RSS {b['rss_bytes']/2**20:.0f} → {a['rss_bytes']/2**20:.0f} MiB "
      f"(settled {r['settled_after_s']:.1f} s after the last viewer left).")
print()
print("| minute | viewers | goroutines | open fds | RSS MiB | heap MiB | origin CPU since the row before (cores) |")
print("|---|---|---|---|---|---|---|")
samples = [s for s in r["samples"] if s["phase"] in ("steady", "leave")]
last = r["samples"][0]
mark = 300 if r["duration_s"] >= 600 else 30
t = mark
for s in samples:
    if s["t_s"] >= t:
        cpu = (s["cpu_s"] - last["cpu_s"]) / max(s["t_s"] - last["t_s"], 1e-9)
        print(f"| {s['t_s']/60:.1f} | {s['viewers']} | {s['goroutines']:.0f} | {s['open_fds']:.0f} | {s['rss_bytes']/2**20:.0f} | {s['heap_inuse_bytes']/2**20:.0f} | {cpu:.3f} |")
        last = s
        while t <= s["t_s"]:
            t += mark
print()
print("| minute | responses | p50 ms | p99 ms | max ms | p99 http1 | p99 http2 | p99 hls |")
print("|---|---|---|---|---|---|---|---|")
for m in r["minutes"]:
    bk = m["by_kind"]
    g = lambda k: f"{bk[k]['p99_ms']:.0f}" if k in bk else "—"
    print(f"| {m['minute']} | {m['all']['n']} | {m['all']['p50_ms']:.0f} | {m['all']['p99_ms']:.0f} | {m['all']['max_ms']:.0f} | {g('http1')} | {g('http2')} | {g('hls')} |")
