package player

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player/qoe"
)

// chunkedNet is a low-latency origin under the simulated clock: a media request
// answers as the segment is made, one chunk every chunk (after its end plus rtt), and
// reports each chunk to the player's sink as an LL-DASH chunked response does. Until
// blackoutEnd, from blackoutStart on, nothing arrives (a stalled link).
type chunkedNet struct {
	clock      *SimClock
	m          *Manifest
	chunk      time.Duration
	rtt        time.Duration
	noChunks   bool // report nothing: the player sees whole segments only
	byURL      bool // report chunks by URL only, as the HTTP/2 push client does
	edgePusher bool
	blackout   [2]time.Time

	mu   sync.Mutex
	sink func(Chunk)
}

type chunkedReporter struct{ *chunkedNet }

func (c chunkedReporter) SetChunkSink(s func(Chunk)) {
	c.mu.Lock()
	c.sink = s
	c.mu.Unlock()
}

type edgePushReporter struct{ chunkedReporter }

func (edgePushReporter) PushesLiveEdge() bool { return true }

func (n *chunkedNet) fetcher() Fetcher {
	switch {
	case n.noChunks:
		return n
	case n.edgePusher:
		return edgePushReporter{chunkedReporter{n}}
	}
	return chunkedReporter{n}
}

// sleepUntil sleeps to t, or past the blackout when t falls in it.
func (n *chunkedNet) sleepUntil(ctx context.Context, t time.Time) error {
	if !t.Before(n.blackout[0]) && t.Before(n.blackout[1]) {
		t = n.blackout[1]
	}
	if d := t.Sub(n.clock.Now()); d > 0 {
		return n.clock.Sleep(ctx, d)
	}
	return nil
}

func (n *chunkedNet) Fetch(ctx context.Context, req SegmentRequest) (*Response, error) {
	start := n.clock.Now()
	if req.Kind != RequestMedia {
		if err := n.clock.Sleep(ctx, n.rtt); err != nil {
			return nil, err
		}
		return &Response{Start: start, FirstByte: n.clock.Now(), End: n.clock.Now()}, nil
	}
	_, rep := n.m.Representation(req.TrackID)
	seg, _ := rep.Index.Next(rep.Index.PeriodStart + Ticks(req.Time, rep.Index.Timescale))
	ts := rep.Index.Timescale
	for k := time.Duration(1); k*n.chunk <= seg.Duration; k++ {
		made := n.m.AvailabilityStart.Add(seg.Start + k*n.chunk)
		if made.Before(start) {
			made = start
		}
		if err := n.sleepUntil(ctx, made.Add(n.rtt)); err != nil {
			return nil, err
		}
		n.mu.Lock()
		sink := n.sink
		n.mu.Unlock()
		if sink != nil && !n.noChunks {
			r := req
			if n.byURL {
				r = SegmentRequest{Kind: RequestMedia, URL: req.URL}
			}
			sink(Chunk{Request: r, Decoded: toTicks(k*n.chunk, ts), Last: toTicks(n.chunk, ts), At: n.clock.Now()})
		}
	}
	return &Response{PayloadBytes: 1000, Start: start, FirstByte: start.Add(n.rtt), End: n.clock.Now()}, nil
}

// llManifest is a live template stream of 2 s segments, available one chunk after
// they start (availabilityTimeOffset), with a ServiceDescription.
func llManifest(clock *SimClock, chunk time.Duration, sd *ServiceDescription) *Manifest {
	m := manifest(2*time.Second, 0, true, rep{"v1", media.Video, 1_000_000}, rep{"a1", media.Audio, 64_000})
	m.AvailabilityStart = clock.Now().Add(-100*time.Second - 300*time.Millisecond)
	m.SuggestedPresentationDelay = 4 * time.Second
	m.TimeShiftBufferDepth = 30 * time.Second
	m.ServiceDescription = sd
	for _, s := range m.Sets {
		for _, r := range s.Representations {
			r.InitURL = ""
			r.Index.AvailabilityStart = m.AvailabilityStart
			r.Index.AvailabilityTO = 2*time.Second - chunk
		}
	}
	return m
}

