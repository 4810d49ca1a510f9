// Command parsstudy reproduces the ParS measurements (issue #6) under emulated networks:
// aggregate throughput against the number of connections N for several loss rates,
// RTTs, link rates and numbers of competing TCP flows; the model's estimates of the
// capacity C and competing flows M against the true values; segment download time
// against segment size; start-up time of ParS against Parallel; and aria2c
// (-x N -s N -k 1M) on the same segment files and links, side by side.
//
// It needs root (network namespaces), FFmpeg (to package the synthetic content) and
// aria2c. Run from the repository root:
//
//	sudo go run ./internal/lab/parsstudy -out docs/results
//
// Each part writes docs/results/pars-<part>/{results.json,results.csv,report.html}
// with the lab's report format; -parts picks parts, -quick makes a small run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/lab/experiment"
	"github.com/streambed/streambed/internal/lab/netem"
)

type options struct {
	out, cache, cc string
	parts          map[string]bool
	quick          bool
	reps           int
	budget         time.Duration
	autoBudget     time.Duration
	queue          netem.Queue
	seed           uint64
	only           string
	progress       io.Writer
	conns          []int        // N of the throughput and model cells
	ariaN          map[int]bool // N at which aria2c runs beside ParS
	serial         bool         // also ParS without pipelining (pars-serial), for A/B in the same run
	ssai           int          // tcp_slow_start_after_idle in the origin's namespace, -1 unchanged
	rangesPerConn  int          // > 1: also ParS with this many ranges per connection (pars-rR, pars-h1xS-rR)
	clients        string       // comma-separated ParS variants to keep (default: all that the flags make)
	startupN       []int
	small          bool // start-up also with the small first segment (360p, 1 s)
	streams        int  // ParS requests per connection at once (2: h2c on each connection)
}

func main() {
	var o options
	var parts, queue string
	flag.StringVar(&o.out, "out", "docs/results", "folder for the pars-* result folders")
	flag.StringVar(&o.cache, "cache", ".cache/pars-study", "packaged content, reused across runs")
	flag.StringVar(&o.cc, "cc", "cubic", "TCP congestion control of the origin's connections (the sender): cubic, reno, bbr, or \"\" for the system default")
	flag.StringVar(&parts, "parts", "throughput,model,segsize,startup", "parts to run: throughput (ParS and aria2c), model (ParS cells and the estimator), segsize, startup")
	flag.BoolVar(&o.quick, "quick", false, "a small run: default profile only, one repetition, short budgets")
	flag.IntVar(&o.reps, "reps", 2, "repetitions of every cell")
	flag.DurationVar(&o.budget, "budget", 8*time.Second, "transfer time per throughput cell")
	flag.DurationVar(&o.autoBudget, "auto-budget", 20*time.Second, "transfer time of the auto (estimator) run per condition")
	flag.StringVar(&queue, "queue", "100ms", "drop-tail queue of the bottleneck (netem queue: packets, bytes or latency)")
	flag.Uint64Var(&o.seed, "seed", 6, "seed of the emulated loss")
	flag.StringVar(&o.only, "conditions", "", "comma-separated condition names to run (default: all, e.g. loss=1%,rtt=150ms,competing=2)")
	var conns, ariaN, startupN string
	flag.StringVar(&conns, "connections", "1,2,4,8", "N of the throughput and model cells")
	flag.StringVar(&ariaN, "aria", "", "N at which aria2c -x N runs beside ParS (default: every -connections)")
	flag.IntVar(&o.streams, "streams", 1, "ParS: requests per connection at once; 2 speaks h2c on each of the N connections (pipelining within a connection)")
	flag.IntVar(&o.ssai, "slow-start-after-idle", -1, "net.ipv4.tcp_slow_start_after_idle in the origin's namespace (0 or 1; -1 leaves the kernel's default, 1): 0 keeps a connection's window across idle gaps, as an origin may set it")
	flag.IntVar(&o.rangesPerConn, "ranges-per-conn", 1, "> 1: also run ParS cutting each segment into this many ranges per connection (pars-rR; with -streams S also pipelined HTTP/1.1, pars-h1xS-rR)")
	flag.StringVar(&o.clients, "clients", "", "keep only these ParS variants (comma-separated, e.g. pars,pars-h1x2,pars-h1x2-r2; pars-serial is kept by -serial)")
	flag.BoolVar(&o.serial, "serial", true, "also run ParS without pipelining (client pars-serial) in the same run")
	flag.StringVar(&startupN, "startup-connections", "1,2,4,8", "N of the start-up cells")
	flag.BoolVar(&o.small, "startup-small", true, "start-up also with a small first segment: 360p at 800 kbit/s in 1 s segments")
	flag.Parse()
	var err error
	if o.conns, err = parseNs(conns); err != nil {
		log.Fatal(err)
	}
	if o.startupN, err = parseNs(startupN); err != nil {
		log.Fatal(err)
	}
	o.ariaN = map[int]bool{}
	an := o.conns
	if ariaN != "" {
		if an, err = parseNs(ariaN); err != nil {
			log.Fatal(err)
		}
	}
	for _, n := range an {
		o.ariaN[n] = true
	}
	o.parts = map[string]bool{}
	for _, p := range strings.Split(parts, ",") {
		o.parts[strings.TrimSpace(p)] = true
	}
	q, err := netem.ParseQueue(queue)
	if err != nil {
		log.Fatal(err)
	}
	o.queue = q
	if o.quick {
		o.reps, o.budget, o.autoBudget = 1, 4*time.Second, 10*time.Second
	}
	o.progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Fatal(err)
	}
}

