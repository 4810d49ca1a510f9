package fdsp

import "sync"

// adaptiveBP is a session's bitstream prioritisation: fixed, or moved on the fly
// from the client's reports so that both UDP loss and TCP lateness stay low — the
// study's future work. One step per substream report:
//
//   - the substream's TCP part completed after its deadline (the client rebuffered):
//     TCP is the bottleneck, so BP goes down a step;
//   - otherwise, if more than targetPLR of its UDP packets were lost or late, BP goes
//     up a step (more of the I-frames on the path that does not lose them);
//   - otherwise, with no loss at all, BP drifts down a step (the UDP path is clean,
//     so TCP need not carry more than headers).
type adaptiveBP struct {
	mu   sync.Mutex
	auto bool
	bp   int
}

const (
	bpStep    = 25
	targetPLR = 0.005
)

func (a *adaptiveBP) init(bp uint8) {
	a.auto = bp == BPAuto
	a.bp = int(bp)
	if a.auto {
		a.bp = 50
	}
}

func (a *adaptiveBP) value() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bp
}

func (a *adaptiveBP) report(r Report) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.auto {
		return
	}
	plr := 0.0
	if r.Expected > 0 {
		plr = float64(r.Lost) / float64(r.Expected)
	}
	switch {
	case r.LateMS > 0:
		a.bp -= bpStep
	case plr > targetPLR:
		a.bp += bpStep
	case r.Lost == 0:
		a.bp -= bpStep
	}
	a.bp = max(0, min(100, a.bp))
}
