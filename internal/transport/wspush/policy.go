package wspush

import (
	"fmt"
	"strings"
	"time"
)

// Adaptation happens on the server, at segment boundaries only: before the first
// chunk of each video segment the session asks its policy which rung to send. A policy
// sees what the session sees of its connection — the output buffer (bytes queued in
// the session and not yet handed to the socket) and, where the platform offers it,
// the socket's own statistics (TCP_INFO) — through Observe, called as media flows.
//
// Policies are plain values driven by the times they are given: tests script the
// observations and the clock.

// Rung is one video rendition a policy can choose, in ascending bandwidth.
type Rung struct {
	ID        string
	Bandwidth int // declared bit/s
}

// TCPStats is what the kernel says about a TCP connection (Linux TCP_INFO).
type TCPStats struct {
	RTT, MinRTT  time.Duration
	DeliveryRate float64 // bit/s, the kernel's most recent delivery-rate sample
	// AppLimited says that sample was taken while the sender had nothing to send, so
	// the rate is what the application offered, a lower bound on the path's capacity
	// (the pitfall of push senders: Puffer's notes).
	AppLimited bool
	NotSent    int64 // bytes written by the application, not yet sent
	Unacked    int64 // bytes in flight
	Cwnd       int   // packets
	Retrans    int   // total retransmitted segments
}

// Observation is one sample of a session's output state.
type Observation struct {
	At      time.Time
	Backlog int64     // bytes queued in the session, not yet written to the socket
	TCP     *TCPStats // nil where unavailable (not Linux, not TCP, TLS over a pipe...)
}

// Decision is a policy's answer at a segment boundary.
type Decision struct {
	Rung int // index into the ladder
	// Hold says: do not send this segment (nor its audio); the client will see a gap.
	// The published rule holds while its output buffer drains.
	Hold     bool
	Reason   string
	Estimate float64 // bit/s, the policy's capacity estimate (0: none)
}

// Policy chooses the video rung of each segment.
type Policy interface {
	Name() string
	// Init is called once with the ladder (filtered by the client's limits), the
	// segment duration and the start time; it returns the first rung.
	Init(ladder []Rung, segment time.Duration, now time.Time) int
	// Observe records a sample. Called often; keep it cheap.
	Observe(o Observation)
	// Decide picks the rung of the segment about to start; cur is the current rung.
	Decide(now time.Time, cur int) Decision
	// WantsTCP says whether Observe should carry TCP statistics (a system call).
	WantsTCP() bool
}

// Policy names.
const (
	PolicyBuffer = "buffer" // the published output-buffer rule
	PolicyTCP    = "tcp"    // TCP_INFO delivery rate and send-queue fill, with probing
	PolicyFixed  = "fixed"  // no adaptation
)

// NewPolicy returns a fresh policy by name.
func NewPolicy(name string) (Policy, error) {
	switch strings.ToLower(name) {
	case PolicyBuffer:
		return &BufferRule{}, nil
	case PolicyTCP:
		return &SocketPolicy{}, nil
	case PolicyFixed:
		return &Fixed{}, nil
	}
	return nil, fmt.Errorf("unknown policy %q (buffer, tcp, fixed)", clip(name, 20))
}

// Fixed never switches.
type Fixed struct{ top int }

func (*Fixed) Name() string   { return PolicyFixed }
func (*Fixed) WantsTCP() bool { return false }

// Init starts at the highest rung (the session overrides it with the client's choice).
func (f *Fixed) Init(ladder []Rung, _ time.Duration, _ time.Time) int {
	f.top = len(ladder) - 1
	return f.top
}
func (*Fixed) Observe(Observation) {}
func (*Fixed) Decide(_ time.Time, cur int) Decision {
	return Decision{Rung: cur, Reason: "fixed"}
}

type sample struct {
	at      time.Time
	backlog int64
}

