package load

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lagAt builds a lag monitor with the given wake-ups (ms since begin → overshoot ms),
// without its goroutine.
func lagAt(begin time.Time, ticks map[int64]float32) *lagMonitor {
	m := &lagMonitor{begin: begin}
	for at := int64(0); at <= 60_000; at++ {
		if l, ok := ticks[at]; ok {
			m.at = append(m.at, at*int64(time.Millisecond))
			m.lag = append(m.lag, l)
		}
	}
	return m
}

// TestStallCause: a stall is "viewer starved" only when the load generator's own
// lateness during the gap covers the part of the gap beyond the threshold.
func TestStallCause(t *testing.T) {
	begin := time.Unix(1000, 0)
	at := func(ms int64) time.Time { return begin.Add(time.Duration(ms) * time.Millisecond) }
	// The generator woke 3 s late at 10 s (it slept from 7 s to 10 s), on time elsewhere.
	lag := lagAt(begin, map[int64]float32{1000: 1, 5000: 2, 10_000: 3000, 12_000: 1, 30_000: 500})
	l := newEventLog(begin, lag, 6*time.Second)
	cases := []struct {
		name     string
		from, to int64
		want     string
		wantSum  float64
	}{
		{"a 8 s gap with 3 s of its own lateness: starved", 2000, 10_000, CauseViewerStarved, 3002},
		{"a 10 s gap with 3 s of its own lateness: the origin", 2000, 12_000, CauseOrigin, 3003},
		{"a 7 s gap, quiet generator: the origin", 13_000, 20_000, CauseOrigin, 0},
		{"a window ending inside a late wake-up counts only its part", 20_000, 29_800, CauseOrigin, 300},
	}
	for _, c := range cases {
		if got := l.stall("ws", at(c.from), at(c.to)); got != c.want {
			t.Errorf("%s: cause %q, want %q", c.name, got, c.want)
		}
		ev, _ := l.all()
		if e := ev[len(ev)-1]; e.ViewerLagMs < c.wantSum-1 || e.ViewerLagMs > c.wantSum+1 || e.Event != "stall" || e.Kind != "ws" {
			t.Errorf("%s: event %+v, want lag ≈ %v ms", c.name, e, c.wantSum)
		}
	}
	l.fail("http1", "init", at(0), errors.New(`Get "http://o/init.mp4": EOF (new connection, request written)`))
	ev, dropped := l.all()
	if e := ev[len(ev)-1]; e.Event != "error" || e.Stage != "init" || e.Cause != CauseOrigin || e.Err == "" {
		t.Errorf("error event %+v: the generator's 3.5 s of lateness is under half of the request's time since t=0", e)
	}
	if dropped != 0 || len(ev) != len(cases)+1 {
		t.Fatalf("%d events, %d dropped", len(ev), dropped)
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].T < ev[i-1].T {
			t.Errorf("events not in time order: %v then %v", ev[i-1].T, ev[i].T)
		}
	}
}

func TestEventLogBounded(t *testing.T) {
	l := newEventLog(time.Now(), nil, time.Second)
	for range maxEvents + 7 {
		l.skip("hls", "x")
	}
	ev, dropped := l.all()
	if len(ev) != maxEvents || dropped != 7 {
		t.Errorf("%d kept, %d dropped", len(ev), dropped)
	}
}

