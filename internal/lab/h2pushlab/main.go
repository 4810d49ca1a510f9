// Command h2pushlab runs the HTTP/2 push study against two peers side by side —
// Streambed's origin pushing itself, and h2o 2.2 in front of it pushing what the
// origin's Link: rel=preload headers name — and adds the push client's own counters
// (unclaimed pushed bytes and friends) to lab results.
//
//	go build -o /tmp/streambed ./cmd/streambed
//	sudo go run ./internal/lab/h2pushlab run deploy/h2o/study.yaml \
//	    --bin /tmp/streambed --out docs/results/h2push-h2o
//	go run ./internal/lab/h2pushlab merge-stats \
//	    docs/results/h2push/results.json docs/results/h2push/stats.jsonl
//
// `run` reads a lab scenario whose matrix has `peer` (streambed, h2o) and `strategy`
// (a push strategy) beside segment_duration and rtt, packages the content and starts
// the origin (:8080) with internal/lab/experiment, exactly as `streambed lab run`
// does (same cache, keep_duration honoured, no live channel), builds the two-host
// network, starts h2o (:8081, proxying to the origin) in the server host, and plays every
// cell with `streambed play --transport h2cpush-STRATEGY` in the client host. It
// writes results.json, results.csv and report.html with the lab's own renderer.
//
// `pageload` measures the study's standard page (20 PNG images and a style sheet):
// DOM and page load time over HTTP/1.1, HTTP/2 and HTTP/2 with push (pageload.go).
//
// `merge-stats` attaches the stats lines that push transports append to
// $STREAMBED_H2PUSH_STATS (one per run, in run order) to the runs of a
// `streambed lab run` result, and re-renders its report with unclaimed_bytes.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/streambed/streambed/internal/lab/experiment"
	"github.com/streambed/streambed/internal/lab/netem"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "h2pushlab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "run":
		return runStudy(ctx, args[1:])
	case "pageload":
		return runPageload(ctx, args[1:])
	case "pageload-gen":
		return genCmd(args[1:])
	case "pageload-serve":
		return servePage(ctx, args[1:])
	case "pageload-fetch":
		return fetchCmd(ctx, args[1:])
	case "merge-stats":
		if len(args) != 3 {
			return errors.New("usage: h2pushlab merge-stats RESULTS.json STATS.jsonl")
		}
		return mergeStats(args[1], args[2])
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

const usage = `usage:
  h2pushlab run SCENARIO --bin STREAMBED [--out DIR]   the push study, origin and h2o side by side
  h2pushlab merge-stats RESULTS.json STATS.jsonl       add the push client's counters to lab results
  h2pushlab pageload SCENARIO [--out DIR]              the standard page's DOM and page load times
  h2pushlab pageload-gen DIR                           write the standard page (20 PNG images, 1 CSS)
  h2pushlab pageload-serve --dir DIR [--http ADDR]     serve it from the origin with push
  h2pushlab pageload-fetch URL --proto http1|h2|h2push one load, JSON on stdout`

// statsKeys are the push client's counters copied into a run's metrics.
var statsKeys = map[string]string{
	"unclaimed_bytes": "unclaimed_bytes", "pushed_bytes": "pushed_bytes", "promised": "promised",
	"claimed": "claimed", "cancelled": "cancelled", "requests": "client_requests",
}

