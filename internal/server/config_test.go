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
