package player

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/source/looplive"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// simNet is a network under the simulated clock: each fetch sleeps on the clock for the
// round trip plus size / rate, with the rate in force when the request starts. Each
// request has the rate to itself (as on separate connections), so concurrent requests
// overlap without slowing each other down.
type simNet struct {
	clock *SimClock
	rtt   time.Duration
	rate  func(elapsed time.Duration) float64 // bit/s
	size  func(req SegmentRequest) int64
	fail  func(req SegmentRequest, now time.Time) error
	body  func(req SegmentRequest, now time.Time) []byte

	mu   sync.Mutex
	reqs []SegmentRequest
}

func (n *simNet) Fetch(ctx context.Context, req SegmentRequest) (*Response, error) {
	start := n.clock.Now()
	n.mu.Lock()
	n.reqs = append(n.reqs, req)
	n.mu.Unlock()
	if n.fail != nil {
		if err := n.fail(req, start); err != nil {
			if err := n.clock.Sleep(ctx, n.rtt); err != nil {
				return nil, err
			}
			return nil, err
		}
	}
	var size int64
	var body []byte
	if n.body != nil {
		body = n.body(req, start)
		size = int64(len(body))
	}
	if body == nil && n.size != nil {
		size = n.size(req)
	}
	d := n.rtt + time.Duration(float64(size*8)/n.rate(start.Sub(t0))*float64(time.Second))
	if err := n.clock.Sleep(ctx, d); err != nil {
		return nil, err
	}
	return &Response{Body: body, PayloadBytes: size, OverheadBytes: 200, OverheadExact: true,
		Start: start, FirstByte: start.Add(n.rtt), End: n.clock.Now(), Protocol: "SIM/1"}, nil
}

func (n *simNet) media() []SegmentRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []SegmentRequest
	for _, r := range n.reqs {
		if r.Kind == RequestMedia {
			out = append(out, r)
		}
	}
	return out
}

func constRate(bps float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return bps }
}

// segBytes sizes media segments at their declared bandwidth × duration; other requests are empty.
func segBytes(m *Manifest) func(SegmentRequest) int64 {
	return func(req SegmentRequest) int64 {
		if req.Kind != RequestMedia {
			return 0
		}
		_, r := m.Representation(req.TrackID)
		return int64(float64(r.Bandwidth) * r.Index.NominalDuration().Seconds() / 8)
	}
}

type rep struct {
	id   string
	kind media.Kind
	bps  int
}

// manifest builds a $Number$ template manifest: on demand (n segments) or live.
func manifest(segDur time.Duration, n int, live bool, reps ...rep) *Manifest {
	base, _ := url.Parse("http://sim/stream/manifest.mpd")
	m := &Manifest{URL: base.String(), Live: live}
	if !live {
		m.Duration = time.Duration(n) * segDur
	}
	for _, r := range reps {
		set := m.Set(r.kind)
		if set == nil {
			set = &AdaptationSet{Kind: r.kind}
			m.Sets = append(m.Sets, set)
		}
		ix := &SegmentIndex{Timescale: 1000, Duration: uint64(segDur / time.Millisecond), StartNumber: 1,
			Media: r.id + "/$Number$.m4s", Base: base, End: m.Duration}
		if live {
			ix.StartNumber = 0
		}
		set.Representations = append(set.Representations, &Representation{ID: r.id, Bandwidth: r.bps,
			InitURL: "http://sim/stream/" + r.id + "/init.mp4", Index: ix})
	}
	return m
}

func staticLoader(m *Manifest) ManifestLoader {
	return func(ctx context.Context, fetch FetcherFunc, u string, now time.Time) (*Manifest, error) {
		if _, err := fetch(ctx, SegmentRequest{Kind: RequestManifest, URL: u, KeepBody: true}); err != nil {
			return nil, err
		}
		c := *m
		return &c, nil
	}
}

func run(t *testing.T, cfg Config) (qoe.Report, error) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p.Run(context.Background())
}

