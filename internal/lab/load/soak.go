package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/lab/load/workload"
)

// A soak is a long mixed run against one live channel: WebSocket push, HTTP/1.1 and
// HTTP/2 pull and HLS viewers at once, each viewer slot joining, watching for a while
// and leaving again (some vanish without closing: a TCP reset instead of a WebSocket
// close or in the middle of a response), a few slots reading slowly. Meanwhile the
// origin's goroutines, open descriptors and resident memory are sampled; at the end
// every viewer leaves and the origin must come back to where it started. What it
// reports: the slope of each origin metric over the steady part, the segment response
// times of healthy pull viewers per minute, and the skips and stalls of healthy
// viewers (there should be none).

// Viewer kinds of a soak.
const (
	SoakHLS = "hls" // HLS media playlists reloaded and their new segments fetched (HTTP/1.1)
)

// SoakOptions describe a soak run.
type SoakOptions struct {
	Target *Target
	// Viewers is the number of concurrent viewer slots per kind: ws, http1, http2, hls.
	Viewers  map[string]int
	Duration time.Duration // from the first join to the moment every viewer is told to leave
	Ramp     time.Duration // slots join spread over this (default min(Duration/10, 30 s))
	// Session is the mean session of a viewer: each lasts uniformly 0.5–1.5 × this,
	// then the slot rejoins after up to 2 s (default 60 s).
	Session time.Duration
	// Vanish is the share of sessions that end by resetting their TCP connections
	// (no WebSocket close; a pull viewer in the middle of a response).
	Vanish float64
	// Slow is the share of slots of every kind that read slowly, at SlowBps bytes/s
	// (default half the encoded bitrate): the origin must drop media for them without
	// hurting anyone else. Their skips are expected and counted apart.
	Slow    float64
	SlowBps int64
	// StallAfter: a healthy viewer that receives no new video segment for this long
	// has stalled (default 3 segment durations).
	StallAfter time.Duration
	Sample     time.Duration // origin sampling interval (default 5 s)
	Settle     time.Duration // after all left, wait up to this for the origin to settle (default 30 s)
	// OriginPID, when set, adds /proc/PID's descriptor count and RSS to the samples
	// (the origin's /metrics has process_open_fds and process_resident_memory_bytes).
	OriginPID int
	// OriginCgroup, when set, is the origin's cgroup v1 cpu folder: its cpu.stat's
	// throttling goes into the once-a-second timeline.
	OriginCgroup string
	Insecure     bool
	Seed         uint64
	Progress     io.Writer
}

func (o *SoakOptions) defaults() error {
	if o.Target == nil {
		return errors.New("soak: no target")
	}
	total := 0
	for k, n := range o.Viewers {
		switch k {
		case WS, HTTP1, HTTP2, SoakHLS:
		default:
			return fmt.Errorf("soak: viewer kind %q: want ws, http1, http2 or hls", k)
		}
		if n < 0 {
			return fmt.Errorf("soak: %d %s viewers", n, k)
		}
		total += n
	}
	if total == 0 {
		return errors.New("soak: no viewers")
	}
	if o.Duration <= 0 {
		return errors.New("soak: duration must be positive")
	}
	if o.Vanish < 0 || o.Vanish > 1 || o.Slow < 0 || o.Slow > 1 {
		return errors.New("soak: --vanish and --slow are shares from 0 to 1")
	}
	if o.Ramp <= 0 {
		o.Ramp = min(o.Duration/10, 30*time.Second)
	}
	if o.Session <= 0 {
		o.Session = time.Minute
	}
	if o.SlowBps <= 0 {
		o.SlowBps = max(int64(o.Target.EncodedKbps*1000/8/2), 1000)
	}
	if o.StallAfter <= 0 {
		o.StallAfter = 3 * o.Target.SegmentDuration
	}
	if o.Sample <= 0 {
		o.Sample = 5 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 30 * time.Second
	}
	return nil
}

// SoakResult is what a soak measured.
type SoakResult struct {
	Channel     string         `json:"channel"`
	Tracks      []string       `json:"tracks"`
	SegmentS    float64        `json:"segment_s"`
	EncodedKbps float64        `json:"encoded_kbps"`
	DurationS   float64        `json:"duration_s"`
	RampS       float64        `json:"ramp_s"`
	SessionS    float64        `json:"session_mean_s"`
	Vanish      float64        `json:"vanish_share"`
	Slow        float64        `json:"slow_share"`
	SlowBps     int64          `json:"slow_bytes_per_s"`
	StallAfterS float64        `json:"stall_after_s"`
	Kinds       []*SoakKind    `json:"kinds"`
	Samples     []OriginSample `json:"samples"`
	Slopes      []Slope        `json:"slopes"` // over the steady part (after the ramp, before the leave)
	// SlopesLate are the same over the second half of the steady part: warm-up (the
	// heap growing to its working size) is over there, a leak is not.
	SlopesLate []Slope          `json:"slopes_second_half"`
	Minutes    []ResponseMinute `json:"minutes"`
	Baseline   OriginSample     `json:"baseline"` // before any viewer joined
	After      OriginSample     `json:"after"`    // once every viewer had left and the origin settled
	SettledS   float64          `json:"settled_after_s"`
	LoadCPUS   float64          `json:"load_cpu_s"`
	// Events: every stall, skip and error of a healthy viewer and every failed scrape,
	// time-stamped (EventsDropped beyond maxEvents). Pulse: the machine, the origin's
	// throttling and the load generator's own CPU and lateness, once a second.
	Events        []SoakEvent   `json:"events"`
	EventsDropped int           `json:"events_dropped,omitempty"`
	Pulse         []PulseSecond `json:"pulse"`
}

