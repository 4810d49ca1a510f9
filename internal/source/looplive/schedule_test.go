package looplive

import (
	"errors"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
)

func TestTimelineBoundaries(t *testing.T) {
	ast := time.Unix(0, 0)
	tl := Schedule{Start: ast, SegmentDuration: 2 * time.Second, DVRWindow: 10 * time.Second}
	at := func(ms int64) time.Time { return ast.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name        string
		now         time.Time
		first, last uint64
		ok          bool
	}{
		{"before the first segment completes", at(1999), 0, 0, false},
		{"exactly when segment 0 completes", at(2000), 0, 0, true},
		{"one ms before segment 1 completes", at(3999), 0, 0, true},
		{"window not yet full", at(8000), 0, 3, true},
		{"window full", at(12000), 1, 5, true},
		{"after a long uptime", at(1_700_000_000_000), 849_999_995, 849_999_999, true},
	}
	for _, tt := range tests {
		first, last, ok := tl.Window(tt.now)
		if first != tt.first || last != tt.last || ok != tt.ok {
			t.Errorf("%s: Window = %d..%d %v, want %d..%d %v", tt.name, first, last, ok, tt.first, tt.last, tt.ok)
		}
	}
	if got := tl.Availability(4); !got.Equal(at(10000)) {
		t.Errorf("Availability(4) = %v", got)
	}
	if err := tl.Check(5, at(11999)); !errors.Is(err, media.ErrNotYet) {
		t.Errorf("Check(5) 1 ms early = %v, want media.ErrNotYet", err)
	}
	if err := tl.Check(5, at(12000)); err != nil {
		t.Errorf("Check(5) on time = %v", err)
	}
	if err := tl.Check(0, at(12000)); !errors.Is(err, media.ErrGone) {
		t.Errorf("Check(0) after the window = %v, want media.ErrGone", err)
	}
	if got := tl.NumberAt(at(5999)); got != 2 {
		t.Errorf("NumberAt(5.999 s) = %d, want 2", got)
	}
}