// TestLagMonitorRuns: the monitor records wake-ups (their lateness is the machine's
// business and not asserted).
func TestLagMonitorRuns(t *testing.T) {
	begin := time.Now()
	m := startLagMonitor(begin, 5*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		n := len(m.at)
		m.mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	m.close()
	m.close() // twice is fine
	if len(m.at) < 3 || len(m.at) != len(m.lag) {
		t.Fatalf("%d wake-ups, %d lags", len(m.at), len(m.lag))
	}
	for _, l := range m.lag {
		if l < 0 {
			t.Errorf("negative lateness %v", l)
		}
	}
}

func TestReadKV(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cpu.stat")
	if err := os.WriteFile(p, []byte("nr_periods 123\nnr_throttled 45\nthrottled_time 6789\nbad line here\nnot_a_number x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kv := readKV(p)
	if kv["nr_periods"] != 123 || kv["nr_throttled"] != 45 || kv["throttled_time"] != 6789 || len(kv) != 3 {
		t.Errorf("%v", kv)
	}
	if len(readKV(filepath.Join(t.TempDir(), "absent"))) != 0 {
		t.Error("an absent file gave values")
	}
}

// TestPulseSeconds: the once-a-second timeline has each core's busy share within
// 0..1 and this process's own CPU (Linux /proc).
func TestPulseSeconds(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat: the pulse reads Linux's /proc")
	}
	begin := time.Now()
	lag := startLagMonitor(begin, 50*time.Millisecond)
	defer lag.close()
	p := startPulse(begin, os.Getpid(), "", 1, lag, nil, nil)
	time.Sleep(2500 * time.Millisecond)
	out := p.finish()
	if len(out) < 1 {
		t.Fatal("no second recorded")
	}
	for _, s := range out {
		if len(s.CoreBusy) == 0 {
			t.Errorf("second %v: no cores", s.T)
		}
		for _, b := range s.CoreBusy {
			if b < 0 || b > 1 {
				t.Errorf("second %v: busy share %v", s.T, b)
			}
		}
		if s.OriginCPU < 0 || s.SelfCPU < 0 {
			t.Errorf("second %v: negative CPU %+v", s.T, s)
		}
	}
}

func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	buckets := []float64{0, 0.001, 0.01, 0.1, inf}
	cases := []struct {
		counts []uint64
		q      float64
		want   float64
	}{
		{[]uint64{0, 0, 0, 0}, 0.99, 0},
		{[]uint64{98, 1, 1, 0}, 0.99, 0.01},
		{[]uint64{98, 1, 1, 0}, 1, 0.1},
		{[]uint64{10, 0, 0, 0}, 1, 0.001},
		{[]uint64{1, 0, 0, 1}, 1, 0.1}, // the open last bucket gives its lower bound
	}
	for _, c := range cases {
		var total uint64
		for _, n := range c.counts {
			total += n
		}
		if got := bucketQuantile(buckets, c.counts, total, c.q); got != c.want {
			t.Errorf("%v q%v: %v, want %v", c.counts, c.q, got, c.want)
		}
	}
	s := newSelfSched()
	st, p99, mx := s.read()
	if p99 < 0 || mx < p99 || st.gcCPU < 0 {
		t.Errorf("self: %+v p99 %v max %v", st, p99, mx)
	}
}

func TestCountSockets(t *testing.T) {
	// Port 18761 is 0x4949; a client socket (remote port 4949) and another port's
	// socket must not count.
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:4949 00000000:0000 0A 00000000:00000007 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:4949 0100007F:A001 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 0100007F:4949 0100007F:A002 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 20 4 30 10 -1
   3: 0100007F:4949 0100007F:A003 08 00000000:00000000 00:00000000 00000000     0        0 4 1 0 20 4 30 10 -1
   4: 0100007F:4949 0100007F:A004 06 00000000:00000000 00:00000000 00000000     0        0 0 1 0 20 4 30 10 -1
   5: 0100007F:4949 0100007F:A005 03 00000000:00000000 00:00000000 00000000     0        0 0 1 0 20 4 30 10 -1
   6: 0100007F:4949 0100007F:A006 05 00000000:00000000 00:00000000 00000000     0        0 0 1 0 20 4 30 10 -1
   7: 0100007F:A001 0100007F:4949 01 00000000:00000000 00:00000000 00000000     0        0 5 1 0 20 4 30 10 -1
   8: 0100007F:1F90 0100007F:A007 01 00000000:00000000 00:00000000 00000000     0        0 6 1 0 20 4 30 10 -1
   9: garbage
`
	var s OriginSockets
	countSockets(strings.NewReader(table), 18761, &s)
	want := OriginSockets{Established: 2, SynRecv: 1, CloseWait: 1, Closing: 1, TimeWait: 1, AcceptQueue: 7}
	if s != want {
		t.Errorf("%+v, want %+v", s, want)
	}
	if _, ok := originSockets(18761); !ok {
		if _, err := os.Stat("/proc/net/tcp"); err == nil {
			t.Error("/proc/net/tcp exists but was not read")
		}
	}
}

func TestOriginPort(t *testing.T) {
	for in, want := range map[string]int{"http://127.0.0.1:18761": 18761, "https://o.example": 443, "http://o.example/x": 80, "::bad": 0, "": 0} {
		if got := originPort(in); got != want {
			t.Errorf("originPort(%q) = %d, want %d", in, got, want)
		}
	}
}
