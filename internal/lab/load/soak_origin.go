package load

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/lab/load/workload"
)

func tlsConfig(insecure bool) *tls.Config {
	return &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // --insecure for self-signed lab origins
}

// OriginSample is the origin at one moment of a soak: from its /metrics, and from
// /proc when its process ID is known.
type OriginSample struct {
	T          float64 `json:"t_s"` // since the first join
	Phase      string  `json:"phase"`
	Viewers    int     `json:"viewers"`
	Goroutines float64 `json:"goroutines"`
	OpenFDs    float64 `json:"open_fds"`  // process_open_fds
	RSS        float64 `json:"rss_bytes"` // process_resident_memory_bytes
	HeapInuse  float64 `json:"heap_inuse_bytes"`
	CPUSeconds float64 `json:"cpu_s"`              // process_cpu_seconds_total
	ProcFDs    int     `json:"proc_fds,omitempty"` // entries of /proc/PID/fd
}

// The metrics a soak follows, as named in the samples and slopes.
var soakMetrics = []string{"goroutines", "open_fds", "rss_bytes", "heap_inuse_bytes"}

func (s OriginSample) metric(name string) float64 {
	switch name {
	case "goroutines":
		return s.Goroutines
	case "open_fds":
		return s.OpenFDs
	case "rss_bytes":
		return s.RSS
	case "heap_inuse_bytes":
		return s.HeapInuse
	}
	return math.NaN()
}

type sampler struct {
	url string
	pid int
	hc  *http.Client
	ev  *eventLog // failed scrapes during the run, time-stamped
}

func newSampler(url string, pid int) *sampler {
	return &sampler{url: url, pid: pid, hc: &http.Client{Timeout: 3 * time.Second}}
}

// take scrapes the origin once.
func (m *sampler) take(ctx context.Context, phase string, t float64) (OriginSample, error) {
	s := OriginSample{T: round(t), Phase: phase}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return s, err
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s: %s", m.url, resp.Status)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			s.Goroutines = v
		case "process_open_fds":
			s.OpenFDs = v
		case "process_resident_memory_bytes":
			s.RSS = v
		case "go_memstats_heap_inuse_bytes":
			s.HeapInuse = v
		case "process_cpu_seconds_total":
			s.CPUSeconds = v
		default:
			continue
		}
		found++
	}
	if found < 5 {
		return s, fmt.Errorf("%s lacks one of go_goroutines, process_open_fds, process_resident_memory_bytes, go_memstats_heap_inuse_bytes, process_cpu_seconds_total", m.url)
	}
	if m.pid > 0 {
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", m.pid)); err == nil {
			s.ProcFDs = len(ents)
		}
	}
	return s, nil
}

