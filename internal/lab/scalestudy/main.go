// Command scalestudy makes the published origin-at-scale set-ups again on namespace
// hosts (issue 11): an encoder host posts the published ladder to a central origin
// (DASH-IF ingest, a publishing point per use case), a WAN link of tens of ms joins
// it to an edge host, and viewers on a client host run the load generator's DASH live
// loop (0 → N workers) against:
//
//   - configuration 1: the origin on the edge host, no cache (the encoder posts over
//     the WAN);
//   - configuration 2: the central origin, an nginx cache (internal/cdn) on the edge;
//   - configuration 3: an origin in edge mode (serve --pull) on the edge host, pulling
//     from the central origin, with an nginx cache in front of it;
//
// for each use case (publishing-point presets pure-live, archive, archive-dvr; in the
// DVR case a share of viewers plays time-shifted). It measures the viewers'
// throughput and response times, each origin's CPU (from /proc) and memory, the
// requests each origin served (its /metrics) and the cache's upstream fetches per
// segment, and writes results.json, results.md and every cell's load report.
//
// It needs root (network namespaces), nginx and FFmpeg (the ladder is encoded once
// for the replay encoder, cached). Run from the repository root, pinned so that the
// emulator and the load share one core and the servers get the other:
//
//	sudo taskset -c 1 go run ./internal/lab/scalestudy -out docs/results/cdn/scale
//
// The network is removed at the end, on error and on Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/streambed/streambed/internal/cdn"
	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/lab/netem"
)

type options struct {
	out, work, bin         string
	serverCPUs, clientCPUs string
	configs                []Config
	caches                 []cdn.Kind
	useCases               []string
	workers, reps          int
	video, audio           string
	manifestEvery          time.Duration
	ramp, duration, warmup time.Duration
	shiftShare             float64
	shift                  time.Duration
	links                  Links
	command                string
}

func main() {
	var o options
	var configList, useList, cacheList, wanRate, accessRate string
	flag.StringVar(&o.out, "out", "docs/results/cdn/scale", "folder for results.json, results.md and each cell's load report")
	flag.StringVar(&o.work, "work", "", "folder for the cells' data (archives, cache); default a temporary one, removed at the end")
	flag.StringVar(&o.bin, "bin", "", "streambed binary (default: built from this tree into the work folder)")
	flag.StringVar(&o.serverCPUs, "server-cpus", "0", "CPUs (taskset -c) for origins and nginx; \"\" for no pinning")
	flag.StringVar(&o.clientCPUs, "client-cpus", "1", "CPUs (taskset -c) for the encoder and the load generator; \"\" for no pinning")
	flag.StringVar(&configList, "configs", "1,2,3", "configurations to run, in this order within each use case")
	flag.StringVar(&cacheList, "caches", "nginx", "edge caches of configurations 2 and 3, each run in turn: nginx (as published), varnish")
	flag.StringVar(&useList, "use-cases", "pure-live,archive,archive-dvr", "use cases (publishing-point presets)")
	flag.IntVar(&o.workers, "workers", 50, "workers at the top of the ramp (the published tests: 50)")
	flag.DurationVar(&o.ramp, "ramp", 30*time.Second, "ramp 0 → workers over this")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "load per cell, ramp included")
	flag.DurationVar(&o.warmup, "warmup", 10*time.Second, "after the channel is servable, before the load (its second half measures the ingest-only CPU)")
	flag.StringVar(&o.video, "video", "", "video track viewers fetch (default the top rung, v1080; e.g. v144 for many viewers)")
	flag.StringVar(&o.audio, "audio", "", "audio track viewers fetch (default a128)")
	flag.DurationVar(&o.manifestEvery, "manifest-every", 0, "viewers reload the MPD at this interval instead of its minimumUpdatePeriod (the published mix: about 16 segments, 30.72s)")
	flag.IntVar(&o.reps, "reps", 1, "repetitions of the matrix (configurations alternate within each)")
	flag.Float64Var(&o.shiftShare, "dvr-share", 0.5, "archive-dvr: share of viewers playing time-shifted")
	flag.DurationVar(&o.shift, "dvr-offset", 20*time.Second, "archive-dvr: time-shifted viewers play up to this far behind the live edge")
	flag.DurationVar(&o.links.WANDelay, "wan-delay", 20*time.Millisecond, "one-way delay of the WAN link between origin and edge")
	flag.StringVar(&wanRate, "wan-rate", "1gbit", "rate of the WAN link")
	flag.DurationVar(&o.links.AccessDelay, "access-delay", time.Millisecond, "one-way delay of the ingest and client links")
	flag.StringVar(&accessRate, "access-rate", "1gbit", "rate of the ingest and client links")
	render := flag.String("render", "", "write results.md again from this results.json (beside it) and exit")
	flag.Parse()
	if *render != "" {
		if err := rerender(*render); err != nil {
			log.Fatal(err)
		}
		return
	}
	o.command = "taskset -c 1 go run ./internal/lab/scalestudy " + strings.Join(os.Args[1:], " ")
	var err error
	if o.configs, err = parseConfigs(configList); err != nil {
		log.Fatal(err)
	}
	o.useCases = strings.Split(useList, ",")
	for _, k := range strings.Split(cacheList, ",") {
		switch k := cdn.Kind(strings.TrimSpace(k)); k {
		case cdn.Nginx, cdn.Varnish:
			o.caches = append(o.caches, k)
		default:
			log.Fatalf("cache %q: want nginx or varnish", k)
		}
	}
	if o.links.WANRate, err = netem.ParseRate(wanRate); err != nil {
		log.Fatal(err)
	}
	if o.links.AccessRate, err = netem.ParseRate(accessRate); err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stderr); err != nil {
		stop()
		log.Fatal(err)
	}
}

