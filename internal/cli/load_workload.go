package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/lab/load/workload"
)

const workloadUsage = `Usage: streambed load --mode MODE URL [flags]
       streambed load merge A.json B.json ... --out DIR

The workload generator: workers that behave like live players in time — they wait
for each segment to be available and reload manifests when a player would — against
an origin or a cache in front of it.

Modes:
  dash-live  URL is a live MPD. Each worker fetches the MPD (parsed by the headless
             player's DASH parser: $Number$ and SegmentTimeline, several Periods),
             starts at the newest available segment, fetches its audio (the 128 kbit/s
             track, else the highest; --audio) and video (the top rung; --video),
             advances, and reloads the MPD when minimumUpdatePeriod is due (or every
             --manifest-every) or when the listed segments have run out.
  hls-live   URL is a multivariant playlist. The top variant's and its audio
             rendition's media playlists are reloaded every target duration and each
             new segment of both is fetched.
  abr        dash-live with the video rung chosen per segment by the headless
             player's ABR rule (--abr throughput|bba|bola) from its throughput
             estimate, as 'streambed play' does.

Sessions: a ramp from 0 to --workers over --ramp, each lasting the whole --duration;
or, with --rate, the open model: Poisson arrivals of --rate per second, sessions of
--session mean (--session-dist exp or fixed), at most --workers at once (arrivals
beyond are counted as skipped). --seed makes the arrivals repeatable.

Report (in --out): report.json and a self-contained report.html: requests/s,
throughput, per kind (manifest, init, audio, video) the request count and share
(published: about 3% MPD, 48.5% each media), errors by status, and response-time
percentiles p50/p90/p99/p99.9 from log-bucket histograms (1/128 precision), all over
time in --interval slices. A progress line goes to stderr every 2 s.

Several hosts: run one load process per host at the same time, each with its own
--out, then merge: 'streambed load merge host1/report.json host2/report.json --out
merged'. Counts and histograms add exactly; intervals line up by their offset from
each process's start.

Examples:
  streambed load --mode dash-live http://127.0.0.1:8080/live/demo/manifest.mpd --workers 50 --ramp 10 --duration 60 --out load-run
  streambed load --mode hls-live http://127.0.0.1:8080/live/demo/master.m3u8 --workers 20 --duration 30 --out hls-run
  streambed load --mode dash-live URL --rate 2 --session 30 --workers 200 --duration 120 --seed 7 --out open-run

Flags:
`

// isWorkload reports whether args ask for the workload generator (--mode or merge).
func isWorkload(args []string) bool {
	if len(args) > 0 && args[0] == "merge" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "mode" {
			return true
		}
	}
	return false
}

