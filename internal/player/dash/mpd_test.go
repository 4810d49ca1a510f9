package dash

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

func parseFile(t *testing.T, name, url string, now time.Time) *player.Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(b, url, now)
	if err != nil {
		t.Fatalf("Parse %s: %v", name, err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate %s: %v", name, err)
	}
	return m
}

var ast = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// segs lists the segments of an index from the first to the last (at now).
func segs(t *testing.T, ix *player.SegmentIndex, now time.Time) []player.Segment {
	t.Helper()
	first, ok := ix.First()
	if !ok {
		t.Fatal("no first segment")
	}
	last, ok := ix.Last(now)
	if !ok {
		t.Fatal("no last segment")
	}
	var out []player.Segment
	for s := first; ; {
		out = append(out, s)
		if s.Number >= last.Number {
			return out
		}
		n, ok := ix.Next(s.End())
		if !ok {
			t.Fatalf("no segment after %d", s.Number)
		}
		s = n
	}
}

func TestParse(t *testing.T) {
	type want struct {
		kind      media.Kind
		rep       string
		init      string
		urls      []string
		starts    []time.Duration
		durations []time.Duration
		available []time.Time // nil: static
	}
	s := time.Second
	tests := []struct {
		name, file, url string
		now             time.Time
		live            bool
		check           func(t *testing.T, m *player.Manifest)
		want            []want
	}{
		{
			name: "static/Number", file: "static-number.mpd", url: "http://origin:8080/vod/demo/manifest.mpd",
			want: []want{
				{kind: media.Video, rep: "v360", init: "http://origin:8080/vod/demo/v360/init.mp4",
					urls: []string{
						"http://origin:8080/vod/demo/v360/1.m4s", "http://origin:8080/vod/demo/v360/2.m4s",
						"http://origin:8080/vod/demo/v360/3.m4s", "http://origin:8080/vod/demo/v360/4.m4s"},
					starts:    []time.Duration{0, 2 * s, 4 * s, 6 * s},
					durations: []time.Duration{2 * s, 2 * s, 2 * s, 1 * s}},
				{kind: media.Audio, rep: "a128", init: "http://origin:8080/vod/demo/a128/init.mp4",
					urls: []string{
						"http://origin:8080/vod/demo/a128/seg-00001.m4s", "http://origin:8080/vod/demo/a128/seg-00002.m4s",
						"http://origin:8080/vod/demo/a128/seg-00003.m4s", "http://origin:8080/vod/demo/a128/seg-00004.m4s"},
					starts: []time.Duration{0, 2 * s, 4 * s, 6 * s}},
			},
			check: func(t *testing.T, m *player.Manifest) {
				if m.Duration != 7*s {
					t.Errorf("duration %v", m.Duration)
				}
				if len(m.Sets) != 2 {
					t.Errorf("%d sets, want video and audio only (text skipped)", len(m.Sets))
				}
				v := m.Set(media.Video)
				if v.Representations[0].ID != "v360" || v.Representations[1].ID != "v720" {
					t.Errorf("representations not in ascending bandwidth")
				}
				if r := v.Representations[1]; r.Width != 1280 || r.Codecs != "avc1.64001f" || r.Bandwidth != 3000000 {
					t.Errorf("v720 attributes: %+v", r)
				}
			},
		},
		{
			name: "static/Timeline", file: "static-timeline.mpd", url: "http://origin/vod/demo/manifest-timeline.mpd",
			want: []want{
				{kind: media.Video, rep: "v360", init: "https://cdn.example.com/assets/demo/media/v360/init.mp4",
					urls: []string{
						"https://cdn.example.com/assets/demo/media/v360/t0.m4s", "https://cdn.example.com/assets/demo/media/v360/t2000.m4s",
						"https://cdn.example.com/assets/demo/media/v360/t4000.m4s", "https://cdn.example.com/assets/demo/media/v360/t6000.m4s"},
					starts:    []time.Duration{0, 2 * s, 4 * s, 6 * s},
					durations: []time.Duration{2 * s, 2 * s, 2 * s, 1 * s}},
				{kind: media.Video, rep: "v720", init: "https://cdn.example.com/other/v720/init.mp4",
					urls: []string{
						"https://cdn.example.com/other/v720/t0.m4s", "https://cdn.example.com/other/v720/t2000.m4s",
						"https://cdn.example.com/other/v720/t4000.m4s", "https://cdn.example.com/other/v720/t6000.m4s"}},
			},
		},
		{
			name: "dynamic/Number", file: "dynamic-number.mpd", url: "http://origin:8080/live/demo/manifest.mpd",
			now: ast.Add(61 * s), live: true,
			want: []want{
				// TSBD 30 s: the DVR window is not the index's business (the player
				// checks it); Last is the newest complete segment at now: 61 s → 29.
				{kind: media.Video, rep: "v720", init: "http://origin:8080/live/demo/v720/init.mp4"},
			},
			check: func(t *testing.T, m *player.Manifest) {
				if !m.AvailabilityStart.Equal(ast) || m.MinimumUpdatePeriod != 2*s || m.TimeShiftBufferDepth != 30*s ||
					m.SuggestedPresentationDelay != 6*s || m.MaxSegmentDuration != 2*s {
					t.Errorf("MPD attributes: %+v", m)
				}
				if len(m.UTCTiming) != 1 || m.UTCTiming[0].Value != "http://origin:8080/time" {
					t.Errorf("UTCTiming %+v", m.UTCTiming)
				}
				ix := m.Set(media.Video).Representations[1].Index
				last, ok := ix.Last(ast.Add(61 * s))
				if !ok || last.Number != 29 || last.URL != "http://origin:8080/live/demo/v720/29.m4s" {
					t.Errorf("last segment at 61 s: %+v", last)
				}
				// Segment n covers [n·D, (n+1)·D) and is available at AST + (n+1)·D.
				seg, _ := ix.Next(10 * s)
				if seg.Number != 5 || seg.Start != 10*s || !seg.AvailableAt.Equal(ast.Add(12*s)) || seg.Time != 5*180000 {
					t.Errorf("segment at 10 s: %+v", seg)
				}
				if _, ok := ix.Last(ast.Add(1999 * time.Millisecond)); ok {
					t.Errorf("a segment is available before the first one is complete")
				}
				a := m.Set(media.Audio).Representations[0].Index
				if l, _ := a.Last(ast.Add(61 * s)); l.Number != 29 {
					t.Errorf("audio last %d", l.Number)
				}
			},
		},
		{
			name: "dynamic/Timeline", file: "dynamic-timeline.mpd", url: "https://origin/live/ch/manifest.mpd",
			now: ast.Add(61 * s), live: true,
			want: []want{
				{kind: media.Video, rep: "v1", init: "https://origin/live/ch/v1/init.mp4",
					// Period start 10 s, PTO 5 s: media time 45 s is position 50 s.
					urls: []string{
						"https://origin/live/ch/v1/45000-7.m4s", "https://origin/live/ch/v1/47000-8.m4s",
						"https://origin/live/ch/v1/49000-9.m4s", "https://origin/live/ch/v1/51000-10.m4s",
						"https://origin/live/ch/v1/53000-11.m4s"},
					starts:    []time.Duration{50 * s, 52 * s, 54 * s, 56 * s, 58 * s},
					available: []time.Time{ast.Add(52 * s), ast.Add(54 * s), ast.Add(56 * s), ast.Add(58 * s), ast.Add(60 * s)}},
			},
			check: func(t *testing.T, m *player.Manifest) {
				if len(m.UTCTiming) != 1 || m.UTCTiming[0].Value != "2024-01-01T00:01:00Z" {
					t.Errorf("direct UTCTiming kept verbatim: %+v", m.UTCTiming)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := parseFile(t, tc.file, tc.url, tc.now)
			if m.Live != tc.live {
				t.Fatalf("live = %v", m.Live)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
			for _, w := range tc.want {
				set, rep := m.Representation(w.rep)
				if rep == nil || set.Kind != w.kind {
					t.Fatalf("representation %s of kind %s missing", w.rep, w.kind)
				}
				if rep.InitURL != w.init {
					t.Errorf("%s init %q, want %q", w.rep, rep.InitURL, w.init)
				}
				if w.urls == nil {
					continue
				}
				got := segs(t, rep.Index, tc.now)
				if len(got) != len(w.urls) {
					t.Fatalf("%s: %d segments, want %d: %+v", w.rep, len(got), len(w.urls), got)
				}
				for i, sg := range got {
					if sg.URL != w.urls[i] {
						t.Errorf("%s segment %d URL %q, want %q", w.rep, i, sg.URL, w.urls[i])
					}
					if w.starts != nil && sg.Start != w.starts[i] {
						t.Errorf("%s segment %d start %v, want %v", w.rep, i, sg.Start, w.starts[i])
					}
					if w.durations != nil && sg.Duration != w.durations[i] {
						t.Errorf("%s segment %d duration %v, want %v", w.rep, i, sg.Duration, w.durations[i])
					}
					if w.available != nil && !sg.AvailableAt.Equal(w.available[i]) {
						t.Errorf("%s segment %d available %v, want %v", w.rep, i, sg.AvailableAt, w.available[i])
					}
					if w.available == nil && !sg.AvailableAt.IsZero() {
						t.Errorf("%s segment %d of a static MPD has an availability time", w.rep, i)
					}
				}
				if _, ok := rep.Index.Next(got[len(got)-1].End()); ok && !tc.live {
					t.Errorf("%s: a segment after the end", w.rep)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]string{
		"not xml":          "<MPD",
		"no period":        `<MPD type="static" mediaPresentationDuration="PT4S"></MPD>`,
		"dynamic no AST":   `<MPD type="dynamic"><Period><AdaptationSet mimeType="video/mp4"><SegmentTemplate media="$Number$.m4s" duration="2"/><Representation id="v" bandwidth="1"/></AdaptationSet></Period></MPD>`,
		"SegmentBase":      `<MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet mimeType="video/mp4"><Representation id="v" bandwidth="1"><SegmentBase indexRange="0-99"/></Representation></AdaptationSet></Period></MPD>`,
		"static unbounded": `<MPD type="static"><Period><AdaptationSet mimeType="video/mp4"><SegmentTemplate media="$Number$.m4s" duration="2"/><Representation id="v" bandwidth="1"/></AdaptationSet></Period></MPD>`,
		"no Number":        `<MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet mimeType="video/mp4"><SegmentTemplate media="seg.m4s" duration="2"/><Representation id="v" bandwidth="1"/></AdaptationSet></Period></MPD>`,
		"S@d zero":         `<MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet mimeType="video/mp4"><SegmentTemplate media="$Time$.m4s"><SegmentTimeline><S t="0" d="0"/></SegmentTimeline></SegmentTemplate><Representation id="v" bandwidth="1"/></AdaptationSet></Period></MPD>`,
		"bad duration":     `<MPD type="static" mediaPresentationDuration="P1Y"><Period/></MPD>`,
		"only text":        `<MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet mimeType="application/ttml+xml"><SegmentTemplate media="$Number$" duration="2"/><Representation id="t" bandwidth="1"/></AdaptationSet></Period></MPD>`,
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc), "http://h/m.mpd", time.Now())
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, media.ErrInvalidMedia) {
				t.Errorf("error %v does not wrap ErrInvalidMedia", err)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT2S", 2 * time.Second, true},
		{"PT1.92S", 1920 * time.Millisecond, true},
		{"PT1M30.5S", 90500 * time.Millisecond, true},
		{"PT1H", time.Hour, true},
		{"P1DT2H", 26 * time.Hour, true},
		{"PT0S", 0, true},
		{"-PT1S", -time.Second, true},
		{"P1Y", 0, false},
		{"PT", 0, true},
		{"2S", 0, false},
		{"PTxS", 0, false},
		{"P2H", 0, false}, // hours need the T
	}
	for _, tc := range tests {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"static-number.mpd", "static-timeline.mpd", "dynamic-number.mpd", "dynamic-timeline.mpd"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b, "http://h/a/m.mpd", ast.Add(time.Minute))
		if err != nil {
			return
		}
		if m.Validate() != nil {
			return
		}
		for _, s := range m.Sets {
			for _, r := range s.Representations {
				if seg, ok := r.Index.First(); ok {
					r.Index.Next(seg.End())
				}
				r.Index.Last(ast.Add(time.Minute))
			}
		}
	})
}
