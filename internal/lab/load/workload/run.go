// Package workload is the workload generator of `streambed load --mode`: workers
// that behave like live players in time (they wait for each segment's availability
// and reload manifests when a player would, never hammering), started on a ramp
// (0 → N over a chosen time) or as the open model (Poisson arrivals with session
// lengths), reporting per request kind — manifest, init, audio, video — counts,
// bytes, errors by status and response-time percentiles from mergeable log-bucket
// histograms, over time. Several processes' reports merge exactly (Merge).
//
// Modes:
//   - dash-live: the published loop: fetch the MPD, parse it (the player's parser),
//     start at the newest available segment, fetch audio (the 128 kbit/s track, else
//     the highest) and video (the top rung) of each segment, advance, and reload the
//     MPD when minimumUpdatePeriod is due or when the listed segments have run out.
//   - hls-live: multivariant playlist once, then the top variant's and the audio
//     rendition's media playlists, reloaded every target duration; each new segment
//     of both is fetched.
//   - abr: dash-live with the video rung chosen per segment by the headless player's
//     ABR rule (internal/player/abr) from its throughput estimator.
package workload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/player/abr"
)

// Modes.
const (
	ModeDASH = "dash-live"
	ModeHLS  = "hls-live"
	ModeABR  = "abr"
)

// Options describe one load process's run.
type Options struct {
	Mode string
	URL  string // the MPD (dash-live, abr) or multivariant playlist (hls-live)
	// Ramp model (Rate == 0): Workers sessions started evenly over Ramp, each lasting
	// until the run ends. Open model (Rate > 0): Poisson arrivals of Rate per second,
	// sessions of SessionMean (SessionDist exp or fixed), at most Workers at once.
	Workers     int
	Ramp        time.Duration
	Rate        float64
	SessionMean time.Duration
	SessionDist string
	Seed        uint64
	Duration    time.Duration // the whole run; sessions still running are stopped then
	// ManifestEvery, when set, replaces the MPD's minimumUpdatePeriod as the reload
	// interval (a $Number$ MPD never runs out, so this sets the manifest share).
	ManifestEvery time.Duration
	ABR           string // abr mode: throughput, bba or bola
	// TimeShiftShare of the sessions (0–1; DASH modes) play behind the live edge, in
	// the DVR window: the time-shifted session j plays TimeShift × ((j mod 10)+1)/10
	// behind it, so their offsets spread evenly over (0, TimeShift] and they ask for
	// other objects than the live sessions and than each other.
	TimeShiftShare float64
	TimeShift      time.Duration
	Audio, Video   string // track IDs to fetch instead of the defaults
	HTTP2          bool   // h2 (https) or h2c prior knowledge (http) instead of HTTP/1.1
	Insecure       bool
	Timeout        time.Duration // per request; 0: 10 s
	Interval       time.Duration // report interval; 0: 1 s
	Host           string        // this process's name in merged reports; "": the hostname
	Progress       io.Writer     // a line every ProgressEvery (nil: none)
	ProgressEvery  time.Duration // 0: 2 s
	// OnSession, when set, is told of every session start (i, true) and end (i, false),
	// i being the arrival's index.
	OnSession func(i int, start bool)
}

