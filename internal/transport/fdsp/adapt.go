package fdsp

import (
	"sync"
	"time"
)

// adaptiveBP is a session's bitstream prioritisation: fixed, or moved on the fly
// (the study's future work). BP trades the two paths' risks: a higher BP puts more
// I-frame bytes on the path that does not lose them (PLR falls) and more bytes on
// TCP ahead of their deadline (the TCP part may come late: rebuffering). The best
// BP is therefore the highest one whose TCP part still arrives in time with a
// margin — and that is something the controller can predict rather than find by
// crossing it:
//
//   - It measures, from each TCPReport (sent by the client as soon as a substream's
//     TCP part is complete), the TCP goodput of that part (its bytes, which the
//     server wrote, over the time the client saw it take) and the part's window
//     (that time plus its slack: how long it had until its first access unit was
//     due), as a share of the substream's media duration.
//   - For the next substream it computes the TCP bytes each BP would send (its own
//     split of that substream, before choosing) and picks the highest BP whose
//     predicted transfer time, bytes ÷ goodput, is at most setPoint (2/3) of the
//     predicted window. Goodput and window are the lowest of the last three
//     measured: the TCP part's time varies with the losses it meets, and the
//     margin must hold for the unlucky ones. Nor may the goodput exceed what a
//     loss-based flow sustains on the path (lossLimited: Mathis's MSS/RTT ×
//     √(3/2)/√p, MSS and RTT from the server's TCP_INFO, p the Reports' UDP
//     loss): a part that
//     met no loss, or ended in slow start, measures a goodput a larger part will
//     not get, and climbing on it overshot (round 2's one miss in the lab).
//     The set point is that spread: in the
//     study's lab (CUBIC, 0.4 % loss each way) parts of one BP in one run took a
//     median 1.5 times as long as each other (up to 5.6), so a part predicted to
//     use 2/3 of its window can take all of it.
//   - It moves down at once to that BP, and up at most one step (25) per
//     substream, only while the UDP path loses packets (Reports) — on a clean path
//     there is nothing to protect and a bigger TCP part is only risk.
//   - A TCP part that came late anyway (negative slack, or a Report's lateness
//     from a client without TCPReports) makes the BP it was planned with a
//     ceiling for ceilingHold substreams; a ceiling that is reached again and
//     comes late again doubles the hold (up to maxHold), so a path that stays bad
//     is probed ever more rarely.
//
// Why it converges: the predicted time is monotone in BP, so for a steady goodput
// the rule has one answer, the highest BP under the set point, reached from below
// one step per substream or from above in one, and kept. The feedback is one
// substream old (the TCPReport of substream k arrives while k+1 is written and
// before k+2 is planned), not three as with the play-out Reports. A lossy path's
// goodput is not steady (a small part that ends in slow start before its first
// loss measures more than a large one gets), so the plan moves a step around the
// answer; the lowest-of-three and the set point keep it on the early side of the
// deadline. The content is never looked at beyond its byte counts: a clip whose
// I-frames are a large share of its bytes gets a lower BP by itself.
type adaptiveBP struct {
	mu   sync.Mutex
	auto bool
	bp   int // fixed, or the last planned

	given    map[uint32]plannedSub // per substream, the last keepGiven
	rates    []float64             // bytes/s of the last TCP parts, newest last
	windows  []float64             // window ÷ media duration of the last TCP parts with a known slack
	lossy    []bool                // whether the last Reports' UDP parts lost packets
	lost     []uint32              // the last Reports' UDP packets lost
	expected []uint32              // and of how many
	ceiling  int                   // BPs at or above it are not planned; noCeiling: none
	holdLeft int                   // plans before the ceiling is lifted
	hold     int                   // the next ceiling's hold
	probe    int                   // plans since a ceiling was lifted in which lateness doubles the hold

	path tcpPath // the server's TCP socket, read at the last TCPReport
}

// plannedSub is what the controller planned for one substream.
type plannedSub struct {
	bp    int
	bytes int
	dur   time.Duration
}

