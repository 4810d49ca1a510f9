package layout

import (
	"errors"
	"testing"

	"github.com/streambed/streambed/internal/media"
)

func TestParseAndBuildAgree(t *testing.T) {
	for _, c := range []struct {
		path string
		want Resource
	}{
		{"/", Resource{Kind: KindPage, File: "index.html"}},
		{"/vod/clip/manifest.mpd", Resource{Kind: KindManifest, Stream: "clip", File: MPD}},
		{"/live/ch/master.m3u8", Resource{Kind: KindManifest, Live: true, Stream: "ch", File: Master}},
		{"/live/ch/v1/init.mp4", Resource{Kind: KindInit, Live: true, Stream: "ch", Track: "v1", File: Init}},
		{"/vod/clip/a1/playlist.m3u8", Resource{Kind: KindPlaylist, Stream: "clip", Track: "a1", File: Playlist}},
		{"/vod/clip/v1/7.m4s", Resource{Kind: KindSegment, Stream: "clip", Track: "v1", File: "7.m4s", Number: 7}},
		{"/live/ch/v1/t90000.m4s", Resource{Kind: KindSegment, Live: true, Stream: "ch", Track: "v1", File: "t90000.m4s", ByTime: true, Time: 90000}},
		{"/live/ch/v1/7.3.m4s", Resource{Kind: KindPart, Live: true, Stream: "ch", Track: "v1", File: "7.3.m4s", Number: 7, Part: 3}},
		{"/vod/clip/v1/7.3.m4s", Resource{Kind: KindOther}},
		{"/live/ch/v1/7.-3.m4s", Resource{Kind: KindOther}},
		{"/live/ch/v1/7.3.4.m4s", Resource{Kind: KindOther}},
		{"/live/ch/v1/7.600001.m4s", Resource{Kind: KindOther}},
		{"/live/ch/v1/.3.m4s", Resource{Kind: KindOther}},
		{"/vod/clip/v1/-1.m4s", Resource{Kind: KindOther}},
		{"/vod/clip/v1/+1.m4s", Resource{Kind: KindOther}},
		{"/vod/clip/v1/99999999999999999999999.m4s", Resource{Kind: KindOther}},
		{"/vod/../etc/passwd", Resource{Kind: KindOther}},
		{"/vod/clip/other.txt", Resource{Kind: KindOther}},
		{"/api/streams", Resource{Kind: KindOther}},
	} {
		if got := Parse(c.path); got != c.want {
			t.Errorf("Parse(%q) = %+v, want %+v", c.path, got, c.want)
		}
	}
	for _, c := range []struct{ built, want string }{
		{Manifest(false, "clip", MPDTimeline), "/vod/clip/manifest-timeline.mpd"},
		{TrackFile(true, "ch", "v1", Init), "/live/ch/v1/init.mp4"},
		{Segment(true, "ch", "v1", 12), "/live/ch/v1/12.m4s"},
		{SegmentAt(false, "clip", "a1", 96000), "/vod/clip/a1/t96000.m4s"},
		{Part("ch", "v1", 12, 4), "/live/ch/v1/12.4.m4s"},
		{WebSocket(true, "ch"), "/ws/ch"},
		{WebSocket(false, "clip"), "/ws/vod/clip"},
	} {
		if c.built != c.want {
			t.Errorf("built %q, want %q", c.built, c.want)
		}
		if r := Parse(c.built); c.built[:4] != "/ws/" && r.Kind == KindOther {
			t.Errorf("built %q does not parse", c.built)
		}
	}
	if r := Parse(Segment(true, "ch", "v1", 12)); r.Number != 12 || r.Base() != "/live/ch/" || r.StreamKey() != "live/ch" {
		t.Errorf("round trip: %+v", r)
	}
	for _, c := range []struct {
		path   string
		stream string
		live   bool
	}{{"/ws/ch", "ch", true}, {"/ws/vod/clip", "clip", false}} {
		s, live, err := ParseWebSocket(c.path)
		if err != nil || s != c.stream || live != c.live {
			t.Errorf("ParseWebSocket(%q) = %q %v %v", c.path, s, live, err)
		}
	}
	if _, _, err := ParseWebSocket("/ws/../x"); !errors.Is(err, media.ErrBadRequest) {
		t.Errorf("ParseWebSocket of junk: %v", err)
	}
	if _, err := ParseSegmentName("abc.m4s"); !errors.Is(err, media.ErrBadRequest) {
		t.Errorf("ParseSegmentName(abc.m4s): %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"/", "/vod/a/manifest.mpd", "/live/c/v/t1.m4s", "/vod/a/v/1.m4s", "/live//x", "/vod/a/b/c/d", "/live/c/v/1.2.m4s", "/live/c/v/01.002.m4s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r := Parse(path)
		if r.Kind == KindSegment {
			var again string
			if r.ByTime {
				again = SegmentAt(r.Live, r.Stream, r.Track, r.Time)
			} else {
				again = Segment(r.Live, r.Stream, r.Track, r.Number)
			}
			if p := Parse(again); p.Kind != KindSegment || p.Live != r.Live || p.Stream != r.Stream || p.Track != r.Track || p.Number != r.Number || p.ByTime != r.ByTime || p.Time != r.Time {
				t.Errorf("%q parses to %+v, rebuilt %q parses differently", path, r, again)
			}
		}
		if r.Kind == KindPart {
			again := Part(r.Stream, r.Track, r.Number, r.Part)
			if p := Parse(again); p.Kind != KindPart || !p.Live || p.Stream != r.Stream || p.Track != r.Track || p.Number != r.Number || p.Part != r.Part || r.Part < 0 || r.Part > MaxPart {
				t.Errorf("%q parses to %+v, rebuilt %q parses differently", path, r, again)
			}
		}
	})
}

