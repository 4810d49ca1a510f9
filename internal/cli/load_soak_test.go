package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestIsSoak(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--soak", "http://h/live/c/manifest.mpd"}, true},
		{[]string{"http://h/live/c/manifest.mpd", "-soak"}, true},
		{[]string{"--soak=true", "u"}, true},
		{[]string{"u", "--", "--soak"}, false},
		{[]string{"u", "--transport", "ws"}, false},
	} {
		if got := isSoak(tc.args); got != tc.want {
			t.Errorf("isSoak(%q) = %v", tc.args, got)
		}
	}
}

// TestSoakRejects: bad flags and URLs are refused with a message before any viewer runs.
func TestSoakRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--soak", "--duration", "0", "http://127.0.0.1:1/live/c/manifest.mpd"},
		{"--soak", "ftp://h/x"},
		{"--soak", "http://h/vod/a/manifest.mpd"},
		{"--soak"},
	} {
		var out, errb bytes.Buffer
		err := Load(context.Background(), args, &out, &errb)
		if err == nil {
			t.Errorf("%q accepted", args)
			continue
		}
		if strings.Contains(err.Error(), "panic") {
			t.Errorf("%q: %v", args, err)
		}
	}
}