func runLL(t *testing.T, n *chunkedNet, d time.Duration) qoe.Report {
	t.Helper()
	rep, err := run(t, Config{URL: n.m.URL, Fetcher: n.fetcher(), Load: staticLoader(n.m), Clock: n.clock, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LatencyMS == nil {
		t.Fatal("no latency reported for a live session")
	}
	return rep
}

func TestChunkedPullPlaysAtTheServiceDescriptionTarget(t *testing.T) {
	sd := &ServiceDescription{TargetLatency: time.Second, MinPlaybackRate: 0.96, MaxPlaybackRate: 1.04}
	clock := NewSimClock(t0)
	n := &chunkedNet{clock: clock, chunk: 200 * time.Millisecond, rtt: 10 * time.Millisecond}
	n.m = llManifest(clock, n.chunk, sd)
	rep := runLL(t, n, 20*time.Second)
	if rep.ChunkAppends == 0 || rep.TargetSource != "service-description" || rep.TargetLatencyMS == nil || *rep.TargetLatencyMS != 1000 {
		t.Fatalf("chunk appends %d, target %v from %q", rep.ChunkAppends, rep.TargetLatencyMS, rep.TargetSource)
	}
	if rep.StallCount != 0 {
		t.Errorf("%d stalls with chunks arriving %v after they are made", rep.StallCount, n.rtt)
	}
	// It starts the target behind the edge (mid-segment) and stays there.
	if *rep.LatencyMinMS < 950 || *rep.LatencyMaxMS > 1100 {
		t.Errorf("latency %v..%v ms, want about the 1000 ms target", *rep.LatencyMinMS, *rep.LatencyMaxMS)
	}

	// The same origin with whole segments only: a segment's wait and more.
	clock = NewSimClock(t0)
	whole := &chunkedNet{clock: clock, chunk: n.chunk, rtt: n.rtt, noChunks: true}
	whole.m = llManifest(clock, n.chunk, sd)
	wrep := runLL(t, whole, 20*time.Second)
	if wrep.ChunkAppends != 0 || wrep.TargetLatencyMS != nil {
		t.Errorf("a transport without chunk reports steered: %d appends, target %v", wrep.ChunkAppends, wrep.TargetLatencyMS)
	}
	t.Logf("chunks: latency %v ms (%d appends); whole segments: %v ms", *rep.LatencyMS, rep.ChunkAppends, *wrep.LatencyMS)
	if *wrep.LatencyMS < *rep.LatencyMS+1000 {
		t.Errorf("whole segments %v ms, chunks %v ms: want chunks at least 1 s lower", *wrep.LatencyMS, *rep.LatencyMS)
	}
}

func TestCatchUpByPlaybackRateAfterAStall(t *testing.T) {
	sd := &ServiceDescription{TargetLatency: time.Second, MinPlaybackRate: 0.96, MaxPlaybackRate: 1.04}
	clock := NewSimClock(t0)
	n := &chunkedNet{clock: clock, chunk: 200 * time.Millisecond, rtt: 10 * time.Millisecond}
	n.blackout = [2]time.Time{t0.Add(8 * time.Second), t0.Add(10 * time.Second)}
	n.m = llManifest(clock, n.chunk, sd)
	p, err := New(Config{URL: n.m.URL, Fetcher: n.fetcher(), Load: staticLoader(n.m), Clock: clock, Duration: 40 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stalls %d, latency max %v end %v ms, rates %v..%v", rep.StallCount, *rep.LatencyMaxMS, *rep.LatencyEndMS, *rep.PlaybackRateMin, *rep.PlaybackRateMax)
	if rep.StallCount == 0 {
		t.Fatal("no stall in a 2 s blackout")
	}
	if rep.PlaybackRateMax == nil || *rep.PlaybackRateMax <= 1 || *rep.PlaybackRateMax > 1.04 {
		t.Fatalf("playback rate max %v: want above 1, within the ServiceDescription's 1.04", rep.PlaybackRateMax)
	}
	if *rep.PlaybackRateMin < 0.96 {
		t.Errorf("playback rate min %v below the ServiceDescription's 0.96", *rep.PlaybackRateMin)
	}
	// After the stall the latency is about 2 s (a stall of the blackout less the buffer); at up to 1.04 it comes back down by
	// about 0.04 s per s: well on the way after 30 s, not below the target.
	if *rep.LatencyMaxMS < 1800 {
		t.Errorf("latency max %v ms after a 2 s blackout", *rep.LatencyMaxMS)
	}
	if end := *rep.LatencyEndMS; end > *rep.LatencyMaxMS-700 || end < 950 {
		t.Errorf("latency at the end %v ms (max %v): want caught up by at least 0.7 s, not below the target", end, *rep.LatencyMaxMS)
	}
}

func TestPushRuleTargetsTheLiveEdge(t *testing.T) {
	clock := NewSimClock(t0)
	n := &chunkedNet{clock: clock, chunk: 200 * time.Millisecond, rtt: 10 * time.Millisecond, edgePusher: true}
	// A ServiceDescription is there but push follows the page's rule, as the page does.
	n.m = llManifest(clock, n.chunk, &ServiceDescription{TargetLatency: 3 * time.Second})
	rep := runLL(t, n, 20*time.Second)
	t.Logf("target %v ms, latency %v ms", *rep.TargetLatencyMS, *rep.LatencyMS)
	if rep.TargetSource != "push-rule" {
		t.Fatalf("target from %q", rep.TargetSource)
	}
	// max(0.5 s, one 200 ms chunk + 0.4 s, the edge's lag (≤ chunk + rtt) + 0.5 s)
	if tl := *rep.TargetLatencyMS; tl < 600 || tl > 720 {
		t.Errorf("target %v ms, want 600..710 (one chunk plus the margins)", tl)
	}
	if rep.StallCount != 0 || *rep.LatencyMS > 900 {
		t.Errorf("%d stalls, latency %v ms", rep.StallCount, *rep.LatencyMS)
	}
}

func TestFarBehindJumpsAheadInTheBuffer(t *testing.T) {
	sd := &ServiceDescription{TargetLatency: time.Second, MinPlaybackRate: 0.96, MaxPlaybackRate: 1.04}
	clock := NewSimClock(t0)
	n := &chunkedNet{clock: clock, chunk: 200 * time.Millisecond, rtt: 10 * time.Millisecond}
	// 6 s without data: the latency grows past the target by more than 3 s, and the
	// chunks made meanwhile then arrive at once, so the buffer holds what to skip.
	n.blackout = [2]time.Time{t0.Add(6 * time.Second), t0.Add(12 * time.Second)}
	n.m = llManifest(clock, n.chunk, sd)
	rep := runLL(t, n, 20*time.Second)
	t.Logf("stalls %d (%v ms), latency max %v end %v ms", rep.StallCount, rep.StallMS, *rep.LatencyMaxMS, *rep.LatencyEndMS)
	if rep.StallCount == 0 || rep.StallMS < 4000 {
		t.Fatalf("%d stalls of %v ms: the blackout did not put the player far behind", rep.StallCount, rep.StallMS)
	}
	// Resuming, the player is the stall (over 4 s) plus the target behind; 8 s at up
	// to 1.04 would take 0.32 s of that off. The jump (as the page's: to the target, or
	// as far as the buffer reaches, while more than 3 s behind) takes off seconds.
	if end := *rep.LatencyEndMS; end > 3000 {
		t.Errorf("latency at the end %v ms: far behind, the player did not jump ahead", end)
	}
}

func TestPushRuleWithSegmentLongChunksStartsWithoutAStall(t *testing.T) {
	clock := NewSimClock(t0)
	// One chunk per segment (a channel without low-latency chunks, pushed).
	n := &chunkedNet{clock: clock, chunk: 2 * time.Second, rtt: 10 * time.Millisecond, edgePusher: true}
	n.m = llManifest(clock, n.chunk, nil)
	rep := runLL(t, n, 20*time.Second)
	t.Logf("target %v ms, latency %v ms, stalls %d", *rep.TargetLatencyMS, *rep.LatencyMS, rep.StallCount)
	if *rep.TargetLatencyMS < 2400 {
		t.Errorf("target %v ms, want at least one chunk + 0.4 s", *rep.TargetLatencyMS)
	}
	if rep.StallCount != 0 {
		t.Errorf("%d stalls: the start was not moved back when the first chunk showed its length", rep.StallCount)
	}
}

// Reports by URL alone (the HTTP/2 push client's), the last one coming with its
// whole segment: once a nil representation crashed the player here.
func TestChunksReportedByURL(t *testing.T) {
	sd := &ServiceDescription{TargetLatency: time.Second}
	clock := NewSimClock(t0)
	n := &chunkedNet{clock: clock, chunk: 200 * time.Millisecond, rtt: 10 * time.Millisecond, byURL: true}
	n.m = llManifest(clock, n.chunk, sd)
	rep := runLL(t, n, 10*time.Second)
	if rep.ChunkAppends == 0 || rep.StallCount != 0 || *rep.LatencyMaxMS > 1100 {
		t.Errorf("%d chunks appended, %d stalls, latency max %v ms", rep.ChunkAppends, rep.StallCount, *rep.LatencyMaxMS)
	}
}
