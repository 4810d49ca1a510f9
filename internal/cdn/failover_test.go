package cdn

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/layout"
)

// Two origins looping the same asset on the same availability anchor serve the same
// bytes for every init and segment URL: a looped channel is a function of the clock
// and the asset, so a shield may take any segment from either.
func TestTwoOriginsServeIdenticalSegments(t *testing.T) {
	a, b := startOrigin(t), startOrigin(t)
	video, audio := a.tracks(t)
	complete, _ := a.liveEdge()
	var paths []string
	for _, tr := range []string{video, audio} {
		paths = append(paths, layout.TrackFile(true, "loop", tr, "init.mp4"))
		for n := complete - 5; n <= complete; n++ {
			paths = append(paths, layout.Segment(true, "loop", tr, n))
		}
	}
	for _, p := range paths {
		sa, _, ba := mustGet(t, a.URL+p)
		sb, _, bb := mustGet(t, b.URL+p)
		if sa != http.StatusOK || sb != http.StatusOK || len(ba) == 0 || !bytes.Equal(ba, bb) {
			t.Errorf("%s: origin A %d (%d bytes), origin B %d (%d bytes), want the same 200 body", p, sa, len(ba), sb, len(bb))
		}
	}
}

// Failover: a shield in front of two origins; players fetch the MPD and the newest
// segments in a loop; one origin is killed mid-run (listener and connections closed
// at once, as a crash would). No player request fails, and the other origin takes
// the load.
func TestFailoverWhenAnOriginDies(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			a, b := startOrigin(t), startOrigin(t)
			video, audio := a.tracks(t)
			shield := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, a.URL, b.URL)})
			const players = 8
			run, killAfter := 12*time.Second, 4*time.Second
			var requests, failures atomic.Int64
			var mu sync.Mutex
			var errs []string
			var aBefore, bBefore int
			ctx, cancel := context.WithTimeout(context.Background(), run)
			defer cancel()
			var wg sync.WaitGroup
			for range players {
				wg.Add(1)
				go func() {
					defer wg.Done()
					client := &http.Client{Timeout: 20 * time.Second}
					for ctx.Err() == nil {
						complete, _ := a.liveEdge()
						for _, p := range []string{"/live/loop/manifest.mpd", layout.Segment(true, "loop", video, complete), layout.Segment(true, "loop", audio, complete)} {
							st, _, _, err := contextGet(client, shield+p)
							requests.Add(1)
							if err != nil || st != http.StatusOK {
								failures.Add(1)
								mu.Lock()
								errs = append(errs, fmt.Sprintf("%s: %d %v", p, st, err))
								mu.Unlock()
							}
						}
						select {
						case <-ctx.Done():
						case <-time.After(250 * time.Millisecond):
						}
					}
				}()
			}
			time.Sleep(killAfter)
			aBefore, bBefore = a.Count.Total(), b.Count.Total()
			a.Kill()
			wg.Wait()
			aAfter, bAfter := a.Count.Total()-aBefore, b.Count.Total()-bBefore
			t.Logf("%s shield, %d players for %s, origin A killed at %s: %d player requests, %d failed; origin requests before the kill A %d, B %d; after A %d, B %d",
				k, players, run, killAfter, requests.Load(), failures.Load(), aBefore, bBefore, aAfter, bAfter)
			if failures.Load() > 0 {
				t.Errorf("%d of %d player requests failed: %v", failures.Load(), requests.Load(), errs)
			}
			if aBefore == 0 || bBefore == 0 {
				t.Errorf("before the kill the shield did not balance: origin A %d, B %d requests", aBefore, bBefore)
			}
			if bAfter == 0 {
				t.Error("after the kill origin B got no requests")
			}
		})
	}
}