// parseNs reads a list of connection counts (1..8).
func parseNs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 8 {
			return nil, fmt.Errorf("connections %q: want numbers from 1 to 8", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// The study's default link and the variations the issue asks for.
var (
	defaultCond = condition{Name: "default", Rate: 10 * netem.Mbit, RTT: 50 * time.Millisecond, Loss: 1}
	connections = []int{1, 2, 4, 8}
)

func conditions(quick bool) []condition {
	if quick {
		return []condition{defaultCond}
	}
	var cs []condition
	with := func(name string, f func(*condition)) {
		c := defaultCond
		c.Name = name
		f(&c)
		cs = append(cs, c)
	}
	for _, l := range []float64{0.1, 0.5, 1, 2} {
		with(fmt.Sprintf("loss=%g%%", l), func(c *condition) { c.Loss = l })
	}
	for _, r := range []time.Duration{100 * time.Millisecond, 150 * time.Millisecond} {
		with("rtt="+r.String(), func(c *condition) { c.RTT = r })
	}
	for _, r := range []netem.Rate{5 * netem.Mbit, 20 * netem.Mbit} {
		with("rate="+r.String(), func(c *condition) { c.Rate = r })
	}
	for _, m := range []int{2, 4} {
		with(fmt.Sprintf("competing=%d", m), func(c *condition) { c.Competing = m })
	}
	return cs
}

func run(ctx context.Context, o options) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the study needs root for network namespaces")
	}
	if !hasAria() {
		return errNoAria
	}
	var err error
	if o.out, o.cache, err = experiment.Folders(o.out, o.cache, ""); err != nil {
		return err
	}
	durs := []time.Duration{2 * time.Second}
	if o.parts["segsize"] {
		durs = []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	}
	dirs, err := packageContent(ctx, o.cache, "", durs, 48*time.Second, "720p:3000k", o.progress)
	if err != nil {
		return err
	}
	named := map[string]string{}
	if o.parts["startup"] && o.small {
		small, err := packageContent(ctx, o.cache, "small-", []time.Duration{time.Second}, 48*time.Second, "360p:800k", o.progress)
		if err != nil {
			return err
		}
		named[smallContent] = small[time.Second]
	}
	l, err := upLab(ctx, dirs, named, defaultCond, o.queue, o.cc, o.seed)
	if err != nil {
		return err
	}
	defer l.close()
	if o.ssai >= 0 {
		if err := l.setSlowStartAfterIdle(o.ssai); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.progress, "network: %s backend (%s); origin at %s sending with %q\n", l.nw.Backend(), l.nw.Why(), l.base, o.cc)
	meta := func(name string) *experiment.Results {
		r := experiment.NewResults(nil)
		r.Backend = string(l.nw.Backend())
		if b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
			r.Commit = strings.TrimSpace(string(b)) + " (+ working tree)"
		}
		_ = name
		return r
	}
	if o.parts["throughput"] || o.parts["model"] {
		save := func(thr, model *experiment.Results) error {
			if o.parts["throughput"] {
				if err := thr.Write(filepath.Join(o.out, "pars-throughput")); err != nil {
					return err
				}
			}
			return model.Write(filepath.Join(o.out, "pars-model"))
		}
		if _, _, err := throughputAndModel(ctx, l, o, meta, save); err != nil {
			return err
		}
	}
	if o.parts["segsize"] {
		r, err := segmentSizes(ctx, l, o, meta("segsize"))
		if err != nil {
			return err
		}
		if err := r.Write(filepath.Join(o.out, "pars-segsize")); err != nil {
			return err
		}
	}
	if o.parts["startup"] {
		r, err := startup(ctx, l, o, meta("startup"))
		if err != nil {
			return err
		}
		if err := r.Write(filepath.Join(o.out, "pars-startup")); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.progress, "done: results in %s/pars-*\n", o.out)
	return nil
}
