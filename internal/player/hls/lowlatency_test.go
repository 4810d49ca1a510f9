package hls

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
)

// llPlaylist is a low-latency media playlist as Streambed's origin writes it: two
// complete segments, then tail (the parts of the segment in progress, a hint).
func llPlaylist(tail string) string {
	return `#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:2
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=0.600
#EXT-X-PART-INF:PART-TARGET=0.200
#EXT-X-MEDIA-SEQUENCE:1041
#EXT-X-MAP:URI="init.mp4"
#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:00.000Z
#EXTINF:2.000,
1041.m4s
#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:02.000Z
#EXT-X-PART:DURATION=0.200,URI="1042.0.m4s",INDEPENDENT=YES
#EXTINF:2.000,
1042.m4s
` + tail
}

func TestLowLatencyMediaPlaylist(t *testing.T) {
	const u = "http://o/live/c/v1/playlist.m3u8"
	tests := map[string]struct {
		tail     string
		inProg   string // "" : none
		progDate string
	}{
		"parts of the segment in progress": {`#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:04.000Z
#EXT-X-PART:DURATION=0.200,URI="1043.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.200,URI="1043.1.m4s"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="1043.2.m4s"
`, "http://o/live/c/v1/1043.m4s", "2030-01-01T12:00:04Z"},
		"only the hint of its first part": {`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="1043.0.m4s"
`, "http://o/live/c/v1/1043.m4s", "2030-01-01T12:00:04Z"},
		"nothing after the last segment": {"", "", ""},
		"ended":                          {"#EXT-X-PART:DURATION=0.200,URI=\"1043.0.m4s\"\n#EXT-X-ENDLIST\n", "", ""},
	}
	for name, tc := range tests {
		mp, err := ParseMedia([]byte(llPlaylist(tc.tail)), u)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if mp.PartTarget != 200*time.Millisecond || mp.PartHoldBack != 600*time.Millisecond {
			t.Errorf("%s: part target %v, part hold back %v", name, mp.PartTarget, mp.PartHoldBack)
		}
		switch {
		case tc.inProg == "" && mp.InProgress != nil:
			t.Errorf("%s: a segment in progress %+v", name, mp.InProgress)
		case tc.inProg != "" && (mp.InProgress == nil || mp.InProgress.URI != tc.inProg || mp.InProgress.Sequence != 1043 ||
			mp.InProgress.ProgramDate.Format(time.RFC3339) != tc.progDate || mp.InProgress.Duration != 2*time.Second):
			t.Errorf("%s: in progress %+v, want %s from %s", name, mp.InProgress, tc.inProg, tc.progDate)
		}
	}
}

func TestInProgressURI(t *testing.T) {
	tests := []struct {
		prev string
		seq  uint64
		want string
	}{
		{"http://o/c/v1/1042.m4s", 1042, "http://o/c/v1/1043.m4s"},
		{"http://o/c/v1/seg-1042-x.m4s", 1042, "http://o/c/v1/seg-1043-x.m4s"},
		{"http://o/c/1042/a.m4s", 1042, ""},       // the number is not in the file name
		{"http://o/c/v1/seg-a.m4s", 1042, ""},     // no number
		{"http://o/c/v1/11042.m4s", 1042, ""},     // part of a longer number
		{"http://o/c/v1/1042_1042.m4s", 1042, ""}, // twice
	}
	for _, tc := range tests {
		got, ok := inProgressURI(MediaSegment{URI: tc.prev, Sequence: 1042}, tc.seq+1)
		if tc.want == "" && ok || tc.want != "" && got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.prev, got, ok, tc.want)
		}
	}
}

func TestParseParts(t *testing.T) {
	mp, err := ParseMedia([]byte(llPlaylist(`#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:04.000Z
#EXT-X-PART:DURATION=0.200,URI="1043.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.200,URI="1043.1.m4s"
#EXT-X-PART:URI="1043.2.m4s"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="1043.3.m4s"
`)), "http://o/live/c/v1/playlist.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	if !mp.CanBlockReload {
		t.Error("CAN-BLOCK-RELOAD=YES not read")
	}
	if got := mp.Segments[1].Parts; len(got) != 1 || got[0] != (Part{Sequence: 1042, Index: 0, URI: "http://o/live/c/v1/1042.0.m4s", Duration: 200 * time.Millisecond, Independent: true}) {
		t.Errorf("parts of 1042: %+v", got)
	}
	if len(mp.Segments[0].Parts) != 0 {
		t.Errorf("parts of 1041: %+v", mp.Segments[0].Parts)
	}
	// The part without a duration is skipped; the hint is not a part.
	if len(mp.Tail) != 2 || mp.Tail[1].URI != "http://o/live/c/v1/1043.1.m4s" || mp.Tail[1].Sequence != 1043 || mp.Tail[1].Index != 1 || mp.Tail[1].Independent || !mp.Tail[0].Independent {
		t.Errorf("tail %+v", mp.Tail)
	}
	if mp.TailDate.Format(time.RFC3339) != "2030-01-01T12:00:04Z" {
		t.Errorf("tail date %v", mp.TailDate)
	}
}

