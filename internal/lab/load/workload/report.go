package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Kind is what a request is for, as the report counts it.
type Kind string

// Request kinds. A manifest is an MPD or an HLS playlist (multivariant or media).
const (
	KindManifest Kind = "manifest"
	KindInit     Kind = "init"
	KindAudio    Kind = "audio"
	KindVideo    Kind = "video"
)

// Kinds in report order.
var Kinds = []Kind{KindManifest, KindInit, KindAudio, KindVideo}

// Report is one load run (or several merged): what was asked, what was answered, how
// fast, over time. It is the JSON file a run writes and merge reads.
type Report struct {
	Version  int       `json:"version"`
	Mode     string    `json:"mode"`
	URL      string    `json:"url"`
	Hosts    []string  `json:"hosts"` // one per load process merged in
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Settings of each process, as given (merged reports keep them all).
	Settings []Settings `json:"settings"`

	Sessions Sessions             `json:"sessions"`
	Kinds    map[Kind]*KindReport `json:"kinds"`
	Errors   map[string]uint64    `json:"errors_by_status"` // "404", "503", "timeout", "connection"
	// Intervals holds one entry per IntervalS seconds since Started.
	IntervalS float64     `json:"interval_s"`
	Intervals []*Interval `json:"intervals"`
}

// Settings are one process's options.
type Settings struct {
	Host        string  `json:"host"`
	Mode        string  `json:"mode"`
	Workers     int     `json:"workers"` // ramp: N; poisson: the cap on concurrent sessions
	RampS       float64 `json:"ramp_s,omitempty"`
	Rate        float64 `json:"arrivals_per_s,omitempty"`
	SessionS    float64 `json:"session_mean_s,omitempty"`
	SessionDist string  `json:"session_dist,omitempty"`
	Seed        uint64  `json:"seed,omitempty"`
	DurationS   float64 `json:"duration_s"`
	MPDEveryS   float64 `json:"manifest_interval_s,omitempty"`
	ABR         string  `json:"abr,omitempty"`
	// dash: the share of sessions played time-shifted, and the largest offset
	TimeShiftShare float64 `json:"timeshift_share,omitempty"`
	TimeShiftS     float64 `json:"timeshift_s,omitempty"`
}

// Sessions counts worker sessions.
type Sessions struct {
	Planned  int `json:"planned"`  // arrivals scheduled within the duration
	Started  int `json:"started"`  // sessions that began
	Skipped  int `json:"skipped"`  // arrivals dropped because --workers were all busy
	Failed   int `json:"failed"`   // sessions that ended on an error they could not get past
	PeakBusy int `json:"peak"`     // most sessions at once (per process; merged: the sum)
	Switches int `json:"switches"` // abr: rendition changes
	Jumps    int `json:"jumps"`    // a worker fell more than the live delay behind and jumped to the edge
	// TimeShifted sessions started behind the live edge (in the DVR window)
	TimeShifted int `json:"time_shifted,omitempty"`
}

// KindReport is one request kind's totals.
type KindReport struct {
	Requests uint64 `json:"requests"`
	Errors   uint64 `json:"errors"`
	Bytes    uint64 `json:"bytes"`
	Latency  *Hist  `json:"latency_us"` // response time: request sent to last body byte
}

// Interval is one slice of the run.
type Interval struct {
	Requests map[Kind]uint64 `json:"requests"`
	Errors   uint64          `json:"errors"`
	Bytes    uint64          `json:"bytes"`
	Busy     int             `json:"busy"` // sessions running at the interval's end (merged: summed)
	Latency  *Hist           `json:"latency_us"`
}

func newInterval() *Interval {
	return &Interval{Requests: map[Kind]uint64{}, Latency: NewHist()}
}

// Recorder collects a run's requests. Workers call Request from many goroutines.
type Recorder struct {
	mu       sync.Mutex
	r        *Report
	begin    time.Time
	interval time.Duration
	busy     int
}

// NewRecorder starts a report at begin.
func NewRecorder(begin time.Time, interval time.Duration, s Settings, url string) *Recorder {
	r := &Report{Version: 1, Mode: s.Mode, URL: url, Hosts: []string{s.Host}, Started: begin,
		Settings: []Settings{s}, Kinds: map[Kind]*KindReport{}, Errors: map[string]uint64{}, IntervalS: interval.Seconds()}
	for _, k := range Kinds {
		r.Kinds[k] = &KindReport{Latency: NewHist()}
	}
	return &Recorder{r: r, begin: begin, interval: interval}
}

