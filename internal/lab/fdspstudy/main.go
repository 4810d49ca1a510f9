// Command fdspstudy runs the FDSP study's basic comparison (its Table 1) in the lab:
// one clip streamed over FDSP at BP 0, 25, 50, 75, 100 % and adaptive, and over the
// all-TCP and all-UDP baselines, on an emulated link per RTT with jitter 20 % of the
// one-way delay and loss, duplication, corruption and reordering 0.2 % each (both
// ways). It reports rebuffering (time and instances, start-up included as the study
// counts it), PLR, decodability and PSNR against the all-TCP run's video.
//
// The origin side is fdsp.Server in the server namespace (its TCP listener with
// CUBIC by default, TCP_CONGESTION through pars.ListenCC: the study's TCP is
// loss-based and this machine's default is BBR); the client runs in
// the client namespace. Needs root and FFmpeg. From the repository root:
//
//	sudo go run ./internal/lab/fdspstudy -out docs/results/fdsp -rtts 50ms,150ms
//
// It writes results.json and results.csv in -out and prints a Markdown table.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/source/pkg"
	"github.com/streambed/streambed/internal/transport/fdsp"
	"github.com/streambed/streambed/internal/transport/pars"
)

type variant struct {
	Name string
	Mode fdsp.Mode
	BP   uint8
}

var variants = []variant{
	{"tcp", fdsp.ModeTCP, 0},
	{"udp", fdsp.ModeUDP, 0},
	{"bp0", fdsp.ModeFDSP, 0},
	{"bp25", fdsp.ModeFDSP, 25},
	{"bp50", fdsp.ModeFDSP, 50},
	{"bp75", fdsp.ModeFDSP, 75},
	{"bp100", fdsp.ModeFDSP, 100},
	{"auto", fdsp.ModeFDSP, fdsp.BPAuto},
}

// Row is one run's result.
type Row struct {
	RTTms         int        `json:"rtt_ms"`
	Variant       string     `json:"variant"`
	BP            float64    `json:"bp"`
	RebufferMS    float64    `json:"rebuffer_ms"`
	RebufferCount int        `json:"rebuffer_count"`
	StartupMS     float64    `json:"startup_delay_ms"`
	PLR           float64    `json:"plr"`
	UDPLoss       float64    `json:"udp_loss"`
	Decodable     float64    `json:"decodable"`
	Frames        int        `json:"frames_decoded"`
	AUs           int        `json:"access_units"`
	PSNR          *float64   `json:"psnr_db"`
	TCPBytes      int64      `json:"tcp_bytes"`
	UDPBytes      int64      `json:"udp_bytes"`
	Error         string     `json:"error,omitempty"`
	Stats         fdsp.Stats `json:"fdsp"`
}

func main() {
	out := flag.String("out", "docs/results/fdsp", "result folder")
	cache := flag.String("cache", ".cache/fdsp-study", "packaged content, reused across runs")
	rtts := flag.String("rtts", "50ms,100ms,150ms,200ms,250ms", "RTTs to run")
	clip := flag.Duration("clip", 40*time.Second, "length of the synthetic clip")
	ladder := flag.String("ladder", "1080p:4000k", "the one rung streamed")
	fps := flag.Int("fps", 30, "frame rate")
	sub := flag.Duration("substream", 10*time.Second, "substream length")
	cc := flag.String("cc", "cubic", "TCP congestion control in the server namespace (\"\": the system's)")
	only := flag.String("variants", "", "comma-separated variants (default all: tcp,udp,bp0,bp25,bp50,bp75,bp100,auto)")
	flag.Parse()
	log.SetFlags(log.Ltime)
	if err := run(*out, *cache, *rtts, *clip, *ladder, *fps, *sub, *cc, *only); err != nil {
		log.Fatal(err)
	}
}

func run(out, cache, rttList string, clip time.Duration, ladder string, fps int, sub time.Duration, cc, only string) error {
	rungs, err := pkg.ParseLadder(ladder)
	if err != nil {
		return err
	}
	dir := filepath.Join(cache, "clip")
	log.Printf("packaging %s of %s at %d fps (cached)", clip, ladder, fps)
	if _, err := pkg.Package(context.Background(), pkg.Options{Synthetic: clip, OutDir: dir, Name: "clip", Ladder: rungs, FPS: fps, Preset: "veryfast", KeepDuration: true, Log: os.Stderr}); err != nil {
		return err
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		return err
	}
	h := hub.New()
	h.AddAsset(a)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var rows []Row
	for _, s := range strings.Split(rttList, ",") {
		rtt, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		r, err := runRTT(h, rtt, sub, cc, only)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
		if err := write(out, rows); err != nil { // after every RTT: a long run keeps what it has
			return err
		}
	}
	table(os.Stdout, rows)
	return nil
}

