package server

import (
	"strings"
	"testing"
	"time"
)

func TestConfigTCPRTOMin(t *testing.T) {
	for _, tc := range []struct {
		v     time.Duration
		wants string // "" when valid
	}{
		{0, ""},
		{50 * time.Millisecond, ""},
		{200 * time.Millisecond, ""},
		{500 * time.Microsecond, "want 1ms to 200ms"},
		{time.Second, "want 1ms to 200ms"},
	} {
		c := DefaultConfig()
		c.TCPRTOMin = tc.v
		err := c.Validate()
		switch {
		case tc.wants == "" && err != nil:
			t.Errorf("%s: %v", tc.v, err)
		case tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)):
			t.Errorf("%s: error %v, want one saying %q", tc.v, err, tc.wants)
		}
	}
}

// An LL-HLS PART-HOLD-BACK under two part targets is refused with the value to give:
// 200 ms parts (the shortest any channel has) everywhere, the channel's own parts for
// a channel whose chunks are longer.
func TestConfigLLHLSPartHoldBack(t *testing.T) {
	for _, tc := range []struct {
		hold, chunk time.Duration // chunk 0: the origin-wide check only
		wants       string        // "" when valid
	}{
		{0, 0, ""},
		{400 * time.Millisecond, 0, ""},
		{time.Second, 0, ""},
		{300 * time.Millisecond, 0, "give at least 400ms, or 0 for the default of three part targets (600ms)"},
		{-time.Second, 0, "give at least 400ms"},
		{600 * time.Millisecond, 40 * time.Millisecond, ""},
		{0, 500 * time.Millisecond, ""},
		{time.Second, 500 * time.Millisecond, ""},
		{600 * time.Millisecond, 500 * time.Millisecond, `channel "ll": ll_hls_part_hold_back (--ll-hls-part-hold-back) 600ms is below two part targets (1s with 500ms parts)`},
	} {
		c := DefaultConfig()
		c.LLHLSPartHoldBack = tc.hold
		err := c.Validate()
		if err == nil && tc.chunk > 0 {
			err = c.CheckPartHoldBack("ll", tc.chunk)
		}
		switch {
		case tc.wants == "" && err != nil:
			t.Errorf("%s, %s chunks: %v", tc.hold, tc.chunk, err)
		case tc.wants != "" && (err == nil || !strings.Contains(err.Error(), tc.wants)):
			t.Errorf("%s, %s chunks: error %v, want one saying %q", tc.hold, tc.chunk, err, tc.wants)
		}
	}
}
