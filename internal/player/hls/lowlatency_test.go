package hls

import (
	"context"
	"strings"
	"testing"
	"time"

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

func TestLoadLowLatencyAddsTheSegmentInProgressAndTheNext(t *testing.T) {
	const u = "http://o/live/c/v1/playlist.m3u8"
	body := llPlaylist(`#EXT-X-PROGRAM-DATE-TIME:2030-01-01T12:00:04.000Z
#EXT-X-PART:DURATION=0.200,URI="1043.0.m4s",INDEPENDENT=YES
`)
	fetch := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		return &player.Response{Body: []byte(body)}, nil
	})
	m, err := NewLoader()(context.Background(), fetch, u, time.Date(2030, 1, 1, 12, 0, 4, 300e6, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if m.ServiceDescription == nil || m.ServiceDescription.TargetLatency != 600*time.Millisecond || m.ServiceDescription.Source != "part-hold-back" {
		t.Fatalf("service description %+v, want the PART-HOLD-BACK 600 ms as the target", m.ServiceDescription)
	}
	list := m.Sets[0].Representations[0].Index.List
	var got []string
	for _, s := range list {
		got = append(got, s.URL[strings.LastIndex(s.URL, "/")+1:])
	}
	if strings.Join(got, " ") != "1041.m4s 1042.m4s 1043.m4s 1044.m4s" {
		t.Fatalf("segments %v", got)
	}
	cur, next := list[2], list[3]
	if !cur.AvailableAt.IsZero() || cur.Start != list[1].End() || next.Start != cur.End() {
		t.Errorf("in progress %+v, next %+v", cur, next)
	}
	if want := m.AvailabilityStart.Add(next.Start); !next.AvailableAt.Equal(want) {
		t.Errorf("the next segment available at %v, want its start %v", next.AvailableAt, want)
	}

	// Without parts it is an ordinary live playlist.
	body = strings.ReplaceAll(strings.ReplaceAll(llPlaylist(""), "#EXT-X-PART-INF:PART-TARGET=0.200\n", ""), "#EXT-X-PART:DURATION=0.200,URI=\"1042.0.m4s\",INDEPENDENT=YES\n", "")
	m, err = NewLoader()(context.Background(), fetch, u, time.Date(2030, 1, 1, 12, 0, 4, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if m.ServiceDescription != nil || len(m.Sets[0].Representations[0].Index.List) != 2 {
		t.Errorf("a playlist without parts: %+v, %d segments", m.ServiceDescription, len(m.Sets[0].Representations[0].Index.List))
	}
}
