package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/fsutil"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

type variant struct {
	Name string
	Mode fdsp.Mode
	BP   uint8
	// Repair: repairOff never NACKs (the study's design), repairOn always,
	// repairFlag as -repair says (FDSP's split modes; the baselines never).
	Repair repairChoice
	Extra  bool // run only when -variants names it
}

type repairChoice uint8

const (
	repairOff repairChoice = iota
	repairFlag
	repairOn
)

var variants = []variant{
	{"tcp", fdsp.ModeTCP, 0, repairOff, false},
	{"udp", fdsp.ModeUDP, 0, repairOff, false},
	{"bp0", fdsp.ModeFDSP, 0, repairFlag, false},
	{"bp25", fdsp.ModeFDSP, 25, repairFlag, false},
	{"bp50", fdsp.ModeFDSP, 50, repairFlag, false},
	{"bp75", fdsp.ModeFDSP, 75, repairFlag, false},
	{"bp100", fdsp.ModeFDSP, 100, repairFlag, false},
	{"auto", fdsp.ModeFDSP, fdsp.BPAuto, repairFlag, false},
	{"auto-norepair", fdsp.ModeFDSP, fdsp.BPAuto, repairOff, true}, // the study's design, adaptive
	{"udp-repair", fdsp.ModeUDP, 0, repairOn, true},                // what repair alone does
}

// Row is one run's result.
type Row struct {
	Table         int      `json:"table"`
	Clip          string   `json:"clip"`
	Asset         string   `json:"asset"`
	Link          string   `json:"link"`
	RTTms         int      `json:"rtt_ms"`
	Rep           int      `json:"rep"`
	Variant       string   `json:"variant"`
	Repair        bool     `json:"repair"` // the client NACKed lost UDP packets (our fix, not the study's design)
	BP            float64  `json:"bp"`
	RebufferMS    float64  `json:"rebuffer_ms"`
	RebufferCount int      `json:"rebuffer_count"`
	StartupMS     float64  `json:"startup_delay_ms"`
	PLR           float64  `json:"plr"`
	UDPLoss       float64  `json:"udp_loss"`
	Decodable     float64  `json:"decodable"`
	Frames        int      `json:"frames_decoded"`
	AUs           int      `json:"access_units"`
	PSNR          *float64 `json:"psnr_db"`
	TCPBytes      int64    `json:"tcp_bytes"`
	UDPBytes      int64    `json:"udp_bytes"`
	MeanMbps      float64  `json:"mean_mbit_s"`
	// UDP datagrams the client's kernel dropped: receive buffer full (bursts the
	// client did not read in time), bad checksum (the link's corruption).
	// nil: not recorded (runs before the counters existed).
	RcvbufErrors *int64       `json:"client_rcvbuf_errors"`
	CsumErrors   *int64       `json:"client_csum_errors"`
	Error        string       `json:"error,omitempty"`
	Throughput   []Throughput `json:"throughput,omitempty"`
	Stats        fdsp.Stats   `json:"fdsp"`
}