func parseConfigs(s string) ([]Config, error) {
	var out []Config
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "1":
			out = append(out, OriginAtEdge)
		case "2":
			out = append(out, CentralCache)
		case "3":
			out = append(out, EdgeOriginCache)
		default:
			return nil, fmt.Errorf("configuration %q: want 1, 2 or 3", f)
		}
	}
	return out, nil
}

// cells is the matrix in run order: repetition, use case, configuration — so the
// configurations compared in a table alternate in time.
func cells(o options) ([]Cell, error) {
	known := map[string]UseCase{}
	for _, u := range useCases(o.shiftShare, o.shift) {
		known[u.Name] = u
	}
	var out []Cell
	for rep := 1; rep <= o.reps; rep++ {
		for _, name := range o.useCases {
			u, ok := known[strings.TrimSpace(name)]
			if !ok {
				return nil, fmt.Errorf("use case %q: want pure-live, archive or archive-dvr", name)
			}
			for _, c := range o.configs {
				if c == OriginAtEdge {
					out = append(out, Cell{Config: c, UseCase: u, Rep: rep})
					continue
				}
				for _, k := range o.caches {
					out = append(out, Cell{Config: c, UseCase: u, Rep: rep, Cache: k})
				}
			}
		}
	}
	return out, nil
}