// modes runs f with the default concurrent scheduler and with Config.Sequential.
func modes(t *testing.T, f func(t *testing.T, seq bool)) {
	for _, seq := range []bool{false, true} {
		name := "concurrent"
		if seq {
			name = "sequential"
		}
		t.Run(name, func(t *testing.T) { f(t, seq) })
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestStartupAndSteadyPlayback(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 10, false, rep{"v1", media.Video, 1_000_000})
		net := &simNet{clock: clock, rate: constRate(2_000_000), size: segBytes(m)}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, Transport: "sim"})
		if err != nil {
			t.Fatal(err)
		}
		// The first 2 s segment (250 kB) takes 1 s at 2 Mbit/s: start-up after 1 s,
		// then downloads stay ahead of playback.
		if rep.StartupDelayMS == nil || *rep.StartupDelayMS != 1000 {
			t.Errorf("start-up %v ms, want 1000", rep.StartupDelayMS)
		}
		if rep.StallCount != 0 || rep.StallMS != 0 || rep.Switches != 0 {
			t.Errorf("stalls %d (%v ms), switches %d; want none", rep.StallCount, rep.StallMS, rep.Switches)
		}
		if rep.PlayedS != 20 || rep.SessionS != 21 || rep.EndReason != "ended" {
			t.Errorf("played %v s in %v s (%s), want 20 in 21, ended", rep.PlayedS, rep.SessionS, rep.EndReason)
		}
		if rep.AvgBitrateKbps != 1000 || rep.PerTrackS["v1"] != 20 {
			t.Errorf("bitrate %v kbit/s, per track %v", rep.AvgBitrateKbps, rep.PerTrackS)
		}
		// manifest + init + 10 segments
		if rep.Requests != 12 || rep.MediaRequests != 10 || rep.PayloadBytes != 2_500_000 || rep.OverheadBytes != 12*200 {
			t.Errorf("requests %d/%d, payload %d, overhead %d", rep.Requests, rep.MediaRequests, rep.PayloadBytes, rep.OverheadBytes)
		}
		if rep.OverheadSource != "estimate" || rep.ThroughputKbps != 2000 {
			t.Errorf("overhead source %q, throughput %v", rep.OverheadSource, rep.ThroughputKbps)
		}
		if rep.LatencyMS != nil || rep.Live {
			t.Errorf("latency %v for on demand", rep.LatencyMS)
		}
		// One sample per second of session: 0..21.
		if len(rep.Samples) != 22 {
			t.Fatalf("%d samples, want 22", len(rep.Samples))
		}
		// A sample taken at the instant of an event shows the state just before it.
		if s := rep.Samples[1]; s.State != "startup" || s.BufferS != 0 {
			t.Errorf("sample at 1 s: %+v", s)
		}
		if s := rep.Samples[2]; s.State != "playing" || s.BufferS != 1 || s.BitrateKbps != 1000 {
			t.Errorf("sample at 2 s: %+v", s)
		}
		if s := rep.Samples[3]; !near(s.BufferS, 2) { // 2 s played, 2 more segments in: 3 s − 1 s downloading
			t.Errorf("sample at 3 s: %+v", s)
		}
	})
}

func TestStallsAreDeterministic(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 5, false, rep{"v1", media.Video, 1_000_000})
		// Half the bit rate of the only rendition: every segment takes 4 s to download.
		net := &simNet{clock: clock, rate: constRate(500_000), size: segBytes(m)}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq})
		if err != nil {
			t.Fatal(err)
		}
		// Start at 4 s; dry at 6, 10, 14, 18; each segment arrives 2 s later; end at 22.
		if *rep.StartupDelayMS != 4000 || rep.StallCount != 4 || rep.StallMS != 8000 {
			t.Errorf("start-up %v, stalls %d, %v ms; want 4000, 4, 8000", *rep.StartupDelayMS, rep.StallCount, rep.StallMS)
		}
		want := []qoe.StallEvent{{AtS: 6, DurationMS: 2000}, {AtS: 10, DurationMS: 2000}, {AtS: 14, DurationMS: 2000}, {AtS: 18, DurationMS: 2000}}
		if !reflect.DeepEqual(rep.StallEvents, want) {
			t.Errorf("stall events %+v", rep.StallEvents)
		}
		if rep.SessionS != 22 || rep.PlayedS != 10 {
			t.Errorf("session %v, played %v", rep.SessionS, rep.PlayedS)
		}
		if s := rep.Samples[7]; s.State != "stalled" || s.BufferS != 0 || s.BitrateKbps != 0 {
			t.Errorf("sample at 7 s: %+v", s)
		}
	})
}