// TestNextDirectives: the blocking reload after a playlist asks for what hls.js asks
// for (base-playlist-controller.ts, low-latency mode).
func TestNextDirectives(t *testing.T) {
	tests := map[string]struct{ tail, want string }{
		"a part of the segment in progress":   {"#EXT-X-PART:DURATION=0.200,URI=\"1043.0.m4s\"\n#EXT-X-PART:DURATION=0.200,URI=\"1043.1.m4s\"\n", "_HLS_msn=1043&_HLS_part=2"},
		"the last part of a complete segment": {"#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"1043.0.m4s\"\n", "_HLS_msn=1043&_HLS_part=0"},
		"ended":                               {"#EXT-X-ENDLIST\n", ""},
	}
	for name, tc := range tests {
		tail := strings.ReplaceAll(strings.ReplaceAll(tc.tail, `\"`, `"`), `\n`, "\n")
		mp, err := ParseMedia([]byte(llPlaylist(tail)), "http://o/p.m3u8")
		if err != nil {
			t.Fatal(err)
		}
		if got := nextDirectives(mp); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	// Without parts: the next segment; without CAN-BLOCK-RELOAD: none.
	plain := strings.ReplaceAll(llPlaylist(""), "#EXT-X-PART:DURATION=0.200,URI=\"1042.0.m4s\",INDEPENDENT=YES\n", "")
	mp, _ := ParseMedia([]byte(plain), "http://o/p.m3u8")
	if got := nextDirectives(mp); got != "_HLS_msn=1043" {
		t.Errorf("no parts: %q", got)
	}
	mp, _ = ParseMedia([]byte(strings.ReplaceAll(plain, "CAN-BLOCK-RELOAD=YES,", "")), "http://o/p.m3u8")
	if got := nextDirectives(mp); got != "" {
		t.Errorf("cannot block: %q", got)
	}
}

// TestLoadLowLatencyPlaysParts: the loader lists the parts of the segments whose parts
// are all listed, and of the segment in progress, in place of the segments; the next
// load reads the multivariant playlist from memory and asks every media playlist for
// its next part, blocking.
func TestLoadLowLatencyPlaysParts(t *testing.T) {
	const master = `#EXTM3U
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="a1",DEFAULT=YES,URI="a1/playlist.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=100000,AUDIO="a"
v1/playlist.m3u8
`
	tail := `#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:04.000Z
#EXT-X-PART:DURATION=0.200,URI="1043.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=0.200,URI="1043.1.m4s"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="1043.2.m4s"
`
	var mu sync.Mutex
	var asked []string
	fetch := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		mu.Lock()
		asked = append(asked, strings.TrimPrefix(req.URL, "http://o/live/c/"))
		mu.Unlock()
		if strings.HasSuffix(req.URL, "master.m3u8") {
			return &player.Response{Body: []byte(master)}, nil
		}
		return &player.Response{Body: []byte(llPlaylist(tail))}, nil
	})
	load := NewLoader()
	m, err := load(context.Background(), fetch, "http://o/live/c/master.m3u8", time.Date(2030, 1, 1, 12, 0, 4, 500e6, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	sd := m.ServiceDescription
	if sd == nil || sd.TargetLatency != 600*time.Millisecond || sd.Source != "part-hold-back" || sd.CatchUp != player.CatchUpHLSJS {
		t.Fatalf("service description %+v, want PART-HOLD-BACK with hls.js's rule", sd)
	}
	if !m.BlockingReload || m.PartTarget != 200*time.Millisecond || m.MinimumUpdatePeriod != blockingReloadGap {
		t.Errorf("blocking %v, part target %v, update period %v", m.BlockingReload, m.PartTarget, m.MinimumUpdatePeriod)
	}
	for _, set := range m.Sets {
		list := set.Representations[0].Index.List
		var got []string
		for i, s := range list {
			got = append(got, s.URL[strings.LastIndex(s.URL, "/")+1:])
			if i > 0 && s.Start != list[i-1].End() {
				t.Errorf("%s starts at %v, after %v: not one timeline", s.URL, s.Start, list[i-1].End())
			}
		}
		// 1042 has one part of ten listed: whole. 1043 is in progress: its parts.
		if strings.Join(got, " ") != "1041.m4s 1042.m4s 1043.0.m4s 1043.1.m4s" {
			t.Errorf("%s: segments %v", set.Kind, got)
		}
		if n := len(list); list[n-1].Number != 1043 || list[n-1].Duration != 200*time.Millisecond {
			t.Errorf("last part %+v", list[n-1])
		}
		if want := time.Date(2030, 1, 1, 12, 0, 4, 400e6, time.UTC).Sub(m.AvailabilityStart); m.ListedEdge != want {
			t.Errorf("listed edge %v, want %v (the end of 1043.1)", m.ListedEdge, want)
		}
	}
	asked = nil
	if _, err := load(context.Background(), fetch, "http://o/live/c/master.m3u8", time.Date(2030, 1, 1, 12, 0, 4, 700e6, time.UTC)); err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	if want := "a1/playlist.m3u8?_HLS_msn=1043&_HLS_part=2 v1/playlist.m3u8?_HLS_msn=1043&_HLS_part=2"; strings.Join(asked, " ") != want {
		t.Errorf("the reload asked %v, want %s", asked, want)
	}
	// A reload the origin refuses (a 503 after its hold) is an error; the next one asks
	// the same again. One that ends the stream stops the blocking.
	fail := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		return nil, fmt.Errorf("GET %s: HTTP 503: %w", req.URL, media.ErrUnavailable)
	})
	if _, err := load(context.Background(), fail, "http://o/live/c/master.m3u8", time.Time{}); !errors.Is(err, media.ErrUnavailable) {
		t.Fatalf("a refused reload: %v", err)
	}
	tail = "#EXT-X-ENDLIST\n"
	asked = nil
	if m, err := load(context.Background(), fetch, "http://o/live/c/master.m3u8", time.Time{}); err != nil || m.Live || m.BlockingReload {
		t.Fatalf("the ended playlist: %v, live %v, blocking %v", err, m.Live, m.BlockingReload)
	}
	asked = nil
	if _, err := load(context.Background(), fetch, "http://o/live/c/master.m3u8", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if slices.Sort(asked); strings.Join(asked, " ") != "a1/playlist.m3u8 v1/playlist.m3u8" {
		t.Errorf("after the end, asked %v: want plain loads", asked)
	}
}