func (rc *Recorder) slot(t time.Time) *Interval {
	i := max(0, int(t.Sub(rc.begin)/rc.interval))
	for len(rc.r.Intervals) <= i {
		iv := newInterval()
		iv.Busy = rc.busy
		rc.r.Intervals = append(rc.r.Intervals, iv)
	}
	return rc.r.Intervals[i]
}

// Request records one request sent at start that ended at end with status (an HTTP
// status, or "" for a 200) and n body bytes.
func (rc *Recorder) Request(k Kind, start, end time.Time, status string, n int64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	kr := rc.r.Kinds[k]
	iv := rc.slot(start)
	d := end.Sub(start)
	kr.Requests++
	kr.Bytes += uint64(max(n, 0))
	kr.Latency.Record(d)
	iv.Requests[k]++
	iv.Bytes += uint64(max(n, 0))
	iv.Latency.Record(d)
	if status != "" {
		kr.Errors++
		iv.Errors++
		rc.r.Errors[status]++
	}
}

// Problem counts an error that is not a request's status (a manifest that did not
// parse); it adds to the errors by status only, so request counts stay what was sent.
func (rc *Recorder) Problem(what string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.r.Errors[what]++
}

// Session records a session's start (+1) or end (−1) at t.
func (rc *Recorder) Session(t time.Time, delta int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.busy += delta
	if delta > 0 {
		rc.r.Sessions.Started++
		rc.r.Sessions.PeakBusy = max(rc.r.Sessions.PeakBusy, rc.busy)
	}
	rc.slot(t).Busy = rc.busy
}

// Count adds to the session counters (f edits them under the lock).
func (rc *Recorder) Count(f func(s *Sessions)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	f(&rc.r.Sessions)
}

// Snapshot returns totals for the progress line: requests, errors, bytes, busy.
func (rc *Recorder) Snapshot() (requests, errors, bytes uint64, busy int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, k := range rc.r.Kinds {
		requests += k.Requests
		errors += k.Errors
		bytes += k.Bytes
	}
	return requests, errors, bytes, rc.busy
}

// Finish closes the report at end.
func (rc *Recorder) Finish(end time.Time) *Report {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.slot(end.Add(-time.Nanosecond))
	rc.r.Finished = end
	return rc.r
}

