#!/usr/bin/env python3
"""soak-tables.py SOAK.json — the Markdown tables of docs/results/soak.md from a
`streambed load --soak --out` report: viewers, origin slopes (whole steady part and
its second half, least squares as the Go code fits them), the origin every 5 minutes,
response times per minute."""
import gzip
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


r = json.load(gzip.open(sys.argv[1]) if sys.argv[1].endswith(".gz") else open(sys.argv[1]))  # big step reports are kept gzipped
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

# --- Run 3 on: the time-stamped events and the once-a-second timeline -----------
import csv
import os
import re
import statistics

ev = r.get("events") or []
pulse = r.get("pulse") or []
folder = os.path.dirname(os.path.abspath(sys.argv[1]))
if ev or pulse:
    # Every event, one row each, beside the report (the Markdown shows them grouped).
    with open(os.path.join(folder, "events.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "kind", "event", "stage", "gap_s", "cause", "viewer_lag_ms", "viewer_max_lag_ms", "err"])
        for e in ev:
            w.writerow([e["t_s"], e["kind"], e["event"], e.get("stage", ""), e.get("gap_s", ""), e.get("cause", ""), e["viewer_lag_ms"], e["viewer_max_lag_ms"], e.get("err", "")])
    with open(os.path.join(folder, "pulse.csv"), "w", newline="") as f:
        keys = ["t_s", "viewers", "loadavg1", "core_busy", "steal", "origin_cpu", "cg_periods", "cg_throttled", "cg_throttled_ms",
                "load_cpu", "load_sched_p99_ms", "load_sched_max_ms", "load_gc_cpu", "load_gcs", "load_lag_max_ms", "load_lag_sum_ms"]
        sockets = ["established", "syn_recv", "close_wait", "closing", "time_wait", "accept_queue"]
        w = csv.writer(f)
        w.writerow(keys + ["origin_" + k for k in sockets] + ["load_dials"])
        for p in pulse:
            so = p.get("origin_sockets") or {}
            w.writerow([" ".join(str(c) for c in p.get(k) or []) if k == "core_busy" else p.get(k, "") for k in keys]
                       + [so.get(k, "") for k in sockets] + [p.get("load_dials", "")])

# The origin's garbage collections (GODEBUG=gctrace=1 in origin.log), on the soak's clock.
gcs = []
log = os.path.join(folder, "origin.log")
started = os.path.join(folder, "origin.started")
if os.path.exists(log) and os.path.exists(started):
    t0 = float(open(started).read())
    lsp = os.path.join(folder, "load.started")  # within about a second of the soak's clock
    off = (float(open(lsp).read()) - t0) if os.path.exists(lsp) else 0.0
    for line in open(log):
        m = re.match(r"gc (\d+) @([\d.]+)s \d+%: ([\d.]+)\+([\d.]+)\+([\d.]+) ms clock", line)
        if m:
            gcs.append({"t_s": float(m.group(2)) - off, "stw_ms": float(m.group(3)) + float(m.group(5)), "mark_ms": float(m.group(4))})


def busy(p, i):
    c = p.get("core_busy") or []
    return c[i] if i < len(c) else 0


def window(t, before, after=0.0):
    return [p for p in pulse if t - before <= p["t_s"] <= t + after]


if ev:
    print()
    errs = [e for e in ev if e["event"] in ("error", "metrics")]
    print(f"Every error of a healthy viewer and every failed scrape of /metrics ({len(errs)}; all events in events.csv):")
    print()
    print("| t (s) | kind | what failed | after (s) | error | cause | load gen lag over it (ms) | origin CPU / throttled periods, 5 s before | core 0 / 1 busy | steal | load gen sched p99 (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for e in errs:
        # A scrape is the load generator's request too: the same rule as an error's.
        cause = e.get("cause") or ("viewer starved" if e["viewer_lag_ms"] >= 500 * e.get("gap_s", 0) else "origin or network")
        w5 = window(e["t_s"], 5)
        ocpu = statistics.mean(p.get("origin_cpu", 0) for p in w5) if w5 else float("nan")
        thr = sum(p.get("cg_throttled", 0) for p in w5)
        per = sum(p.get("cg_periods", 0) for p in w5)
        cb = [statistics.mean(busy(p, i) for p in w5) for i in range(2)] if w5 else [float("nan")] * 2
        st = max((p.get("steal", 0) for p in w5), default=float("nan"))
        sp = max((p.get("load_sched_p99_ms", 0) for p in w5), default=float("nan"))
        err = e.get("err", "").replace("|", "/")
        err = re.sub(r'"http://[^"]*/(live|ws)/', r'"…/\1/', err)
        print(f"| {e['t_s']:.1f} | {e['kind']} | {e.get('stage','')} | {e.get('gap_s',0):.2f} | `{err}` | {cause} | {e['viewer_lag_ms']:.0f} | {ocpu:.3f} / {thr}/{per} | {cb[0]:.2f} / {cb[1]:.2f} | {st:.3f} | {sp:.1f} |")
    stalls = [e for e in ev if e["event"] == "stall"]
    print()
    print(f"Stalls of healthy viewers ({len(stalls)}), grouped into episodes (stalls ending within 10 s of each other); each stall is a row of events.csv:")
    print()
    print("| episode (s) | stalls | by kind | gap median / max (s) | viewer starved | origin CPU (cores) | throttled periods | origin GCs (mark ms) | load gen lag max (ms) | load gen sched p99 max (ms) | timeline seconds missing | core 0 / 1 busy | steal max | loadavg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    eps = []
    for e in stalls:
        if eps and e["t_s"] - eps[-1][-1]["t_s"] <= 10:
            eps[-1].append(e)
        else:
            eps.append([e])
    for g in eps:
        a = min(e["t_s"] - e["gap_s"] for e in g)
        b = max(e["t_s"] for e in g)
        w = window(b, b - a)
        kinds = {}
        for e in g:
            kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
        gaps = [e["gap_s"] for e in g]
        starved = sum(1 for e in g if e.get("cause") == "viewer starved")
        ocpu = statistics.mean(p.get("origin_cpu", 0) for p in w) if w else float("nan")
        thr = sum(p.get("cg_throttled", 0) for p in w)
        per = sum(p.get("cg_periods", 0) for p in w)
        ingc = [f"{x['mark_ms']:.0f}" for x in gcs if a <= x["t_s"] <= b]
        lag = max((p.get("load_lag_max_ms", 0) for p in w), default=0)
        sp = max((p.get("load_sched_p99_ms", 0) for p in w), default=0)
        missing = max(0, round(b - a) - len(w))
        cb = [statistics.mean(busy(p, i) for p in w) for i in range(2)] if w else [float("nan")] * 2
        st = max((p.get("steal", 0) for p in w), default=float("nan"))
        la = max((p.get("loadavg1", 0) for p in w), default=float("nan"))
        ks = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        print(f"| {a:.0f}–{b:.0f} | {len(g)} | {ks} | {statistics.median(gaps):.1f} / {max(gaps):.1f} | {starved} | {ocpu:.3f} | {thr}/{per} | {len(ingc)} ({', '.join(ingc)}) | {lag:.0f} | {sp:.1f} | {missing} | {cb[0]:.2f} / {cb[1]:.2f} | {st:.3f} | {la:.1f} |")

if pulse:
    print()
    print("The machine and the two processes per minute (from the once-a-second timeline, pulse.csv):")
    print()
    print("| minute | loadavg (max) | core 0 busy | core 1 busy | steal | origin CPU (cores) | origin throttled periods | origin GCs | load gen CPU | load gen GC CPU | load gen sched p99 (max of seconds, ms) | load gen lag (max, ms) | timeline seconds missing |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    by = {}
    for p in pulse:
        by.setdefault(int(p["t_s"] // 60), []).append(p)
    for m in sorted(by):
        w = by[m]
        cb = [statistics.mean(busy(p, i) for p in w) for i in range(2)]
        thr = sum(p.get("cg_throttled", 0) for p in w)
        per = sum(p.get("cg_periods", 0) for p in w)
        ngc = sum(1 for x in gcs if m * 60 <= x["t_s"] < (m + 1) * 60)
        print(f"| {m} | {max(p.get('loadavg1', 0) for p in w):.1f} | {cb[0]:.2f} | {cb[1]:.2f} | {max(p.get('steal', 0) for p in w):.3f} | "
              f"{statistics.mean(p.get('origin_cpu', 0) for p in w):.3f} | {thr}/{per} | {ngc} | {statistics.mean(p['load_cpu'] for p in w):.2f} | "
              f"{statistics.mean(p.get('load_gc_cpu', 0) for p in w):.3f} | {max(p.get('load_sched_p99_ms', 0) for p in w):.1f} | {max(p.get('load_lag_max_ms', 0) for p in w):.0f} | {max(0, 60 - len(w)) if m * 60 + 60 <= r['duration_s'] else ''} |")
