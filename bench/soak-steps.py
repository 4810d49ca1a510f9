#!/usr/bin/env python3
"""soak-steps.py DIR — summarise bench/soak-steps.sh's steps (DIR/step-*/soak.json)
into DIR/steps.json and a Markdown table: per step the viewers, the origin's CPU
against its quota and its throttled periods (from the once-a-second timeline), the
p99 segment response over the steady minutes, stalls of healthy viewers by cause,
errors, and the load generator's own CPU and lateness."""
import glob
import gzip
import json
import os
import statistics
import sys


def pct(v, q):
    v = sorted(v)
    return v[min(int(q * len(v)), len(v) - 1)] if v else float("nan")


def step(d):
    f = os.path.join(d, "soak.json")
    r = json.load(gzip.open(f + ".gz") if not os.path.exists(f) else open(f))
    info = json.load(open(os.path.join(d, "soak.info.json")))
    env = dict(kv.split("=", 1) for kv in info["env"].split())
    ramp, dur = r["ramp_s"], r["duration_s"]
    steady = [p for p in r.get("pulse", []) if ramp + 5 <= p["t_s"] <= dur]
    mins = [m for m in r["minutes"] if m["minute"] * 60 >= ramp and (m["minute"] + 1) * 60 <= dur]
    p99s = [m["all"]["p99_ms"] for m in mins]
    k = r["kinds"]
    periods = sum(p.get("cg_periods", 0) for p in steady)
    thr = sum(p.get("cg_throttled", 0) for p in steady)
    return {
        "scale": os.path.basename(d).removeprefix("step-"),
        "slots": {x["kind"]: x["viewers"] for x in k},
        "viewers_mean": round(statistics.mean(p["viewers"] for p in steady)) if steady else 0,
        "quota_cores": float(env["CPU_QUOTA"]),
        "origin_cpu_mean": round(statistics.mean(p.get("origin_cpu", 0) for p in steady), 4) if steady else None,
        "throttled_share": round(thr / periods, 3) if periods else None,
        "p99_ms_median_minute": round(statistics.median(p99s)) if p99s else None,
        "p99_ms_worst_minute": round(max(p99s)) if p99s else None,
        "segments": sum(x["healthy_segments"] for x in k),
        "stalls": sum(x["healthy_stalls"] for x in k),
        "stalls_viewer_starved": sum(x.get("healthy_stalls_viewer_starved", 0) for x in k),
        "skips": sum(x["healthy_skips"] for x in k),
        "errors": sum(x["healthy_errors"] for x in k),
        "scrape_failures": sum(1 for e in (r.get("events") or []) if e["event"] == "metrics"),
        "load_cpu_mean": round(statistics.mean(p["load_cpu"] for p in steady), 3) if steady else None,
        "load_lag_p99_ms": round(pct([p["load_lag_max_ms"] for p in steady], 0.99)) if steady else None,
        "core_busy_mean": [round(statistics.mean(p["core_busy"][i] for p in steady if len(p.get("core_busy") or []) > i), 2) for i in range(2)] if steady else None,
        "pulse_seconds_missing": round(dur - ramp - 5 - len(steady)) if steady else None,
        "load_sched_p99_ms_p99": round(pct([p.get("load_sched_p99_ms", 0) for p in steady], 0.99), 1) if steady else None,
        "load_gc_cpu_mean": round(statistics.mean(p.get("load_gc_cpu", 0) for p in steady), 3) if steady else None,
        "loadavg1_max": max(p["load1"] if "load1" in p else p["loadavg1"] for p in steady) if steady else None,
    }


def main():
    d = sys.argv[1]
    dirs = sorted(glob.glob(os.path.join(d, "step-*/")), key=lambda p: float(os.path.basename(p.rstrip("/")).removeprefix("step-")))
    rows = [step(x.rstrip("/")) for x in dirs if os.path.exists(os.path.join(x, "soak.json")) or os.path.exists(os.path.join(x, "soak.json.gz"))]
    json.dump(rows, open(os.path.join(d, "steps.json"), "w"), indent=1)
    print("| scale | slots ws/http1/http2/hls | viewers | origin CPU (cores) | of quota | throttled periods | p99 ms (median minute / worst) | healthy segments | stalls (viewer starved) | skips | errors | failed scrapes | load gen CPU (GC: runtime estimate, counts idle-time marking) | load gen lag p99 of 1 s max (ms) | timeline seconds missing | core 0 / core 1 busy | loadavg max |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        s = r["slots"]
        print(f"| ×{r['scale']} | {s.get('ws',0)}/{s.get('http1',0)}/{s.get('http2',0)}/{s.get('hls',0)} | {r['viewers_mean']} | {r['origin_cpu_mean']:.3f} | {r['origin_cpu_mean']/r['quota_cores']:.0%} | {r['throttled_share']:.0%} | {r['p99_ms_median_minute']} / {r['p99_ms_worst_minute']} | {r['segments']} | {r['stalls']} ({r['stalls_viewer_starved']}) | {r['skips']} | {r['errors']} | {r['scrape_failures']} | {r['load_cpu_mean']:.2f} ({r['load_gc_cpu_mean']:.2f}) | {r['load_lag_p99_ms']} | {r['pulse_seconds_missing']} | {r['core_busy_mean'][0]:.2f} / {r['core_busy_mean'][1]:.2f} | {r['loadavg1_max']} |")


main()