// TestWithPartsReplacesCompleteSegments: a complete segment whose parts are all listed
// is played by parts, the last one ending where the segment does.
func TestWithPartsReplacesCompleteSegments(t *testing.T) {
	ps := []Part{{Sequence: 7, Index: 0, URI: "7.0", Duration: 700 * time.Millisecond}, {Sequence: 7, Index: 1, URI: "7.1", Duration: 1299 * time.Millisecond}}
	mp := &MediaPlaylist{Segments: []MediaSegment{{Sequence: 6}, {Sequence: 7, Parts: ps}}}
	list := []player.Segment{{Number: 6, URL: "6", Start: 0, Duration: 2 * time.Second}, {Number: 7, URL: "7", Start: 2 * time.Second, Duration: 2 * time.Second}}
	got, ok := withParts(list, mp, time.Time{})
	if !ok || len(got) != 3 || got[1].URL != "7.0" || got[2].URL != "7.1" || got[2].Start != 2700*time.Millisecond || got[2].End() != 4*time.Second {
		t.Fatalf("%v %+v", ok, got)
	}
	// Parts from the middle of a segment: the segment whole.
	mp.Segments[1].Parts = ps[1:]
	if got, _ := withParts(list, mp, time.Time{}); len(got) != 2 || got[1].URL != "7" {
		t.Errorf("parts from the middle: %+v", got)
	}
}

// TestLoadPartsWithoutBlocking: parts without CAN-BLOCK-RELOAD are still played by
// parts, with plain reloads every target duration (hls.js's interval).
func TestLoadPartsWithoutBlocking(t *testing.T) {
	body := strings.ReplaceAll(llPlaylist("#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:04.000Z\n#EXT-X-PART:DURATION=0.200,URI=\"1043.0.m4s\"\n"), "CAN-BLOCK-RELOAD=YES,", "")
	var asked []string
	fetch := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		asked = append(asked, req.URL)
		return &player.Response{Body: []byte(body)}, nil
	})
	load := NewLoader()
	for range 2 {
		m, err := load(context.Background(), fetch, "http://o/live/c/v1/playlist.m3u8", time.Date(2030, 1, 1, 12, 0, 4, 300e6, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		if m.BlockingReload || m.MinimumUpdatePeriod != 2*time.Second || m.ServiceDescription == nil {
			t.Fatalf("blocking %v, update period %v, service description %+v", m.BlockingReload, m.MinimumUpdatePeriod, m.ServiceDescription)
		}
		if list := m.Sets[0].Representations[0].Index.List; !strings.HasSuffix(list[len(list)-1].URL, "/1043.0.m4s") {
			t.Errorf("last entry %s, want the part", list[len(list)-1].URL)
		}
	}
	if strings.Join(asked, " ") != "http://o/live/c/v1/playlist.m3u8 http://o/live/c/v1/playlist.m3u8" {
		t.Errorf("asked %v: want plain reloads", asked)
	}
}
