package h2push

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// testStream is an asset of 5 two-second segments: video v400, v800, v1500 and audio a128.
func testStream() *media.Stream {
	mk := func(id string, k media.Kind, ts uint32) *media.Track {
		t := &media.Track{ID: id, Kind: k, Timescale: ts}
		for n := uint64(1); n <= 5; n++ {
			t.Segments = append(t.Segments, media.SegmentRef{Number: n, Start: (n - 1) * 2 * uint64(ts), Duration: 2 * uint64(ts)})
		}
		return t
	}
	return &media.Stream{Name: "clip", SegmentDuration: 2 * time.Second, Tracks: []*media.Track{
		mk("v400", media.Video, 12800), mk("v800", media.Video, 12800), mk("v1500", media.Video, 12800), mk("a128", media.Audio, 48000),
	}}
}

func paths(ps []Push) string {
	var s []string
	for _, p := range ps {
		s = append(s, strings.TrimPrefix(p.Path, "/vod/clip/"))
	}
	return strings.Join(s, " ")
}

func TestParseStrategy(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "none", want: "none"}, {in: "ALL", want: "all"}, {in: "init", want: "init"},
		{in: "init-first", want: "init-first"}, {in: "audio", want: "audio"}, {in: "k5", want: "k5"},
		{in: "k1", want: "k1"}, {in: "k100", want: "k100"},
		{in: "k0", bad: true}, {in: "k101", bad: true}, {in: "k", bad: true}, {in: "k-3", bad: true},
		{in: "first", bad: true}, {in: "", bad: true}, {in: "k5x", bad: true},
	} {
		st, err := ParseStrategy(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %v, want an error", tc.in, st)
			}
			continue
		}
		if err != nil || st.String() != tc.want {
			t.Errorf("%q: got %v, %v; want %s", tc.in, st, err, tc.want)
		}
	}
}

func TestPushSetOnDemand(t *testing.T) {
	v := &StreamView{Base: "/vod/clip/", Info: testStream()}
	mpd := layout.Resource{Kind: layout.KindManifest, Stream: "clip", File: "manifest.mpd"}
	page := layout.Resource{Kind: layout.KindPage}
	seg := func(track string, n uint64) layout.Resource {
		return layout.Resource{Kind: layout.KindSegment, Stream: "clip", Track: track, Number: n}
	}
	audioInit := layout.Resource{Kind: layout.KindInit, Stream: "clip", Track: "a128"}
	videoInit := layout.Resource{Kind: layout.KindInit, Stream: "clip", Track: "v800"}
	inits := "a128/init.mp4 v400/init.mp4 v800/init.mp4 v1500/init.mp4"
	for _, tc := range []struct {
		strategy string
		trig     layout.Resource
		want     string
	}{
		{"none", mpd, ""},
		{"none", seg("v400", 1), ""},
		{"init", mpd, inits},
		{"init", page, "manifest.mpd " + inits},
		{"init", seg("v400", 1), ""},
		{"init-first", mpd, inits + " a128/1.m4s v800/1.m4s"},
		{"init-first", page, "manifest.mpd " + inits + " a128/1.m4s v800/1.m4s"},
		// all: from the MPD, the lowest rung (where a player starts) and the audio, in
		// media-time order; from a segment, the rest of its rendition and the audio.
		{"all", mpd, "a128/init.mp4 v400/init.mp4 v400/1.m4s a128/1.m4s v400/2.m4s a128/2.m4s v400/3.m4s a128/3.m4s v400/4.m4s a128/4.m4s v400/5.m4s a128/5.m4s"},
		{"all", seg("v1500", 3), "a128/3.m4s v1500/4.m4s a128/4.m4s v1500/5.m4s a128/5.m4s"},
		{"all", seg("a128", 4), "a128/5.m4s"},
		{"all", seg("v1500", 5), "a128/5.m4s"},
		{"all", videoInit, ""},
		{"audio", audioInit, "a128/1.m4s a128/2.m4s a128/3.m4s a128/4.m4s a128/5.m4s"},
		{"audio", videoInit, ""},
		{"audio", mpd, ""},
		{"audio", seg("a128", 1), ""},
		{"k3", seg("v800", 1), "v800/2.m4s v800/3.m4s"},
		{"k3", seg("a128", 2), "a128/3.m4s a128/4.m4s"},
		{"k3", seg("v800", 4), "v800/5.m4s"},
		{"k3", seg("v800", 5), ""},
		{"k5", mpd, ""},
		{"k1", seg("v800", 1), ""},
	} {
		st, err := ParseStrategy(tc.strategy)
		if err != nil {
			t.Fatal(err)
		}
		got := paths(PushSet(st, v, tc.trig))
		if got != tc.want {
			t.Errorf("%s on %s %s %d:\n got  %s\n want %s", tc.strategy, tc.trig.Kind, tc.trig.Track, tc.trig.Number, got, tc.want)
		}
	}
}

