package player

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/source/looplive"
)

// span is one request as a recording fetcher saw it, in simulated time.
type span struct {
	kind       string // "video", "audio" or "" (manifest)
	req        string
	start, end time.Time
}

// recordingNet wraps simNet and records how many requests are in flight at once, in
// all and per adaptation set, and when each ran.
type recordingNet struct {
	*simNet
	m *Manifest

	mu       sync.Mutex
	inflight map[string]int
	total    int
	maxTotal int
	maxPer   map[string]int
	spans    []span
}

func newRecordingNet(n *simNet, m *Manifest) *recordingNet {
	return &recordingNet{simNet: n, m: m, inflight: map[string]int{}, maxPer: map[string]int{}}
}

func (r *recordingNet) Fetch(ctx context.Context, req SegmentRequest) (*Response, error) {
	kind := ""
	if set, _ := r.m.Representation(req.TrackID); set != nil {
		kind = string(set.Kind)
	}
	start := r.clock.Now()
	r.mu.Lock()
	r.inflight[kind]++
	r.total++
	r.maxPer[kind] = max(r.maxPer[kind], r.inflight[kind])
	r.maxTotal = max(r.maxTotal, r.total)
	r.mu.Unlock()
	resp, err := r.simNet.Fetch(ctx, req)
	r.mu.Lock()
	r.inflight[kind]--
	r.total--
	r.spans = append(r.spans, span{kind: kind, req: fmt.Sprintf("%s:%s:%d", req.Kind, req.TrackID, req.Number), start: start, end: r.clock.Now()})
	r.mu.Unlock()
	return resp, err
}

// overlaps counts pairs of a video and an audio request that were in flight at the
// same simulated time.
func (r *recordingNet) overlaps() int {
	n := 0
	for _, a := range r.spans {
		for _, b := range r.spans {
			if a.kind == "video" && b.kind == "audio" && a.start.Before(b.end) && b.start.Before(a.end) {
				n++
			}
		}
	}
	return n
}

func TestAudioAndVideoDownloadConcurrently(t *testing.T) {
	modes(t, func(t *testing.T, seq bool) {
		clock := NewSimClock(t0)
		m := manifest(2*time.Second, 10, false,
			rep{"v1000", media.Video, 1_000_000}, rep{"v2000", media.Video, 2_000_000}, rep{"a128", media.Audio, 128_000})
		net := newRecordingNet(&simNet{clock: clock, rate: constRate(3_000_000), size: segBytes(m), rtt: 40 * time.Millisecond}, m)
		rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: seq})
		if err != nil {
			t.Fatal(err)
		}
		if rep.EndReason != "ended" || rep.PlayedS != 20 || rep.MediaRequests != 20 || rep.Errors != 0 {
			t.Fatalf("end %s, played %v, %d media requests, %d errors", rep.EndReason, rep.PlayedS, rep.MediaRequests, rep.Errors)
		}
		// Never more than one request per adaptation set, as dash.js.
		if net.maxPer["video"] != 1 || net.maxPer["audio"] != 1 {
			t.Errorf("at most %d video and %d audio requests in flight, want 1 and 1", net.maxPer["video"], net.maxPer["audio"])
		}
		if seq {
			if net.maxTotal != 1 || net.overlaps() != 0 {
				t.Errorf("sequential: %d requests in flight at once, %d overlaps; want 1, 0", net.maxTotal, net.overlaps())
			}
			return
		}
		if net.maxTotal != 2 || net.overlaps() < 10 {
			t.Errorf("concurrent: at most %d requests in flight, %d audio/video overlaps; want 2 and most segments", net.maxTotal, net.overlaps())
		}
	})
}

func TestStartupWithTwoStreamsTakesOneDownload(t *testing.T) {
	for _, tc := range []struct {
		seq  bool
		want float64 // ms
	}{{false, 1000}, {true, 2000}} {
		t.Run(fmt.Sprint("sequential=", tc.seq), func(t *testing.T) {
			clock := NewSimClock(t0)
			m := manifest(2*time.Second, 5, false, rep{"v1", media.Video, 1_000_000}, rep{"a1", media.Audio, 1_000_000})
			// Every media segment takes exactly 1 s (125 kB at 1 Mbit/s); the rest is instant.
			size := func(req SegmentRequest) int64 {
				if req.Kind == RequestMedia {
					return 125_000
				}
				return 0
			}
			net := &simNet{clock: clock, rate: constRate(1_000_000), size: size}
			rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Sequential: tc.seq})
			if err != nil {
				t.Fatal(err)
			}
			// Start-up needs the first segment of both streams: one download time when
			// they download together, two when one waits for the other.
			if rep.StartupDelayMS == nil || *rep.StartupDelayMS != tc.want {
				t.Errorf("start-up %v ms, want %v", rep.StartupDelayMS, tc.want)
			}
			if rep.StallCount != 0 || rep.PlayedS != 10 {
				t.Errorf("stalls %d, played %v", rep.StallCount, rep.PlayedS)
			}
		})
	}
}