// SoakKind is what the viewers of one kind did.
type SoakKind struct {
	Kind     string `json:"kind"`
	Viewers  int    `json:"viewers"`    // concurrent slots
	Slow     int    `json:"slow_slots"` // of which read slowly
	Sessions int    `json:"sessions"`
	Vanished int    `json:"vanished"` // sessions ended by a reset
	// Healthy viewers (not slow): video segments received, skips (the origin dropped
	// media, a sequence gap, or a segment gone before it was fetched), stalls (no new
	// segment for StallAfter) and errors.
	Segments int64 `json:"healthy_segments"`
	Skips    int   `json:"healthy_skips"`
	Stalls   int   `json:"healthy_stalls"`
	// Of Stalls, those the load generator's own lateness accounts for (SoakEvent.Cause).
	StallsStarved int      `json:"healthy_stalls_viewer_starved"`
	Errors        int      `json:"healthy_errors"`
	ErrorLog      []string `json:"healthy_error_samples,omitempty"`
	// Slow viewers: what they got and how often the origin dropped media for them.
	SlowSegments int64 `json:"slow_segments"`
	SlowSkips    int   `json:"slow_skips"`
	SlowEnded    int   `json:"slow_ended_by_error"` // e.g. closed by the origin as too slow
}

// session is one viewer session's outcome.
type session struct {
	segments      int64
	skips, stalls int
	starved       int // of stalls, the viewer's own lateness accounts for
	err           error
}

// viewer is what every kind of viewer implements: watch until ctx ends, then leave
// (or vanish: ab.abort resets the connections).
type viewer func(ctx context.Context, v *viewerEnv) session

// viewerEnv is one session's environment.
type viewerEnv struct {
	t        *Target
	o        *SoakOptions
	conns    *connSet
	slow     bool
	vanish   bool
	rec      *responses
	ev       *eventLog
	sw       *stallWatch // the session's, once it watches
	kindName string
}

// RunSoak runs a soak and reports it.
func RunSoak(ctx context.Context, o SoakOptions) (*SoakResult, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	t := o.Target
	res := &SoakResult{Channel: t.Channel, Tracks: t.TrackIDs(), SegmentS: t.SegmentDuration.Seconds(), EncodedKbps: t.EncodedKbps,
		DurationS: o.Duration.Seconds(), RampS: o.Ramp.Seconds(), SessionS: o.Session.Seconds(), Vanish: o.Vanish, Slow: o.Slow,
		SlowBps: o.SlowBps, StallAfterS: o.StallAfter.Seconds()}
	cpu0 := selfCPU()
	smp := newSampler(t.Metrics, o.OriginPID)
	// The second scrape is the baseline: the first opens the sampler's own keep-alive
	// connection, which stays for the whole run.
	_, _ = smp.take(ctx, "baseline", 0)
	base, err := smp.take(ctx, "baseline", 0)
	if err != nil {
		return nil, fmt.Errorf("soak: the origin's metrics: %w", err)
	}
	res.Baseline = base
	begin := time.Now()
	rec := newResponses(begin)
	lag := startLagMonitor(begin, 50*time.Millisecond)
	defer lag.close()
	ev := newEventLog(begin, lag, o.StallAfter)
	smp.ev = ev
	kinds := []string{WS, HTTP1, HTTP2, SoakHLS}
	total := 0
	for _, k := range kinds {
		total += o.Viewers[k]
	}
	vctx, leave := context.WithDeadline(ctx, begin.Add(o.Duration))
	defer leave()
	var wg sync.WaitGroup
	var live activeCount
	slot := 0
	rng := rand.New(rand.NewPCG(o.Seed, 0x50a6))
	for _, k := range kinds {
		n := o.Viewers[k]
		if n == 0 {
			continue
		}
		sk := &SoakKind{Kind: k, Viewers: n}
		res.Kinds = append(res.Kinds, sk)
		var mu sync.Mutex
		slow := int(o.Slow*float64(n) + 0.5)
		sk.Slow = slow
		for i := 0; i < n; i++ {
			at := begin.Add(time.Duration(int64(o.Ramp) * int64(slot) / int64(total)))
			slot++
			seed := rng.Uint64()
			wg.Add(1)
			go func() {
				defer wg.Done()
				runSlot(vctx, &o, k, i < slow, at, seed, rec, ev, &live, func(s session, vanished bool, isSlow bool) {
					mu.Lock()
					defer mu.Unlock()
					sk.add(s, vanished, isSlow)
				})
			}()
		}
	}
	pl := startPulse(begin, o.OriginPID, o.OriginCgroup, originPort(t.HTTPBase), lag, &live, &ev.dials)
	stopSampling := smp.every(ctx, o.Sample, begin, o.Ramp, o.Duration, &live)
	stopProgress := soakProgress(o.Progress, begin, &live)
	wg.Wait()
	left := time.Now()
	stopProgress()
	// Every viewer has left: wait for the origin to come back to its baseline (the
	// sessions of vanished viewers end when the origin notices the reset).
	after, settled := smp.settle(ctx, base, left, o.Settle)
	samples := stopSampling()
	res.Pulse = pl.finish()
	res.Events, res.EventsDropped = ev.all()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Samples = append(append([]OriginSample{base}, samples...), after)
	res.After, res.SettledS = after, settled.Seconds()
	end := left.Sub(begin).Seconds()
	res.Slopes = slopes(res.Samples, o.Ramp.Seconds(), end)
	res.SlopesLate = slopes(res.Samples, (o.Ramp.Seconds()+end)/2, end)
	res.Minutes = rec.minutes()
	res.LoadCPUS = round(selfCPU() - cpu0)
	for _, k := range res.Kinds {
		sort.Strings(k.ErrorLog)
	}
	return res, nil
}

