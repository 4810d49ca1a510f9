package h2push_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// strategyCases are the push sets of the test asset (v180, v360, a64; 4 segments
// each) per strategy and the request that starts them.
var strategyCases = []struct {
	strategy, trigger string
	want              []string
}{
	{"none", "/vod/test/manifest.mpd", nil},
	{"init", "/vod/test/manifest.mpd", []string{"/vod/test/a64/init.mp4", "/vod/test/v180/init.mp4", "/vod/test/v360/init.mp4"}},
	{"init-first", "/vod/test/manifest.mpd", []string{"/vod/test/a64/init.mp4", "/vod/test/v180/init.mp4", "/vod/test/v360/init.mp4", "/vod/test/a64/1.m4s", "/vod/test/v180/1.m4s"}},
	{"all", "/vod/test/manifest.mpd", []string{"/vod/test/a64/init.mp4", "/vod/test/v180/init.mp4",
		"/vod/test/v180/1.m4s", "/vod/test/a64/1.m4s", "/vod/test/v180/2.m4s", "/vod/test/a64/2.m4s",
		"/vod/test/v180/3.m4s", "/vod/test/a64/3.m4s", "/vod/test/v180/4.m4s", "/vod/test/a64/4.m4s"}},
	{"audio", "/vod/test/a64/init.mp4", []string{"/vod/test/a64/1.m4s", "/vod/test/a64/2.m4s", "/vod/test/a64/3.m4s", "/vod/test/a64/4.m4s"}},
	{"k3", "/vod/test/v360/1.m4s", []string{"/vod/test/v360/2.m4s", "/vod/test/v360/3.m4s"}},
}

// TestStrategiesOverH2AndH2C requests each strategy's trigger with ?push= over h2c and
// TLS h2 with our client, and checks the promised set, the bytes of every push, and
// that claiming a push sends no request.
func TestStrategiesOverH2AndH2C(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	for _, proto := range []string{"h2c", "h2"} {
		base := o.h2c
		if proto == "h2" {
			base = o.h2
		}
		for _, tc := range strategyCases {
			t.Run(proto+"/"+tc.strategy, func(t *testing.T) {
				c := pushclient.New(pushclient.Options{Insecure: true})
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				s, err := c.Get(ctx, base+tc.trigger+"?push="+tc.strategy)
				if err != nil || s.Status != 200 {
					t.Fatalf("trigger: %v (status %d)", err, s.Status)
				}
				var got []string
				for _, p := range c.Pending() {
					got = append(got, pathOf(p.URL))
				}
				slices.Sort(got)
				want := slices.Sorted(slices.Values(tc.want))
				if !slices.Equal(got, want) {
					t.Fatalf("promised %v\nwant %v", got, want)
				}
				before := c.Stats().Requests
				for _, path := range tc.want {
					s, err := c.Get(ctx, base+path)
					if err != nil {
						t.Fatalf("claim %s: %v", path, err)
					}
					if !s.Pushed || s.Status != 200 {
						t.Errorf("%s: pushed %v, status %d", path, s.Pushed, s.Status)
					}
					if want := o.file(t, path); want != nil && !bytes.Equal(s.Body, want) {
						t.Errorf("%s: %d bytes pushed, want the file's %d", path, len(s.Body), len(want))
					}
				}
				st := c.Stats()
				if st.Requests != before {
					t.Errorf("claiming sent %d requests", st.Requests-before)
				}
				if st.UnclaimedBytes != 0 || int(st.Claimed) != len(tc.want) {
					t.Errorf("stats %+v: want every push claimed", st)
				}
			})
		}
	}
}