func TestParseSegmentName(t *testing.T) {
	tests := []struct {
		in      string
		want    SegmentName
		wantErr bool
	}{
		{"1.m4s", SegmentName{Number: 1}, false},
		{"t0.m4s", SegmentName{ByTime: true}, false},
		{"t163840000.m4s", SegmentName{Time: 163840000, ByTime: true}, false},
		{"18446744073709551615.m4s", SegmentName{Number: 18446744073709551615}, false},
		{"18446744073709551616.m4s", SegmentName{}, true},
		{".m4s", SegmentName{}, true},
		{"t.m4s", SegmentName{}, true},
		{"+1.m4s", SegmentName{}, true},
		{"1.mp4", SegmentName{}, true},
		{"1.m4s.m4s", SegmentName{}, true},
	}
	for _, tt := range tests {
		got, err := ParseSegmentName(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSegmentName(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

// carrier is a writer that carries a parsed path, as the origin's writers do.
type carrier struct{ p Parsed }

func (c *carrier) ParsedPath() *Parsed { return &c.p }

func TestParseForUsesTheCarriedParseOfTheSamePathOnly(t *testing.T) {
	const path = "/vod/clip/v1/7.m4s"
	// A carried result that Parse would not give shows it was taken, not recomputed.
	marked := Resource{Kind: KindSegment, Stream: "carried", Number: 99}
	if got := ParseFor(&carrier{Parsed{Path: path, Res: marked}}, path); got != marked {
		t.Errorf("ParseFor with the same path carried = %+v, want the carried %+v", got, marked)
	}
	// Another path carried (a middleware rewrote the URL), a nil carrier's field, or
	// no carrier at all: Parse(path).
	want := Parse(path)
	for name, w := range map[string]any{
		"other path": &carrier{Parsed{Path: "/vod/clip/v1/8.m4s", Res: marked}},
		"no carrier": struct{}{},
		"nil":        nil,
	} {
		if got := ParseFor(w, path); got != want {
			t.Errorf("%s: ParseFor = %+v, want Parse's %+v", name, got, want)
		}
	}
}

func TestParseForAllocatesNothing(t *testing.T) {
	w := &carrier{Parsed{Path: "/vod/clip/v1/7.m4s", Res: Parse("/vod/clip/v1/7.m4s")}}
	if n := testing.AllocsPerRun(100, func() { _ = ParseFor(w, "/vod/clip/v1/7.m4s") }); n != 0 {
		t.Errorf("ParseFor allocated %.0f times per call, want 0", n)
	}
}
