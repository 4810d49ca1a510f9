package workload

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDASHAcrossPeriods follows a dynamic MPD whose second Period starts during the
// run, with its own SegmentTemplate paths: workers finish the first Period, reload,
// fetch the new Period's init segments and go on from its first segment. The origin
// here is a stand-in that serves that MPD (the looped channel has one Period) and
// answers every segment; the segments' bytes do not matter to the generator.
func TestDASHAcrossPeriods(t *testing.T) {
	ast := time.Now().Add(-10 * time.Second).UTC().Truncate(time.Second)
	second := 13 * time.Second // after availabilityStartTime: 3 s into the run
	mpd := fmt.Sprintf(`<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="dynamic" profiles="urn:mpeg:dash:profile:isoff-live:2011"
 availabilityStartTime="%s" minimumUpdatePeriod="PT0.5S" timeShiftBufferDepth="PT30S" minBufferTime="PT1S">
%s%s</MPD>`, ast.Format(time.RFC3339), period("p1", 0), period("p2", second))
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		if testing.Verbose() {
			t.Logf("%6.3f %s", time.Since(ast).Seconds(), r.URL.Path)
		}
		mu.Unlock()
		if r.URL.Path == "/live.mpd" {
			w.Header().Set("Content-Type", "application/dash+xml")
			fmt.Fprint(w, mpd)
			return
		}
		fmt.Fprint(w, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: srv.URL + "/live.mpd", Workers: 2, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	count := map[string]int{}
	for _, p := range paths {
		switch {
		case p == "/live.mpd":
			count["mpd"]++
		case strings.HasSuffix(p, "init.mp4"):
			count[p]++
		case strings.HasPrefix(p, "/p1/"):
			count["p1"]++
		case strings.HasPrefix(p, "/p2/"):
			count["p2"]++
			if p == "/p2/v1/1.m4s" {
				count["p2 first"]++
			}
		}
	}
	t.Logf("%v; errors %v", count, r.Errors)
	// About 2.3 s of the first Period and 2.7 s of the second, two tracks, two workers,
	// 0.5 s segments: at least 3 segments of each Period per track and worker.
	if len(r.Errors) > 0 || count["p1"] < 12 || count["p2"] < 12 || count["p2 first"] != 2 ||
		count["/p1/v1/init.mp4"] != 2 || count["/p2/v1/init.mp4"] != 2 || count["/p2/a1/init.mp4"] != 2 {
		t.Errorf("requests %v, errors %v: want both Periods' segments, each Period's inits once per worker, and the second Period from its first segment", count, r.Errors)
	}
	if got := r.Kinds[KindInit].Requests; got != 8 {
		t.Errorf("%d init requests, want 8 (2 workers × 2 tracks × 2 Periods)", got)
	}
}

// period is one Period of the test MPD: 500 ms $Number$ segments from number 1, a
// video and an audio Representation under paths of their own.
func period(id string, start time.Duration) string {
	return fmt.Sprintf(`<Period id="%s" start="PT%gS">
 <AdaptationSet contentType="video" mimeType="video/mp4" codecs="avc1.64001f">
  <SegmentTemplate timescale="1000" duration="500" startNumber="1" initialization="%[1]s/$RepresentationID$/init.mp4" media="%[1]s/$RepresentationID$/$Number$.m4s"/>
  <Representation id="v1" bandwidth="500000" width="640" height="360"/>
 </AdaptationSet>
 <AdaptationSet contentType="audio" mimeType="audio/mp4" codecs="mp4a.40.2">
  <SegmentTemplate timescale="1000" duration="500" startNumber="1" initialization="%[1]s/$RepresentationID$/init.mp4" media="%[1]s/$RepresentationID$/$Number$.m4s"/>
  <Representation id="a1" bandwidth="128000"/>
 </AdaptationSet>
</Period>
`, id, start.Seconds())
}

// TestDASHJumpsToLiveEdge: a worker whose segments arrive slower than real time falls
// behind; past the MPD's suggestedPresentationDelay it jumps to the newest segment
// instead of fetching the backlog in a burst.
func TestDASHJumpsToLiveEdge(t *testing.T) {
	ast := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	mpd := fmt.Sprintf(`<MPD type="dynamic" availabilityStartTime="%s" minimumUpdatePeriod="PT0.5S" suggestedPresentationDelay="PT1S">%s</MPD>`,
		ast.Format(time.RFC3339), period("p", 0))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, ".mpd"):
			fmt.Fprint(w, mpd)
		case strings.HasSuffix(r.URL.Path, ".m4s") && strings.Contains(r.URL.Path, "/v1/"):
			time.Sleep(1200 * time.Millisecond) // a slow link: 1.2 s per 0.5 s segment
			fmt.Fprint(w, "video")
		default:
			fmt.Fprint(w, "audio")
		}
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: srv.URL + "/live.mpd", Workers: 1, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sessions.Jumps == 0 || len(r.Errors) > 0 {
		t.Errorf("sessions %+v errors %v: want jumps to the live edge", r.Sessions, r.Errors)
	}
	t.Logf("%+v, video %d", r.Sessions, r.Kinds[KindVideo].Requests)
}

// TestDASHAudioOnly: an MPD without video is paced by its audio.
func TestDASHAudioOnly(t *testing.T) {
	ast := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	audioOnly := `<Period id="a" start="PT0S"><AdaptationSet contentType="audio" mimeType="audio/mp4">
<SegmentTemplate timescale="1000" duration="500" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
<Representation id="a1" bandwidth="128000"/></AdaptationSet></Period>`
	mpd := fmt.Sprintf(`<MPD type="dynamic" availabilityStartTime="%s" minimumUpdatePeriod="PT0.5S">%s</MPD>`, ast.Format(time.RFC3339), audioOnly)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".mpd") {
			fmt.Fprint(w, mpd)
			return
		}
		fmt.Fprint(w, "audio")
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Options{Mode: ModeDASH, URL: srv.URL + "/live.mpd", Workers: 1, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	k := r.Kinds
	if len(r.Errors) > 0 || k[KindVideo].Requests != 0 || k[KindAudio].Requests < 3 || k[KindInit].Requests != 1 {
		t.Errorf("errors %v; audio %d, video %d, init %d", r.Errors, k[KindAudio].Requests, k[KindVideo].Requests, k[KindInit].Requests)
	}
}
