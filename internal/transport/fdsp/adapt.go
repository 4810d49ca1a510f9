package fdsp

import "sync"

// adaptiveBP is a session's bitstream prioritisation: fixed, or moved on the fly
// from the client's reports so that both UDP loss and TCP lateness stay low — the
// study's future work. BP only trades the two: a higher BP puts more I-frame bytes
// on the path that does not lose them (PLR falls) and more bytes on TCP ahead of
// their deadline (the TCP part may come late: rebuffering). So the controller looks
// for the highest BP whose TCP part still arrives in time, one step per report:
//
//   - the report's substream had its TCP part late (the client rebuffered): the
//     BP that substream was planned with is too much for this path; it becomes the
//     ceiling and BP drops a step below it;
//   - otherwise, if any of its UDP packets were lost or late, it was planned with
//     today's BP (the verdict on the last step is in) and it is not substream 0
//     (whose TCP part is the start-up, on time by definition), BP goes up a step
//     while it stays below the ceiling (every saved I-frame byte lowers PLR, and
//     TCP has kept up);
//   - otherwise (a clean UDP path) BP stays: nothing to protect, nothing to gain.
//
// After enough on-time reports in a row (reprobeAfter, doubling with every late
// one up to maxReprobe, so a path that stays bad is probed ever more rarely) the
// ceiling rises a step, so a path that got better is found again. The content is never looked at: a clip whose
// I-frames are a large share of its bytes meets the ceiling at a lower BP by itself.
//
// Reports come about two substreams after the BP they judge was planned (the TCP
// part goes one substream ahead and the report follows the play-out), so the
// controller remembers the BP it handed out for each substream.
type adaptiveBP struct {
	mu      sync.Mutex
	auto    bool
	bp      int
	ceiling int  // the lowest BP whose TCP part came late; above 100: none yet
	onTime  int  // reports in a row with the TCP part on time
	wait    int  // on-time reports before the ceiling rises a step
	probing bool // the ceiling rose: a late report now means the path is still bad
	// given is the BP handed out per substream, in plan order from the first one
	// (a resumed session's substreams keep counting, so a report after a reconnect
	// may be judged by today's BP instead: harmless, one step either way).
	given map[uint32]int
	next  uint32 // the next substream value() plans
}

const (
	bpStart      = 50
	bpStep       = 25
	noCeiling    = 100 + bpStep
	reprobeAfter = 8
	maxReprobe   = 64
	keepGiven    = 16 // substreams remembered (a report is at most a few behind)
)

func (a *adaptiveBP) init(bp uint8) {
	a.auto = bp == BPAuto
	a.bp = int(bp)
	a.ceiling = noCeiling
	a.given = map[uint32]int{}
	a.wait = reprobeAfter
	if a.auto {
		a.bp = bpStart
	}
}

// value is the BP for the next substream to plan.
func (a *adaptiveBP) value() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.given[a.next] = a.bp
	delete(a.given, a.next-keepGiven) // wraps harmlessly near 0
	a.next++
	return a.bp
}

// planned is the BP substream k was planned with, or today's when unknown.
func (a *adaptiveBP) planned(k uint32) int {
	if b, ok := a.given[k]; ok {
		return b
	}
	return a.bp
}

func (a *adaptiveBP) report(r Report) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.auto {
		return
	}
	switch {
	case r.LateMS > 0:
		b := a.planned(r.Substream)
		a.ceiling = min(a.ceiling, b)
		a.bp = min(a.bp, b-bpStep)
		a.onTime = 0
		if a.probing {
			a.wait = min(2*a.wait, maxReprobe)
			a.probing = false
		}
	default:
		a.onTime++
		if a.onTime >= a.wait && a.ceiling < noCeiling {
			a.ceiling += bpStep
			a.onTime = 0
			a.probing = true
		}
		// Substream 0's TCP part is the start-up wait, never late by definition:
		// it says nothing about whether TCP keeps up, so it is no verdict to climb on.
		if r.Substream > 0 && r.Lost > 0 && a.planned(r.Substream) == a.bp && a.bp+bpStep < a.ceiling {
			a.bp += bpStep
		}
	}
	a.bp = max(0, min(100, a.bp))
}
