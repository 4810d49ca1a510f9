package load

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServerStats is what the origin's /metrics said during a step (a Streambed origin),
// or /proc for the processes of --server-pids (any server: CPU and RSS only).
type ServerStats struct {
	CPUSeconds float64 `json:"cpu_s"`     // process CPU time spent during the step
	CPUShare   float64 `json:"cpu_share"` // of one core, over the step
	RSSMax     int64   `json:"rss_max_bytes"`
	RSSBefore  int64   `json:"rss_before_bytes"`
	// Heap and stack in use and goroutines, before the step and at the sample with the
	// least heap + stack while (nearly) all clients were connected; their differences
	// per client are the memory of one session (or idle socket), garbage mostly left out.
	HeapBefore, HeapPeak   int64   `json:"-"`
	StackBefore, StackPeak int64   `json:"-"`
	Goroutines             [2]int  `json:"goroutines_before_peak"`
	HeapPerClient          float64 `json:"heap_bytes_per_client"`
	StackPerClient         float64 `json:"stack_bytes_per_client"`
	MemPerClient           float64 `json:"memory_bytes_per_client"` // heap + stack
}

type sample struct {
	cpu              float64
	rss, heap, stack int64
	goroutines       int
	ok               bool
}

type monitor struct {
	url     string
	pids    []int // sample these processes' /proc instead of url
	hc      *http.Client
	before  sample
	begin   time.Time
	stopc   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	peak    sample   // see stop
	samples []sample // one a second
	rssMax  int64
	last    sample
}

func startMonitor(ctx context.Context, url string, pids []int) *monitor {
	m := &monitor{url: url, pids: pids, hc: &http.Client{Timeout: 3 * time.Second}, stopc: make(chan struct{}), begin: time.Now()}
	m.before = m.scrape(ctx)
	if !m.before.ok {
		return m
	}
	m.rssMax, m.last = m.before.rss, m.before
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-m.stopc:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				s := m.scrape(ctx)
				if !s.ok {
					continue
				}
				m.mu.Lock()
				m.samples = append(m.samples, s)
				m.rssMax = max(m.rssMax, s.rss)
				m.last = s
				m.mu.Unlock()
			}
		}
	}()
	return m
}

func (m *monitor) stop(clients int) *ServerStats {
	close(m.stopc)
	m.wg.Wait()
	if !m.before.ok {
		return nil
	}
	end := m.scrape(context.Background())
	if !end.ok {
		end = m.last
	}
	// The memory of the sessions: among the samples taken while (nearly) all of them
	// were up — at least 98% of the most goroutines seen — the one with the least heap
	// and stack, the closest to live memory between two garbage collections.
	m.peak = m.before
	top := 0
	for _, s := range m.samples {
		top = max(top, s.goroutines)
	}
	for _, s := range m.samples {
		if s.goroutines*100 >= top*98 && (m.peak == m.before || s.heap+s.stack < m.peak.heap+m.peak.stack) {
			m.peak = s
		}
	}
	el := time.Since(m.begin).Seconds()
	st := &ServerStats{
		CPUSeconds: round(end.cpu - m.before.cpu), RSSMax: max(m.rssMax, end.rss), RSSBefore: m.before.rss,
		HeapBefore: m.before.heap, HeapPeak: m.peak.heap, StackBefore: m.before.stack, StackPeak: m.peak.stack,
		Goroutines: [2]int{m.before.goroutines, m.peak.goroutines},
	}
	if el > 0 {
		st.CPUShare = round(st.CPUSeconds / el)
	}
	if clients > 0 && m.pids == nil {
		st.HeapPerClient = round(float64(m.peak.heap-m.before.heap) / float64(clients))
		st.StackPerClient = round(float64(m.peak.stack-m.before.stack) / float64(clients))
		st.MemPerClient = round(st.HeapPerClient + st.StackPerClient)
	}
	return st
}

// scrape reads the few Prometheus metrics the monitor needs.
func (m *monitor) scrape(ctx context.Context) sample {
	if m.pids != nil {
		return procSample(m.pids)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return sample{}
	}
	resp, err := m.hc.Do(req)
	if err != nil {
		return sample{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}
	}
	var s sample
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_cpu_seconds_total":
			s.cpu = v
		case "process_resident_memory_bytes":
			s.rss = int64(v)
		case "go_memstats_heap_inuse_bytes":
			s.heap = int64(v)
		case "go_memstats_stack_inuse_bytes":
			s.stack = int64(v)
		case "go_goroutines":
			s.goroutines = int(v)
		default:
			continue
		}
		found++
	}
	s.ok = found >= 4
	return s
}

// selfCPU is this process's CPU time so far, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
