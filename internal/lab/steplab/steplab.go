// Package steplab runs a live channel over WebSocket push through an emulated link
// whose rate steps, and records what one client saw: every complete video segment as
// it arrived and the server's switch, skip and adapt messages (a Timeline).
//
// Run needs root (network namespaces, internal/lab/netem). The test
// TestNetemStepDown (internal/transport/wspush) checks one run; the program
// internal/lab/wspushlab runs the experiments of
// docs/results/wspush-adaptation.md with any ladder and steps and writes their
// timelines and plot. Exploration lives there, not in the test.
package steplab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// Phase is one step of the link: its rate ("2mbit", "300kbit") for a while.
type Phase struct {
	Rate string
	For  time.Duration
}

// ParsePhases reads "RATE:DURATION,..." (e.g. "6mbit:20s,1.5mbit:20s,6mbit:20s").
func ParsePhases(s string) ([]Phase, error) {
	var out []Phase
	for _, f := range strings.Split(s, ",") {
		r, d, ok := strings.Cut(strings.TrimSpace(f), ":")
		if !ok {
			return nil, fmt.Errorf("phase %q: want RATE:DURATION", f)
		}
		if _, err := netem.ParseRate(r); err != nil {
			return nil, fmt.Errorf("phase %q: %w", f, err)
		}
		dd, err := time.ParseDuration(d)
		if err != nil || dd <= 0 {
			return nil, fmt.Errorf("phase %q: bad duration %q", f, d)
		}
		out = append(out, Phase{r, dd})
	}
	return out, nil
}

// Options describe one run.
type Options struct {
	Asset  string        // folder of a packaged asset, looped live as channel "live"
	Policy string        // the session's policy: wspush.PolicyTCP, wspush.PolicyBuffer, ...
	Phases []Phase       // the link's steps, in order; the run lasts their sum
	Chunk  time.Duration // live chunk duration (0: 40 ms, one frame at 25 fps)
	// Trace, when set, is told of every complete segment.
	Trace func(format string, args ...any)
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

// profile is the link at rate: a bounded queue (80 ms at the rate) as a real
// bottleneck has, and 20 ms each way.
func profile(rate string) (netem.Profile, error) {
	r, err := netem.ParseRate(rate)
	if err != nil {
		return netem.Profile{}, err
	}
	return netem.Symmetric(netem.Impairment{Rate: netem.ConstantRate(r), Queue: netem.Queue{Latency: netem.Duration(80 * time.Millisecond)}, Delay: netem.Duration(20 * time.Millisecond)}), nil
}

// origin serves asset looped live as channel "live" over WebSocket push, on ln.
func origin(ctx context.Context, asset string, chunk time.Duration, ln net.Listener) (stop func(), err error) {
	// Assets are named after their folder: serve it as "test".
	tmp, err := os.MkdirTemp("", "steplab-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "test")
	cleanup := func() { os.RemoveAll(tmp) }
	if err := os.Symlink(asset, dir); err != nil {
		cleanup()
		return nil, err
	}
	a, err := hub.OpenAsset(dir)
	if err != nil {
		cleanup()
		return nil, err
	}
	h := hub.New()
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(ctx)
	if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", ChunkDuration: chunk, DVRWindow: 20 * time.Second, AvailabilityStart: time.Unix(0, 0)}); err != nil {
		cancel()
		cleanup()
		return nil, err
	}
	handler, err := wspush.NewHandler(ctx, h, wspush.Options{})
	if err != nil {
		cancel()
		h.Close()
		cleanup()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /ws/{channel}", handler)
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	return func() {
		cancel()
		hs.Close()
		h.Close()
		cleanup()
	}, nil
}

// Run plays o.Phases of the live channel over one push session through the stepped
// link and returns the timeline. Needs root.
func Run(ctx context.Context, o Options) (Timeline, error) {
	tl := Timeline{Policy: o.Policy}
	if len(o.Phases) == 0 {
		return tl, errors.New("steplab: no phases")
	}
	if o.Chunk == 0 {
		o.Chunk = 40 * time.Millisecond
	}
	first, err := profile(o.Phases[0].Rate)
	if err != nil {
		return tl, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n, err := netem.Up(ctx, netem.TwoHosts(first), netem.Options{Backend: netem.BackendUserspace})
	if err != nil {
		return tl, err
	}
	defer n.Close()

	var ln net.Listener
	if err := n.Do("server", func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(n.Server(), 0).String())
		return err
	}); err != nil {
		return tl, err
	}
	stop, err := origin(ctx, o.Asset, o.Chunk, ln)
	if err != nil {
		ln.Close()
		return tl, err
	}
	defer stop()

	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = n.Do("client", func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: dial}}
	total := time.Duration(0)
	for _, p := range o.Phases {
		total += p.For
	}
	rctx, rcancel := context.WithTimeout(ctx, total)
	defer rcancel()
	c, err := wspush.Dial(rctx, "ws://"+ln.Addr().String()+"/ws/live", wspush.DialOptions{HTTPClient: hc, Start: wspush.Start{Policy: o.Policy, Stats: true}})
	if err != nil {
		return tl, err
	}
	defer c.CloseNow()
	begin := time.Now()
	for _, p := range o.Phases {
		tl.Phases = append(tl.Phases, fmt.Sprintf("%s for %v", p.Rate, p.For))
	}
	stepErr := make(chan error, 1)
	go func() {
		defer close(stepErr)
		at := begin
		for i := 1; i < len(o.Phases); i++ {
			at = at.Add(o.Phases[i-1].For)
			select {
			case <-time.After(time.Until(at)):
			case <-rctx.Done():
				return
			}
			p, err := profile(o.Phases[i].Rate)
			if err == nil {
				err = n.SetLink("client", "server", p)
			}
			if err != nil {
				stepErr <- fmt.Errorf("set link to %s: %w", o.Phases[i].Rate, err)
				return
			}
		}
	}()
	asm := wspush.NewAssembler(&c.Ready)
	var last time.Time
	var buf, stall float64
	seg := c.Ready.SegmentDuration
	for {
		m, err := c.Next(rctx)
		if err != nil {
			if rctx.Err() == nil {
				return tl, fmt.Errorf("session ended: %w", err)
			}
			rcancel()
			return tl, <-stepErr
		}
		el := m.At.Sub(begin).Seconds()
		if m.Frame == nil {
			tl.Events = append(tl.Events, event(el, m))
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
		if o.Trace != nil {
			o.Trace("%6.2fs segment %d %s %d B", el, s.Number, s.Track.ID, len(s.Data))
		}
	}
}

// event is a text message as a TimedEvent at el seconds.
func event(el float64, m wspush.Message) TimedEvent {
	ev := TimedEvent{T: el, Type: m.Type}
	switch m.Type {
	case "switch":
		var e wspush.Switch
		_ = json.Unmarshal(m.Text, &e)
		ev.To, ev.Reason = e.To, e.Reason
	case "adapt":
		var e wspush.Adapt
		_ = json.Unmarshal(m.Text, &e)
		ev.To, ev.Reason, ev.Backlog, ev.Rate, ev.Est, ev.RTT = e.Track, e.Reason, e.Backlog, e.DeliveryRate, e.Estimate, e.RTT
	case "skip":
		var e wspush.Skip
		_ = json.Unmarshal(m.Text, &e)
		ev.Reason = e.Reason
	}
	return ev
}
