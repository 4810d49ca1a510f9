package pars

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

func TestNextURL(t *testing.T) {
	tests := []struct {
		u        string
		from, to uint64
		want     string
		ok       bool
	}{
		{"http://h/vod/a/v360/7.m4s", 7, 8, "http://h/vod/a/v360/8.m4s", true},
		{"http://h/vod/a/v360/9.m4s?x=9", 9, 10, "http://h/vod/a/v360/10.m4s?x=9", true},
		{"http://h/vod/a/v360/seg-12.m4s", 12, 14, "http://h/vod/a/v360/seg-14.m4s", true},
		{"http://h/vod/a/v1/1.m4s", 1, 2, "http://h/vod/a/v1/2.m4s", true},     // the number in the folder is not touched
		{"http://h/vod/a/v/t12345.m4s", 3, 4, "", false},                       // $Time$: the number is not there
		{"http://h/vod/a/v/t12345.m4s", 23, 24, "", false},                     // inside a longer number
		{"http://h/vod/a/v/11_11.m4s", 11, 12, "", false},                      // ambiguous
		{"http://h/vod/a/v360/4.m4s", 4, 5, "http://h/vod/a/v360/5.m4s", true}, // the 4 of "m4s" is not a segment number
		{"http://h/vod/a/v/", 1, 2, "", false},
	}
	for _, tt := range tests {
		got, ok := nextURL(tt.u, tt.from, tt.to)
		if ok != tt.ok || got != tt.want {
			t.Errorf("nextURL(%q, %d, %d) = %q, %v; want %q, %v", tt.u, tt.from, tt.to, got, ok, tt.want, tt.ok)
		}
	}
}

func newTestParallel(t *testing.T, n int) *Parallel {
	t.Helper()
	p, err := NewParallel(n, ConnOptions{StallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func segReq(s string, n int) player.SegmentRequest {
	return player.SegmentRequest{Kind: player.RequestMedia, URL: fmt.Sprintf("%s/vod/a/v/%d.m4s", s, n), TrackID: "v", Number: uint64(n), KeepBody: true}
}

// TestParallelFetchesAhead: asking for segment 1 with N=3 fetches 1, 2 and 3 at once
// over three connections; asking for 2 and 3 then sends nothing new until 4.
func TestParallelFetchesAhead(t *testing.T) {
	o, s := newTestOrigin(t, 100_000, 110_000, 120_000, 130_000, 140_000)
	p := newTestParallel(t, 3)
	ctx := context.Background()
	resp, err := p.Fetch(ctx, segReq(s.URL, 1))
	if err != nil || !bytes.Equal(resp.Body, o.files["/vod/a/v/1.m4s"]) {
		t.Fatalf("segment 1: %v", err)
	}
	// Segments 2 and 3 were asked for together with 1, without further requests from
	// the player (wait, bounded, for the origin to see them).
	var reqs []seen
	for i := 0; i < 500; i++ {
		reqs = o.requests("")
		if len(reqs) >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	paths := map[string]int{}
	remotes := map[string]bool{}
	for _, r := range reqs {
		paths[r.path]++
		remotes[r.remote] = true
		if r.rng != "" {
			t.Fatalf("Parallel sent a range: %v", r)
		}
	}
	if len(reqs) != 3 || len(paths) != 3 || paths["/vod/a/v/2.m4s"] != 1 || paths["/vod/a/v/3.m4s"] != 1 || len(remotes) != 3 {
		t.Fatalf("after asking for segment 1: requests %v, want segments 1–3 over three connections", reqs)
	}
	for i := 2; i <= 3; i++ {
		resp, err := p.Fetch(ctx, segReq(s.URL, i))
		if err != nil || !bytes.Equal(resp.Body, o.files[fmt.Sprintf("/vod/a/v/%d.m4s", i)]) {
			t.Fatalf("segment %d: %v", i, err)
		}
		if !resp.OverheadExact || resp.Duration() <= 0 {
			t.Fatalf("segment %d: response %+v", i, resp)
		}
	}
	// Asking for 2 and 3 sent at most the prefetches of 4 and 5, each once.
	paths = map[string]int{}
	for _, r := range o.requests("") {
		paths[r.path]++
		if paths[r.path] > 1 {
			t.Fatalf("segment %s requested twice", r.path)
		}
		switch r.path {
		case "/vod/a/v/1.m4s", "/vod/a/v/2.m4s", "/vod/a/v/3.m4s", "/vod/a/v/4.m4s", "/vod/a/v/5.m4s":
		default:
			t.Fatalf("unexpected request %v", r)
		}
	}
	if st := p.Stats(); st.Prefetched < 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestParallelEnd: prefetches past the last segment fail quietly; the player's own
// request for a missing segment gets ErrNotFound.
func TestParallelEnd(t *testing.T) {
	_, s := newTestOrigin(t, 10_000, 10_000)
	p := newTestParallel(t, 4)
	ctx := context.Background()
	for i := 1; i <= 2; i++ {
		if _, err := p.Fetch(ctx, segReq(s.URL, i)); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	if _, err := p.Fetch(ctx, segReq(s.URL, 3)); !errors.Is(err, media.ErrNotFound) {
		t.Fatalf("segment 3: err %v, want ErrNotFound", err)
	}
}

// TestParallelOneConnection degenerates to sequential fetching, and non-media
// requests are single GETs that are not kept.
func TestParallelOneConnection(t *testing.T) {
	o, s := newTestOrigin(t, 10_000, 10_000)
	p := newTestParallel(t, 1)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		req := player.SegmentRequest{Kind: player.RequestManifest, URL: s.URL + "/vod/a/v/1.m4s", KeepBody: true}
		if _, err := p.Fetch(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Fetch(ctx, segReq(s.URL, 1)); err != nil {
		t.Fatal(err)
	}
	if n := len(o.requests("")); n != 3 {
		t.Fatalf("%d requests, want 3 (two manifests, one segment, no prefetch)", n)
	}
}

func TestParallelNoPrediction(t *testing.T) {
	o, s := newTestOrigin(t, 10_000)
	p := newTestParallel(t, 4)
	req := segReq(s.URL, 1)
	req.Number = 77 // not in the URL: nothing to predict
	if _, err := p.Fetch(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if reqs := o.requests(""); len(reqs) != 1 || !strings.HasSuffix(reqs[0].path, "/1.m4s") {
		t.Fatalf("requests %v", reqs)
	}
}