// every samples the origin every d until the returned function is called, which
// returns the samples. Samples before ramp are phase "ramp", then "steady", and after
// leaveAt (every viewer told to leave) "leave".
func (m *sampler) every(ctx context.Context, d time.Duration, begin time.Time, ramp, leaveAt time.Duration, live *activeCount) func() []OriginSample {
	var mu sync.Mutex
	var out []OriginSample
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tk.C:
				el := time.Since(begin)
				phase := "steady"
				switch {
				case el < ramp:
					phase = "ramp"
				case el >= leaveAt:
					phase = "leave"
				}
				t0 := time.Now()
				s, err := m.take(ctx, phase, el.Seconds())
				if err != nil {
					if m.ev != nil {
						m.ev.scrapeFailed(t0, err)
					}
					continue // a missed sample is a gap, not a failure
				}
				s.Viewers = live.total()
				mu.Lock()
				out = append(out, s)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	return func() []OriginSample {
		once.Do(func() { close(stop); wg.Wait() })
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// settle waits until the origin's goroutines and descriptors are back within a few of
// base, or until limit, and returns the last sample and how long it took.
func (m *sampler) settle(ctx context.Context, base OriginSample, left time.Time, limit time.Duration) (OriginSample, time.Duration) {
	var last OriginSample
	for {
		el := time.Since(left)
		s, err := m.take(ctx, "after", 0)
		if err == nil {
			last = s
			if s.Goroutines <= base.Goroutines+settleSlack && s.OpenFDs <= base.OpenFDs+settleSlack {
				break
			}
		}
		if el >= limit || !workload.SleepUntil(ctx, time.Now().Add(time.Second)) {
			break
		}
	}
	d := time.Since(left)
	return last, d
}

// settleSlack is how many goroutines or descriptors above the baseline still count
// as back: timers, an idle keep-alive connection of the sampler itself.
const settleSlack = 5

// Slope is a linear fit of one origin metric against time over the steady part.
type Slope struct {
	Metric  string  `json:"metric"`
	PerHour float64 `json:"per_hour"`          // slope of the fit, in the metric's unit per hour
	Mean    float64 `json:"mean"`              // over the same samples
	RelHour float64 `json:"relative_per_hour"` // PerHour ÷ Mean
	Samples int     `json:"samples"`
	R2      float64 `json:"r2"`
}

// slopes fits every soak metric over the samples from..to seconds.
func slopes(samples []OriginSample, from, to float64) []Slope {
	var out []Slope
	for _, name := range soakMetrics {
		var xs, ys []float64
		for _, s := range samples {
			if s.Phase == "steady" && s.T >= from && s.T <= to {
				xs = append(xs, s.T)
				ys = append(ys, s.metric(name))
			}
		}
		sl := Slope{Metric: name, Samples: len(xs)}
		if b, mean, r2, ok := fitLine(xs, ys); ok {
			sl.PerHour, sl.Mean, sl.R2 = round(b*3600), round(mean), round(r2)
			if mean != 0 {
				sl.RelHour = round(b * 3600 / mean)
			}
		}
		out = append(out, sl)
	}
	return out
}

// fitLine is least squares y = a + b·x; r2 is the share of variance explained.
func fitLine(xs, ys []float64) (b, meanY, r2 float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 3 {
		return 0, 0, 0, false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return 0, my, 0, false
	}
	b = sxy / sxx
	if syy > 0 {
		r2 = sxy * sxy / (sxx * syy)
	}
	return b, my, r2, true
}

// responses keeps the segment response times of healthy pull viewers per minute.
type responses struct {
	begin time.Time
	mu    sync.Mutex
	by    map[int]map[string][]float32 // minute → kind → ms
}

func newResponses(begin time.Time) *responses {
	return &responses{begin: begin, by: map[int]map[string][]float32{}}
}

func (r *responses) add(kind string, d time.Duration) {
	m := int(time.Since(r.begin) / time.Minute)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by[m] == nil {
		r.by[m] = map[string][]float32{}
	}
	r.by[m][kind] = append(r.by[m][kind], float32(d.Seconds()*1000))
}

// ResponseMinute is one minute's segment response times (request to last byte) of
// healthy pull viewers, all kinds together and per kind.
type ResponseMinute struct {
	Minute int                    `json:"minute"`
	All    Percentiles            `json:"all"`
	ByKind map[string]Percentiles `json:"by_kind"`
}

// Percentiles of response times, ms.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func percentiles(v []float32) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	s := append([]float32(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 { return round(float64(s[min(int(q*float64(len(s))), len(s)-1)])) }
	return Percentiles{N: len(s), P50: at(0.5), P99: at(0.99), Max: round(float64(s[len(s)-1]))}
}

func (r *responses) minutes() []ResponseMinute {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ResponseMinute
	for m, kinds := range r.by {
		rm := ResponseMinute{Minute: m, ByKind: map[string]Percentiles{}}
		var all []float32
		for k, v := range kinds {
			rm.ByKind[k] = percentiles(v)
			all = append(all, v...)
		}
		rm.All = percentiles(all)
		out = append(out, rm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Minute < out[j].Minute })
	return out
}
