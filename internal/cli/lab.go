package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/lab/experiment"
	"github.com/streambed/streambed/internal/lab/netem"
)

// Lab runs experiment scenarios.
func Lab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, labUsage)
		if len(args) == 0 {
			return errors.New("missing subcommand (run)")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "run":
		return labRun(ctx, args[1:], stdout, stderr)
	case "report":
		return labReport(args[1:], stdout, stderr)
	case "compare":
		return labCompare(ctx, args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown lab subcommand %q (run, compare, report)", args[0])
}

const labUsage = `Usage: streambed lab run SCENARIO.yaml [flags]
       streambed lab compare [--profile P] [--transports LIST] [--clients headless|browser] [flags]
       streambed lab report RESULTS.json [--out DIR]

run: packages the scenario's content (cached), builds an emulated network (hosts
"client" and "server"), starts the origin in the server host, and for every cell of
the scenario's parameter matrix runs ` + "`streambed play --json`" + ` in the client host,
the scenario's number of times. Writes results.json, results.csv and report.html
(tables with spread, plots, published figures beside ours). Needs root (namespaces).

compare: plays one live channel (2 s segments in one-frame chunks) over every
transport Streambed has — HTTP/1.1, h2c, h2, HTTP/2 push, WebSocket push, ParS — on
one emulated link, and writes one report side by side: start-up, latency, stalls,
bitrate, switches, requests, overhead bytes, link utilisation. --profile names a link
in experiments/profiles (broadband by default; lossy-50ms, bursty-loss, ...) or a
profile file. --clients browser plays each transport in headless Chromium with the
player page instead (node web/scripts/labclient.mjs in the client host; run from the
repository after make build): dash.js over HTTP/1.1 and h2 (LL-DASH), hls.js (hls,
hls-h2: LL-HLS), WebSocket push (ws); h2c, HTTP/2 push and ParS are reported as not
playable by a browser. Needs root (namespaces).

report: re-renders report.html from a results.json.

Scenarios live in experiments/. Examples:
  sudo streambed lab compare
  sudo streambed lab compare --profile lossy-50ms --repetitions 3
  sudo streambed lab run experiments/h2-pull.yaml --out docs/results/h2-pull
  streambed lab run experiments/smoke.yaml --limit 2
`

func labRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output `folder` (default lab-results/NAME)")
	cache := fs.String("cache", filepath.Join(".cache", "lab-content"), "`folder` for packaged content, reused across runs")
	backend := fs.String("backend", "auto", "netem backend: auto, userspace or kernel")
	limit := fs.Int("limit", 0, "run only the first `N` runs (a quick check)")
	verbose := fs.Bool("v", false, "log network and origin details")
	fs.Usage = func() { fmt.Fprint(stderr, labUsage, "\nFlags:\n"); fs.PrintDefaults() }
	// Accept the scenario before or after the flags.
	var file string
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if file == "" && fs.NArg() > 0 {
		file = fs.Arg(0)
	}
	if file == "" {
		fs.Usage()
		return errors.New("which scenario? e.g. streambed lab run experiments/smoke.yaml")
	}
	s, err := experiment.LoadScenario(file)
	if err != nil {
		return err
	}
	return runScenario(ctx, s, labRunOptions{out: *out, cache: *cache, backend: *backend, verbose: *verbose, limit: *limit},
		fmt.Sprintf("%d cells × %d repetitions", len(s.Cells()), s.Repetitions), stdout, stderr)
}

// labRunOptions are the flags lab run and lab compare share.
type labRunOptions struct {
	out, cache, backend string
	verbose             bool
	limit               int
}

// runScenario runs s on an emulated network and writes its results and report; it
// fails when any run failed.
func runScenario(ctx context.Context, s *experiment.Scenario, o labRunOptions, what string, stdout, stderr io.Writer) error {
	b, err := netem.ParseBackend(o.backend)
	if err != nil {
		return err
	}
	outDir, cacheDir, err := experiment.Folders(o.out, o.cache, s.Name)
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	fmt.Fprintf(stderr, "lab: %s — %s\n", s.Title, what)
	res, err := experiment.Execute(ctx, s, experiment.Options{
		OutDir: outDir, CacheDir: cacheDir, Backend: b, Progress: stderr, Log: log, Limit: o.limit,
	})
	if res == nil {
		return err
	}
	if werr := res.Write(outDir); werr != nil && err == nil {
		err = werr
	}
	failed, skipped := 0, 0
	for _, r := range res.Runs {
		if r.Skipped != "" {
			skipped++
		} else if r.Error != "" {
			failed++
		}
	}
	fmt.Fprintf(stdout, "%d runs (%d failed, %d not playable by the client). Report: %s\n", len(res.Runs)-skipped, failed, skipped, filepath.Join(outDir, "report.html"))
	if failed > 0 && err == nil {
		err = fmt.Errorf("%d of %d runs failed; see the report's \"Failed runs\"", failed, len(res.Runs)-skipped)
	}
	return err
}

func labCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "broadband", "link `profile`: a name in experiments/profiles or a profile file")
	transports := fs.String("transports", "", "comma-separated player `transports` (default "+strings.Join(experiment.DefaultCompareTransports, ",")+"; hls and hls-h2 play the LL-HLS playlist)")
	duration := durationFlag(fs, "duration", 30*time.Second, "each player's session")
	reps := fs.Int("repetitions", 1, "runs per transport (`N`; medians and spreads from 3 on)")
	clients := fs.String("clients", "headless", "`players`: headless (the Go player) or browser (headless Chromium with the player page)")
	out := fs.String("out", "", "output `folder` (default lab-results/compare-PROFILE)")
	cache := fs.String("cache", filepath.Join(".cache", "lab-content"), "`folder` for packaged content, reused across runs")
	backend := fs.String("backend", "auto", "netem backend: auto, userspace or kernel")
	verbose := fs.Bool("v", false, "log network and origin details")
	fs.Usage = func() { fmt.Fprint(stderr, labUsage, "\nFlags (compare):\n"); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("lab compare takes no arguments (got %q); see --help", fs.Arg(0))
	}
	var list []string
	if *transports != "" {
		list = strings.Split(*transports, ",")
	}
	s, err := experiment.CompareScenario(experiment.CompareOptions{
		Profile: *profile, Transports: list, Duration: *duration, Repetitions: *reps, Clients: *clients,
	})
	if err != nil {
		return err
	}
	return runScenario(ctx, s, labRunOptions{out: *out, cache: *cache, backend: *backend, verbose: *verbose},
		fmt.Sprintf("%d transports × %d repetitions, %v each", len(s.Cells()), s.Repetitions, *duration), stdout, stderr)
}

func labReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output `folder` (default: beside the results)")
	var file string
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if file == "" {
		return errors.New("which results.json?")
	}
	res, err := experiment.LoadResults(file)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Dir(file)
	}
	if err := res.Write(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Report: %s\n", filepath.Join(*out, "report.html"))
	return nil
}