func runRTT(h *hub.Hub, rtt, sub time.Duration, cc, only string) ([]Row, error) {
	delay := rtt / 2
	link := netem.Impairment{
		Delay: netem.Duration(delay), Jitter: netem.Duration(delay / 5),
		Loss: netem.Bernoulli(0.2), Duplicate: 0.2, Corrupt: 0.2, Reorder: 0.2,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nw, err := netem.Up(ctx, netem.TwoHosts(netem.Symmetric(link)), netem.Options{Name: "fdsp-study", Seed: 7})
	if err != nil {
		return nil, err
	}
	defer nw.Close()
	var srv *fdsp.Server
	listen := func(network, addr string) (net.Listener, error) { return pars.ListenCC(ctx, addr, cc) }
	if err := nw.Do("server", func() (err error) {
		srv, err = fdsp.NewServer(h, "0.0.0.0:0", "0.0.0.0:0", fdsp.Options{Substream: sub, Listen: listen})
		return err
	}); err != nil {
		return nil, err
	}
	go srv.Serve(ctx)
	addr := netip.AddrPortFrom(nw.Server(), uint16(srv.Addr().(*net.TCPAddr).Port)).String()
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = nw.Do("client", func() error {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	var rows []Row
	var ref []byte
	for _, v := range variants {
		if only != "" && !strings.Contains(","+only+",", ","+v.Name+",") && v.Name != "tcp" {
			continue
		}
		var vid bytes.Buffer
		log.Printf("RTT %s: %s", rtt, v.Name)
		st, err := fdsp.Play(ctx, fdsp.ClientOptions{
			Addr: addr, Stream: "vod/clip", Mode: v.Mode, BP: v.BP, Output: &vid, Dial: dial,
			DialUDP: func(ctx context.Context, raddr string) (net.Conn, error) { return dial(ctx, "udp", raddr) },
		})
		row := Row{RTTms: int(rtt / time.Millisecond), Variant: v.Name, BP: st.BP, RebufferMS: st.RebufferMS, RebufferCount: st.RebufferCount,
			StartupMS: st.StartupMS, PLR: st.PLR, UDPLoss: st.UDPLoss, Decodable: st.Decodable, AUs: st.AUs,
			TCPBytes: st.TCPBytes, UDPBytes: st.UDPBytes, Stats: st}
		if err != nil {
			row.Error = err.Error()
		}
		row.Frames = frames(vid.Bytes())
		if v.Name == "tcp" {
			ref = vid.Bytes()
		}
		if v.Name != "tcp" && ref != nil && row.Frames == frames(ref) && row.Frames > 0 {
			row.PSNR = psnr(vid.Bytes(), ref)
		}
		log.Printf("  BP %.0f %v, rebuffer %.0f ms in %d, PLR %.4f (lost %d of %d), decodable %.3f, frames %d/%d",
			row.BP, st.BPs, row.RebufferMS, row.RebufferCount, row.PLR, st.Lost, st.Packets, row.Decodable, row.Frames, row.AUs)
		rows = append(rows, row)
	}
	return rows, nil
}

func tmpFile(b []byte) string {
	f, _ := os.CreateTemp("", "fdspstudy-*.h264")
	f.Write(b)
	f.Close()
	return f.Name()
}

// frames is how many frames FFmpeg decodes from an Annex-B stream (0 if none).
func frames(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	p := tmpFile(b)
	defer os.Remove(p)
	out, _ := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", p, "-f", "null", "-").CombinedOutput()
	m := regexp.MustCompile(`frame=\s*(\d+)`).FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(m[len(m)-1][1]))
	return n
}

// psnr is FFmpeg's average PSNR of rx against ref, frame by frame.
func psnr(rx, ref []byte) *float64 {
	a, b := tmpFile(rx), tmpFile(ref)
	defer os.Remove(a)
	defer os.Remove(b)
	out, _ := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", a, "-f", "h264", "-i", b, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-").CombinedOutput()
	m := regexp.MustCompile(`average:(\S+)`).FindSubmatch(out)
	if m == nil {
		return nil
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		v = 100 // identical to the reference (FFmpeg says inf)
	}
	return &v
}

func write(out string, rows []Row) error {
	if err := fsutil.WriteJSONAtomic(filepath.Join(out, "results.json"), rows, 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"rtt_ms", "variant", "bp", "rebuffer_ms", "rebuffer_count", "startup_delay_ms", "plr", "udp_loss", "decodable", "frames", "access_units", "psnr_db", "tcp_bytes", "udp_bytes", "error"})
	for _, r := range rows {
		ps := ""
		if r.PSNR != nil {
			ps = fmt.Sprintf("%.2f", *r.PSNR)
		}
		_ = w.Write([]string{strconv.Itoa(r.RTTms), r.Variant, fmt.Sprintf("%.1f", r.BP), fmt.Sprintf("%.0f", r.RebufferMS), strconv.Itoa(r.RebufferCount),
			fmt.Sprintf("%.0f", r.StartupMS), fmt.Sprintf("%.5f", r.PLR), fmt.Sprintf("%.5f", r.UDPLoss), fmt.Sprintf("%.3f", r.Decodable),
			strconv.Itoa(r.Frames), strconv.Itoa(r.AUs), ps, strconv.FormatInt(r.TCPBytes, 10), strconv.FormatInt(r.UDPBytes, 10), r.Error})
	}
	w.Flush()
	return fsutil.WriteFileAtomic(filepath.Join(out, "results.csv"), b.Bytes(), 0o644)
}

func table(f *os.File, rows []Row) {
	fmt.Fprintln(f, "| RTT | variant | BP | rebuffering ms (instances) | start-up ms | PLR % | UDP loss % | decodable | frames | PSNR dB |")
	fmt.Fprintln(f, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ps := "—"
		if r.PSNR != nil {
			ps = fmt.Sprintf("%.2f", *r.PSNR)
		}
		fmt.Fprintf(f, "| %d | %s | %.0f | %.0f (%d) | %.0f | %.3f | %.3f | %.3f | %d/%d | %s |\n", r.RTTms, r.Variant, r.BP, r.RebufferMS, r.RebufferCount, r.StartupMS, 100*r.PLR, 100*r.UDPLoss, r.Decodable, r.Frames, r.AUs, ps)
	}
}
