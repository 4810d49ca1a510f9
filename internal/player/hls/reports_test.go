package hls

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/player"
)

// TestLoadReloadsWhatPlays: once reloads block, a load fetches the media playlists of
// the renditions the player plays (player.WithPlaying) and the audio track's, as
// hls.js does; the others stand in with their last playlist (still listed, not
// setting the edge) and their next reload asks for the part their rendition report
// gave, so a switch's first playlist request is answered at once. Counted by request.
func TestLoadReloadsWhatPlays(t *testing.T) {
	const master = `#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="a1",DEFAULT=YES,URI="a1/playlist.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=100000,AUDIO="a"
v1/playlist.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=400000,AUDIO="a"
v2/playlist.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="a"
v3/playlist.m3u8
`
	var mu sync.Mutex
	asked := map[string][]string{} // playlist → the queries it was asked with
	part := 1                      // the newest part of segment 1043, growing with each load
	fetch := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		if strings.HasSuffix(req.URL, "master.m3u8") {
			return &player.Response{Body: []byte(master)}, nil
		}
		path, q, _ := strings.Cut(strings.TrimPrefix(req.URL, "http://o/live/c/"), "?")
		mu.Lock()
		asked[path] = append(asked[path], q)
		n := part
		mu.Unlock()
		var tail strings.Builder
		tail.WriteString("#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:04.000Z\n")
		for i := 0; i <= n; i++ {
			tail.WriteString("#EXT-X-PART:DURATION=0.200,URI=\"1043." + itoa(i) + ".m4s\"\n")
		}
		for _, r := range []string{"v1", "v2", "v3", "a1"} {
			if !strings.HasPrefix(path, r+"/") {
				tail.WriteString("#EXT-X-RENDITION-REPORT:URI=\"../" + r + "/playlist.m3u8\",LAST-MSN=1043,LAST-PART=" + itoa(n) + "\n")
			}
		}
		return &player.Response{Body: []byte(llPlaylist(tail.String()))}, nil
	})
	load := NewLoader()
	at := time.Date(2030, 1, 1, 12, 0, 4, 500e6, time.UTC)
	step := func(playing ...string) *player.Manifest {
		t.Helper()
		mu.Lock()
		asked = map[string][]string{}
		mu.Unlock()
		ctx := context.Background()
		if playing != nil {
			ctx = player.WithPlaying(ctx, playing)
		}
		m, err := load(ctx, fetch, "http://o/live/c/master.m3u8", at)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		part++
		mu.Unlock()
		return m
	}
	fetched := func() string {
		var out []string
		for p, qs := range asked {
			for _, q := range qs {
				out = append(out, p+"?"+q)
			}
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	// The first load, and a reload before the player has chosen: every playlist.
	step()
	if got := fetched(); strings.Count(got, "playlist.m3u8") != 4 {
		t.Fatalf("first load fetched %s, want all four playlists", got)
	}
	step()
	if got := fetched(); strings.Count(got, "_HLS_msn=") != 4 {
		t.Fatalf("reload with nothing chosen fetched %s, want all four, blocking", got)
	}
	// Playing v2: v2 and the audio only, each blocking for its next part.
	m := step("v2", "a1")
	if got, want := fetched(), "a1/playlist.m3u8?_HLS_msn=1043&_HLS_part=3 v2/playlist.m3u8?_HLS_msn=1043&_HLS_part=3"; got != want {
		t.Fatalf("playing v2 fetched %s, want %s", got, want)
	}
	if n := len(m.Sets[0].Representations); n != 3 {
		t.Fatalf("%d video representations listed, want all 3", n)
	}
	// The edge is the fresh playlists' (parts 0..3 of 1043: 12:00:04.8), not the
	// stand-ins' (parts 0..2).
	if want := time.Date(2030, 1, 1, 12, 0, 4, 800e6, time.UTC).Sub(m.AvailabilityStart); m.ListedEdge != want {
		t.Errorf("listed edge %v, want %v (the fresh playlists' newest part)", m.ListedEdge, want)
	}
	if v1 := m.Sets[0].Representations[0].Index.List; !strings.HasSuffix(v1[len(v1)-1].URL, "/1043.2.m4s") {
		t.Errorf("v1 stands in with %s last, want its last playlist's 1043.2", v1[len(v1)-1].URL)
	}
	step("v2", "a1")
	step("v2", "a1") // v3's own last playlist now lists up to part 2, its report part 5
	// A switch to v3: its first reload asks for the part v2's newest report gave (5),
	// which the origin has, not the one after its own last playlist (3); v2 now stands
	// in.
	step("v3", "a1")
	if got, want := fetched(), "a1/playlist.m3u8?_HLS_msn=1043&_HLS_part=6 v3/playlist.m3u8?_HLS_msn=1043&_HLS_part=5"; got != want {
		t.Fatalf("after the switch to v3 fetched %s, want %s", got, want)
	}
	// Over ten reloads of one rendition, the others are not asked again.
	for range 10 {
		step("v3", "a1")
	}
	if got := fetched(); strings.Contains(got, "v1/") || strings.Contains(got, "v2/") {
		t.Errorf("playing v3 also fetched %s", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestParseRenditionReport: reports resolve against the playlist; one without a URI
// or LAST-MSN is ignored; LAST-PART is optional.
func TestParseRenditionReport(t *testing.T) {
	base, _ := url.Parse("http://o/live/c/v1/playlist.m3u8?_HLS_msn=5")
	for in, want := range map[string]*RenditionReport{
		`URI="../v2/playlist.m3u8",LAST-MSN=7,LAST-PART=3`: {URI: "http://o/live/c/v2/playlist.m3u8", LastMSN: 7, LastPart: 3},
		`URI="../v2/playlist.m3u8",LAST-MSN=7`:             {URI: "http://o/live/c/v2/playlist.m3u8", LastMSN: 7, LastPart: -1},
		`URI="../v2/playlist.m3u8",LAST-MSN=7,LAST-PART=x`: {URI: "http://o/live/c/v2/playlist.m3u8", LastMSN: 7, LastPart: -1},
		`URI="../v2/playlist.m3u8",LAST-MSN=-1`:            nil,
		`LAST-MSN=7`:                                       nil,
		`URI="%zz",LAST-MSN=7`:                             nil,
	} {
		got, ok := parseReport(base, attrs(in))
		if want == nil {
			if ok {
				t.Errorf("%s: %+v, want it ignored", in, got)
			}
			continue
		}
		if !ok || got != *want {
			t.Errorf("%s: %+v %v, want %+v", in, got, ok, *want)
		}
	}
}
