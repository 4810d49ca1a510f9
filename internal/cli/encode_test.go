package cli

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSecondsOrDuration(t *testing.T) {
	var d time.Duration
	f := secondsOrDuration{&d}
	for in, want := range map[string]time.Duration{"20": 20 * time.Second, "1.5": 1500 * time.Millisecond, "2m": 2 * time.Minute, "500ms": 500 * time.Millisecond} {
		if err := f.Set(in); err != nil || d != want {
			t.Errorf("%q → %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"-1", "soon", ""} {
		if err := f.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Every command's duration flags take plain seconds ("--duration 20"), keep their
// defaults, and say what is wrong with a bad value.
func TestDurationFlagsTakeSeconds(t *testing.T) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d := durationFlag(fs, "duration", 20*time.Second, "")
	pause := durationFlag(fs, "pause", 3*time.Second, "")
	if err := fs.Parse([]string{"--duration", "20", "--pause", "1.5"}); err != nil || *d != 20*time.Second || *pause != 1500*time.Millisecond {
		t.Errorf("parsed %v %v (%v)", *d, *pause, err)
	}
	fs = flag.NewFlagSet("play", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	d = durationFlag(fs, "duration", 20*time.Second, "")
	if err := fs.Parse(nil); err != nil || *d != 20*time.Second {
		t.Errorf("default %v (%v)", *d, err)
	}
	if err := fs.Parse([]string{"--duration", "soon"}); err == nil || !strings.Contains(err.Error(), "give seconds") {
		t.Errorf("a bad duration: %v", err)
	}
}

// `streambed encode live` runs FFmpeg and posts one CMAF stream per track of the ladder.
func TestEncodeLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs FFmpeg for 3 s")
	}
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.URL.Path+" "+r.Header.Get("Authorization")] += int(n)
		mu.Unlock()
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	err := Encode(context.Background(), []string{"live", "--to", srv.URL + "/ingest/news", "--token", "T", "--duration", "3", "--preset", "ultrafast"}, io.Discard, &stderr)
	if err != nil {
		t.Fatalf("encode live: %v\n%s", err, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, track := range []string{"v180.cmfv", "v360.cmfv", "a64.cmfa"} {
		key := "/ingest/news/Streams(" + track + ") Bearer T"
		if got[key] < 1000 {
			t.Errorf("%s: %d bytes posted (all: %v)", key, got[key], got)
		}
	}
	if !strings.Contains(stderr.String(), "frames") {
		t.Errorf("no progress shown:\n%s", stderr.String())
	}
}