func (o *Options) check() error {
	switch o.Mode {
	case ModeDASH, ModeHLS, ModeABR:
	default:
		return fmt.Errorf("mode %q: want %s, %s or %s", o.Mode, ModeDASH, ModeHLS, ModeABR)
	}
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http(s) URL of a live MPD or multivariant playlist", o.URL)
	}
	if o.Workers < 1 || o.Workers > 100000 {
		return fmt.Errorf("workers %d: want 1 to 100000", o.Workers)
	}
	if o.Duration <= 0 || o.Duration > 24*time.Hour {
		return fmt.Errorf("duration %v: want more than 0 and at most 24h", o.Duration)
	}
	if o.Rate == 0 && o.Ramp > o.Duration {
		return fmt.Errorf("ramp %v is longer than the run (%v)", o.Ramp, o.Duration)
	}
	if o.TimeShiftShare < 0 || o.TimeShiftShare > 1 || (o.TimeShiftShare > 0) != (o.TimeShift > 0) || o.TimeShift < 0 {
		return fmt.Errorf("time shift: want a share from 0 to 1 and a positive offset together (got %g, %v)", o.TimeShiftShare, o.TimeShift)
	}
	if o.TimeShiftShare > 0 && o.Mode == ModeHLS {
		return errors.New("time shift: only for the DASH modes (dash-live, abr)")
	}
	if o.Mode == ModeABR {
		if o.ABR == "" {
			o.ABR = "throughput"
		}
		if _, err := abr.Parse(o.ABR); err != nil {
			return err
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Interval < time.Millisecond || o.Duration/o.Interval > maxIntervals {
		return fmt.Errorf("interval %v: want at least 1ms and at most %d intervals in the run", o.Interval, maxIntervals)
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 2 * time.Second
	}
	if o.SessionDist == "" {
		o.SessionDist = DistExponential
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	return nil
}

// Plan is the run's schedule of sessions.
func (o *Options) Plan() ([]Arrival, error) {
	if o.Rate > 0 {
		return PoissonSchedule(o.Rate, o.Duration, o.SessionMean, o.SessionDist, o.Seed)
	}
	return RampSchedule(o.Workers, o.Ramp), nil
}

// Run runs the load and returns its report. Sessions stop at the end of the run (or
// their own length) between requests: a request in flight is finished and counted,
// so the report's counts are exactly what reached the server.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	plan, err := o.Plan()
	if err != nil {
		return nil, err
	}
	s := Settings{Host: o.Host, Mode: o.Mode, Workers: o.Workers, DurationS: o.Duration.Seconds(),
		MPDEveryS: o.ManifestEvery.Seconds(), TimeShiftShare: o.TimeShiftShare, TimeShiftS: o.TimeShift.Seconds()}
	if o.Mode == ModeABR {
		s.ABR = o.ABR
	}
	if o.Rate > 0 {
		s.Rate, s.SessionS, s.SessionDist, s.Seed = o.Rate, o.SessionMean.Seconds(), o.SessionDist, o.Seed
	} else {
		s.RampS = o.Ramp.Seconds()
	}
	begin := time.Now()
	rec := NewRecorder(begin, o.Interval, s, o.URL)
	rec.Count(func(ss *Sessions) { ss.Planned = len(plan) })
	end := begin.Add(o.Duration)
	stopProgress := progress(o, rec, begin)
	var wg sync.WaitGroup
	var busyMu sync.Mutex
	busy := 0
	for i, a := range plan {
		if !SleepUntil(ctx, begin.Add(a.At)) {
			break
		}
		busyMu.Lock()
		full := busy >= o.Workers
		if !full {
			busy++
		}
		busyMu.Unlock()
		if full {
			rec.Count(func(ss *Sessions) { ss.Skipped++ })
			continue
		}
		stopAt := end
		if a.Length > 0 {
			if t := time.Now().Add(a.Length); t.Before(end) {
				stopAt = t
			}
		}
		// Starts are recorded here, in arrival order; ends in each session.
		rec.Session(time.Now(), 1)
		if o.OnSession != nil {
			o.OnSession(i, true)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { busyMu.Lock(); busy--; busyMu.Unlock() }()
			stop, cancel := context.WithDeadline(ctx, stopAt)
			defer cancel()
			w := newWorker(&o, rec, stop, ctx)
			w.shift = o.shiftOf(i)
			if err := w.run(); err != nil {
				rec.Count(func(ss *Sessions) { ss.Failed++ })
			}
			w.close()
			if o.OnSession != nil {
				o.OnSession(i, false)
			}
			rec.Session(time.Now(), -1)
		}()
	}
	SleepUntil(ctx, end)
	wg.Wait()
	stopProgress()
	r := rec.Finish(time.Now())
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	return r, nil
}

// shiftOf is how far behind the live edge session i plays: sessions are time-shifted
// at the share TimeShiftShare, evenly through the arrivals (session i is the j-th
// shifted one when ⌊(i+1)·share⌋ > ⌊i·share⌋), with offsets spread over (0, TimeShift].
func (o *Options) shiftOf(i int) time.Duration {
	if o.TimeShiftShare <= 0 {
		return 0
	}
	before := int(float64(i) * o.TimeShiftShare)
	if int(float64(i+1)*o.TimeShiftShare) == before {
		return 0
	}
	j := before // shifted sessions before this one
	return o.TimeShift * time.Duration(j%10+1) / 10
}

// SleepUntil waits for t; false if ctx ended first.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func progress(o Options, rec *Recorder, begin time.Time) func() {
	if o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.ProgressEvery)
		defer t.Stop()
		var lastReq, lastBytes uint64
		last := begin
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				req, errs, bytes, busy := rec.Snapshot()
				dt := now.Sub(last).Seconds()
				fmt.Fprintf(o.Progress, "  %s %4.0fs  workers %d/%d  %7.1f req/s  %8.2f Mbit/s  errors %d\n",
					o.Mode, now.Sub(begin).Seconds(), busy, o.Workers, float64(req-lastReq)/dt, float64(bytes-lastBytes)*8/dt/1e6, errs)
				lastReq, lastBytes, last = req, bytes, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// worker is one session: a player's requests without its decoder.