func run(ctx context.Context, o options, progress io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("scalestudy needs root (network namespaces): sudo taskset -c 1 go run ./internal/lab/scalestudy")
	}
	matrix, err := cells(o)
	if err != nil {
		return err
	}
	if o.work == "" {
		if o.work, err = os.MkdirTemp("", "scalestudy-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.work)
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.work, "streambed")
		fmt.Fprintf(progress, "building %s\n", o.bin)
		b := exec.CommandContext(ctx, "go", "build", "-o", o.bin, "./cmd/streambed")
		b.Stdout, b.Stderr = progress, progress
		if err := b.Run(); err != nil {
			return fmt.Errorf("go build (run from the repository root): %w", err)
		}
	}
	fmt.Fprintln(progress, "the published ladder, encoded once for the replay encoder (cached; minutes the first time)")
	warm := exec.CommandContext(ctx, o.bin, "encode", "live", "--replay", "--ladder", "published",
		"--to", "http://127.0.0.1:1/ingest/warm", "--duration", "1")
	warm.Stderr = io.Discard
	_ = warm.Run() // packages the ladder, then fails to post: that is all it is for
	nw, err := netem.Up(ctx, topology(o.links), netem.Options{Name: "scalestudy"})
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	defer nw.Close()
	fmt.Fprintf(progress, "network up: %s; WAN %v one way at %s, access %v at %s\n", nw.Why(),
		o.links.WANDelay, o.links.WANRate, o.links.AccessDelay, o.links.AccessRate)
	l := &lab{nw: nw, o: o, progress: progress}
	res := &Results{Command: o.command, Started: time.Now().UTC(), Commit: commit(), LoadAvg: [2]string{loadAvg()},
		Note: "The machine (2 cores) was shared with other engineers' work during the run: read spreads, not single figures.",
		Settings: ResultsConfig{WANDelayMs: ms(o.links.WANDelay), WANRate: o.links.WANRate.String(),
			AccessDelayMs: ms(o.links.AccessDelay), AccessRate: o.links.AccessRate.String(),
			Workers: o.workers, RampS: o.ramp.Seconds(), DurationS: o.duration.Seconds(), WarmupS: o.warmup.Seconds(),
			ShiftShare: o.shiftShare, ShiftS: o.shift.Seconds(), Reps: o.reps, ServerCPUs: o.serverCPUs, ClientCPUs: o.clientCPUs,
			Ladder: "published (8 H.264 rungs 144p–1080p, AAC 64k + 128k, 10.19 Mbit/s, 1.92 s segments)",
			Video:  or(o.video, "v1080"), Audio: or(o.audio, "a128"), ManifestEveryS: o.manifestEvery.Seconds(),
			Encoder: "replay encoder (the published ladder encoded once by FFmpeg, posted in real time by DASH-IF ingest): a real-time x264 encode of the ladder does not fit on 2 cores",
			Backend: "netem " + string(nw.Backend())}}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	begin := time.Now()
	for i, c := range matrix {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(progress, "[%d/%d %s] configuration %s, %s, repetition %d\n", i+1, len(matrix),
			time.Since(begin).Truncate(time.Second), c.ConfigName(), c.UseCase.Name, c.Rep)
		dir := filepath.Join(o.work, c.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cr, err := l.runCell(ctx, c, dir)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintf(progress, "  cell failed: %v\n", err)
			logTails(progress, dir)
			res.Failed = append(res.Failed, c.Name()+": "+err.Error())
			continue
		}
		fmt.Fprintf(progress, "  %.0f req/s, %.0f Mbit/s, p99 %.1f ms, errors %d; origin %.0f requests (%.2f%% fewer), %.3f cores, %.0f MiB\n",
			cr.RequestsPerS, cr.ThroughputMbit, cr.Latency["all"].P99, cr.ErrorCount,
			server(cr, RoleOrigin).MediaRequests, cr.OriginReductionPct, server(cr, RoleOrigin).CPUCores, server(cr, RoleOrigin).RSSMaxMiB)
		res.Cells = append(res.Cells, cr)
		if b, err := os.ReadFile(filepath.Join(dir, "load", "report.json")); err == nil {
			_ = fsutil.WriteFileAtomic(filepath.Join(o.out, "load-"+c.Name()+".json"), b, 0o644)
		}
		if err := writeResults(o.out, res); err != nil { // after every cell: a stopped run keeps what it measured
			return err
		}
	}
	res.Finished = time.Now().UTC()
	res.LoadAvg[1] = loadAvg()
	if err := writeResults(o.out, res); err != nil {
		return err
	}
	fmt.Fprintf(progress, "results: %s\n", o.out)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d cells: %w", len(res.Cells), ctx.Err())
	}
	return nil
}

func writeResults(dir string, r *Results) error {
	if r.Finished.IsZero() {
		r.Finished = time.Now().UTC()
	}
	if err := fsutil.WriteJSONAtomic(filepath.Join(dir, "results.json"), r, 0o644); err != nil {
		return err
	}
	var b strings.Builder
	writeMarkdown(&b, r)
	return fsutil.WriteFileAtomic(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// commit is the tree's commit (with "+" when it has changes), for the results.
func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty=+").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// logTails prints the last lines of a failed cell's process logs.
func logTails(w io.Writer, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		lines = lines[max(0, len(lines)-5):]
		fmt.Fprintf(w, "    %s:\n      %s\n", filepath.Base(f), strings.Join(lines, "\n      "))
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// rerender writes results.md from a results.json, for a table changed after the run.
func rerender(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var md strings.Builder
	writeMarkdown(&md, &r)
	return fsutil.WriteFileAtomic(filepath.Join(filepath.Dir(path), "results.md"), []byte(md.String()), 0o644)
}