func TestPushSetByTimeAndPriority(t *testing.T) {
	v := &StreamView{Base: "/vod/clip/", Info: testStream(), ByTime: true}
	got := PushSet(Strategy{Mode: KPush, K: 3}, v, layout.Resource{Kind: layout.KindSegment, Track: "v800", Number: 2})
	if want := "v800/t51200.m4s v800/t76800.m4s"; paths(got) != want {
		t.Fatalf("by time: got %s, want %s", paths(got), want)
	}
	if got[0].Prio != 4 || got[1].Prio != 6 || got[0].Number != 3 {
		t.Errorf("priorities %v %v (numbers %d), want media seconds 4 and 6", got[0].Prio, got[1].Prio, got[0].Number)
	}
	page := PushSet(Strategy{Mode: Init}, v, layout.Resource{Kind: layout.KindPage})
	if page[0].Path != "/vod/clip/manifest-timeline.mpd" || page[0].Prio != -1 {
		t.Errorf("page with a timeline MPD pushes %s first", page[0].Path)
	}
}

func TestPushSetLive(t *testing.T) {
	info := testStream()
	for _, tr := range info.Tracks {
		tr.Segments = nil
	}
	// Segment 49 is the newest complete one; 2 s segments, a 6 s window.
	v := &StreamView{Base: "/live/clip/", Info: info, Live: true, Latest: 49, HasLatest: true, SegmentDuration: 2 * time.Second, DVRWindow: 6 * time.Second}
	livePaths := func(ps []Push) string { return strings.ReplaceAll(paths(ps), "/live/clip/", "") }

	got := PushSet(Strategy{Mode: KPush, K: 3}, v, layout.Resource{Kind: layout.KindSegment, Live: true, Track: "v400", Number: 50})
	if want := "v400/51.m4s v400/52.m4s"; livePaths(got) != want {
		t.Fatalf("k3 live: %s, want %s", livePaths(got), want)
	}
	if got[0].Prio != 102 {
		t.Errorf("segment 51 has priority %v, want its start, 102 s", got[0].Prio)
	}
	got = PushSet(Strategy{Mode: InitFirst}, v, layout.Resource{Kind: layout.KindManifest, Live: true, File: "manifest.mpd"})
	if want := "a128/init.mp4 v400/init.mp4 v800/init.mp4 v1500/init.mp4 a128/48.m4s v800/48.m4s"; livePaths(got) != want {
		t.Errorf("init-first live: %s, want %s", livePaths(got), want)
	}
	// all and audio push a DVR window's worth (3 segments), as they appear.
	got = PushSet(Strategy{Mode: Audio}, v, layout.Resource{Kind: layout.KindInit, Live: true, Track: "a128"})
	if want := "a128/48.m4s a128/49.m4s a128/50.m4s"; livePaths(got) != want {
		t.Errorf("audio live: %s, want %s", livePaths(got), want)
	}
	v.ByTime = true
	if got := PushSet(Strategy{Mode: KPush, K: 3}, v, layout.Resource{Kind: layout.KindSegment, Live: true, Track: "v400", Number: 50}); len(got) != 0 {
		t.Errorf("live $Time$ pushes %s; their names are not known ahead", livePaths(got))
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want layout.Resource
	}{
		{"/", layout.Resource{Kind: layout.KindPage, File: "index.html"}},
		{"/vod/a/manifest.mpd", layout.Resource{Kind: layout.KindManifest, Stream: "a", File: "manifest.mpd"}},
		{"/live/c/master.m3u8", layout.Resource{Kind: layout.KindManifest, Live: true, Stream: "c", File: "master.m3u8"}},
		{"/vod/a/v1/init.mp4", layout.Resource{Kind: layout.KindInit, Stream: "a", Track: "v1", File: "init.mp4"}},
		{"/vod/a/v1/17.m4s", layout.Resource{Kind: layout.KindSegment, Stream: "a", Track: "v1", File: "17.m4s", Number: 17}},
		{"/vod/a/v1/t900.m4s", layout.Resource{Kind: layout.KindSegment, Stream: "a", Track: "v1", File: "t900.m4s", ByTime: true, Time: 900}},
		{"/vod/a/v1/playlist.m3u8", layout.Resource{Kind: layout.KindPlaylist, Stream: "a", Track: "v1", File: "playlist.m3u8"}},
		{"/vod/a/../b/manifest.mpd", layout.Resource{}},
		{"/vod/a/v1/x.m4s", layout.Resource{}},
		{"/vod/a/v1/+1.m4s", layout.Resource{}},
		{"/api/streams", layout.Resource{}},
		{"/vod/a/other.txt", layout.Resource{}},
	} {
		if got := layout.Parse(tc.path); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

func TestPageAssets(t *testing.T) {
	const page = `<!doctype html><html><head>
<link rel="icon" href="data:,"><link rel="stylesheet" href="app.css?v=1">
<script defer src="app.js?v=1"></script><script src="https://cdn.example/x.js"></script>
<link rel="preload" href="/fonts/a.woff2"></head><body><a href="/api/streams">API</a>
<img src="img/1.png"><img src="img/1.png"></body></html>`
	got, err := pageAssets(strings.NewReader(page), "/")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[/app.css?v=1 /app.js?v=1 /fonts/a.woff2 /img/1.png]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
}