// loadWorkload runs `streambed load --mode ...` and `streambed load merge`.
func loadWorkload(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "merge" {
		return loadMerge(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o workload.Options
	fs.StringVar(&o.Mode, "mode", "", "dash-live, hls-live or abr")
	fs.IntVar(&o.Workers, "workers", 10, "ramp: sessions at the top of the ramp; --rate: most sessions at once")
	ramp := durationFlag(fs, "ramp", 0, "ramp: start the sessions evenly over this")
	duration := durationFlag(fs, "duration", 30*time.Second, "the whole run (at most 24h)")
	fs.Float64Var(&o.Rate, "rate", 0, "open model: Poisson session arrivals per second (0: ramp)")
	session := durationFlag(fs, "session", 60*time.Second, "open model: mean session length")
	fs.StringVar(&o.SessionDist, "session-dist", workload.DistExponential, "open model: session lengths exp or fixed")
	fs.Uint64Var(&o.Seed, "seed", 1, "open model: random seed of arrivals and lengths")
	every := durationFlag(fs, "manifest-every", 0, "dash-live, abr: reload the MPD at this interval instead of its minimumUpdatePeriod")
	fs.Float64Var(&o.TimeShiftShare, "timeshift-share", 0, "dash-live, abr: this share (0-1) of the sessions play behind the live edge, in the DVR window (with --timeshift)")
	timeshift := durationFlag(fs, "timeshift", 0, "dash-live, abr: time-shifted sessions play up to this far behind the live edge, offsets spread over (0, this]")
	fs.StringVar(&o.ABR, "abr", "throughput", "abr mode: throughput, bba or bola")
	fs.StringVar(&o.Audio, "audio", "", "audio track ID (default: the 128 kbit/s track, else the highest)")
	fs.StringVar(&o.Video, "video", "", "video track ID (default: the top rung)")
	fs.BoolVar(&o.HTTP2, "http2", false, "HTTP/2 (h2 on https, h2c prior knowledge on http) instead of HTTP/1.1")
	fs.BoolVar(&o.Insecure, "insecure", false, "accept any TLS certificate")
	timeout := durationFlag(fs, "timeout", 10*time.Second, "per request")
	interval := durationFlag(fs, "interval", time.Second, "report slice length")
	fs.StringVar(&o.Host, "host", "", "this process's name in merged reports (default: the hostname)")
	out := fs.String("out", "", "write report.json and report.html here")
	quiet := fs.Bool("quiet", false, "no progress line")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), workloadUsage)
		fs.PrintDefaults()
	}
	pos, err := parseOneURL(fs, args)
	if err != nil {
		return err
	}
	o.URL = pos[0]
	o.Ramp, o.Duration, o.SessionMean, o.ManifestEvery, o.Timeout, o.Interval = *ramp, *duration, *session, *every, *timeout, *interval
	o.TimeShift = *timeshift
	if !*quiet {
		o.Progress = stderr
		fmt.Fprintf(stderr, "load %s %s: %s\n", o.Mode, o.URL, plan(o))
	}
	r, err := workload.Run(ctx, o)
	if r != nil && *out != "" {
		if werr := r.Write(*out); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if err != nil {
		return err
	}
	printWorkload(stdout, r, *out)
	return nil
}

func plan(o workload.Options) string {
	if o.Rate > 0 {
		return fmt.Sprintf("%.2g sessions/s (mean %v, %s), at most %d at once, for %v", o.Rate, o.SessionMean, o.SessionDist, o.Workers, o.Duration)
	}
	return fmt.Sprintf("0 → %d workers over %v, for %v", o.Workers, o.Ramp, o.Duration)
}

func loadMerge(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the merged report.json and report.html here (required)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: streambed load merge A.json B.json ... --out DIR\n\nMerges the reports of load processes that ran at the same time (one per host).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 || *out == "" {
		fs.Usage()
		return errors.New("load merge: give report files and --out")
	}
	var rs []*workload.Report
	for _, f := range files {
		r, err := workload.Load(f)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	m, err := workload.Merge(rs...)
	if err != nil {
		return err
	}
	if err := m.Write(*out); err != nil {
		return err
	}
	printWorkload(stdout, m, *out)
	return nil
}

func printWorkload(w io.Writer, r *workload.Report, out string) {
	t := r.Totals()
	fmt.Fprintf(w, "%s: %.1f s, %d requests (%.1f/s), %.2f Mbit/s, %d errors, sessions %d started / %d skipped / %d failed, %d jumps to the live edge\n",
		r.Mode, t.Seconds, t.Requests, t.RequestsPerS, t.ThroughputBps/1e6, t.Errors, r.Sessions.Started, r.Sessions.Skipped, r.Sessions.Failed, r.Sessions.Jumps)
	for _, k := range workload.Kinds {
		p := t.Percentiles[k]
		noInit := "     "
		if k != workload.KindInit {
			noInit = fmt.Sprintf("%5.1f%%", 100*t.ShareNoInit[k])
		}
		fmt.Fprintf(w, "  %-8s %7d  %5.1f%% (%s without init)  p50 %7.2f  p90 %7.2f  p99 %7.2f  p99.9 %7.2f ms  errors %d\n",
			k, r.Kinds[k].Requests, 100*t.Share[k], noInit, p[0], p[1], p[2], p[3], r.Kinds[k].Errors)
	}
	for st, n := range r.Errors {
		fmt.Fprintf(w, "  error %s × %d\n", st, n)
	}
	if out != "" {
		fmt.Fprintf(w, "report: %s/report.html\n", out)
	}
}
