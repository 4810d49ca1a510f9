package wspush

import (
	"strings"
	"testing"
	"time"
)

var ladder3 = []Rung{{"v1", 100_000}, {"v2", 400_000}, {"v3", 1_000_000}}

// script feeds a policy observations every step from t0 for d, with the backlog (and
// TCP stats, if any) a function of the elapsed time.
type script struct {
	now  time.Time
	step time.Duration
}

func (s *script) run(p Policy, d time.Duration, obs func(el time.Duration) Observation) {
	start := s.now
	for el := time.Duration(0); el < d; el += s.step {
		o := obs(el)
		o.At = start.Add(el)
		p.Observe(o)
	}
	s.now = start.Add(d)
}

func backlog(b int64) Observation { return Observation{Backlog: b} }

func TestBufferRule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	seg := 2 * time.Second
	p := &BufferRule{}
	if r := p.Init(ladder3, seg, t0); r != 0 {
		t.Fatalf("Init = %d, want the lowest rung", r)
	}
	sc := &script{now: t0, step: 100 * time.Millisecond}

	// Empty over the window: step up, once per boundary.
	sc.run(p, seg, func(time.Duration) Observation { return backlog(0) })
	d := p.Decide(sc.now, 0)
	if d.Rung != 1 || d.Hold || !strings.Contains(d.Reason, "empty") {
		t.Fatalf("empty: %+v", d)
	}
	// Mostly empty with a chunk caught on its way out now and then: still empty.
	sc.run(p, seg, func(el time.Duration) Observation {
		if el%(time.Second) == 0 {
			return backlog(1200)
		}
		return backlog(0)
	})
	if d := p.Decide(sc.now, 1); d.Rung != 2 {
		t.Fatalf("mostly empty: %+v", d)
	}
	// Steady: a standing buffer that does not grow.
	sc.run(p, seg, func(el time.Duration) Observation { return backlog(5000 + int64(el/sc.step%3)*2000) })
	if d := p.Decide(sc.now, 2); d.Rung != 2 || d.Hold || !strings.Contains(d.Reason, "steady") {
		t.Fatalf("steady: %+v", d)
	}
	// Growing: stop (hold) until drained, then step down.
	sc.run(p, seg, func(el time.Duration) Observation { return backlog(int64(el / time.Millisecond * 20)) })
	d = p.Decide(sc.now, 2)
	if !d.Hold || !strings.Contains(d.Reason, "grew") {
		t.Fatalf("growing: %+v", d)
	}
	sc.run(p, seg/2, func(el time.Duration) Observation { return backlog(30000 - int64(el/time.Millisecond)*10) })
	if d := p.Decide(sc.now, 2); !d.Hold || !strings.Contains(d.Reason, "until") {
		t.Fatalf("draining: %+v", d)
	}
	sc.run(p, seg/2, func(time.Duration) Observation { return backlog(0) })
	if d := p.Decide(sc.now, 2); d.Hold || d.Rung != 1 || !strings.Contains(d.Reason, "step down") {
		t.Fatalf("drained: %+v", d)
	}
	// A short history (just after start) is steady, not growing.
	q := &BufferRule{}
	q.Init(ladder3, seg, t0)
	sc2 := &script{now: t0, step: 100 * time.Millisecond}
	sc2.run(q, 300*time.Millisecond, func(el time.Duration) Observation { return backlog(int64(el)) })
	if d := q.Decide(sc2.now, 1); d.Rung != 1 || d.Hold {
		t.Fatalf("short history: %+v", d)
	}
}

func tcpObs(backlog int64, rate float64, appLimited bool) Observation {
	return Observation{Backlog: backlog, TCP: &TCPStats{DeliveryRate: rate, AppLimited: appLimited, RTT: 20 * time.Millisecond, MinRTT: 10 * time.Millisecond}}
}

