package player

import (
	"testing"
	"time"
)

// TestLastLivePeriodWithEnd: in a live MPD whose period is followed by another, the
// newest segment is the newest out by now, not the period's last one (which is not out
// yet); once the period is over it is the period's last.
func TestLastLivePeriodWithEnd(t *testing.T) {
	ast := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	ix := &SegmentIndex{Timescale: 1000, Duration: 500, StartNumber: 1, Media: "$Number$.m4s",
		PeriodStart: 0, End: 13 * time.Second, AvailabilityStart: ast}
	for _, c := range []struct {
		now  time.Duration
		want uint64
		ok   bool
	}{
		{300 * time.Millisecond, 0, false},
		{10*time.Second + 700*time.Millisecond, 21, true}, // [10, 10.5) is out, [10.5, 11) is not
		{12*time.Second + 999*time.Millisecond, 25, true},
		{13 * time.Second, 26, true},
		{20 * time.Second, 26, true}, // the period ended: its last segment
	} {
		s, ok := ix.Last(ast.Add(c.now))
		if ok != c.ok || (ok && s.Number != c.want) {
			t.Errorf("at %v: segment %d (%v), want %d (%v)", c.now, s.Number, ok, c.want, c.ok)
		}
		if ok && s.AvailableAt.After(ast.Add(c.now)) {
			t.Errorf("at %v: segment %d is not out until %v", c.now, s.Number, s.AvailableAt.Sub(ast))
		}
	}
}
