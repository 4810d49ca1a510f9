package hls

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
)

const root = "http://origin/vod/demo/"

// files serves testdata under root, and counts requests.
func files(t *testing.T, reqs *[]string) player.FetcherFunc {
	return func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		*reqs = append(*reqs, req.URL)
		rel := strings.TrimPrefix(req.URL, root)
		b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", req.URL, media.ErrNotFound)
		}
		return &player.Response{Body: b, PayloadBytes: int64(len(b))}, nil
	}
}

func TestLoadMultivariant(t *testing.T) {
	var reqs []string
	m, err := NewLoader()(context.Background(), files(t, &reqs), root+"master.m3u8", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Live || m.Duration != 7*time.Second || len(m.Sets) != 2 {
		t.Fatalf("live %v, duration %v, %d sets", m.Live, m.Duration, len(m.Sets))
	}
	// master + two variants + the default audio rendition (not the French one)
	if len(reqs) != 4 {
		t.Errorf("requests %v", reqs)
	}
	v := m.Set(media.Video)
	if v.Representations[0].ID != "v360" || v.Representations[1].ID != "v720" || v.Representations[1].Bandwidth != 3128000 ||
		v.Representations[1].Width != 1280 || v.Representations[1].Codecs != "avc1.64001f,mp4a.40.2" {
		t.Errorf("variants %+v %+v", v.Representations[0], v.Representations[1])
	}
	r := v.Representations[1]
	if r.InitURL != root+"v720/init.mp4" {
		t.Errorf("init %s", r.InitURL)
	}
	s, _ := r.Index.Next(4 * time.Second)
	if s.Number != 3 || s.URL != root+"v720/3.m4s" || s.Start != 4*time.Second || s.Duration != 2*time.Second {
		t.Errorf("segment at 4 s: %+v", s)
	}
	last, _ := r.Index.Last(time.Now())
	if last.Number != 4 || last.End() != 7*time.Second {
		t.Errorf("last %+v", last)
	}
	a := m.Set(media.Audio)
	if a == nil || a.Representations[0].ID != "a128" || a.Lang != "en" {
		t.Errorf("audio %+v", a)
	}
}

func TestLoadLiveWithProgramDate(t *testing.T) {
	var reqs []string
	now := time.Date(2024, 1, 1, 0, 1, 51, 0, time.UTC)
	m, err := NewLoader()(context.Background(), files(t, &reqs), root+"live.m3u8", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if !m.Live || m.MinimumUpdatePeriod != 2*time.Second || m.SuggestedPresentationDelay != 6*time.Second {
		t.Fatalf("live %v, update %v, delay %v", m.Live, m.MinimumUpdatePeriod, m.SuggestedPresentationDelay)
	}
	ix := m.Sets[0].Representations[0].Index
	first, _ := ix.First()
	// Wall time of a position is AvailabilityStart + position: the segment's program date.
	if w := m.AvailabilityStart.Add(first.Start); !w.Equal(time.Date(2024, 1, 1, 0, 1, 40, 0, time.UTC)) || first.Number != 50 {
		t.Errorf("first segment %d at %v", first.Number, w)
	}
	last, _ := ix.Last(now)
	if last.Number != 54 || m.AvailabilityStart.Add(last.End()) != time.Date(2024, 1, 1, 0, 1, 50, 0, time.UTC) {
		t.Errorf("last %+v", last)
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]string{
		"no target":    "#EXTM3U\n#EXTINF:2,\na.m4s\n#EXT-X-ENDLIST\n",
		"no EXTINF":    "#EXTM3U\n#EXT-X-TARGETDURATION:2\na.m4s\n",
		"byterange":    "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:100@0\na.m4s\n",
		"bad EXTINF":   "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:x,\na.m4s\n",
		"empty VOD":    "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-ENDLIST\n",
		"bad sequence": "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:-1\n",
		"bad PDT":      "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PROGRAM-DATE-TIME:yesterday\n",
	}
	for name, doc := range tests {
		if _, err := ParseMedia([]byte(doc), root+"x.m3u8"); !errors.Is(err, media.ErrInvalidMedia) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseMultivariant([]byte("#EXTM3U\n#EXT-X-VERSION:7\n"), root+"m.m3u8"); err == nil {
		t.Errorf("empty multivariant accepted")
	}
}

func TestAttrs(t *testing.T) {
	got := attrs(`BANDWIDTH=928000,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360,AUDIO="aud"`)
	want := map[string]string{"BANDWIDTH": "928000", "CODECS": "avc1.64001e,mp4a.40.2", "RESOLUTION": "640x360", "AUDIO": "aud"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attrs = %v", got)
	}
}

// An HLS session under the simulated clock: the same core as DASH.
func TestPlayHLS(t *testing.T) {
	clock := player.NewSimClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	var reqs []string
	serve := files(t, &reqs)
	f := player.FetcherFunc(func(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
		if req.Kind == player.RequestManifest {
			return serve(ctx, req)
		}
		reqs = append(reqs, req.URL)
		start := clock.Now()
		clock.Advance(100 * time.Millisecond)
		return &player.Response{PayloadBytes: 100_000, Start: start, End: clock.Now()}, nil
	})
	p, err := player.New(player.Config{URL: root + "master.m3u8", Fetcher: f, Load: NewLoader(), Clock: clock, ABR: abr.Fixed{TrackID: "v720"}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.PlayedS != 7 || rep.PerTrackS["v720"] != 7 || rep.PerTrackS["a128"] != 7 || rep.StallCount != 0 || rep.EndReason != "ended" {
		t.Errorf("played %v, per track %v, stalls %d, end %s", rep.PlayedS, rep.PerTrackS, rep.StallCount, rep.EndReason)
	}
	// 4 playlists + 2 inits + 8 segments
	if rep.Requests != 14 {
		t.Errorf("%d requests: %v", rep.Requests, reqs)
	}
}