const (
	bpStart = 25 // before any measurement: on time at every RTT of the study
	// bpStartRepair is the start with repair (Hello.Repair): the first TCP
	// parts go on a fresh flow still in slow start, and at BP 25 the fast clip's
	// first part took 1.2–3.1 s at 150–250 ms RTT (round 4), longer than SRT's
	// whole start-up. At 0 only headers and parameter sets wait on TCP; the
	// I-frame bytes UDP loses meanwhile are mostly repaired. The controller
	// climbs from there once TCPReports measure the path.
	bpStartRepair = 0
	bpStep        = 25      // BP moves in steps of a quarter
	setPoint      = 2.0 / 3 // predicted TCP time ÷ window: room for a part 1.5× slower than measured
	keepMeasure   = 3       // measurements the prediction takes the lowest of
	ceilingHold   = 8
	maxHold       = 64
	noCeiling     = 100 + bpStep
	keepGiven     = 16 // substreams remembered (a report is at most a few behind)
)

// init sets a fixed BP, or adaptive BP (BPAuto) starting at bpStart, or at
// bpStartRepair when the client repairs UDP losses.
func (a *adaptiveBP) init(bp uint8, repair bool) {
	a.auto = bp == BPAuto
	a.bp = int(bp)
	a.given = map[uint32]plannedSub{}
	a.ceiling, a.hold = noCeiling, ceilingHold
	if a.auto {
		a.bp = bpStart
		if repair {
			a.bp = bpStartRepair
		}
	}
}

// plan is the BP for substream k, of media duration dur, whose TCP part would
// be bytesAt(bp) bytes at each BP (called only when adaptive).
func (a *adaptiveBP) plan(k uint32, dur time.Duration, bytesAt func(bp int) int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.auto {
		return a.bp
	}
	if a.probe > 0 {
		a.probe--
	}
	if a.holdLeft > 0 {
		if a.holdLeft--; a.holdLeft == 0 {
			a.ceiling, a.probe = noCeiling, ceilingHold
		}
	}
	b := min(a.bp, a.ceiling-bpStep)
	if len(a.rates) > 0 {
		b = a.predict(dur, bytesAt)
		if b > a.bp && !a.worthClimbing() {
			b = a.bp
		}
		b = min(b, a.bp+bpStep)
	}
	a.bp = max(0, b)
	a.given[k] = plannedSub{bp: a.bp, bytes: bytesAt(a.bp), dur: dur}
	delete(a.given, k-keepGiven) // wraps harmlessly near 0
	return a.bp
}

// predict is the highest BP below the ceiling whose TCP part is predicted to take
// at most setPoint of its window; a.mu is held.
func (a *adaptiveBP) predict(dur time.Duration, bytesAt func(int) int) int {
	rate, window := lowest(a.rates), 1.0
	if r := a.lossLimited(); r > 0 {
		rate = min(rate, r)
	}
	if len(a.windows) > 0 {
		window = lowest(a.windows)
	}
	budget := setPoint * window * dur.Seconds()
	for b := a.ceiling - bpStep; b > 0; b -= bpStep {
		if float64(bytesAt(b))/rate <= budget {
			return b
		}
	}
	return 0
}

// lossLimited is the goodput a loss-based TCP flow sustains on this path (0:
// unknown), the ceiling on what a measured goodput may promise for a larger part:
// the measure comes from parts that may have ended in slow start before their
// first loss (in the lab 9 of 10 steps up to BP 75 met a lower goodput than the
// lowest of the three parts before, median 0.66×). The loss rate is the last
// Reports' UDP loss, the path's as a flow that does not retransmit sees it; not
// TCP's retransmitted share, which on a jittery path counts reordering too (8.8 %
// of the segments on the lab's 0.4 % link at 100 ms, where TCP still got 400–700
// kB/s); a.mu is held.
func (a *adaptiveBP) lossLimited() float64 {
	var lost, exp uint32
	for i := range a.lost {
		lost, exp = lost+a.lost[i], exp+a.expected[i]
	}
	if exp == 0 {
		return 0
	}
	return lossLimitedRate(a.path.mss, a.path.rtt, float64(lost)/float64(exp))
}

