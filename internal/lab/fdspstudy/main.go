// Command fdspstudy runs the FDSP study in the lab.
//
// Table 1 (-table 1): each clip (-clips fast,slow: FFmpeg-made 1080p30 contents,
// x264 slices=4, see content.go) streamed over FDSP at BP 0, 25, 50, 75, 100 % and
// adaptive, and over the all-TCP and all-UDP baselines, on an emulated link per RTT
// with jitter 20 % of the one-way delay and loss, duplication, corruption and
// reordering 0.2 % each (both ways). It reports rebuffering (time and instances,
// start-up included as the study counts it), PLR, decodability and PSNR against the
// all-TCP run's video.
//
// Table 2 (-table 2): the slow clip (-clips: also the fast one) at 1, 2 and 4 Mbit/s over all-TCP and FDSP on
// rate-limited links (static 1.25×, dynamic square wave, and their non-congested
// counterparts at 4× the rate), RTT 50 ms: throughput and buffer over time.
//
// The origin side is fdsp.Server in the server namespace (its TCP listener with
// CUBIC by default, TCP_CONGESTION through pars.ListenCC: the study's TCP is
// loss-based and this machine's default is BBR); the client runs in the client
// namespace. Needs root and FFmpeg. From the repository root:
//
//	sudo go run ./internal/lab/fdspstudy -table 1 -out docs/results/fdsp/table1 -rtts 50ms,150ms,250ms
//	sudo go run ./internal/lab/fdspstudy -table 2 -out docs/results/fdsp/table2
//	go run ./internal/lab/fdspstudy -summarize docs/results/fdsp/table1,docs/results/fdsp/table2
//
// It writes results.json and results.csv in -out (after every run, so a long run
// keeps what it has) and prints a Markdown table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/source/pkg"
)

type config struct {
	table     int
	out       string
	cache     string
	rtts      []time.Duration
	clips     []string
	length    time.Duration
	substream time.Duration
	cc        string
	variants  string
	reps      int
	ref       bool  // Table 1: run all-TCP first as the PSNR reference even when not asked
	bp        uint8 // Table 2's FDSP variant
	prepare   bool  // make the table's contents and stop
	serverLog bool  // the FDSP server's debug log (adaptive BP's inputs per substream) on stderr
	repair    bool  // FDSP's split variants NACK lost UDP packets (our fix)
}

// serverLogger is the FDSP server's logger: debug lines on stderr with -server-log,
// nothing otherwise (nil: the server discards).
func (c config) serverLogger() *slog.Logger {
	if !c.serverLog {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func main() {
	var c config
	var rtts, clips, bitrates string
	var bp int
	flag.IntVar(&c.table, "table", 1, "which table: 1 (RTT sweep) or 2 (multi-bitrate, rate-limited links)")
	flag.StringVar(&c.out, "out", "docs/results/fdsp/table1", "result folder")
	flag.StringVar(&c.cache, "cache", ".cache/fdsp-study", "rendered and packaged content, reused across runs")
	flag.StringVar(&rtts, "rtts", "50ms,100ms,150ms,200ms,250ms", "Table 1: RTTs to run")
	flag.StringVar(&clips, "clips", "", "contents (fast, slow); default: both for Table 1, slow for Table 2")
	flag.DurationVar(&c.length, "clip", 30*time.Second, "length of the clips")
	flag.DurationVar(&c.substream, "substream", 5*time.Second, "substream length")
	flag.StringVar(&c.cc, "cc", "cubic", "TCP congestion control on the server's listener (\"\": the system's)")
	flag.StringVar(&c.variants, "variants", "", "Table 1: comma-separated variants (default all: tcp,udp,bp0,bp25,bp50,bp75,bp100,auto); tcp runs first as the PSNR reference unless -ref=false")
	flag.IntVar(&c.reps, "reps", 1, "repetitions of each row")
	flag.BoolVar(&c.ref, "ref", true, "Table 1: run all-TCP first as the PSNR reference even when -variants leaves it out")
	flag.StringVar(&bitrates, "bitrates", "1000k,2000k,4000k", "Table 2: the clips' bitrates")
	flag.IntVar(&bp, "bp", 50, "Table 2: FDSP's BP (255: adaptive)")
	flag.BoolVar(&c.prepare, "prepare", false, "only render and package the table's contents (into -cache; content.json in -out)")
	flag.BoolVar(&c.repair, "repair", true, "FDSP variants (bp*, auto) NACK lost UDP packets while their deadline leaves time (our fix; -repair=false: the study's design). Extra variants, run only when -variants names them: auto-norepair, udp-repair")
	flag.BoolVar(&c.serverLog, "server-log", false, "the FDSP server's debug log on stderr (adaptive BP's inputs per substream)")
	summ := flag.String("summarize", "", "print Markdown summaries (medians and ranges over repetitions) of these comma-separated result folders or files, and stop")
	fixedOnly := flag.String("fixed-only", "", "-summarize: comma-separated folders or files among those whose adaptive rows are left out (made with another controller)")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if *summ != "" {
		if err := summarize(os.Stdout, summaryFiles(*summ), summaryFiles(*fixedOnly)...); err != nil {
			log.Fatal(err)
		}
		return
	}
	c.bp = uint8(bp)
	for _, s := range strings.Split(rtts, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			log.Fatal(err)
		}
		c.rtts = append(c.rtts, d)
	}
	switch {
	case clips != "":
	case c.table == 2:
		clips = "slow"
	default:
		clips = "fast,slow"
	}
	c.clips = strings.Split(clips, ",")
	var rates []int
	for _, s := range strings.Split(bitrates, ",") {
		b, err := pkg.ParseBitrate(strings.TrimSpace(s))
		if err != nil {
			log.Fatal(err)
		}
		rates = append(rates, b)
	}
	ctx := context.Background()
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		log.Fatal(err)
	}
	var err error
	switch c.table {
	case 1:
		err = table1(ctx, c)
	case 2:
		err = table2(ctx, c, rates)
	default:
		err = fmt.Errorf("-table %d: want 1 or 2", c.table)
	}
	if errors.Is(err, errPrepared) {
		log.Printf("contents ready in %s", c.cache)
		return
	}
	if err != nil {
		log.Fatal(err)
	}
}

// errPrepared stops a -prepare run once the contents are made.
var errPrepared = errors.New("contents prepared")

// contents packages (or reuses) each clip at each bitrate and adds them to a hub;
// content.json in out records what was streamed.
func contents(ctx context.Context, c config, clips []string, bitrates []int) (*hub.Hub, []*Content, error) {
	h := hub.New()
	var cs []*Content
	for _, name := range clips {
		kind, ok := clipKinds[strings.TrimSpace(name)]
		if !ok {
			return nil, nil, fmt.Errorf("clip %q: want fast or slow", name)
		}
		for _, b := range bitrates {
			ct, err := makeContent(ctx, c.cache, kind, c.length, b)
			if err != nil {
				return nil, nil, err
			}
			a, err := hub.OpenAsset(ct.dir)
			if err != nil {
				return nil, nil, err
			}
			h.AddAsset(a)
			cs = append(cs, ct)
		}
	}
	if err := fsutil.WriteJSONAtomic(c.out+"/content.json", cs, 0o644); err != nil {
		return nil, nil, err
	}
	if c.prepare {
		return nil, nil, errPrepared
	}
	return h, cs, nil
}
