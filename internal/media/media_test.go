package media

import (
	"testing"
	"time"
)

func TestTrackDurationExact(t *testing.T) {
	tr := Track{Timescale: 48000}
	if got := tr.Duration(96000 + 1024); got != 2*time.Second+21333333*time.Nanosecond {
		t.Errorf("Duration = %v", got)
	}
	big := uint64(1_700_000_000) * 90000
	if got := (&Track{Timescale: 90000}).Duration(big); got != 1_700_000_000*time.Second {
		t.Errorf("Duration(large) = %v", got)
	}
}