func TestSwitchesWithThroughputRule(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		sim := func() (qoe.Report, []string) {
			clock := NewSimClock(t0)
			m := manifest(2*time.Second, 20, false,
				rep{"v4000", media.Video, 4_000_000}, rep{"v1000", media.Video, 1_000_000}, rep{"v2000", media.Video, 2_000_000})
			// 10 Mbit/s for 12 s, then 1.5 Mbit/s.
			rate := func(el time.Duration) float64 {
				if el < 12*time.Second {
					return 10_000_000
				}
				return 1_500_000
			}
			net := &simNet{clock: clock, rate: rate, size: segBytes(m), rtt: 20 * time.Millisecond}
			rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, ABR: abr.Throughput{}})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range net.media() {
				ids = append(ids, r.TrackID)
			}
			return rep, ids
		}
		rep, ids := sim()
		if ids[0] != "v1000" {
			t.Errorf("first request %s, want the lowest before any measurement", ids[0])
		}
		if !strings.Contains(strings.Join(ids, " "), "v4000") {
			t.Errorf("never climbed to v4000: %v", ids)
		}
		if ids[len(ids)-1] != "v1000" {
			t.Errorf("did not come down to v1000 at 1.5 Mbit/s: %v", ids)
		}
		if rep.Switches < 2 || len(rep.SwitchEvents) != rep.Switches {
			t.Errorf("switches %d, events %+v", rep.Switches, rep.SwitchEvents)
		}
		if len(rep.PerTrackS) != 3 {
			t.Errorf("per track %v", rep.PerTrackS)
		}
		var sum float64
		for _, v := range rep.PerTrackS {
			sum += v
		}
		if !near(sum, 40) || rep.PlayedS != 40 {
			t.Errorf("played %v / per track sum %v, want 40", rep.PlayedS, sum)
		}
		// The whole session is deterministic.
		rep2, ids2 := sim()
		j1, _ := json.Marshal(rep)
		j2, _ := json.Marshal(rep2)
		if string(j1) != string(j2) || !reflect.DeepEqual(ids, ids2) {
			t.Errorf("two identical simulations differ")
		}
		// Init segments: one per rendition used, not one per switch.
		inits := 0
		clock := NewSimClock(t0)
		_ = clock
		for _, id := range []string{"v1000", "v2000", "v4000"} {
			if strings.Contains(strings.Join(ids, " "), id) {
				inits++
			}
		}
		if rep.Requests != 1+inits+len(ids) {
			t.Errorf("requests %d, want manifest + %d inits + %d media", rep.Requests, inits, len(ids))
		}
	})
}

func TestVideoAndAudioAlternate(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 3, false, rep{"v1", media.Video, 800_000}, rep{"a1", media.Audio, 128_000})
		net := &simNet{clock: clock, rate: constRate(10_000_000), size: segBytes(m)}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, ABR: abr.Fixed{TrackID: "v1"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range net.reqs[1:] {
			got = append(got, fmt.Sprintf("%s:%s:%d", r.Kind, r.TrackID, r.Number))
		}
		// Sequential: one request at a time, for the stream whose buffer ends earliest.
		want := []string{"init:v1:0", "media:v1:1", "init:a1:0", "media:a1:1", "media:v1:2", "media:a1:2", "media:v1:3", "media:a1:3"}
		if !seq {
			// Concurrent: each stream has its own request in flight. Audio segments
			// (25.6 ms each at 10 Mbit/s) complete while the first video one (160 ms)
			// downloads.
			want = []string{"init:v1:0", "init:a1:0", "media:v1:1", "media:a1:1", "media:a1:2", "media:a1:3", "media:v1:2", "media:v1:3"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("requests\n%v\nwant\n%v", got, want)
		}
		if rep.PerTrackS["v1"] != 6 || rep.PerTrackS["a1"] != 6 || rep.AvgBitrateKbps != 800 || rep.PlayedS != 6 {
			t.Errorf("per track %v, bitrate %v, played %v", rep.PerTrackS, rep.AvgBitrateKbps, rep.PlayedS)
		}
	})
}

func TestMaxBufferPacesRequests(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 30, false, rep{"v1", media.Video, 1_000_000})
		net := &simNet{clock: clock, rate: constRate(100_000_000), size: segBytes(m)}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, MaxBuffer: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rep.Samples {
			if s.BufferS > 10+2 {
				t.Fatalf("buffer %v s above the 10 s cap plus a segment at %v", s.BufferS, s.T)
			}
		}
		if rep.StallCount != 0 || rep.PlayedS != 60 {
			t.Errorf("stalls %d, played %v", rep.StallCount, rep.PlayedS)
		}
	})
}

func TestDurationEndsSession(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 100, false, rep{"v1", media.Video, 1_000_000})
		net := &simNet{clock: clock, rate: constRate(400_000), size: segBytes(m)}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, Duration: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// 5 s per segment: start at 5, dry at 7, resume 10, dry 12, resume 15 = end.
		if rep.EndReason != "duration" || rep.SessionS != 15 {
			t.Errorf("end %s after %v s", rep.EndReason, rep.SessionS)
		}
		if rep.StallCount != 2 || rep.StallMS != 6000 || rep.PlayedS != 4 {
			t.Errorf("stalls %d, %v ms, played %v", rep.StallCount, rep.StallMS, rep.PlayedS)
		}
	})
}