func TestSocketPolicy(t *testing.T) {
	t0 := time.Unix(1000, 0)
	seg := 2 * time.Second
	p := &SocketPolicy{}
	if r := p.Init(ladder3, seg, t0); r != 0 {
		t.Fatalf("Init = %d", r)
	}
	sc := &script{now: t0, step: 100 * time.Millisecond}

	// A push sender is app-limited: its delivery rate is the media rate. With no
	// backlog it probes one rung up.
	sc.run(p, seg, func(time.Duration) Observation { return tcpObs(0, 150_000, true) })
	d := p.Decide(sc.now, 0)
	if d.Rung != 1 || !strings.Contains(d.Reason, "probe") {
		t.Fatalf("probe: %+v", d)
	}
	// The probe saturates the path: delivery rate 300 kbit/s, not app-limited, and a
	// backlog. Budget 0.8·300k − drain (20 kB in 2 s = 80k) = 160k: back to v1.
	sc.run(p, seg, func(time.Duration) Observation { return tcpObs(20_000, 300_000, false) })
	d = p.Decide(sc.now, 1)
	if d.Rung != 0 || d.Estimate != 300_000 {
		t.Fatalf("failed probe: %+v", d)
	}
	// The estimate is fresh for 4 segments: no probe meanwhile.
	for i := 0; i < 3; i++ {
		sc.run(p, seg, func(time.Duration) Observation { return tcpObs(0, 120_000, true) })
		if d := p.Decide(sc.now, 0); d.Rung != 0 {
			t.Fatalf("probed again %d segments after a failed probe with a fresh estimate: %+v", i+1, d)
		}
	}
	// Once it is stale, and the back-off (2 segments after one failure) is over: probe.
	sc.run(p, 2*seg, func(time.Duration) Observation { return tcpObs(0, 120_000, true) })
	if d := p.Decide(sc.now, 0); d.Rung != 1 {
		t.Fatalf("no probe once the estimate went stale: %+v", d)
	}
	// A probe that fails again doubles the back-off: 4 segments.
	sc.run(p, seg, func(time.Duration) Observation { return tcpObs(30_000, 250_000, false) })
	if d := p.Decide(sc.now, 1); d.Rung != 0 {
		t.Fatalf("second failed probe: %+v", d)
	}
	if p.backoff != 4 {
		t.Errorf("back-off %d segments, want 4", p.backoff)
	}

	// A capacity measured well above the ladder: step up one rung per boundary.
	q := &SocketPolicy{}
	q.Init(ladder3, seg, t0)
	sc = &script{now: t0, step: 100 * time.Millisecond}
	sc.run(q, seg, func(time.Duration) Observation { return tcpObs(0, 5_000_000, false) })
	if d := q.Decide(sc.now, 0); d.Rung != 1 || !strings.Contains(d.Reason, "step up") {
		t.Fatalf("fits: %+v", d)
	}
	sc.run(q, seg, func(time.Duration) Observation { return tcpObs(0, 5_000_000, false) })
	if d := q.Decide(sc.now, 1); d.Rung != 2 {
		t.Fatalf("fits more: %+v", d)
	}
	// The path drops to 150 kbit/s: straight down to the rung that fits, no hold.
	sc.run(q, seg, func(time.Duration) Observation { return tcpObs(40_000, 150_000, false) })
	sc.now = sc.now.Add(5 * seg) // the 5 Mbit/s samples age out
	sc.run(q, seg, func(time.Duration) Observation { return tcpObs(40_000, 150_000, false) })
	if d := q.Decide(sc.now, 2); d.Rung != 0 || d.Hold {
		t.Fatalf("drop: %+v", d)
	}

	// A low sample that is not app-limited (slow start) without a backlog: the rung
	// is being delivered, stay.
	u := &SocketPolicy{}
	u.Init(ladder3, seg, t0)
	sc = &script{now: t0, step: 100 * time.Millisecond}
	sc.run(u, seg, func(time.Duration) Observation { return tcpObs(0, 200_000, false) })
	if d := u.Decide(sc.now, 2); d.Rung != 2 || !strings.Contains(d.Reason, "stay") {
		t.Fatalf("low sample, no backlog: %+v", d)
	}

	// The path drops mid-segment: the samples before the drop (app-limited, high)
	// must not hide the estimate after it once a backlog builds.
	v := &SocketPolicy{}
	v.Init(ladder3, seg, t0)
	sc = &script{now: t0, step: 100 * time.Millisecond}
	sc.run(v, seg, func(el time.Duration) Observation {
		if el < seg*3/4 {
			return tcpObs(0, 6_000_000, true)
		}
		return tcpObs(30_000, 350_000, false)
	})
	if d := v.Decide(sc.now, 2); d.Rung != 0 {
		t.Fatalf("drop behind high app-limited samples: %+v", d)
	}

	// Without TCP statistics a backlog still steps down.
	r := &SocketPolicy{}
	r.Init(ladder3, seg, t0)
	sc = &script{now: t0, step: 100 * time.Millisecond}
	sc.run(r, seg, func(time.Duration) Observation { return backlog(100_000) })
	if d := r.Decide(sc.now, 2); d.Rung != 1 || !strings.Contains(d.Reason, "backlog") {
		t.Fatalf("backlog without TCP_INFO: %+v", d)
	}
}

func TestFixedAndNames(t *testing.T) {
	p, err := NewPolicy("FIXED")
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Init(ladder3, time.Second, time.Time{}); r != 2 {
		t.Errorf("fixed starts at %d, want the top", r)
	}
	if d := p.Decide(time.Time{}, 1); d.Rung != 1 || d.Hold {
		t.Errorf("fixed decided %+v", d)
	}
	if _, err := NewPolicy("best"); err == nil {
		t.Error("unknown policy accepted")
	}
}