func readStats(path string) ([]map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func attach(metrics map[string]any, st map[string]any) {
	for from, to := range statsKeys {
		if v, ok := st[from]; ok {
			metrics[to] = v
		}
	}
}

func addMetric(s *experiment.Scenario, names ...string) {
	for _, n := range names {
		found := false
		for _, m := range s.Metrics {
			found = found || m == n
		}
		if !found {
			s.Metrics = append(s.Metrics, n)
		}
	}
}

func mergeStats(resultsPath, statsPath string) error {
	res, err := experiment.LoadResults(resultsPath)
	if err != nil {
		return err
	}
	stats, err := readStats(statsPath)
	if err != nil {
		return err
	}
	i := 0
	for k := range res.Runs {
		r := &res.Runs[k]
		t := r.Cell["transport"]
		if r.Metrics == nil || !(strings.HasPrefix(t, "h2cpush") || strings.HasPrefix(t, "h2push")) {
			continue
		}
		if i >= len(stats) {
			return fmt.Errorf("%s has %d lines, fewer than the push runs", statsPath, len(stats))
		}
		if got, _ := stats[i]["transport"].(string); got != t {
			return fmt.Errorf("stats line %d is for %q, run %d is %q: the files do not match", i+1, got, k, t)
		}
		attach(r.Metrics, stats[i])
		i++
	}
	if i != len(stats) {
		return fmt.Errorf("%d stats lines for %d push runs", len(stats), i)
	}
	addMetric(res.Scenario, "unclaimed_bytes")
	return res.Write(filepath.Dir(resultsPath))
}

// ---- run ----

const (
	originPort = 8080
	h2oPort    = 8081
)

func runStudy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	bin := fs.String("bin", "", "the streambed binary (required)")
	out := fs.String("out", "", "output folder (default lab-results/NAME)")
	cache := fs.String("cache", filepath.Join(".cache", "lab-content"), "packaged content, shared with `streambed lab run`")
	h2oBin := fs.String("h2o", "h2o", "the h2o binary")
	tmpl := fs.String("h2o-template", filepath.Join("deploy", "h2o", "h2o.conf.tmpl"), "h2o configuration template")
	limit := fs.Int("limit", 0, "run only the first N runs")
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if file == "" || *bin == "" {
		return errors.New("usage: h2pushlab run SCENARIO --bin STREAMBED [--out DIR]")
	}
	s, err := loadScenario(file, []string{"peer", "strategy", "segment_duration"}, true)
	if err != nil {
		return err
	}
	outDir, cacheDir, err := experiment.Folders(*out, *cache, s.Name)
	if err != nil {
		return err
	}
	if *bin, err = filepath.Abs(*bin); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res := experiment.NewResults(s)

	// Content, network and origin exactly as `streambed lab run` makes them (the same
	// package flags and cache, keep_duration included; the origin on :8080 with no live
	// channel), so this study and experiments/h2push.yaml share content and setup.
	opts := experiment.Options{Bin: *bin, OutDir: outDir, CacheDir: cacheDir, Progress: os.Stderr, Log: log}
	assets, durs, err := experiment.PrepareAssets(ctx, s, opts)
	if err != nil {
		return err
	}
	defer os.RemoveAll(assets)
	nw, err := upNetwork(ctx, s, "h2pushlab", log)
	if err != nil {
		return err
	}
	defer nw.Close()
	res.Backend = string(nw.Backend())
	defer os.RemoveAll(filepath.Join(outDir, ".origin")) // after the origin stops
	origin, err := experiment.StartOrigin(ctx, nw, s, durs, assets, opts)
	if err != nil {
		return err
	}
	defer stopProc(origin)
	h2oDir := filepath.Join(outDir, ".h2o")
	defer os.RemoveAll(h2oDir)
	conf, err := renderH2O(*tmpl, h2oDir)
	if err != nil {
		return err
	}
	h2o, err := startIn(ctx, nw, filepath.Join(outDir, "h2o.log"), *h2oBin, "-c", conf)
	if err != nil {
		return err
	}
	defer stopProc(h2o)
	if err := experiment.WaitReachable(nw, "client", net.JoinHostPort(nw.Server().String(), fmt.Sprint(h2oPort)), 30*time.Second); err != nil {
		return fmt.Errorf("h2o: %w", err)
	}

	err = forEachRun(ctx, nw, s, res, outDir, *limit, func(cell experiment.Cell) experiment.Run {
		return playCell(ctx, nw, s, cell, *bin, outDir)
	})
	if err != nil {
		return err
	}
	res.Finished = time.Now().UTC()
	addMetric(s, "unclaimed_bytes")
	if err := res.Write(outDir); err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "%d runs. Report: %s\n", len(res.Runs), filepath.Join(outDir, "report.html"))
	return ctx.Err()
}