func TestLive(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		tests := []struct {
			name       string
			timing     []UTCTiming
			serverSkew time.Duration // server clock minus local
			rate       float64
			wantStart  uint64
			stalls     bool
		}{
			{name: "local clock", rate: 20_000_000, wantStart: 47},
			{name: "http-iso offset", timing: []UTCTiming{{Scheme: "urn:mpeg:dash:utc:http-iso:2014", Value: "http://sim/time"}},
				serverSkew: 4 * time.Second, rate: 20_000_000, wantStart: 47}, // 45 if the offset were ignored
			{name: "slow link stalls", rate: 700_000, wantStart: 47, stalls: true},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				clock := NewSimClock(t0)
				m := manifest(2*time.Second, 0, true, rep{"v1", media.Video, 1_000_000})
				// The server's clock is serverSkew ahead; 100 s of the channel have elapsed by it.
				m.AvailabilityStart = t0.Add(tc.serverSkew - 100*time.Second)
				m.SuggestedPresentationDelay = 6 * time.Second
				m.MinimumUpdatePeriod = 2 * time.Second
				m.TimeShiftBufferDepth = 30 * time.Second
				m.UTCTiming = tc.timing
				for _, s := range m.Sets {
					for _, r := range s.Representations {
						r.Index.AvailabilityStart = m.AvailabilityStart
					}
				}
				net := &simNet{clock: clock, rate: constRate(tc.rate), size: segBytes(m), rtt: 10 * time.Millisecond}
				net.body = func(req SegmentRequest, now time.Time) []byte {
					if req.Kind == RequestTime {
						return []byte(now.Add(tc.serverSkew).Format(time.RFC3339Nano))
					}
					return nil
				}
				net.fail = func(req SegmentRequest, now time.Time) error {
					if req.Kind != RequestMedia {
						return nil
					}
					tl := looplive.Schedule{Start: m.AvailabilityStart, SegmentDuration: 2 * time.Second, DVRWindow: 30 * time.Second}
					return tl.Check(req.Number, now.Add(tc.serverSkew))
				}
				rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, Duration: 30 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				med := net.media()
				if med[0].Number != tc.wantStart {
					t.Errorf("first segment %d, want %d (edge − 6 s)", med[0].Number, tc.wantStart)
				}
				for i := 1; i < len(med); i++ {
					if med[i].Number != med[i-1].Number+1 {
						t.Errorf("segment %d after %d", med[i].Number, med[i-1].Number)
					}
				}
				if !rep.Live || rep.LatencyMS == nil || rep.EndReason != "duration" || rep.SessionS != 30 {
					t.Fatalf("live %v, latency %v, end %s after %v", rep.Live, rep.LatencyMS, rep.EndReason, rep.SessionS)
				}
				// The fake server reads its clock when the request starts, not half-way.
				if math.Abs(rep.ClockOffsetMS-float64(tc.serverSkew/time.Millisecond)) > 10 {
					t.Errorf("clock offset %v ms, want %v", rep.ClockOffsetMS, tc.serverSkew)
				}
				if rep.Errors != 0 {
					t.Errorf("%d errors: the player asked for a segment before it was available", rep.Errors)
				}
				if tc.stalls {
					if rep.StallCount == 0 {
						t.Errorf("no stalls on a link slower than the stream")
					}
					if *rep.LatencyMaxMS <= *rep.LatencyMinMS {
						t.Errorf("latency did not grow with stalls: %v..%v", *rep.LatencyMinMS, *rep.LatencyMaxMS)
					}
					return
				}
				if rep.StallCount != 0 {
					t.Errorf("%d stalls", rep.StallCount)
				}
				// Playing from 6 s behind the edge, plus the part of the newest segment
				// being produced (0..2 s), plus the start-up time.
				if *rep.LatencyMS < 6000 || *rep.LatencyMS > 8500 {
					t.Errorf("latency %v ms", *rep.LatencyMS)
				}
				manifests := 0
				for _, r := range net.reqs {
					if r.Kind == RequestManifest {
						manifests++
					}
				}
				if manifests < 14 || manifests > 17 { // every minimumUpdatePeriod (2 s) for 30 s
					t.Errorf("%d manifest requests in 30 s with minimumUpdatePeriod 2 s", manifests)
				}
			})
		}
	})
}

