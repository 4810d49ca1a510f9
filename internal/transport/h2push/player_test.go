package h2push_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// play runs the headless player over an h2push transport and returns its report, as
// `streambed play --json` prints it, and the transport's stats.
func play(transport, manifest, abrSpec string) (qoe.Report, pushclient.Stats, error) {
	u, _ := url.Parse(manifest)
	f, err := h2push.NewPlayFetcher(transport, u, true)
	if err != nil {
		return qoe.Report{}, pushclient.Stats{}, err
	}
	defer f.Close()
	rule, err := abr.Parse(abrSpec)
	if err != nil {
		return qoe.Report{}, pushclient.Stats{}, err
	}
	p, err := player.New(player.Config{URL: manifest, Fetcher: f, Load: dash.Load, ABR: rule, Transport: transport, RequestTimeout: 20 * time.Second})
	if err != nil {
		return qoe.Report{}, pushclient.Stats{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := p.Run(ctx)
	if err != nil {
		return rep, pushclient.Stats{}, fmt.Errorf("%s: %w", transport, err)
	}
	f.AddToReport(&rep)
	if err := f.Close(); err != nil {
		return rep, pushclient.Stats{}, err
	}
	return rep, f.Stats(), nil
}

type playResult struct {
	rep qoe.Report
	st  pushclient.Stats
	err error
}

// TestPlayerPerStrategy plays the whole test asset (4 segments of v180 and of a64)
// with each strategy over h2c and TLS h2, on one rendition so the counts are exact:
// what the strategy pushes is not requested, and everything else is.
func TestPlayerPerStrategy(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 8 s of media per case")
	}
	o := startOrigin(t, h2push.Config{}, "")
	v360Init := int64(len(o.file(t, "/vod/test/v360/init.mp4")))
	cases := []struct {
		strategy         string
		requests, pushed int
		mediaRequests    int
		unclaimed        int64
	}{
		{strategy: "none", requests: 11, pushed: 0, mediaRequests: 8},
		{strategy: "init", requests: 9, pushed: 3, mediaRequests: 8, unclaimed: v360Init},
		{strategy: "init-first", requests: 7, pushed: 5, mediaRequests: 6, unclaimed: v360Init},
		{strategy: "all", requests: 1, pushed: 10, mediaRequests: 0},
		{strategy: "audio", requests: 7, pushed: 4, mediaRequests: 4},
		{strategy: "k2", requests: 7, pushed: 4, mediaRequests: 4},
		{strategy: "k3", requests: 7, pushed: 4, mediaRequests: 4},
	}
	// The sessions run at once (each plays 8 s in real time); the checks follow.
	results := map[string]*playResult{}
	var wg sync.WaitGroup
	for _, tc := range cases {
		for _, proto := range []string{"h2cpush", "h2push"} {
			base := o.h2c
			if proto == "h2push" {
				base = o.h2
			}
			r := &playResult{}
			results[proto+"-"+tc.strategy] = r
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.rep, r.st, r.err = play(proto+"-"+tc.strategy, base+"/vod/test/manifest.mpd", "fixed:v180")
			}()
		}
	}
	wg.Wait()
	for _, tc := range cases {
		for _, proto := range []string{"h2cpush", "h2push"} {
			t.Run(proto+"-"+tc.strategy, func(t *testing.T) {
				r := results[proto+"-"+tc.strategy]
				if r.err != nil {
					t.Fatal(r.err)
				}
				rep, st := r.rep, r.st
				if rep.EndReason != "ended" || rep.PlayedS < 7.9 || rep.Errors != 0 {
					t.Errorf("ended %q after %.1f s played, %d errors", rep.EndReason, rep.PlayedS, rep.Errors)
				}
				if rep.Requests != tc.requests || rep.Pushed != tc.pushed || rep.MediaRequests != tc.mediaRequests {
					t.Errorf("requests %d (media %d), pushed %d; want %d (%d), %d",
						rep.Requests, rep.MediaRequests, rep.Pushed, tc.requests, tc.mediaRequests, tc.pushed)
				}
				if st.Requests != int64(tc.requests) {
					t.Errorf("the client sent %d requests, the report says %d", st.Requests, rep.Requests)
				}
				if st.UnclaimedBytes != tc.unclaimed {
					t.Errorf("unclaimed %d bytes, want %d (stats %+v)", st.UnclaimedBytes, tc.unclaimed, st)
				}
				if rep.Protocol != "HTTP/2.0" {
					t.Errorf("protocol %q", rep.Protocol)
				}
			})
		}
	}
}

// TestPlayerAllSwitches plays "all" with the throughput rule: it starts on v180 (what
// was pushed), switches to v360, cancels the v180 pushes it will not use and asks for
// v360 once, which pushes the rest of v360.
func TestPlayerAllSwitches(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 8 s of media")
	}
	o := startOrigin(t, h2push.Config{}, "")
	rep, st, err := play("h2cpush-all", o.h2c+"/vod/test/manifest.mpd", "throughput")
	if err != nil {
		t.Fatal(err)
	}
	if rep.EndReason != "ended" || rep.PlayedS < 7.9 {
		t.Fatalf("ended %q after %.1f s", rep.EndReason, rep.PlayedS)
	}
	if rep.PerTrackS["v360"] == 0 {
		t.Fatalf("never switched to v360: %v", rep.PerTrackS)
	}
	if rep.Requests > 4 {
		t.Errorf("%d requests (%d media), want the MPD and one request per switch", rep.Requests, rep.MediaRequests)
	}
	t.Logf("requests %d, pushed %d, per track %v; client %+v", rep.Requests, rep.Pushed, rep.PerTrackS, st)
}
