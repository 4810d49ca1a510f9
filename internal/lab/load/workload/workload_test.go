package workload

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// sessionLog records OnSession events in order.
type sessionLog struct {
	mu     sync.Mutex
	events []sessionEvent
}

type sessionEvent struct {
	i     int
	start bool
}

func (l *sessionLog) on(i int, start bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, sessionEvent{i, start})
}

// checkAgainstOrigin compares the generator's counts per kind with the origin's log,
// exactly, and checks that nothing else was requested.
func checkAgainstOrigin(t *testing.T, r *Report, log *originLog) {
	t.Helper()
	counts, other := log.snapshot()
	for _, k := range Kinds {
		if got, want := r.Kinds[k].Requests, counts[k]; got != want {
			t.Errorf("%s: the generator counted %d requests, the origin logged %d", k, got, want)
		}
	}
	if len(other) > 0 {
		t.Errorf("requests outside the manifest/init/segment routes: %v", other)
	}
}

// checkMix checks a player's request mix: no errors, two inits per session, as many
// audio as video segments, and about one manifest reload per segment (the origin's
// minimumUpdatePeriod and HLS target duration are one segment).
func checkMix(t *testing.T, r *Report, sessions int, manifestsPerSegment float64) {
	t.Helper()
	k := r.Kinds
	if len(r.Errors) > 0 || r.Sessions.Failed > 0 {
		t.Errorf("errors %v, failed sessions %d", r.Errors, r.Sessions.Failed)
	}
	if k[KindInit].Requests != uint64(2*sessions) {
		t.Errorf("init requests %d, want 2 per session (%d)", k[KindInit].Requests, 2*sessions)
	}
	if k[KindAudio].Requests != k[KindVideo].Requests || k[KindVideo].Requests < uint64(3*sessions) {
		t.Errorf("audio %d, video %d: want equal, at least 3 per session", k[KindAudio].Requests, k[KindVideo].Requests)
	}
	per := float64(k[KindManifest].Requests) / float64(k[KindVideo].Requests)
	if per < 0.6*manifestsPerSegment || per > 1.6*manifestsPerSegment {
		t.Errorf("%.2f manifest requests per segment, want about %.1f (manifests %d, segments %d)",
			per, manifestsPerSegment, k[KindManifest].Requests, k[KindVideo].Requests)
	}
	for _, kind := range Kinds {
		if h := k[kind].Latency; h.Count() != k[kind].Requests {
			t.Errorf("%s: histogram holds %d values for %d requests", kind, h.Count(), k[kind].Requests)
		}
	}
	t.Logf("%s: %+v; manifests %d init %d audio %d video %d (%.2f manifests per segment)", r.Mode, r.Sessions,
		k[KindManifest].Requests, k[KindInit].Requests, k[KindAudio].Requests, k[KindVideo].Requests, per)
}

// TestDASHRampAgainstOriginLog ramps 0 → 50 workers on the $Number$ MPD: the
// generator's counts per kind equal the origin's log exactly, the mix is a player's,
// and the ramp starts sessions in order, all before any ends.
func TestDASHRampAgainstOriginLog(t *testing.T) {
	base, log := origin(t)
	var sl sessionLog
	const n = 50
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: base + "/live/live/manifest.mpd", Workers: n,
		Ramp: 2 * time.Second, Duration: 5 * time.Second, OnSession: sl.on})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	checkMix(t, r, n, 1)
	if r.Sessions.Started != n || r.Sessions.Planned != n || r.Sessions.PeakBusy != n {
		t.Errorf("sessions %+v, want %d planned, started and at once", r.Sessions, n)
	}
	// Event order: starts 0, 1, ..., n-1, then the ends.
	if len(sl.events) != 2*n {
		t.Fatalf("%d session events, want %d", len(sl.events), 2*n)
	}
	for i, e := range sl.events[:n] {
		if !e.start || e.i != i {
			t.Fatalf("event %d is %+v, want the start of session %d", i, e, i)
		}
	}
	for _, e := range sl.events[n:] {
		if e.start {
			t.Fatalf("a session started after one ended: %+v", e)
		}
	}
	// The busy count over time rises to n and never falls before the end (the
	// intervals that end by the run's duration: sessions end after it).
	prev := 0
	for i, iv := range r.Intervals[:5] { // 1 s intervals of the 5 s run
		if iv.Busy < prev {
			t.Errorf("interval %d: %d sessions, fewer than the %d before", i, iv.Busy, prev)
		}
		prev = iv.Busy
	}
	if prev != n {
		t.Errorf("%d sessions before the end, want %d", prev, n)
	}
}