func TestLiveRetriesNotYet(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 0, true, rep{"v1", media.Video, 1_000_000})
		m.AvailabilityStart = t0.Add(-20 * time.Second)
		m.SuggestedPresentationDelay = 4 * time.Second
		for _, r := range m.Sets[0].Representations {
			r.Index.AvailabilityStart = m.AvailabilityStart
		}
		// The origin is 300 ms late with every segment.
		net := &simNet{clock: clock, rate: constRate(50_000_000), size: segBytes(m)}
		net.fail = func(req SegmentRequest, now time.Time) error {
			if req.Kind != RequestMedia {
				return nil
			}
			tl := looplive.Schedule{Start: m.AvailabilityStart.Add(300 * time.Millisecond), SegmentDuration: 2 * time.Second, DVRWindow: time.Minute}
			return tl.Check(req.Number, now)
		}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, Duration: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Errors == 0 || rep.StallCount != 0 || rep.PlayedS < 15 {
			t.Errorf("errors %d, stalls %d, played %v", rep.Errors, rep.StallCount, rep.PlayedS)
		}
	})
}

// pushNet delivers segments 1..3 of v1 before the player asks.
type pushNet struct {
	*simNet
	ch chan Delivery
}

func (p *pushNet) Deliveries() <-chan Delivery { return p.ch }

func TestPushedSegmentsSaveRequests(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 5, false, rep{"v1", media.Video, 1_000_000}, rep{"v2", media.Video, 2_000_000})
		net := &pushNet{simNet: &simNet{clock: clock, rate: constRate(10_000_000), size: segBytes(m)}, ch: make(chan Delivery, 8)}
		for n := uint64(1); n <= 3; n++ {
			// The server chose v2 for these (server-side ABR); the player accepts it.
			net.ch <- Delivery{
				Request:  SegmentRequest{Kind: RequestMedia, TrackID: "v2", Number: n},
				Response: &Response{PayloadBytes: 500_000, Start: t0, End: t0.Add(400 * time.Millisecond)},
			}
		}
		net.ch <- Delivery{Request: SegmentRequest{Kind: RequestInit, TrackID: "v2"}, Response: &Response{PayloadBytes: 900}}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq, ABR: abr.Fixed{TrackID: "v1"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range net.reqs {
			got = append(got, fmt.Sprintf("%s:%s:%d", r.Kind, r.TrackID, r.Number))
		}
		want := []string{"manifest::0", "init:v1:0", "media:v1:4", "media:v1:5"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("requests %v, want %v", got, want)
		}
		if rep.Pushed != 4 || rep.Requests != 4 || rep.PerTrackS["v2"] != 6 || rep.PerTrackS["v1"] != 4 || rep.Switches != 1 {
			t.Errorf("pushed %d, requests %d, per track %v, switches %d", rep.Pushed, rep.Requests, rep.PerTrackS, rep.Switches)
		}
	})
}

func TestStatusWhilePlaying(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 3, false, rep{"v1", media.Video, 1_000_000})
		net := &simNet{clock: clock, rate: constRate(2_000_000), size: segBytes(m)}
		var p *Player
		var seen []Status
		f := FetcherFunc(func(ctx context.Context, req SegmentRequest) (*Response, error) {
			seen = append(seen, p.Status())
			return net.Fetch(ctx, req)
		})
		p, _ = New(Config{URL: m.URL, Fetcher: f, Load: staticLoader(m), Clock: clock, Sequential: seq})
		if st := p.Status(); st.State != "loading" {
			t.Errorf("before Run: %+v", st)
		}
		if _, err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		last := seen[len(seen)-1] // before the third segment: playing since 1 s, at 2 s
		if last.State != "playing" || last.Rendition != "v1" || last.Buffer != 3*time.Second || last.Position != time.Second {
			t.Errorf("status %+v", last)
		}
	})
}

func TestShorterAudioDoesNotStallTheEnd(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 3, false, rep{"v1", media.Video, 800_000}, rep{"a1", media.Audio, 128_000})
		// Audio ends a segment early (5 s of audio lists 2 segments... make it 4 s).
		for _, r := range m.Set(media.Audio).Representations {
			r.Index.End = 4 * time.Second
		}
		net := &simNet{clock: clock, rate: constRate(1_000_000), size: segBytes(m)}
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq})
		if err != nil {
			t.Fatal(err)
		}
		if rep.StallCount != 0 || rep.PerTrackS["v1"] != 6 || rep.PerTrackS["a1"] != 4 || rep.EndReason != "ended" {
			t.Errorf("stalls %d, per track %v, end %s", rep.StallCount, rep.PerTrackS, rep.EndReason)
		}
	})
}