// BufferRule is the published rule of the WebSocket study, on the output buffer (the
// bytes queued in the session and not yet written): over an observation window,
//
//   - growing → stop sending until it has drained, then step down one rung;
//   - steady → stay;
//   - empty → step up one rung.
//
// "Growing" means the buffer's floor rose: its minimum over the second half of the
// window is above its minimum over the first half and above Empty (a keyframe's burst
// that drains is not growth). "Empty" means at least 9 in 10 samples of the window
// found it at or below Empty (a sample may catch a chunk on its way out).
type BufferRule struct {
	Window time.Duration // observation window; 0: one segment duration
	Empty  int64         // bytes at or below which the buffer counts as empty

	ladder   []Rung
	samples  []sample // within Window, oldest first
	draining bool
}

func (*BufferRule) Name() string   { return PolicyBuffer }
func (*BufferRule) WantsTCP() bool { return false }

// Init starts at the lowest rung: the rule knows nothing yet and climbs while empty.
func (b *BufferRule) Init(ladder []Rung, segment time.Duration, _ time.Time) int {
	b.ladder = ladder
	if b.Window <= 0 {
		b.Window = segment
	}
	return 0
}

// Observe records the output buffer level.
func (b *BufferRule) Observe(o Observation) {
	b.samples = append(b.samples, sample{o.At, o.Backlog})
	b.prune(o.At)
}

func (b *BufferRule) prune(now time.Time) {
	cut := 0
	for cut < len(b.samples)-1 && now.Sub(b.samples[cut].at) > b.Window {
		cut++
	}
	if cut > 0 {
		b.samples = append(b.samples[:0], b.samples[cut:]...)
	}
}

// Trend classifies the window: "growing", "steady" or "empty" (and the levels seen).
func (b *BufferRule) Trend(now time.Time) (trend string, first, last int64) {
	b.prune(now)
	if len(b.samples) == 0 {
		return "empty", 0, 0
	}
	first, last = b.samples[0].backlog, b.samples[len(b.samples)-1].backlog
	low := 0
	for _, s := range b.samples {
		if s.backlog <= b.Empty {
			low++
		}
	}
	// A sample now and then catches a chunk on its way out; 9 in 10 empty is empty.
	if low*10 >= len(b.samples)*9 {
		return "empty", first, last
	}
	// Too short a history to see a trend (just after start): steady.
	if now.Sub(b.samples[0].at) < b.Window/2 || len(b.samples) < 3 {
		return "steady", first, last
	}
	mid := b.samples[0].at.Add(now.Sub(b.samples[0].at) / 2)
	floor1, floor2 := int64(-1), int64(-1)
	for _, s := range b.samples {
		if s.at.Before(mid) {
			if floor1 < 0 || s.backlog < floor1 {
				floor1 = s.backlog
			}
		} else if floor2 < 0 || s.backlog < floor2 {
			floor2 = s.backlog
		}
	}
	if floor1 >= 0 && floor2 > floor1 && floor2 > b.Empty {
		return "growing", first, last
	}
	return "steady", first, last
}

// Decide applies the rule.
func (b *BufferRule) Decide(now time.Time, cur int) Decision {
	trend, first, last := b.Trend(now)
	if b.draining {
		if last > b.Empty {
			return Decision{Rung: cur, Hold: true, Reason: fmt.Sprintf("stopped until the output buffer drains (%d B left)", last)}
		}
		b.draining = false
		b.samples = b.samples[:0]
		return Decision{Rung: max(cur-1, 0), Reason: "output buffer drained: step down"}
	}
	switch trend {
	case "growing":
		b.draining = true
		return Decision{Rung: cur, Hold: true, Reason: fmt.Sprintf("output buffer grew %d→%d B over %v: stop until drained", first, last, b.Window)}
	case "empty":
		if cur+1 < len(b.ladder) {
			return Decision{Rung: cur + 1, Reason: fmt.Sprintf("output buffer empty over %v: step up", b.Window)}
		}
		return Decision{Rung: cur, Reason: "output buffer empty; at the top rung"}
	}
	return Decision{Rung: cur, Reason: fmt.Sprintf("output buffer steady (%d B): stay", last)}
}