// upNetwork builds the lab's two hosts, client and server, joined by the scenario's
// base link profile.
func upNetwork(ctx context.Context, s *experiment.Scenario, name string, log *slog.Logger) (*netem.Network, error) {
	base, err := s.CellProfile(experiment.Cell{})
	if err != nil {
		return nil, err
	}
	nw, err := netem.Up(ctx, netem.TwoHosts(base), netem.Options{Name: name, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return nw, nil
}

// forEachRun runs every cell the scenario's number of times (repetitions outermost,
// as `streambed lab run` does), at most limit runs when limit > 0: it sets the cell's
// link, lets the link settle, calls run, and appends the run to res, writing the
// results after each run so that what is done survives an interruption.
func forEachRun(ctx context.Context, nw *netem.Network, s *experiment.Scenario, res *experiment.Results, outDir string, limit int, run func(experiment.Cell) experiment.Run) error {
	cells := s.Cells()
	total := len(cells) * s.Repetitions
	if limit > 0 && limit < total {
		total = limit
	}
	done := 0
	for rep := 1; rep <= s.Repetitions && done < total; rep++ {
		for _, cell := range cells {
			if done >= total {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			key := s.Key(cell)
			fmt.Fprintf(os.Stderr, "[%d/%d] %s rep %d\n", done+1, total, key, rep)
			prof, err := s.CellProfile(cell)
			if err != nil {
				return err
			}
			if err := nw.SetLink("client", "server", prof); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if err := experiment.Settle(ctx); err != nil {
				return err
			}
			start := time.Now()
			r := run(cell)
			r.Key, r.Cell, r.Rep, r.Seconds = key, cell, rep, time.Since(start).Seconds()
			if r.Error != "" {
				fmt.Fprintf(os.Stderr, "  failed: %s\n", r.Error)
			}
			res.Runs = append(res.Runs, r)
			done++
			res.Finished = time.Now().UTC()
			if err := res.Write(outDir); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadScenario reads a scenario without the lab's parameter check: these studies add
// `peer` and `strategy`, or `protocol`, to the matrix, which must have the parameters
// named in need; content says a synthetic clip is required.
func loadScenario(path string, need []string, content bool) (*experiment.Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s experiment.Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Repetitions <= 0 {
		s.Repetitions = 1
	}
	for _, name := range need {
		found := false
		for _, p := range s.Matrix {
			found = found || p.Name == name
		}
		if !found {
			return nil, fmt.Errorf("%s: the matrix needs %q", path, name)
		}
	}
	if content && s.Content.Synthetic == "" {
		return nil, fmt.Errorf("%s: content.synthetic is required", path)
	}
	return &s, nil
}

func startIn(ctx context.Context, nw *netem.Network, logPath string, argv ...string) (*exec.Cmd, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := nw.CommandContext(ctx, "server", argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", argv[0], err)
	}
	return cmd, nil
}

func stopProc(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func renderH2O(tmplPath, dir string) (string, error) {
	t, err := template.ParseFiles(tmplPath)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, map[string]any{
		"User": "root", "Host": "0.0.0.0", "Port": h2oPort, "TLSPort": 0, "Dir": dir,
		"Upstream": fmt.Sprintf("http://127.0.0.1:%d/", originPort),
	}); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "h2o.conf")
	return path, os.WriteFile(path, buf.Bytes(), 0o644)
}

// playCell plays one cell in the client host and returns its run, with the push
// client's counters among the metrics.
func playCell(ctx context.Context, nw *netem.Network, s *experiment.Scenario, cell experiment.Cell, bin, outDir string) experiment.Run {
	start := time.Now()
	port := originPort
	if cell["peer"] == "h2o" {
		port = h2oPort
	}
	d, _ := time.ParseDuration(cell["segment_duration"])
	u := fmt.Sprintf("http://%s:%d/vod/seg-%s/manifest.mpd", nw.Server(), port, d)
	stats := filepath.Join(outDir, ".stats.jsonl")
	_ = os.Remove(stats)
	defer os.Remove(stats)
	argv := []string{"env", "STREAMBED_H2PUSH_STATS=" + stats, bin, "play", u, "--json", "--quiet", "--transport", "h2cpush-" + cell["strategy"]}
	if s.Play.ABR != "" {
		argv = append(argv, "--abr", s.Play.ABR)
	}
	if r := s.CellRate(cell); r != "" {
		argv = append(argv, "--link-rate", r)
	}
	argv = append(argv, s.Play.Args...)
	r := experiment.RunPlayer(ctx, nw, s, start, argv)
	if r.Error != "" {
		return r
	}
	if st, err := readStats(stats); err == nil && len(st) == 1 {
		attach(r.Metrics, st[0])
	}
	return r
}
