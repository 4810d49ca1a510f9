//go:build linux

package wspush

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/testmedia"
)

// TestNetemStepDown: on an emulated link, a cap below the top rung's bitrate makes
// the server step down, with either policy. Needs root (network namespaces); CI runs
// as root.
//
// With WSPUSH_NETEM_OUT=DIR set it runs the whole experiment of
// docs/results/wspush-adaptation.md instead — 2 Mbit/s, 300 kbit/s, 2 Mbit/s — and
// writes one timeline per policy (DIR/POLICY.json).
func TestNetemStepDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root to create network namespaces (CI runs as root)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("skipped: no /dev/net/tun")
	}
	out := os.Getenv("WSPUSH_NETEM_OUT")
	phases := []phase{{"2mbit", 6 * time.Second}, {"300kbit", 12 * time.Second}}
	if out != "" {
		phases = append(phases, phase{"2mbit", 20 * time.Second})
	}
	// WSPUSH_NETEM_LADDER (e.g. 360p:400k,540p:1000k,720p:2500k) and
	// WSPUSH_NETEM_PHASES (e.g. 6mbit:20s,1.5mbit:20s,6mbit:20s) run another
	// experiment; the checks below then only apply to the default one.
	asset, custom := testmedia.Asset(t), false
	if l := os.Getenv("WSPUSH_NETEM_LADDER"); l != "" {
		asset, custom = testmedia.AssetWith(t, testmedia.Options{Ladder: l, AudioBitrate: 128000}), true
	}
	if p := os.Getenv("WSPUSH_NETEM_PHASES"); p != "" {
		phases, custom = nil, true
		for _, f := range strings.Split(p, ",") {
			r, d, _ := strings.Cut(f, ":")
			dd, err := time.ParseDuration(d)
			if err != nil {
				t.Fatalf("WSPUSH_NETEM_PHASES: %v", err)
			}
			phases = append(phases, phase{r, dd})
		}
	}
	var all []Timeline
	defer func() {
		if out != "" && len(all) > 0 {
			if err := os.WriteFile(filepath.Join(out, "adaptation.svg"), timelineSVG(all, phases), 0o644); err != nil {
				t.Error(err)
			}
		}
	}()
	for _, pol := range []string{PolicyTCP, PolicyBuffer} {
		t.Run(pol, func(t *testing.T) {
			tl := runNetem(t, asset, pol, phases)
			all = append(all, tl)
			if out != "" {
				b, _ := json.MarshalIndent(tl, "", " ")
				if err := os.WriteFile(filepath.Join(out, pol+".json"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if custom {
				return
			}
			capAt := phases[0].d.Seconds()
			var top, down bool
			for _, e := range tl.Events {
				if e.Type != "switch" {
					continue
				}
				if e.To == "v360" && e.T < capAt {
					top = true
				}
				if e.To == "v180" && e.T > capAt {
					down = true
					t.Logf("%s: stepped down %.1fs after the cap: %s", pol, e.T-capAt, e.Reason)
					break
				}
			}
			if !top {
				t.Errorf("%s never reached v360 on the 2 Mbit/s link: %+v", pol, tl.Events)
			}
			if !down {
				t.Errorf("%s did not step down under a 300 kbit/s cap: %+v", pol, tl.Events)
			}
		})
	}
}

type phase struct {
	rate string
	d    time.Duration
}

// Timeline is what a client on the emulated link saw: segments as they completed,
// and the server's switch, skip and adapt messages, in seconds from the start.
type Timeline struct {
	Policy   string         `json:"policy"`
	Phases   []string       `json:"phases"`
	Segments []TimedSegment `json:"segments"`
	Events   []TimedEvent   `json:"events"`
}

// TimedSegment is one complete video segment.
type TimedSegment struct {
	T      float64 `json:"t"` // arrival of its last chunk
	Number uint64  `json:"number"`
	Track  string  `json:"track"`
	Kbps   float64 `json:"kbps"` // its declared bandwidth
	Bytes  int     `json:"bytes"`
	// Buffer is what a segment-level player would hold just after T, had it started
	// with the first complete segment and played in real time, and Stall the time it
	// would have stalled so far (a held or skipped segment stalls it).
	Buffer float64 `json:"buffer_s"`
	Stall  float64 `json:"stall_s"`
}

// TimedEvent is one text message.
type TimedEvent struct {
	T       float64 `json:"t"`
	Type    string  `json:"type"`
	To      string  `json:"to,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Backlog int64   `json:"backlog,omitempty"`
	Rate    float64 `json:"delivery_rate,omitempty"`
	Est     float64 `json:"estimate,omitempty"`
	RTT     float64 `json:"rtt_ms,omitempty"`
}

func runNetem(t *testing.T, asset, policy string, phases []phase) Timeline {
	profile := func(rate string) netem.Profile {
		r, err := netem.ParseRate(rate)
		if err != nil {
			t.Fatal(err)
		}
		// A bounded queue (80 ms at the low rate) as a real bottleneck has, and 20 ms each way.
		return netem.Symmetric(netem.Impairment{Rate: netem.ConstantRate(r), Queue: netem.Queue{Latency: netem.Duration(80 * time.Millisecond)}, Delay: netem.Duration(20 * time.Millisecond)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := netem.Up(ctx, netem.TwoHosts(profile(phases[0].rate)), netem.Options{Backend: netem.BackendUserspace})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()

	o := newOriginWith(t, asset, 40*time.Millisecond, Options{})
	var ln net.Listener
	if err := n.Do("server", func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(n.Server(), 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ws/{channel}", o.handler)
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = n.Do("client", func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: dial}}
	total := time.Duration(0)
	for _, p := range phases {
		total += p.d
	}
	rctx, rcancel := context.WithTimeout(ctx, total)
	defer rcancel()
	c, err := Dial(rctx, "ws://"+ln.Addr().String()+"/ws/live", DialOptions{HTTPClient: hc, Start: Start{Policy: policy, Stats: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	begin := time.Now()
	tl := Timeline{Policy: policy}
	for _, p := range phases {
		tl.Phases = append(tl.Phases, fmt.Sprintf("%s for %v", p.rate, p.d))
	}
	go func() {
		at := begin
		for i := 1; i < len(phases); i++ {
			at = at.Add(phases[i-1].d)
			select {
			case <-time.After(time.Until(at)):
			case <-rctx.Done():
				return
			}
			if err := n.SetLink("client", "server", profile(phases[i].rate)); err != nil {
				t.Errorf("set link: %v", err)
			}
		}
	}()
	asm := NewAssembler(&c.Ready)
	var last time.Time
	var buf, stall float64
	seg := c.Ready.SegmentDuration
	for {
		m, err := c.Next(rctx)
		if err != nil {
			if rctx.Err() == nil {
				t.Fatalf("session ended: %v", err)
			}
			return tl
		}
		el := m.At.Sub(begin).Seconds()
		if m.Frame == nil {
			ev := TimedEvent{T: el, Type: m.Type}
			switch m.Type {
			case "switch":
				var e Switch
				_ = json.Unmarshal(m.Text, &e)
				ev.To, ev.Reason = e.To, e.Reason
			case "adapt":
				var e Adapt
				_ = json.Unmarshal(m.Text, &e)
				ev.To, ev.Reason, ev.Backlog, ev.Rate, ev.Est, ev.RTT = e.Track, e.Reason, e.Backlog, e.DeliveryRate, e.Estimate, e.RTT
			case "skip":
				var e Skip
				_ = json.Unmarshal(m.Text, &e)
				ev.Reason = e.Reason
			}
			tl.Events = append(tl.Events, ev)
			continue
		}
		s, _ := asm.Add(m.Frame, m.At)
		if s == nil || s.Chunks == 0 || s.Track.Kind != "video" {
			continue
		}
		if !last.IsZero() {
			el := s.Last.Sub(last).Seconds()
			if buf >= el {
				buf -= el
			} else {
				stall += el - buf
				buf = 0
			}
		}
		buf += seg
		last = s.Last
		tl.Segments = append(tl.Segments, TimedSegment{T: el, Number: s.Number, Track: s.Track.ID, Kbps: float64(s.Track.Bandwidth) / 1000, Bytes: len(s.Data),
			Buffer: buf, Stall: stall})
		if testing.Verbose() && strings.Contains(os.Getenv("WSPUSH_NETEM_TRACE"), "1") {
			t.Logf("%6.2fs segment %d %s %d B", el, s.Number, s.Track.ID, len(s.Data))
		}
	}
}

// timelineSVG plots, per policy, the declared bitrate of each video segment as it
// completed beside the link rate, and the playout slack (below 0: a stall).
func timelineSVG(tls []Timeline, phases []phase) []byte {
	const w, ph, ml, mr, mt = 720.0, 150.0, 56.0, 16.0, 24.0
	total := 0.0
	for _, p := range phases {
		total += p.d.Seconds()
	}
	h := mt + float64(len(tls))*(2*ph+40)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" font-family="system-ui,sans-serif" font-size="11">`, w, h, w, h)
	px := func(t float64) float64 { return ml + t/total*(w-ml-mr) }
	top := mt
	for _, tl := range tls {
		// Bitrate panel: 0 to the highest link rate or rung.
		ceil := 0.0
		for _, p := range phases {
			r, _ := netem.ParseRate(p.rate)
			ceil = max(ceil, float64(r)/1000)
		}
		for _, sg := range tl.Segments {
			ceil = max(ceil, sg.Kbps)
		}
		ceil = math.Ceil(ceil/1000) * 1000
		py := func(v float64) float64 { return top + ph - min(v, ceil)/ceil*(ph-20) }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="600">policy %s: video rung (blue) and link rate (grey), kbit/s</text>`, ml, top+10, tl.Policy)
		for _, v := range []float64{0, ceil / 4, ceil / 2, ceil} {
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`, ml, w-mr, py(v), py(v), ml-4, py(v)+4, v)
		}
		var link strings.Builder
		t0 := 0.0
		for _, p := range phases {
			r, _ := netem.ParseRate(p.rate)
			k := float64(r) / 1000
			fmt.Fprintf(&link, "%.1f,%.1f %.1f,%.1f ", px(t0), py(k), px(t0+p.d.Seconds()), py(k))
			t0 += p.d.Seconds()
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#999" stroke-width="2" points="%s"/>`, link.String())
		var rung strings.Builder
		for _, sg := range tl.Segments {
			fmt.Fprintf(&rung, "%.1f,%.1f ", px(sg.T), py(sg.Kbps))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`, rung.String())
		for _, e := range tl.Events {
			if e.Type == "skip" {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#d62728"><title>%s</title></circle>`, px(e.T), py(0), e.Reason)
			}
		}
		top += ph + 10
		// Buffer (green) and stall time so far (red) panel: 0 to at least 6 s.
		smax := 6.0
		for _, sg := range tl.Segments {
			smax = max(smax, math.Ceil(sg.Stall/2)*2, math.Ceil(sg.Buffer/2)*2)
		}
		sy := func(v float64) float64 { return top + ph - max(min(v, smax), 0)/smax*(ph-20) }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">buffer of a segment-level player after each segment (green) and its stall time so far (red), s</text>`, ml, top+10)
		for _, v := range []float64{0, smax / 3, 2 * smax / 3, smax} {
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`, ml, w-mr, sy(v), sy(v), ml-4, sy(v)+4, v)
		}
		var bufL, stallL strings.Builder
		for _, sg := range tl.Segments {
			fmt.Fprintf(&bufL, "%.1f,%.1f ", px(sg.T), sy(sg.Buffer))
			fmt.Fprintf(&stallL, "%.1f,%.1f ", px(sg.T), sy(sg.Stall))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#2ca02c" stroke-width="2" points="%s"/>`, bufL.String())
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#d62728" stroke-width="2" points="%s"/>`, stallL.String())
		for t := 0.0; t <= total; t += 5 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0fs</text>`, px(t), top+ph+4, t)
		}
		top += ph + 30
	}
	b.WriteString(`</svg>`)
	return []byte(b.String())
}