// TestDASHTimelineAgainstOriginLog runs the SegmentTimeline MPD, which lists complete
// segments only: workers reload it when they run out. Over HTTP/2 (h2c): every
// request reaches the origin as HTTP/2.
func TestDASHTimelineAgainstOriginLog(t *testing.T) {
	base, log := origin(t)
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: base + "/live/live/manifest-timeline.mpd", Workers: 10,
		Ramp: time.Second, Duration: 5 * time.Second, HTTP2: true})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	checkMix(t, r, 10, 1)
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.protos[2] == 0 || log.protos[1] != 0 {
		t.Errorf("requests by HTTP version %v, want HTTP/2 only", log.protos)
	}
}

// TestManifestEvery: --manifest-every 4 segments gives a quarter of the MPD reloads.
func TestManifestEvery(t *testing.T) {
	base, log := origin(t)
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: base + "/live/live/manifest.mpd", Workers: 5,
		Duration: 6 * time.Second, ManifestEvery: 4 * segment})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	checkMix(t, r, 5, 0.25)
}

// TestHLSAgainstOriginLog: the multivariant playlist once, then two media playlists
// reloaded per target duration, and both tracks' segments.
func TestHLSAgainstOriginLog(t *testing.T) {
	base, log := origin(t)
	r, err := Run(context.Background(), Options{Mode: ModeHLS, URL: base + "/live/live/master.m3u8", Workers: 10,
		Ramp: time.Second, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	// Target duration is the segment rounded up to whole seconds (1 s for 0.64 s):
	// two playlists per reload, each reload finding one or two new segments.
	checkMix(t, r, 10, 2*segment.Seconds())
}

// TestABRAgainstOriginLog: the abr mode requests what the player's rule picks.
func TestABRAgainstOriginLog(t *testing.T) {
	base, log := origin(t)
	r, err := Run(context.Background(), Options{Mode: ModeABR, ABR: "throughput", URL: base + "/live/live/manifest.mpd", Workers: 5,
		Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	// The first segment is the lowest rung, then the rule may switch: a switch fetches
	// the new rung's init, so inits are 2 per session plus one per first use of a rung.
	k := r.Kinds
	if len(r.Errors) > 0 || k[KindAudio].Requests != k[KindVideo].Requests || k[KindInit].Requests < 10 {
		t.Errorf("errors %v, audio %d, video %d, init %d", r.Errors, k[KindAudio].Requests, k[KindVideo].Requests, k[KindInit].Requests)
	}
	t.Logf("abr: %+v", r.Sessions)
}

// TestMergeEqualsCombinedRun runs two load processes at once against one origin: the
// merged report's counts equal the origin's log of the combined run, and merging the
// written files gives the same report as merging in memory.
func TestMergeEqualsCombinedRun(t *testing.T) {
	base, log := origin(t)
	var rs [2]*Report
	var errs [2]error
	var wg sync.WaitGroup
	for i := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i], errs[i] = Run(context.Background(), Options{Mode: ModeDASH, URL: base + "/live/live/manifest.mpd",
				Workers: 4 + 3*i, Ramp: time.Second, Duration: 4 * time.Second, Host: []string{"a", "b"}[i]})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := Merge(rs[0], rs[1])
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, m, log)
	for _, k := range Kinds {
		a, b, c := rs[0].Kinds[k], rs[1].Kinds[k], m.Kinds[k]
		if c.Requests != a.Requests+b.Requests || c.Bytes != a.Bytes+b.Bytes || c.Latency.Count() != a.Latency.Count()+b.Latency.Count() {
			t.Errorf("%s: merged %d requests / %d bytes, parts %d+%d / %d+%d", k, c.Requests, c.Bytes, a.Requests, b.Requests, a.Bytes, b.Bytes)
		}
	}
	if m.Sessions.Started != 11 || !reflect.DeepEqual(m.Hosts, []string{"a", "b"}) {
		t.Errorf("merged sessions %+v hosts %v", m.Sessions, m.Hosts)
	}
	var perInterval uint64
	for _, iv := range m.Intervals {
		for _, n := range iv.Requests {
			perInterval += n
		}
	}
	if tot := m.Totals(); perInterval != tot.Requests {
		t.Errorf("intervals hold %d requests, totals %d", perInterval, tot.Requests)
	}
	// Through files, as `streambed load merge` does.
	dir := t.TempDir()
	var loaded []*Report
	for i, r := range rs {
		d := filepath.Join(dir, []string{"a", "b"}[i])
		if err := r.Write(d); err != nil {
			t.Fatal(err)
		}
		l, err := Load(filepath.Join(d, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, l)
	}
	m2, err := Merge(loaded...)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := m.Totals(), m2.Totals(); !reflect.DeepEqual(a.Percentiles, b.Percentiles) || a.Requests != b.Requests || a.Bytes != b.Bytes {
		t.Errorf("merged from files %+v, in memory %+v", b, a)
	}
}

// TestPoissonSchedule: a fixed seed gives the same arrivals every time, and their
// count is within four standard deviations of rate × duration; session lengths have
// about the mean asked for.
func TestPoissonSchedule(t *testing.T) {
	const rate, dur, mean = 50.0, 60 * time.Second, 10 * time.Second
	a, err := PoissonSchedule(rate, dur, mean, DistExponential, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PoissonSchedule(rate, dur, mean, DistExponential, 42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different schedules")
	}
	want := rate * dur.Seconds()
	if d := math.Abs(float64(len(a)) - want); d > 4*math.Sqrt(want) {
		t.Errorf("%d arrivals, want %.0f ± %.0f", len(a), want, 4*math.Sqrt(want))
	}
	var sum time.Duration
	for i, x := range a {
		if i > 0 && x.At < a[i-1].At || x.At >= dur {
			t.Fatalf("arrival %d at %v out of order or past the end", i, x.At)
		}
		sum += x.Length
	}
	avg := sum / time.Duration(len(a))
	// The mean of n exponentials has standard deviation mean/√n.
	if d := math.Abs(float64(avg - mean)); d > 4*float64(mean)/math.Sqrt(float64(len(a))) {
		t.Errorf("mean session %v, want about %v", avg, mean)
	}
	c, _ := PoissonSchedule(rate, dur, mean, DistExponential, 43)
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same schedule")
	}
	for _, bad := range []struct {
		rate float64
		mean time.Duration
		dist string
	}{{0, mean, DistExponential}, {rate, 0, DistExponential}, {rate, mean, "normal"}} {
		if _, err := PoissonSchedule(bad.rate, dur, bad.mean, bad.dist, 1); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestPoissonRun runs the open model: every planned arrival either started a session
// or was skipped because the cap was reached, and sessions end on their own.
func TestPoissonRun(t *testing.T) {
	base, log := origin(t)
	var sl sessionLog
	o := Options{Mode: ModeDASH, URL: base + "/live/live/manifest.mpd", Workers: 3, Rate: 4, SessionMean: 1500 * time.Millisecond,
		SessionDist: DistFixed, Seed: 7, Duration: 4 * time.Second, OnSession: sl.on}
	plan, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOrigin(t, r, log)
	s := r.Sessions
	if s.Planned != len(plan) || s.Started+s.Skipped != s.Planned || s.Started == 0 || s.PeakBusy > 3 || len(sl.events) != 2*s.Started {
		t.Errorf("sessions %+v for %d planned arrivals, %d events", s, len(plan), len(sl.events))
	}
	t.Logf("open model: %+v", s)
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{Mode: "rtmp", URL: "http://h/x.mpd", Workers: 1, Duration: time.Second},
		{Mode: ModeDASH, URL: "ftp://h/x.mpd", Workers: 1, Duration: time.Second},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 0, Duration: time.Second},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 1, Duration: 0},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 1, Duration: time.Second, Ramp: 2 * time.Second},
		{Mode: ModeABR, ABR: "magic", URL: "http://h/x.mpd", Workers: 1, Duration: time.Second},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 1, Duration: 24 * time.Hour, Interval: 100 * time.Millisecond},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 1, Duration: time.Second, TimeShiftShare: 1.5, TimeShift: time.Second},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 1, Duration: time.Second, TimeShiftShare: 0.5},
		{Mode: ModeDASH, URL: "http://h/x.mpd", Workers: 1, Duration: time.Second, TimeShift: time.Second},
		{Mode: ModeHLS, URL: "http://h/x.m3u8", Workers: 1, Duration: time.Second, TimeShiftShare: 0.5, TimeShift: time.Second},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