type rateSample struct {
	at         time.Time
	rate       float64
	appLimited bool
}

// SocketPolicy adapts on the socket's own statistics, as Puffer does: the kernel's
// delivery rate when the sender was not application-limited (then it measures the
// path), the bytes waiting in the session and in the socket (TCP_NOTSENT_LOWAT keeps
// the socket's share small, so the wait shows up where it can be counted), and RTT.
//
//   - A backlog confirms the path is full: the highest rung that fits Safety ×
//     estimate minus what drains the backlog within a segment — several rungs down
//     at once when needed, never a stop. Congestion without an estimate steps down
//     one rung. Without a backlog the current rung is being delivered: it stays,
//     even under a low sample (slow start, a short burst).
//   - Up one rung when the path has shown it carries the next one: the estimate while
//     it is fresh, else any delivery-rate sample of the last segment (application-
//     limited samples are lower bounds, and a keyframe's burst often shows the
//     bottleneck's rate; such a step counts as a probe).
//   - A push sender is mostly application-limited: it sends the media rate, so its
//     delivery rate is the media rate, not the capacity. Without a fresh capacity
//     estimate the policy probes: with an empty backlog it steps up one rung for a
//     segment. A probe that ends in a backlog or a lower estimate steps back down and
//     doubles the wait before the next probe (2, 4, ... up to 32 segments).
type SocketPolicy struct {
	Safety float64       // share of the estimate to use; 0: 0.8
	Window time.Duration // how long a capacity sample stays fresh; 0: 4 segments

	ladder    []Rung
	segment   time.Duration
	rates     []rateSample
	last      Observation
	probing   bool // the current rung is a probe
	backoff   int  // segments to wait before the next probe
	nextProbe time.Time
}

func (*SocketPolicy) Name() string   { return PolicyTCP }
func (*SocketPolicy) WantsTCP() bool { return true }

// Init starts at the lowest rung.
func (p *SocketPolicy) Init(ladder []Rung, segment time.Duration, now time.Time) int {
	p.ladder, p.segment = ladder, segment
	if p.Safety <= 0 {
		p.Safety = 0.8
	}
	if p.Window <= 0 {
		p.Window = 4 * segment
	}
	p.backoff = 1
	p.nextProbe = now
	return 0
}

// Observe records the backlog and the kernel's delivery-rate sample.
func (p *SocketPolicy) Observe(o Observation) {
	p.last = o
	if o.TCP != nil && o.TCP.DeliveryRate > 0 {
		p.rates = append(p.rates, rateSample{o.At, o.TCP.DeliveryRate, o.TCP.AppLimited})
	}
	cut := 0
	for cut < len(p.rates) && o.At.Sub(p.rates[cut].at) > p.Window {
		cut++
	}
	if cut > 0 {
		p.rates = append(p.rates[:0], p.rates[cut:]...)
	}
}

// Estimate is the path capacity: the largest delivery rate measured while the sender
// was not application-limited, within Window (0: none); lower is the largest sample of
// any kind, a lower bound on the capacity.
func (p *SocketPolicy) Estimate(now time.Time) (est, lower float64) {
	for _, r := range p.rates {
		if now.Sub(r.at) > p.Window {
			continue
		}
		lower = max(lower, r.rate)
		if !r.appLimited {
			est = max(est, r.rate)
		}
	}
	return est, lower
}

// queued is the backlog in bytes: in the session and in the socket.
func (p *SocketPolicy) queued() int64 {
	q := p.last.Backlog
	if p.last.TCP != nil {
		q += p.last.TCP.NotSent
	}
	return q
}