// scenario builds a fresh session whose report and request log must be the same every
// time it runs.
type scenario func() (Config, *simNet)

func runScenario(t *testing.T, mk scenario) (string, []string) {
	t.Helper()
	cfg, net := mk()
	rep, err := run(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, r := range net.reqs {
		reqs = append(reqs, fmt.Sprintf("%s:%s:%d:%d", r.Kind, r.TrackID, r.Number, r.Time))
	}
	return string(j), reqs
}

func TestConcurrentSessionsAreDeterministic(t *testing.T) {
	ladder := func(n int, live bool) *Manifest {
		return manifest(2*time.Second, n, live,
			rep{"v4000", media.Video, 4_000_000}, rep{"v1000", media.Video, 1_000_000}, rep{"v2000", media.Video, 2_000_000},
			rep{"a64", media.Audio, 64_000}, rep{"a128", media.Audio, 128_000})
	}
	scenarios := map[string]scenario{
		"on demand, changing link, throughput ABR": func() (Config, *simNet) {
			clock := NewSimClock(t0)
			m := ladder(30, false)
			rate := func(el time.Duration) float64 {
				switch {
				case el < 10*time.Second:
					return 6_000_000
				case el < 25*time.Second:
					return 1_200_000
				}
				return 3_000_000
			}
			net := &simNet{clock: clock, rate: rate, size: segBytes(m), rtt: 30 * time.Millisecond}
			return Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, MaxBuffer: 12 * time.Second}, net
		},
		"on demand, BOLA, duration": func() (Config, *simNet) {
			clock := NewSimClock(t0)
			m := ladder(20, false)
			net := &simNet{clock: clock, rate: constRate(2_500_000), size: segBytes(m), rtt: 50 * time.Millisecond}
			return Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, ABR: abr.BOLA{}, Duration: 25 * time.Second}, net
		},
		"live, reloads, UTCTiming, late origin": func() (Config, *simNet) {
			clock := NewSimClock(t0)
			m := ladder(0, true)
			skew := 3 * time.Second
			m.AvailabilityStart = t0.Add(skew - 100*time.Second)
			m.SuggestedPresentationDelay = 6 * time.Second
			m.MinimumUpdatePeriod = 2 * time.Second
			m.TimeShiftBufferDepth = 30 * time.Second
			m.UTCTiming = []UTCTiming{{Scheme: "urn:mpeg:dash:utc:http-iso:2014", Value: "http://sim/time"}}
			for _, s := range m.Sets {
				for _, r := range s.Representations {
					r.Index.AvailabilityStart = m.AvailabilityStart
				}
			}
			net := &simNet{clock: clock, rate: constRate(3_000_000), size: segBytes(m), rtt: 10 * time.Millisecond}
			net.body = func(req SegmentRequest, now time.Time) []byte {
				if req.Kind == RequestTime {
					return []byte(now.Add(skew).Format(time.RFC3339Nano))
				}
				return nil
			}
			net.fail = func(req SegmentRequest, now time.Time) error {
				if req.Kind != RequestMedia {
					return nil
				}
				tl := looplive.Schedule{Start: m.AvailabilityStart.Add(300 * time.Millisecond), SegmentDuration: 2 * time.Second, DVRWindow: 30 * time.Second}
				return tl.Check(req.Number, now.Add(skew))
			}
			return Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, Duration: 40 * time.Second}, net
		},
	}
	for name, mk := range scenarios {
		t.Run(name, func(t *testing.T) {
			rep, reqs := runScenario(t, mk)
			for i := 0; i < 4; i++ {
				rep2, reqs2 := runScenario(t, mk)
				if rep2 != rep {
					t.Fatalf("run %d: report differs:\n%s\n%s", i+2, rep, rep2)
				}
				if !reflect.DeepEqual(reqs, reqs2) {
					t.Fatalf("run %d: requests differ:\n%v\n%v", i+2, reqs, reqs2)
				}
			}
		})
	}
}

