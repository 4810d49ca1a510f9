package experiment

import (
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

// LinkRun is what one direction of the emulated link did during one run: the
// emulator's own counters (user-space backend), so a run that went wrong can be told
// apart from a link that starved — packets the link dropped from its queue, and how
// late the forwarder handed packets on against the times its model gave them (late
// wake-ups on a loaded machine).
type LinkRun struct {
	Packets      uint64 `json:"packets"`
	Lost         uint64 `json:"lost"`          // the profile's random loss
	QueueDropped uint64 `json:"queue_dropped"` // drop-tail and delay-line overflow
	Delivered    uint64 `json:"delivered"`
	// LateMeanMs is the mean lateness of the packets delivered in the run;
	// LateOver1ms how many were over 1 ms late.
	LateMeanMs  float64 `json:"late_mean_ms"`
	LateOver1ms uint64  `json:"late_over_1ms"`
	// LateMaxMs is the largest lateness in the run when it set a new maximum for the
	// link; otherwise the run's largest was at most LateMaxSoFarMs (the emulator
	// keeps one maximum per link, not per run).
	LateMaxMs      *float64 `json:"late_max_ms,omitempty"`
	LateMaxSoFarMs float64  `json:"late_max_so_far_ms"`
}

// linkRuns is each link direction's counters between two snapshots of the emulator
// ("client>server", ...); nil when the backend keeps none (kernel netem).
func linkRuns(before, after []netem.DirectionStats) map[string]LinkRun {
	if len(after) == 0 {
		return nil
	}
	prev := map[string]netem.DirectionStats{}
	for _, d := range before {
		prev[d.From+">"+d.To] = d
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := map[string]LinkRun{}
	for _, d := range after {
		b := prev[d.From+">"+d.To]
		lr := LinkRun{
			Packets:        d.Packets - b.Packets,
			Lost:           d.Lost - b.Lost,
			QueueDropped:   d.QueueDropped - b.QueueDropped,
			Delivered:      d.Delivered - b.Delivered,
			LateOver1ms:    d.LateOver1ms - b.LateOver1ms,
			LateMaxSoFarMs: ms(d.LateMax),
		}
		if n := d.Timed - b.Timed; n > 0 {
			lr.LateMeanMs = ms((d.LateSum - b.LateSum) / time.Duration(n))
		}
		if d.LateMax > b.LateMax {
			v := ms(d.LateMax)
			lr.LateMaxMs = &v
		}
		out[d.From+">"+d.To] = lr
	}
	return out
}

// linkDrops is each link direction's undelivered packets in a run as compact rows
// [epoch ms, why, source port, destination port, TCP flags, payload bytes, seq]: which
// exchange a loss hit (a request, a response's tail, an ACK, a SYN). Nil when none.
func linkDrops(drops map[string][]netem.Drop) map[string][][7]any {
	out := map[string][][7]any{}
	for dir, ds := range drops {
		rows := [][7]any{}
		for _, d := range ds {
			rows = append(rows, [7]any{d.MS, d.Why, d.SrcPort, d.DstPort, d.Flags, d.Payload, d.Seq})
		}
		out[dir] = rows
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