func newRow(st fdsp.Stats, err error) Row {
	r := Row{BP: st.BP, RebufferMS: st.RebufferMS, RebufferCount: st.RebufferCount, StartupMS: st.StartupMS,
		PLR: st.PLR, UDPLoss: st.UDPLoss, Decodable: st.Decodable, AUs: st.AUs, TCPBytes: st.TCPBytes, UDPBytes: st.UDPBytes, Stats: st}
	if st.SessionS > 0 {
		r.MeanMbps = float64(st.TCPBytes+st.UDPBytes) * 8 / st.SessionS / 1e6
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// studyLink is Table 1's link at one RTT: delay RTT/2 each way, jitter 20 % of it,
// 0.2 % loss, duplication, corruption and reordering, no rate limit.
func studyLink(rtt time.Duration) netem.Impairment {
	delay := rtt / 2
	return netem.Impairment{
		Delay: netem.Duration(delay), Jitter: netem.Duration(delay / 5),
		Loss: netem.Bernoulli(0.2), Duplicate: 0.2, Corrupt: 0.2, Reorder: 0.2,
	}
}

func table1(ctx context.Context, c config) error {
	h, cs, err := contents(ctx, c, c.clips, []int{4_000_000})
	if err != nil {
		return err
	}
	var rows []Row
	for _, rtt := range c.rtts {
		l, err := newLab(ctx, h, netem.Symmetric(studyLink(rtt)), c.cc, c.substream, c.serverLogger())
		if err != nil {
			return err
		}
		l.repair = c.repair
		for rep := 1; rep <= c.reps; rep++ {
			for _, ct := range cs {
				var ref []byte
				for _, v := range variants {
					named := strings.Contains(","+c.variants+",", ","+v.Name+",")
					if (c.variants != "" && !named && (v.Name != "tcp" || !c.ref)) || (v.Extra && !named) {
						continue
					}
					log.Printf("RTT %s, rep %d, %s: %s", rtt, rep, ct.Name, v.Name)
					var vid bytes.Buffer
					st, _, err := l.play(ctx, "vod/"+ct.Name, v, &vid, time.Second)
					row := newRow(st, err)
					row.Table, row.Clip, row.Asset, row.Link, row.RTTms, row.Rep, row.Variant = 1, ct.Clip, ct.Name, "study", int(rtt/time.Millisecond), rep, v.Name
					row.Repair = l.repairs(v)
					drops, csum := l.rcvbufErrors, l.csumErrors
					row.RcvbufErrors, row.CsumErrors = &drops, &csum
					row.Frames = frames(vid.Bytes())
					if v.Name == "tcp" {
						ref = vid.Bytes()
					} else if ref != nil && row.Frames == frames(ref) && row.Frames > 0 {
						row.PSNR = psnr(vid.Bytes(), ref)
					}
					rows = append(rows, row)
					if err := write(c.out, rows); err != nil {
						l.Close()
						return err
					}
				}
			}
		}
		l.Close()
	}
	table(os.Stdout, rows)
	return bpTrace(c.out, rows)
}

// bpTrace plots the BP of every adaptive run over the session, one chart per clip
// (bp-trace-CLIP.svg), one line per RTT and repetition: each substream's BP from its
// media start to its end (substreams are taken as equal: the played media over their
// count). Lines are offset by 0.7 % each so equal traces stay visible.
func bpTrace(out string, rows []Row) error {
	byClip := map[string][]series{}
	for _, r := range rows {
		if r.Variant != "auto" || len(r.Stats.BPs) == 0 {
			continue
		}
		off := 0.7 * float64(len(byClip[r.Clip]))
		s := series{Name: fmt.Sprintf("%d ms #%d", r.RTTms, r.Rep)}
		sub := float64(r.AUs) / 30 / float64(len(r.Stats.BPs)) // 30 fps
		for k, bp := range r.Stats.BPs {
			s.X = append(s.X, float64(k)*sub, float64(k+1)*sub)
			s.Y = append(s.Y, float64(bp)+off, float64(bp)+off)
		}
		byClip[r.Clip] = append(byClip[r.Clip], s)
	}
	for clip, ss := range byClip {
		svg := timeChart("adaptive BP per substream, "+clip+" clip", "media s", "BP % (offset per line)", 104, ss)
		if err := fsutil.WriteFileAtomic(filepath.Join(out, "bp-trace-"+clip+".svg"), svg, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func table(f *os.File, rows []Row) {
	fmt.Fprintln(f, "| clip | RTT | rep | variant | BP | rebuffering ms (instances) | start-up ms | PLR % | UDP loss % | decodable | frames | PSNR dB |")
	fmt.Fprintln(f, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ps := "—"
		if r.PSNR != nil {
			ps = fmt.Sprintf("%.2f", *r.PSNR)
		}
		fmt.Fprintf(f, "| %s | %d | %d | %s | %.0f %v | %.0f (%d) | %.0f | %.3f | %.3f | %.3f | %d/%d | %s |\n", r.Clip, r.RTTms, r.Rep, r.Variant, r.BP, r.Stats.BPs, r.RebufferMS, r.RebufferCount, r.StartupMS, 100*r.PLR, 100*r.UDPLoss, r.Decodable, r.Frames, r.AUs, ps)
	}
}
