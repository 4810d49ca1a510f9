package load

import (
	"bufio"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The pulse is a once-a-second timeline of what can make a viewer late besides the
// origin's own work: the origin cgroup's CPU throttling, the origin's CPU, each
// core's busy share (other work on the shared machine), the load average, and the
// load generator's own CPU and scheduling lag. Read from /proc and the cgroup file
// system only: it costs no request to the origin and answers when /metrics does not.

// PulseSecond is one second of the timeline. Deltas are over the second before T.
type PulseSecond struct {
	T        float64   `json:"t_s"`
	Viewers  int       `json:"viewers"`
	Load1    float64   `json:"loadavg1"`
	CoreBusy []float64 `json:"core_busy"`
	// Steal: the share of the machine's time its hypervisor gave to someone else (a
	// paused virtual machine stops the origin and the viewers alike).
	Steal     float64 `json:"steal"`                // share of each core busy (all processes)
	OriginCPU float64 `json:"origin_cpu,omitempty"` // cores, from /proc/PID/stat
	// The origin cgroup's CFS periods in the second, and how many were throttled.
	Periods     int64   `json:"cg_periods,omitempty"`
	Throttled   int64   `json:"cg_throttled,omitempty"`
	ThrottledMs float64 `json:"cg_throttled_ms,omitempty"`
	// The origin's side of its TCP connections on its port (/proc/net/tcp) and the
	// connections the viewers opened in the second.
	Sockets *OriginSockets `json:"origin_sockets,omitempty"`
	Dials   int64          `json:"load_dials"`
	SelfCPU float64        `json:"load_cpu"` // the load generator's cores
	// The load generator's goroutines' wait for a processor (runtime/metrics) over the
	// second: 99th percentile and largest, and its garbage collector's CPU.
	SchedP99Ms float64 `json:"load_sched_p99_ms"`
	SchedMaxMs float64 `json:"load_sched_max_ms"`
	GCCPU      float64 `json:"load_gc_cpu"`
	GCs        uint64  `json:"load_gcs,omitempty"`
	LagMaxMs   float64 `json:"load_lag_max_ms"`
	LagSumMs   float64 `json:"load_lag_sum_ms"`
}

type pulse struct {
	begin  time.Time
	pid    int
	cgroup string        // the origin's cgroup folder (cpu.stat), or ""
	port   int           // the origin's TCP port, for its sockets; 0: not counted
	dials  *atomic.Int64 // connections the viewers opened so far
	lag    *lagMonitor
	live   *activeCount
	sched  *selfSched
	mu     sync.Mutex
	out    []PulseSecond
	stop   chan struct{}
	done   chan struct{}
}

func startPulse(begin time.Time, pid int, cgroup string, port int, lag *lagMonitor, live *activeCount, dials *atomic.Int64) *pulse {
	p := &pulse{begin: begin, pid: pid, cgroup: cgroup, port: port, dials: dials, lag: lag, live: live, sched: newSelfSched(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// pulseState is the counters read at one moment.
type pulseState struct {
	cores              [][2]uint64 // busy, total jiffies per core
	steal, total       uint64      // the whole machine's steal and total jiffies
	originCPU          float64
	periods, throttled int64
	throttledNs        int64
	self               float64
	dials              int64
	sched              selfSchedState
	schedP99, schedMax float64
}

func (p *pulse) read() pulseState {
	var s pulseState
	s.cores, s.steal, s.total = coreTicks()
	if p.pid > 0 {
		s.originCPU, _, _ = procStat(p.pid)
	}
	if p.cgroup != "" {
		st := readKV(p.cgroup + "/cpu.stat")
		s.periods, s.throttled, s.throttledNs = st["nr_periods"], st["nr_throttled"], st["throttled_time"]
	}
	s.self = selfCPU()
	if p.dials != nil {
		s.dials = p.dials.Load()
	}
	s.sched, s.schedP99, s.schedMax = p.sched.read()
	return s
}

func (p *pulse) run() {
	defer close(p.done)
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	prev, prevAt := p.read(), time.Now()
	for {
		select {
		case <-p.stop:
			return
		case now := <-tk.C:
			cur := p.read()
			dt := now.Sub(prevAt).Seconds()
			sec := int(now.Sub(p.begin)/time.Second) - 1
			ps := PulseSecond{T: round(now.Sub(p.begin).Seconds()), Load1: loadavg1(), SelfCPU: round((cur.self - prev.self) / dt)}
			if p.live != nil {
				ps.Viewers = p.live.total()
			}
			for i := range cur.cores {
				if i < len(prev.cores) && cur.cores[i][1] > prev.cores[i][1] {
					ps.CoreBusy = append(ps.CoreBusy, round(float64(cur.cores[i][0]-prev.cores[i][0])/float64(cur.cores[i][1]-prev.cores[i][1])))
				}
			}
			if cur.total > prev.total {
				ps.Steal = round(float64(cur.steal-prev.steal) / float64(cur.total-prev.total))
			}
			if p.pid > 0 && cur.originCPU >= prev.originCPU {
				ps.OriginCPU = round((cur.originCPU - prev.originCPU) / dt)
			}
			ps.SchedP99Ms, ps.SchedMaxMs = round(cur.schedP99*1000), round(cur.schedMax*1000)
			ps.GCCPU = round((cur.sched.gcCPU - prev.sched.gcCPU) / dt)
			ps.GCs = cur.sched.gcCycles - prev.sched.gcCycles
			ps.Dials = cur.dials - prev.dials
			if p.port > 0 {
				if so, ok := originSockets(p.port); ok {
					ps.Sockets = &so
				}
			}
			ps.Periods, ps.Throttled = cur.periods-prev.periods, cur.throttled-prev.throttled
			ps.ThrottledMs = round(float64(cur.throttledNs-prev.throttledNs) / 1e6)
			if sec >= 0 {
				ps.LagMaxMs, ps.LagSumMs = p.lag.perSecond(sec)
			}
			p.mu.Lock()
			p.out = append(p.out, ps)
			p.mu.Unlock()
			prev, prevAt = cur, now
		}
	}
}

// finish stops the pulse and returns its seconds.
func (p *pulse) finish() []PulseSecond {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out
}

func loadavg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

// readKV reads "name value" lines (a cgroup's cpu.stat).
func readKV(path string) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// coreTicks is each core's busy and total jiffies from /proc/stat, and the
// machine's steal and total jiffies.
func coreTicks() (cores [][2]uint64, steal, total uint64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 9 || !strings.HasPrefix(fs[0], "cpu") {
			continue
		}
		var all, idle uint64
		for i, v := range fs[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			all += n
			switch i {
			case 3, 4: // idle, iowait
				idle += n
			case 7:
				if fs[0] == "cpu" {
					steal = n
				}
			}
		}
		if fs[0] == "cpu" {
			total = all
			continue
		}
		cores = append(cores, [2]uint64{all - idle, all})
	}
	return cores, steal, total
}

// originPort is the TCP port of an http(s) base URL (80 or 443 by default), 0 if none.
func originPort(base string) int {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return 0
	}
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}
