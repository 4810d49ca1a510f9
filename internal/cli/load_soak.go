package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/lab/load"
)

const soakUsage = `Usage: streambed load --soak URL [flags]

A soak: WebSocket push, HTTP/1.1 and HTTP/2 pull and HLS viewers of one live channel
at once for --duration, each viewer slot joining, watching for 0.5–1.5 × --session
and rejoining; --vanish of the sessions end with a TCP reset (no WebSocket close, or
in the middle of a response), --slow of the slots read at half the stream's bitrate.
The origin's goroutines, open descriptors and memory (its /metrics) are sampled every
--sample; the report gives their slope over the steady part, the segment response
times of healthy pull viewers per minute (p50, p99), and the skips, stalls and
errors of healthy viewers. At the end every viewer leaves and the origin must come
back to its goroutines and descriptors of before (within 5).

  streambed load --soak http://127.0.0.1:8080/live/demo/manifest.mpd \
      --ws 100 --http1 100 --http2 20 --hls 20 --duration 30m --out soak.json

Flags:
`

// isSoak reports a --soak among the flags.
func isSoak(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--soak" || a == "-soak" || strings.HasPrefix(a, "--soak=") || strings.HasPrefix(a, "-soak=") {
			return true
		}
	}
	return false
}

// loadSoak runs `streambed load --soak`.
func loadSoak(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load --soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		_        = fs.Bool("soak", true, "run a soak (this mode)")
		ws       = fs.Int("ws", 10, "concurrent WebSocket push viewers")
		h1       = fs.Int("http1", 10, "concurrent HTTP/1.1 pull viewers")
		h2       = fs.Int("http2", 4, "concurrent HTTP/2 pull viewers (h2c on http URLs)")
		hlsN     = fs.Int("hls", 4, "concurrent HLS viewers (HTTP/1.1)")
		duration = durationFlag(fs, "duration", 90*time.Second, "until every viewer leaves")
		ramp     = durationFlag(fs, "ramp", 0, "spread the first joins over this (0: min(duration/10, 30s))")
		sessionD = durationFlag(fs, "session", time.Minute, "mean session of a viewer")
		vanish   = fs.Float64("vanish", 0.2, "share of sessions that end with a TCP reset")
		slow     = fs.Float64("slow", 0.05, "share of viewer slots that read at half the stream's bitrate")
		sample   = durationFlag(fs, "sample", 5*time.Second, "origin sampling interval")
		settle   = durationFlag(fs, "settle", 30*time.Second, "after all viewers left, wait up to this for the origin to settle")
		pid      = fs.Int("origin-pid", 0, "the origin's process ID: adds /proc/PID/fd counts to the samples and its CPU to the timeline")
		cgroup   = fs.String("origin-cgroup", "", "the origin's cgroup v1 cpu folder: its throttling (cpu.stat) goes into the timeline")
		tracks   = fs.String("tracks", "", "comma-separated track IDs to receive (default: top video rung and first audio)")
		seed     = fs.Uint64("seed", 1, "seed of the session lengths and vanishings")
		out      = fs.String("out", "", "write the JSON report to this file (atomically)")
		insecure = fs.Bool("insecure", false, "accept any TLS certificate")
		quiet    = fs.Bool("quiet", false, "no progress on stderr")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), soakUsage)
		fs.PrintDefaults()
	}
	pos, err := parseOneURL(fs, args)
	if err != nil {
		return err
	}
	if *duration <= 0 || *duration > 24*time.Hour {
		return errors.New("--duration: want a positive duration up to 24h")
	}
	target, err := load.Resolve(ctx, pos[0], splitList(*tracks), *insecure)
	if err != nil {
		return err
	}
	o := load.SoakOptions{Target: target, Viewers: map[string]int{load.WS: *ws, load.HTTP1: *h1, load.HTTP2: *h2, load.SoakHLS: *hlsN},
		Duration: *duration, Ramp: *ramp, Session: *sessionD, Vanish: *vanish, Slow: *slow, Sample: *sample, Settle: *settle,
		OriginPID: *pid, OriginCgroup: *cgroup, Insecure: *insecure, Seed: *seed}
	if !*quiet {
		o.Progress = stderr
		fmt.Fprintf(stderr, "soak %s: ws %d, http1 %d, http2 %d, hls %d viewers for %s\n", pos[0], *ws, *h1, *h2, *hlsN, *duration)
	}
	res, err := load.RunSoak(ctx, o)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := fsutil.WriteJSONAtomic(*out, res, 0o644); err != nil {
			return err
		}
	}
	printSoak(stdout, res)
	if !res.HealthyOK() {
		return &ExitError{Code: 1, Err: errors.New("soak: healthy viewers skipped, stalled or failed")}
	}
	return nil
}

func printSoak(w io.Writer, r *load.SoakResult) {
	fmt.Fprintf(w, "soak %s (%s), %.0f s, sessions %.0f s mean, vanish %.2f, slow %.2f\n", r.Channel, strings.Join(r.Tracks, ","), r.DurationS, r.SessionS, r.Vanish, r.Slow)
	for _, k := range r.Kinds {
		fmt.Fprintf(w, "  %-5s ×%-5d sessions %d (vanished %d)  healthy: segments %d, skips %d, stalls %d (viewer starved %d), errors %d  slow: segments %d, skips %d\n",
			k.Kind, k.Viewers, k.Sessions, k.Vanished, k.Segments, k.Skips, k.Stalls, k.StallsStarved, k.Errors, k.SlowSegments, k.SlowSkips)
	}
	for _, e := range r.Events {
		if e.Event == "error" || e.Event == "metrics" {
			fmt.Fprintf(w, "  event %7.1fs %-7s %-5s %-8s after %.2f s (viewer lag %.0f ms): %s\n", e.T, e.Event, e.Kind, e.Stage, e.GapS, e.ViewerLagMs, e.Err)
		}
	}
	for _, s := range r.Slopes {
		fmt.Fprintf(w, "  slope %-17s %+.3g per hour (mean %.4g, %+.2f%%/h, r² %.2f, %d samples)\n", s.Metric, s.PerHour, s.Mean, 100*s.RelHour, s.R2, s.Samples)
	}
	for _, s := range r.SlopesLate {
		fmt.Fprintf(w, "  second half: slope %-17s %+.3g per hour (mean %.4g, %+.2f%%/h, r² %.2f)\n", s.Metric, s.PerHour, s.Mean, 100*s.RelHour, s.R2)
	}
	fmt.Fprintf(w, "  baseline → after: goroutines %.0f → %.0f, open fds %.0f → %.0f (settled in %.1f s)\n",
		r.Baseline.Goroutines, r.After.Goroutines, r.Baseline.OpenFDs, r.After.OpenFDs, r.SettledS)
	for _, m := range r.Minutes {
		fmt.Fprintf(w, "  minute %3d: %6d responses  p50 %.1f ms  p99 %.1f ms  max %.1f ms\n", m.Minute, m.All.N, m.All.P50, m.All.P99, m.All.Max)
	}
}