// recent is the largest delivery rate of any kind over the last segment: what the path
// has just shown it carries (a keyframe's burst often shows the bottleneck's rate).
func (p *SocketPolicy) recent(now time.Time) float64 {
	var r float64
	for _, s := range p.rates {
		if now.Sub(s.at) <= p.segment {
			r = max(r, s.rate)
		}
	}
	return r
}

// Decide picks the rung.
func (p *SocketPolicy) Decide(now time.Time, cur int) Decision {
	est, lower := p.Estimate(now)
	capacity := p.recent(now)
	q := p.queued()
	segSec := p.segment.Seconds()
	curRate := float64(p.ladder[cur].Bandwidth)
	// Under 2% of a segment waiting is no backlog; over a quarter is congestion.
	idle := float64(q*8) <= curRate*segSec/50
	congested := float64(q*8) > curRate*segSec/4
	wasProbe := p.probing
	p.probing = false
	fail := func(to int, why string) Decision {
		if wasProbe {
			p.backoff = min(p.backoff*2, 32)
		}
		p.nextProbe = now.Add(time.Duration(p.backoff) * p.segment)
		return Decision{Rung: to, Reason: why, Estimate: est}
	}
	// fit is the highest rung under Safety × rate, once the backlog is drained.
	fit := func(rate float64) int {
		budget := p.Safety*rate - float64(q*8)/segSec
		best := 0
		for i, r := range p.ladder {
			if float64(r.Bandwidth) <= budget {
				best = i
			}
		}
		return best
	}
	switch {
	case est > 0 && fit(est) < cur && !idle:
		// A backlog confirms the path is full: the estimate (never the older,
		// application-limited samples) says how far down.
		to := fit(est)
		return fail(to, fmt.Sprintf("estimate %s, backlog %d B: down to %s", kbps(est), q, p.ladder[to].ID))
	case congested:
		return fail(max(cur-1, 0), fmt.Sprintf("backlog %d B: step down", q))
	case est > 0 && fit(est) > cur && idle:
		p.backoff = 1
		return Decision{Rung: cur + 1, Reason: fmt.Sprintf("estimate %s fits %s: step up", kbps(est), p.ladder[cur+1].ID), Estimate: est}
	case est == 0 && capacity > 0 && fit(capacity) > cur && idle && !now.Before(p.nextProbe):
		// Only application-limited samples: a lower bound, which an ACK burst can
		// inflate; the step is a probe, backed off when it fails.
		p.probing = true
		return Decision{Rung: cur + 1, Reason: fmt.Sprintf("delivered %s fits %s: step up", kbps(capacity), p.ladder[cur+1].ID), Estimate: capacity}
	}
	if wasProbe {
		p.backoff = 1 // the probe went through without a backlog
	}
	if est > 0 {
		// A sample below the rung without a backlog (slow start, a short burst) is
		// no reason to leave a rung that is being delivered.
		return Decision{Rung: cur, Reason: fmt.Sprintf("estimate %s: stay", kbps(est)), Estimate: est}
	}
	if cur+1 < len(p.ladder) && idle && !now.Before(p.nextProbe) {
		p.probing = true
		return Decision{Rung: cur + 1, Reason: fmt.Sprintf("app-limited (≥ %s), no backlog: probe %s", kbps(lower), p.ladder[cur+1].ID)}
	}
	return Decision{Rung: cur, Reason: fmt.Sprintf("app-limited (≥ %s): stay", kbps(lower))}
}

// kbps formats a rate for the policy's reasons: kbit/s as the ladder is declared,
// Mbit/s or Gbit/s where kbit/s would be an unreadable number (loopback rates).
func kbps(bps float64) string {
	switch {
	case bps >= 10e9:
		return fmt.Sprintf("%.0f Gbit/s", bps/1e9)
	case bps >= 100e6:
		return fmt.Sprintf("%.0f Mbit/s", bps/1e6)
	}
	return fmt.Sprintf("%.0f kbit/s", bps/1000)
}