func TestPushWaitPerStream(t *testing.T) {
	clock := NewSimClock(t0)
	m := manifest(2*time.Second, 5, false, rep{"v1", media.Video, 1_000_000}, rep{"a1", media.Audio, 128_000})
	inner := newRecordingNet(&simNet{clock: clock, rate: constRate(4_000_000), size: segBytes(m)}, m)
	net := &pushRecordingNet{recordingNet: inner, ch: make(chan Delivery, 8)}
	// Audio segments 1..3 were pushed; nothing of video.
	for n := uint64(1); n <= 3; n++ {
		net.ch <- Delivery{Request: SegmentRequest{Kind: RequestMedia, URL: fmt.Sprintf("http://sim/stream/a1/%d.m4s", n)},
			Response: &Response{PayloadBytes: 32_000, Start: t0, End: t0.Add(50 * time.Millisecond)}}
	}
	rep, err := run(t, Config{URL: m.URL, Fetcher: net, Load: staticLoader(m), Clock: clock, PushWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Duration{}
	for _, s := range inner.spans {
		got[s.req] = s.start.Sub(t0)
	}
	// Each stream waits for its own push: audio takes 1..3 at once and waits for 4
	// while video waits for 1; both give up after PushWait and request.
	want := map[string]time.Duration{"manifest::0": 0, "init:v1:0": 0, "init:a1:0": 0,
		"media:v1:1": 200 * time.Millisecond, "media:a1:4": 200 * time.Millisecond}
	for k, v := range want {
		if d, ok := got[k]; !ok || d != v {
			t.Errorf("%s requested at %v (%v), want %v", k, d, ok, v)
		}
	}
	for _, k := range []string{"media:a1:1", "media:a1:2", "media:a1:3"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s requested although it was pushed", k)
		}
	}
	if rep.Pushed != 3 || rep.MediaRequests != 7 || rep.PerTrackS["a1"] != 10 || rep.PerTrackS["v1"] != 10 {
		t.Errorf("pushed %d, media requests %d, per track %v", rep.Pushed, rep.MediaRequests, rep.PerTrackS)
	}
}

type pushRecordingNet struct {
	*recordingNet
	ch chan Delivery
}

func (p *pushRecordingNet) Deliveries() <-chan Delivery { return p.ch }

func TestSimClockOnItsOwn(t *testing.T) {
	c := NewSimClock(t0)
	if err := c.Sleep(context.Background(), time.Second); err != nil || !c.Now().Equal(t0.Add(time.Second)) {
		t.Fatalf("Sleep: %v, now %v", err, c.Now())
	}
	if at := <-c.After(2 * time.Second); !at.Equal(t0.Add(3*time.Second)) || !c.Now().Equal(at) {
		t.Fatalf("After fired at %v, now %v", at, c.Now())
	}
	c.Advance(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Second); err == nil || !c.Now().Equal(t0.Add(4*time.Second)) {
		t.Fatalf("Sleep on a canceled context: %v, now %v", err, c.Now())
	}
}

func TestSimClockDrivenSleepsOverlap(t *testing.T) {
	c := NewSimClock(t0)
	if err := c.drive(true); err != nil {
		t.Fatal(err)
	}
	if err := c.drive(true); err == nil {
		t.Fatal("a second driver was accepted")
	}
	woke := make(chan string, 3)
	sleep := func(name string, d time.Duration) {
		c.join()
		go func() {
			defer c.leave()
			if err := c.Sleep(context.Background(), d); err != nil {
				t.Error(err)
			}
			woke <- fmt.Sprintf("%s@%v", name, c.Now().Sub(t0))
		}()
		c.settle()
	}
	sleep("b", 2*time.Second)
	sleep("a", time.Second)
	sleep("c", time.Second) // same end as a, began later: wakes after a
	var got []string
	for c.wakeNext(time.Time{}) {
		c.settle()
		got = append(got, <-woke)
	}
	if want := []string{"a@1s", "c@1s", "b@2s"}; !reflect.DeepEqual(got, want) {
		t.Errorf("woke %v, want %v (sleeps overlap: 2 s in all, not 4 s)", got, want)
	}
	c.advanceTo(t0.Add(5 * time.Second))
	c.advanceTo(t0.Add(4 * time.Second)) // never backwards
	if !c.Now().Equal(t0.Add(5 * time.Second)) {
		t.Errorf("now %v", c.Now())
	}
	// An After while driven fires when driven there, or when driving ends.
	ch := c.After(time.Second)
	select {
	case <-ch:
		t.Fatal("After fired before time moved")
	default:
	}
	if err := c.drive(false); err != nil {
		t.Fatal(err)
	}
	if at := <-ch; !at.Equal(t0.Add(6 * time.Second)) {
		t.Errorf("After fired at %v", at)
	}
	if err := c.Sleep(context.Background(), time.Second); err != nil || !c.Now().Equal(t0.Add(7*time.Second)) {
		t.Errorf("after driving: Sleep %v, now %v", err, c.Now())
	}
}