// TestPushOrderFollowsMediaTime checks that promised responses go out one at a time in
// media-time order: with "all", every segment completes after the ones before it.
func TestPushOrderFollowsMediaTime(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	c := pushclient.New(pushclient.Options{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, o.h2c+"/vod/test/manifest.mpd?push=all"); err != nil {
		t.Fatal(err)
	}
	first := map[string]time.Time{}
	for _, p := range c.Pending() {
		<-p.Done()
		first[pathOf(p.URL)] = p.FirstByte
	}
	order := strategyCases[3].want
	for i := 1; i < len(order); i++ {
		if first[order[i]].Before(first[order[i-1]]) {
			t.Errorf("%s started before %s", order[i], order[i-1])
		}
	}
}

// TestSessionStrategySticks: ?push= on the MPD request sets the strategy for the
// connection, so later segment requests (which carry no query) use it.
func TestSessionStrategySticks(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	c := pushclient.New(pushclient.Options{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, o.h2c+"/vod/test/manifest.mpd?push=k2"); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Pending()); n != 0 {
		t.Fatalf("k2 pushed %d resources with the MPD", n)
	}
	if _, err := c.Get(ctx, o.h2c+"/vod/test/v180/2.m4s"); err != nil {
		t.Fatal(err)
	}
	p := c.Pending()
	if len(p) != 1 || pathOf(p[0].URL) != "/vod/test/v180/3.m4s" {
		t.Fatalf("after a segment request the session pushed %d: %v", len(p), p)
	}
	// A new connection is a new session: the configured default (none) applies.
	c2 := pushclient.New(pushclient.Options{})
	defer c2.Close()
	if _, err := c2.Get(ctx, o.h2c+"/vod/test/v180/2.m4s"); err != nil {
		t.Fatal(err)
	}
	if n := len(c2.Pending()); n != 0 {
		t.Errorf("another connection got %d pushes", n)
	}
	if _, err := c.Get(ctx, o.h2c+"/vod/test/manifest.mpd?push=bogus"); err == nil {
		s, _ := c.Get(ctx, o.h2c+"/vod/test/manifest.mpd?push=bogus")
		if s.Status != http.StatusBadRequest || !strings.Contains(string(s.Body), "push strategy") {
			t.Errorf("?push=bogus: %d %s", s.Status, s.Body)
		}
	}
}

// TestClientRefusingPushGetsPlainResponses: Go's own client sends
// SETTINGS_ENABLE_PUSH=0; it gets the MPD as usual, with Link: rel=preload naming
// what would have been pushed, and the server counts the pushes as refused.
func TestClientRefusingPushGetsPlainResponses(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	for _, base := range []string{o.h2, o.h2c} {
		protos := new(http.Protocols)
		if strings.HasPrefix(base, "https") {
			protos.SetHTTP2(true)
		} else {
			protos.SetUnencryptedHTTP2(true)
		}
		hc := &http.Client{Transport: &http.Transport{Protocols: protos, TLSClientConfig: insecureTLS()}, Timeout: 10 * time.Second}
		before := o.pusher.Stats().Refused
		resp, err := hc.Get(base + "/vod/test/manifest.mpd?push=init")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 || !bytes.Contains(body, []byte("<MPD")) {
			t.Fatalf("%s: %s %d, %d bytes", base, resp.Proto, resp.StatusCode, len(body))
		}
		if links := strings.Join(resp.Header.Values("Link"), ","); strings.Count(links, "rel=preload") != 3 {
			t.Errorf("Link headers %q, want 3 preloads", links)
		}
		if got := o.pusher.Stats().Refused - before; got != 3 {
			t.Errorf("refused %d pushes, want 3", got)
		}
	}
	// Our client with push disabled gets no PUSH_PROMISE either.
	c := pushclient.New(pushclient.Options{DisablePush: true})
	defer c.Close()
	s, err := c.Get(context.Background(), o.h2c+"/vod/test/manifest.mpd?push=all")
	if err != nil || s.Status != 200 || c.Stats().Promised != 0 {
		t.Errorf("push disabled: %v, status %d, %d promised", err, s.Status, c.Stats().Promised)
	}
}

// TestResetFreesPushes: a client that resets pushes (here every video segment of
// "all") frees them at once: the rest still arrive, in order, and the server sees the
// resets as cancelled without waiting for anything.
func TestResetFreesPushes(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	// A 4 KiB stream window: a pushed segment cannot be sent whole before the client
	// has answered its promise, so the server sees every reset however slow the
	// client is to read (with a large window a busy machine let the server finish
	// all ten before the resets arrived).
	c := pushclient.New(pushclient.Options{Window: 4096, AcceptPush: func(u string) bool {
		return !strings.Contains(u, "/v180/") || strings.HasSuffix(u, "init.mp4")
	}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := o.pusher.Stats()
	if _, err := c.Get(ctx, o.h2c+"/vod/test/manifest.mpd?push=all"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.Pending() {
		<-p.Done()
		if p.Err() != nil {
			t.Errorf("%s: %v", p.URL, p.Err())
		}
		got = append(got, pathOf(p.URL))
	}
	slices.Sort(got)
	want := []string{"/vod/test/a64/1.m4s", "/vod/test/a64/2.m4s", "/vod/test/a64/3.m4s", "/vod/test/a64/4.m4s", "/vod/test/a64/init.mp4", "/vod/test/v180/init.mp4"}
	if !slices.Equal(got, want) {
		t.Errorf("received %v\nwant %v", got, want)
	}
	deadline := time.Now().Add(15 * time.Second) // a bound on waiting, not a speed check
	for o.pusher.Stats().Cancelled-before.Cancelled < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := o.pusher.Stats()
	if st.Cancelled-before.Cancelled != 4 || st.Completed-before.Completed != 6 {
		t.Errorf("server: %d cancelled, %d completed; want 4 and 6", st.Cancelled-before.Cancelled, st.Completed-before.Completed)
	}
	if cs := c.Stats(); cs.Cancelled != 4 {
		t.Errorf("client cancelled %d", cs.Cancelled)
	}
}

// TestPushLimit: with SETTINGS_MAX_CONCURRENT_STREAMS=3 the server promises 3 and
// leaves the rest to requests.
func TestPushLimit(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	c := pushclient.New(pushclient.Options{MaxPushes: 3})
	defer c.Close()
	before := o.pusher.Stats()
	if _, err := c.Get(context.Background(), o.h2c+"/vod/test/manifest.mpd?push=all"); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Pending()); n != 3 {
		t.Errorf("%d promised, want 3", n)
	}
	if got := o.pusher.Stats().Limited - before.Limited; got != 7 {
		t.Errorf("limited %d, want 7", got)
	}
}

// TestEarlyHints: the player page deep-linked to a stream answers 103 Early Hints with
// Link: rel=preload for the MPD and the init segments, over HTTP/1.1 and h2.
func TestEarlyHints(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	for _, base := range []string{o.h2c, o.h2} {
		var hints []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			if code == http.StatusEarlyHints {
				hints = append(hints, h["Link"]...)
			}
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", base+"/?stream=test&live=0", nil)
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureTLS(), ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		joined := strings.Join(hints, ",")
		for _, want := range []string{"</vod/test/manifest.mpd>; rel=preload", "</vod/test/v180/init.mp4>; rel=preload", "</vod/test/a64/init.mp4>; rel=preload"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s (%s): 103 hints %q lack %s", base, resp.Proto, hints, want)
			}
		}
		if !strings.Contains(strings.Join(resp.Header.Values("Link"), ","), "manifest.mpd") {
			t.Errorf("%s: the final response lacks the Link headers", base)
		}
	}
}

// TestEarlyHintsWSPush: a page that will play by WebSocket push is not told to
// preload the MPD and inits it will never fetch (the push session brings the inits).
func TestEarlyHintsWSPush(t *testing.T) {
	o := startOrigin(t, h2push.Config{}, "")
	resp, err := http.Get(o.h2c + "/?stream=test&live=0&player=wspush")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	links := strings.Join(resp.Header.Values("Link"), ",")
	if strings.Contains(links, "manifest.mpd") || strings.Contains(links, "init.mp4") {
		t.Errorf("Link headers for a push page name the MPD or inits: %q", links)
	}
}

// TestStatsAPI is a smoke test of the stats endpoint's shape.
func TestStatsAPI(t *testing.T) {
	o := startOrigin(t, h2push.Config{AdminToken: "s3cret"}, "")
	req, _ := http.NewRequest("GET", o.h2c+"/admin/push/api/stats", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Server h2push.Stats `json:"server"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
}

// TestLiveKPushWaitsForSegments: on a live channel, K-push promises the next
// segments at once and sends each when it becomes available.
func TestLiveKPushWaitsForSegments(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a live segment")
	}
	o := startOrigin(t, h2push.Config{}, "")
	// The looped channel's schedule: segment n completes at anchor + (n+1)·2 s.
	avail := func(n uint64) time.Time {
		return looplive.DefaultAvailabilityStart.Add(time.Duration(n+1) * 2 * time.Second)
	}
	n := uint64(time.Since(looplive.DefaultAvailabilityStart)/(2*time.Second)) - 1
	c := pushclient.New(pushclient.Options{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	path := fmt.Sprintf("/live/loop/v180/%d.m4s", n)
	if s, err := c.Get(ctx, o.h2c+path+"?push=k2"); err != nil || s.Status != 200 {
		t.Fatalf("GET %s: %v", path, err)
	}
	p := c.Pending()
	want := fmt.Sprintf("/live/loop/v180/%d.m4s", n+1)
	if len(p) != 1 || pathOf(p[0].URL) != want {
		t.Fatalf("promised %v, want %s", p, want)
	}
	<-p[0].Done()
	if p[0].Err() != nil || p[0].Status != 200 {
		t.Fatalf("push: %v, status %d", p[0].Err(), p[0].Status)
	}
	if due := avail(n + 1); p[0].Start.Before(due) {
		t.Errorf("segment %d pushed at %v, before it was available at %v", n+1, p[0].Start, due)
	}
}
