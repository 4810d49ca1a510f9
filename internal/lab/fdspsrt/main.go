// Command fdspsrt runs FDSP and its peer SRT side by side in the lab, under the
// FDSP study's Table 1 links: per RTT, jitter 20 % of the one-way delay and
// 0.2 % loss, duplication, corruption and reordering each way (the lab's
// user-space netem, in namespaces it creates and deletes). SRT is
// srt-live-transmit (Debian srt-tools) carrying the same H.264 bitstream (and
// audio) remuxed to MPEG-TS, with a latency window of 3× and 4× the RTT (SRT's
// guidance: 3× up to 1 % loss, 4× up to 3 %). FDSP (adaptive BP, fixed BPs, the
// all-UDP and all-TCP baselines) gets the same budget as its playout delay, and
// both get the same small jitter buffer on top. For each run it reports
// rebuffering (start-up included, FDSP's rule: see playout.go), packet loss after
// recovery, and the added latency at which frames were shown.
//
// Needs root, FFmpeg and srt-live-transmit. From the repository root:
//
//	sudo go run ./internal/lab/fdspsrt -out docs/results/fdsp-srt
//
// It writes results.json and results.csv in -out and prints a Markdown table;
// -summarize DIR,DIR prints the tables again and issue 12's goal per row.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/source/pkg"
	"github.com/streambed/streambed/internal/transport/fdsp"
	"github.com/streambed/streambed/internal/transport/pars"
)

type config struct {
	out, cache, ladder, cc, only string
	asset                        string // a packaged asset instead of the synthetic clip
	srtInput                     string // how the datagrams reach the SRT sender: udp or stdin
	rtts                         []time.Duration
	multipliers                  []int
	clip, substream, jitterBuf   time.Duration
	fdspDelay                    float64
	repair                       bool    // -repair: FDSP's split variants NACK lost UDP packets
	repairDelay                  float64 // the playout delay fraction of the variants that repair
	fps                          int
	seed                         uint64
}

func main() {
	var c config
	flag.StringVar(&c.out, "out", "docs/results/fdsp-srt", "result folder")
	flag.StringVar(&c.cache, "cache", ".cache/fdsp-srt", "packaged content and its TS, reused across runs")
	rtts := flag.String("rtts", "50ms,150ms,250ms", "RTTs to run")
	mults := flag.String("multipliers", "3,4", "SRT latency windows as multiples of the RTT (FDSP's playout delay is the same)")
	flag.DurationVar(&c.clip, "clip", 20*time.Second, "length of the synthetic clip")
	flag.StringVar(&c.ladder, "ladder", "1080p:4000k", "the one rung streamed")
	flag.IntVar(&c.fps, "fps", 30, "frame rate")
	flag.DurationVar(&c.substream, "substream", 10*time.Second, "FDSP substream length (the study's 10 s)")
	flag.DurationVar(&c.jitterBuf, "jitter-buffer", 50*time.Millisecond, "playout delay both players add on top of the latency budget (timer slack of the local pipeline)")
	flag.Float64Var(&c.fdspDelay, "fdsp-delay-fraction", 1, "FDSP's playout delay as a fraction of SRT's window (1: the same budget; 0: only the jitter buffer, FDSP's lowest latency)")
	flag.StringVar(&c.cc, "cc", "cubic", "TCP congestion control of FDSP's server (\"\": the system's)")
	flag.StringVar(&c.only, "peers", "", "comma-separated subset of srt,fdsp-udp,fdsp-udp-repair,fdsp-bp0,fdsp-bp50,fdsp-bp100,fdsp-auto,fdsp-auto-norepair,fdsp-tcp (default all)")
	flag.Uint64Var(&c.seed, "seed", 7, "netem seed")
	flag.StringVar(&c.asset, "asset", "", "a packaged asset folder to stream instead of the synthetic clip (e.g. .cache/fdsp-study/fast-4000k, the FDSP study's fast clip: fdspstudy -prepare makes it)")
	flag.StringVar(&c.srtInput, "srt-input", "udp", "how the paced datagrams reach srt-live-transmit: udp (a local socket with the kernel's default receive buffer, which a large I-frame overflows) or stdin (a pipe: no loss before SRT)")
	flag.BoolVar(&c.repair, "repair", true, "fdsp-bp*, fdsp-auto: NACK lost UDP packets while their deadline leaves time (our fix; -repair=false: the study's design). fdsp-udp-repair always repairs, fdsp-udp and fdsp-auto-norepair never")
	flag.Float64Var(&c.repairDelay, "repair-delay-fraction", -1, "the playout delay fraction (as -fdsp-delay-fraction) of the variants that repair; negative: -fdsp-delay-fraction")
	summ := flag.String("summarize", "", "print the tables and issue 12's goal per row for these comma-separated result folders, and stop")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if *summ != "" {
		if err := summarize(os.Stdout, summaryDirs(*summ)); err != nil {
			log.Fatal(err)
		}
		return
	}
	for _, s := range strings.Split(*rtts, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			log.Fatal(err)
		}
		c.rtts = append(c.rtts, d)
	}
	if c.srtInput != "udp" && c.srtInput != "stdin" {
		log.Fatalf("-srt-input %q: want udp or stdin", c.srtInput)
	}
	for _, s := range strings.Split(*mults, ",") {
		m, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || m < 1 {
			log.Fatalf("-multipliers %q", *mults)
		}
		c.multipliers = append(c.multipliers, m)
	}
	if err := run(context.Background(), c); err != nil {
		log.Fatal(err)
	}
}