// planInputs is what the last plan was made from, for the server's debug log.
type planInputs struct {
	Measured    float64 // lowest goodput of the last parts, bytes/s (0: none yet)
	LossLimited float64 // the path's loss-limited rate, bytes/s (0: unknown)
	Loss        float64 // the loss rate it used
	RTT         time.Duration
	Window      float64 // lowest window ÷ media duration (0: none yet)
	Ceiling     int
	Retrans     float64 // TCP's retransmitted share of its segments (not used: see lossLimited)
}

func (a *adaptiveBP) inputs() planInputs {
	a.mu.Lock()
	defer a.mu.Unlock()
	in := planInputs{LossLimited: a.lossLimited(), RTT: a.path.rtt, Ceiling: min(a.ceiling, 100)}
	if len(a.rates) > 0 {
		in.Measured = lowest(a.rates)
	}
	if len(a.windows) > 0 {
		in.Window = lowest(a.windows)
	}
	if a.path.segsOut > 0 {
		in.Retrans = float64(a.path.retrans) / float64(a.path.segsOut)
	}
	if in.LossLimited > 0 {
		// p back from the rate: MSS/RTT × √(3/2)/√p.
		x := float64(a.path.mss) / a.path.rtt.Seconds() / in.LossLimited
		in.Loss = 1.5 * x * x
	}
	return in
}

// observePath takes the server's TCP_INFO, read as a TCPReport arrives.
func (a *adaptiveBP) observePath(p tcpPath) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.path = p
}

// worthClimbing: the UDP path lost packets in one of the last Reports, or none
// came yet; a.mu is held.
func (a *adaptiveBP) worthClimbing() bool {
	if len(a.lossy) == 0 {
		return true
	}
	for _, l := range a.lossy {
		if l {
			return true
		}
	}
	return false
}

// tcpReport takes a measure of substream k's TCP part.
func (a *adaptiveBP) tcpReport(r TCPReport) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.given[r.Substream]
	if !a.auto || !ok {
		return // fixed, or a substream planned before a reconnection: no bytes known
	}
	secs := max(float64(r.TCPms), 1) / 1000
	a.rates = keep(a.rates, float64(p.bytes)/secs)
	if r.SlackKnown && p.dur > 0 {
		a.windows = keep(a.windows, max(0, (float64(r.TCPms)+float64(r.SlackMS))/1000)/p.dur.Seconds())
		if r.SlackMS < 0 {
			a.late(p.bp)
		}
	}
}

// report takes a Report, after substream k's play-out: its UDP loss, and its
// lateness (the only lateness a client without TCPReports gives).
func (a *adaptiveBP) report(r Report) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.auto {
		return
	}
	// The path's loss is what went missing, repaired or not: it is what TCP
	// meets and what puts I-frame bytes at risk (a repair can miss its deadline).
	lost := min(r.Lost+r.Repaired, r.Expected)
	a.lossy = append(a.lossy, lost > 0)
	a.lost, a.expected = append(a.lost, lost), append(a.expected, r.Expected)
	if len(a.lossy) > keepMeasure {
		a.lossy, a.lost, a.expected = a.lossy[1:], a.lost[1:], a.expected[1:]
	}
	if r.LateMS > 0 {
		b := a.bp
		if p, ok := a.given[r.Substream]; ok {
			b = p.bp
		}
		a.late(b)
	}
}

// late makes a BP whose TCP part came late a ceiling; a.mu is held.
func (a *adaptiveBP) late(b int) {
	if b >= a.ceiling {
		return // already known (a TCPReport and the Report of one late part)
	}
	if a.probe > 0 {
		a.hold = min(2*a.hold, maxHold) // soon after the ceiling was lifted: still bad
		a.probe = 0
	}
	a.ceiling, a.holdLeft = b, a.hold
	a.bp = min(a.bp, b-bpStep)
}

func keep(xs []float64, x float64) []float64 {
	xs = append(xs, x)
	if len(xs) > keepMeasure {
		xs = xs[1:]
	}
	return xs
}

func lowest(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}