// Load reads a report file.
func Load(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// maxIntervals bounds a report's series (a day of 1 s slices, and some).
const maxIntervals = 100000

// Parse reads a report from another load process, checking what Merge relies on.
func Parse(b []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Version != 1 || r.Kinds == nil {
		return nil, fmt.Errorf("not a workload report (version %d)", r.Version)
	}
	if !(r.IntervalS >= 0.001 && r.IntervalS <= 3600) {
		return nil, fmt.Errorf("interval %g s: want 0.001 to 3600", r.IntervalS)
	}
	for _, k := range Kinds {
		if r.Kinds[k] == nil || r.Kinds[k].Latency == nil {
			return nil, fmt.Errorf("no %s totals", k)
		}
	}
	if len(r.Intervals) > maxIntervals {
		return nil, fmt.Errorf("%d intervals: at most %d", len(r.Intervals), maxIntervals)
	}
	for i, iv := range r.Intervals {
		if iv == nil || iv.Latency == nil {
			return nil, fmt.Errorf("interval %d is empty", i)
		}
		if iv.Requests == nil {
			iv.Requests = map[Kind]uint64{}
		}
	}
	if r.Errors == nil {
		r.Errors = map[string]uint64{}
	}
	return &r, nil
}

// Merge combines reports of load processes that ran at the same time (one per host)
// into one: counts and histograms add exactly; intervals line up by their offset from
// each report's own start (the processes are started together, so their clocks need
// not agree); busy sessions add up.
func Merge(rs ...*Report) (*Report, error) {
	if len(rs) == 0 {
		return nil, errors.New("merge: no reports")
	}
	out := &Report{Version: 1, Mode: rs[0].Mode, URL: rs[0].URL, Started: rs[0].Started, Finished: rs[0].Finished,
		Kinds: map[Kind]*KindReport{}, Errors: map[string]uint64{}, IntervalS: rs[0].IntervalS}
	for _, k := range Kinds {
		out.Kinds[k] = &KindReport{Latency: NewHist()}
	}
	for _, r := range rs {
		if r.IntervalS != out.IntervalS {
			return nil, fmt.Errorf("merge: interval %gs and %gs differ", r.IntervalS, out.IntervalS)
		}
		if r.Mode != out.Mode {
			out.Mode = "mixed"
		}
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if r.Finished.After(out.Finished) {
			out.Finished = r.Finished
		}
		out.Hosts = append(out.Hosts, r.Hosts...)
		out.Settings = append(out.Settings, r.Settings...)
		s := &out.Sessions
		s.Planned += r.Sessions.Planned
		s.Started += r.Sessions.Started
		s.Skipped += r.Sessions.Skipped
		s.Failed += r.Sessions.Failed
		s.PeakBusy += r.Sessions.PeakBusy
		s.Switches += r.Sessions.Switches
		s.Jumps += r.Sessions.Jumps
		s.TimeShifted += r.Sessions.TimeShifted
		for _, k := range Kinds {
			a, b := out.Kinds[k], r.Kinds[k]
			a.Requests += b.Requests
			a.Errors += b.Errors
			a.Bytes += b.Bytes
			a.Latency.Merge(b.Latency)
		}
		for st, n := range r.Errors {
			out.Errors[st] += n
		}
		for i, iv := range r.Intervals {
			for len(out.Intervals) <= i {
				out.Intervals = append(out.Intervals, newInterval())
			}
			o := out.Intervals[i]
			for k, n := range iv.Requests {
				o.Requests[k] += n
			}
			o.Errors += iv.Errors
			o.Bytes += iv.Bytes
			o.Busy += iv.Busy
			o.Latency.Merge(iv.Latency)
		}
	}
	return out, nil
}

// Totals are the headline figures of a report.
type Totals struct {
	Requests      uint64             `json:"requests"`
	Errors        uint64             `json:"errors"`
	Bytes         uint64             `json:"bytes"`
	Seconds       float64            `json:"seconds"`
	RequestsPerS  float64            `json:"requests_per_s"`
	ThroughputBps float64            `json:"throughput_bit_per_s"` // body bytes received × 8 ÷ run time
	Share         map[Kind]float64   `json:"share"`                // of all requests
	ShareNoInit   map[Kind]float64   `json:"share_without_init"`   // of manifest, audio and video requests
	Percentiles   map[Kind][]float64 `json:"percentiles_ms"`       // p50, p90, p99, p99.9
}

// Quantiles reported, in order.
var Quantiles = []float64{0.5, 0.9, 0.99, 0.999}

// Totals computes the headline figures.
func (r *Report) Totals() Totals {
	t := Totals{Share: map[Kind]float64{}, ShareNoInit: map[Kind]float64{}, Percentiles: map[Kind][]float64{}}
	for _, k := range Kinds {
		kr := r.Kinds[k]
		t.Requests += kr.Requests
		t.Errors += kr.Errors
		t.Bytes += kr.Bytes
		var ps []float64
		for _, q := range Quantiles {
			ps = append(ps, ms(kr.Latency.Quantile(q)))
		}
		t.Percentiles[k] = ps
	}
	noInit := t.Requests - r.Kinds[KindInit].Requests
	for _, k := range Kinds {
		if t.Requests > 0 {
			t.Share[k] = float64(r.Kinds[k].Requests) / float64(t.Requests)
		}
		if k != KindInit && noInit > 0 {
			t.ShareNoInit[k] = float64(r.Kinds[k].Requests) / float64(noInit)
		}
	}
	t.Seconds = r.Finished.Sub(r.Started).Seconds()
	if t.Seconds > 0 {
		t.RequestsPerS = float64(t.Requests) / t.Seconds
		t.ThroughputBps = float64(t.Bytes) * 8 / t.Seconds
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// errorKeys lists error statuses in a stable order.
func (r *Report) errorKeys() []string {
	keys := slices.Collect(maps.Keys(r.Errors))
	sort.Slice(keys, func(i, j int) bool {
		a, ea := strconv.Atoi(keys[i])
		b, eb := strconv.Atoi(keys[j])
		if ea == nil && eb == nil {
			return a < b
		}
		return keys[i] < keys[j]
	})
	return keys
}