func (c config) wants(peer string) bool {
	return c.only == "" || strings.Contains(","+c.only+",", ","+peer+",")
}

// tableOne is the study's link for an RTT: half each way, jitter 20 % of it,
// 0.2 % loss, duplication, corruption and reordering.
func tableOne(rtt time.Duration) netem.Impairment {
	d := rtt / 2
	return netem.Impairment{Delay: netem.Duration(d), Jitter: netem.Duration(d / 5),
		Loss: netem.Bernoulli(0.2), Duplicate: 0.2, Corrupt: 0.2, Reorder: 0.2}
}

func run(ctx context.Context, c config) error {
	rungs, err := pkg.ParseLadder(c.ladder)
	if err != nil {
		return err
	}
	dir := filepath.Join(c.cache, "clip")
	if c.asset != "" {
		dir = filepath.Clean(c.asset)
	} else {
		log.Printf("packaging %s of %s at %d fps (cached)", c.clip, c.ladder, c.fps)
		if _, err := pkg.Package(ctx, pkg.Options{Synthetic: c.clip, OutDir: dir, Name: "clip", Ladder: rungs, FPS: c.fps, Preset: "veryfast", KeepDuration: true, Log: os.Stderr}); err != nil {
			return err
		}
	}
	ts := filepath.Join(c.cache, filepath.Base(dir)+".ts")
	if err := makeTS(ctx, dir, ts); err != nil {
		return err
	}
	b, err := os.ReadFile(ts)
	if err != nil {
		return err
	}
	ds, err := schedule(b)
	if err != nil {
		return err
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		return err
	}
	h := hub.New()
	h.AddAsset(a)
	stream := "vod/" + filepath.Base(dir) // the hub names an asset by its folder
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	var rows []row
	for _, rtt := range c.rtts {
		r, err := runRTT(ctx, c, h, stream, ds, rtt)
		rows = append(rows, r...)
		if werr := write(c.out, rows); werr != nil { // after every RTT: a long run keeps what it has
			return werr
		}
		if err != nil {
			return err
		}
	}
	table(os.Stdout, rows)
	return nil
}

func runRTT(ctx context.Context, c config, h *hub.Hub, stream string, ds []timedDatagram, rtt time.Duration) ([]row, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nw, err := netem.Up(ctx, netem.TwoHosts(netem.Symmetric(tableOne(rtt))), netem.Options{Name: "fdsp-srt", Seed: c.seed})
	if err != nil {
		return nil, err
	}
	defer nw.Close()
	var srv *fdsp.Server
	listen := func(_, addr string) (net.Listener, error) { return pars.ListenCC(ctx, addr, c.cc) }
	if err := nw.Do("server", func() (err error) {
		srv, err = fdsp.NewServer(h, "0.0.0.0:0", "0.0.0.0:0", fdsp.Options{Substream: c.substream, Listen: listen})
		return err
	}); err != nil {
		return nil, err
	}
	go srv.Serve(ctx)
	addr := netip.AddrPortFrom(nw.Server(), uint16(srv.Addr().(*net.TCPAddr).Port)).String()
	dial := func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		err = nw.Do("client", func() error {
			conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
	var rows []row
	for _, m := range c.multipliers {
		budget := time.Duration(m) * rtt
		base := row{RTTms: ms(rtt), Multiplier: m, BudgetMS: ms(budget), JitterBufferMS: ms(c.jitterBuf), FDSPDelayFraction: c.fdspDelay}
		if c.wants("srt") {
			log.Printf("RTT %s, %d× (%s): srt", rtt, m, budget)
			sd := filepath.Join(c.out, fmt.Sprintf("srt-%dms-%dx", int(rtt/time.Millisecond), m))
			if err := os.MkdirAll(sd, 0o755); err != nil {
				return rows, err
			}
			res, err := runSRT(ctx, nw, ds, budget, c.jitterBuf, sd, c.srtInput == "stdin")
			rows = append(rows, srtRow(base, res, err))
			logRow(rows[len(rows)-1])
		}
		for _, v := range fdspVariants {
			if !c.wants(v.Name) {
				continue
			}
			repair, frac := v.repairs(c.repair), c.fdspDelay
			if repair && c.repairDelay >= 0 {
				frac = c.repairDelay
			}
			log.Printf("RTT %s, %d× (%s): %s (repair %v, playout delay %.2f of the window)", rtt, m, budget, v.Name, repair, frac)
			res, err := runFDSP(ctx, addr, stream, v, repair, time.Duration(frac*float64(budget))+c.jitterBuf, dial)
			r := fdspRow(base, v, res, err)
			r.Repair, r.FDSPDelayFraction = repair, frac
			rows = append(rows, r)
			logRow(rows[len(rows)-1])
		}
	}
	return rows, nil
}
