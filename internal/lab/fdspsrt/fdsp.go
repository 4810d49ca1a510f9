package main

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/transport/fdsp"
)

// fdspVariant is one FDSP configuration of the side-by-side.
type fdspVariant struct {
	Name string
	Mode fdsp.Mode
	BP   uint8
	// Repair: repairOff never NACKs (the study's design), repairOn always,
	// repairFlag as -repair says.
	Repair repairChoice
}

type repairChoice uint8

const (
	repairOff repairChoice = iota
	repairFlag
	repairOn
)

var fdspVariants = []fdspVariant{
	{"fdsp-udp", fdsp.ModeUDP, 0, repairOff},       // the study's all-UDP baseline: the PLR reduction is against it
	{"fdsp-udp-repair", fdsp.ModeUDP, 0, repairOn}, // what repair alone does, without the TCP split
	{"fdsp-bp0", fdsp.ModeFDSP, 0, repairFlag},
	{"fdsp-bp50", fdsp.ModeFDSP, 50, repairFlag},
	{"fdsp-bp100", fdsp.ModeFDSP, 100, repairFlag},
	{"fdsp-auto", fdsp.ModeFDSP, fdsp.BPAuto, repairFlag},
	{"fdsp-auto-norepair", fdsp.ModeFDSP, fdsp.BPAuto, repairOff}, // the study's design with adaptive BP
	{"fdsp-tcp", fdsp.ModeTCP, 0, repairOff},
}

// repairs says whether variant v repairs under -repair flag.
func (v fdspVariant) repairs(flag bool) bool {
	return v.Repair == repairOn || (v.Repair == repairFlag && flag)
}

// fdspResult is one FDSP run: the client's own stats, and the same playout
// figures as the SRT run's, measured by when each access unit is shown.
type fdspResult struct {
	playoutResult
	Stats fdsp.Stats `json:"fdsp"`
}

// playTimes records when the client shows each access unit (the sink is called
// at its deadline).
type playTimes struct {
	mu    sync.Mutex
	shown []auArrival // DTS and when shown (Ready)
}

func (p *playTimes) WriteVideo(v fdsp.VideoFrame) error {
	p.mu.Lock()
	p.shown = append(p.shown, auArrival{DTS: v.DTS, Ready: time.Now()})
	p.mu.Unlock()
	return nil
}

func (p *playTimes) WriteAudio(uint64, []byte) error { return nil }

// runFDSP plays stream once with the playout delay given (the same budget
// SRT's latency window gets) and fills the playout figures: start-up and
// rebuffering from the client's stats (its rule), latency from the show times.
func runFDSP(ctx context.Context, addr, stream string, v fdspVariant, repair bool, delay time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (fdspResult, error) {
	pt := &playTimes{}
	start := time.Now()
	st, err := fdsp.Play(ctx, fdsp.ClientOptions{
		Addr: addr, Stream: stream, Mode: v.Mode, BP: v.BP, Repair: repair, PlayoutDelay: delay, Dial: dial,
		DialUDP:        func(ctx context.Context, raddr string) (net.Conn, error) { return dial(ctx, "udp", raddr) },
		NewSink:        func([]byte) (fdsp.Sink, error) { return pt, nil },
		SampleInterval: -1,
	})
	r := fdspResult{Stats: st}
	r.StartupMS, r.FirstFrameMS = st.StartupMS, st.StartupMS+ms(delay)
	r.RebufferMS, r.RebufferCount = st.RebufferMS, st.RebufferCount
	if len(pt.shown) > 0 {
		dts0 := pt.shown[0].DTS
		lat := make([]float64, 0, len(pt.shown))
		for _, a := range pt.shown {
			lat = append(lat, ms(a.Ready.Sub(start.Add(ticks90(a.DTS-dts0)))))
		}
		slices.Sort(lat)
		r.LatencyMedianMS, r.LatencyMaxMS = lat[len(lat)/2], lat[len(lat)-1]
	}
	return r, err
}