type worker struct {
	o    *Options
	rec  *Recorder
	stop context.Context // session end: checked between requests and in waits
	ctx  context.Context // the run: bounds requests
	hc   *http.Client
	buf  []byte
	// shift is how far behind the live edge this session plays (0: at the edge).
	shift time.Duration
}

func newWorker(o *Options, rec *Recorder, stop, ctx context.Context) *worker {
	tlsConf := &tls.Config{InsecureSkipVerify: o.Insecure} //nolint:gosec // --insecure for self-signed lab origins
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: o.Timeout}).DialContext,
		MaxConnsPerHost:     2, // audio and video in parallel, as players do
		MaxIdleConnsPerHost: 2,
		TLSClientConfig:     tlsConf,
		DisableCompression:  true,
	}
	tr.Protocols = new(http.Protocols)
	switch {
	case !o.HTTP2:
		tr.Protocols.SetHTTP1(true)
	case o.URL[:5] == "https":
		tr.Protocols.SetHTTP2(true)
	default:
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	return &worker{o: o, rec: rec, stop: stop, ctx: ctx, hc: &http.Client{Transport: tr}, buf: make([]byte, 32<<10)}
}

func (w *worker) close() { w.hc.CloseIdleConnections() }

// stopped reports whether the session is over.
func (w *worker) stopped() bool { return w.stop.Err() != nil }

// wait sleeps until t or the session's end; false at the end.
func (w *worker) wait(t time.Time) bool { return SleepUntil(w.stop, t) }

// errStatus is a request that was answered, but not with 200.
type errStatus struct{ code int }

func (e errStatus) Error() string { return "HTTP " + strconv.Itoa(e.code) }

// get requests u, records it as kind k and returns the body when keep is set.
func (w *worker) get(k Kind, u string, keep bool) ([]byte, int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(w.ctx, w.o.Timeout)
	defer cancel()
	start := time.Now()
	body, n, err := w.do(ctx, u, keep)
	end := time.Now()
	status := ""
	var es errStatus
	switch {
	case err == nil:
	case errors.As(err, &es):
		status = strconv.Itoa(es.code)
	case errors.Is(err, context.DeadlineExceeded):
		status = "timeout"
	case w.ctx.Err() != nil:
		status = "canceled"
	default:
		status = "connection"
	}
	w.rec.Request(k, start, end, status, n)
	return body, n, end.Sub(start), err
}

func (w *worker) do(ctx context.Context, u string, keep bool) ([]byte, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if keep && resp.StatusCode == http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		return b, int64(len(b)), err
	}
	n, err := io.CopyBuffer(io.Discard, resp.Body, w.buf)
	if err != nil {
		return nil, n, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, n, errStatus{resp.StatusCode}
	}
	return nil, n, nil
}

func (w *worker) run() error {
	if w.o.Mode == ModeHLS {
		return w.runHLS()
	}
	return w.runDASH()
}

// backoff is how long a worker waits after a failed manifest before asking again.
const backoff = time.Second