func (k *SoakKind) add(s session, vanished, slow bool) {
	k.Sessions++
	if vanished {
		k.Vanished++
	}
	if slow {
		k.SlowSegments += s.segments
		k.SlowSkips += s.skips
		if s.err != nil {
			k.SlowEnded++
		}
		return
	}
	k.Segments += s.segments
	k.Skips += s.skips
	k.Stalls += s.stalls
	k.StallsStarved += s.starved
	if s.err != nil {
		k.Errors++
		if len(k.ErrorLog) < 10 {
			k.ErrorLog = append(k.ErrorLog, short(s.err))
		}
	}
}

// HealthyOK reports whether no healthy viewer skipped, stalled or failed.
func (r *SoakResult) HealthyOK() bool {
	for _, k := range r.Kinds {
		if k.Skips+k.Stalls+k.Errors > 0 {
			return false
		}
	}
	return true
}

// runSlot is one viewer slot: sessions one after another until ctx ends.
func runSlot(ctx context.Context, o *SoakOptions, kind string, slow bool, at time.Time, seed uint64, rec *responses, ev *eventLog, live *activeCount, done func(session, bool, bool)) {
	rng := rand.New(rand.NewPCG(seed, 1))
	if !workload.SleepUntil(ctx, at) {
		return
	}
	for ctx.Err() == nil {
		length := time.Duration(float64(o.Session) * (0.5 + rng.Float64()))
		vanish := rng.Float64() < o.Vanish
		sctx, cancel := context.WithTimeout(ctx, length)
		env := &viewerEnv{t: o.Target, o: o, conns: &connSet{dials: &ev.dials}, slow: slow, vanish: vanish, rec: rec, ev: ev, kindName: kind}
		if slow {
			env.conns.slowBps = o.SlowBps
		}
		live.add(kind, 1)
		s := viewers[kind](sctx, env)
		if env.sw != nil {
			s.stalls, s.starved = env.sw.n, env.sw.starved
		}
		live.add(kind, -1)
		cancel()
		if vanish {
			env.conns.abort()
		} else {
			env.conns.close()
		}
		done(s, vanish, slow)
		if !workload.SleepUntil(ctx, time.Now().Add(time.Duration(rng.Int64N(int64(2*time.Second))))) {
			return
		}
	}
}

var viewers = map[string]viewer{WS: wsViewer, HTTP1: pullViewer, HTTP2: pullViewer, SoakHLS: hlsViewer}

// activeCount is how many sessions are running, per kind.
type activeCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *activeCount) add(kind string, d int) {
	a.mu.Lock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[kind] += d
	a.mu.Unlock()
}

func (a *activeCount) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := 0
	for _, n := range a.n {
		s += n
	}
	return s
}

func soakProgress(w io.Writer, begin time.Time, live *activeCount) func() {
	if w == nil {
		return func() {}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintf(w, "  soak %4.0fs: %d viewers watching\n", time.Since(begin).Seconds(), live.total())
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}
