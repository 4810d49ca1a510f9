package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// FDSP's latency_ms is every transport's: the wall clock, synchronised with the
// MPD's UTCTiming source, minus the wall time of the presentation time being
// played. FDSP carries no wall clock, so the stream's MPD gives the mapping (the
// FDSP server sends the hub's media times, the MPD's timeline), and the client's
// samples give the presentation time shown at each instant.

// liveTimeline maps a live stream's video media time to wall time, on the
// origin's clock, and the origin's clock to ours.
type liveTimeline struct {
	wallAt0 time.Time     // wall time of media time 0 (90 kHz timeline)
	offset  time.Duration // origin − local, from UTCTiming
	source  string        // the UTCTiming scheme used; "" none (offset 0)
	slack   time.Duration // half the UTCTiming round trip; -1: unknown
}

// loadLiveTimeline reads the live stream's MPD (u itself, or the stream's
// manifest.mpd for another manifest URL) and its clock.
func loadLiveTimeline(ctx context.Context, u *url.URL, hc *http.Client) (*liveTimeline, error) {
	mpd := *u
	if !strings.HasSuffix(u.Path, ".mpd") {
		r := layout.Parse(u.Path)
		if r.Stream == "" {
			return nil, fmt.Errorf("%s is not a stream's manifest URL", u)
		}
		mpd.Path, mpd.RawQuery = layout.Manifest(r.Live, r.Stream, "manifest.mpd"), ""
	}
	body, err := httpGet(ctx, hc, mpd.String())
	if err != nil {
		return nil, err
	}
	m, err := dash.Parse(body, mpd.String(), time.Now())
	if err != nil {
		return nil, err
	}
	if !m.Live {
		return nil, fmt.Errorf("%s is not live", mpd.String())
	}
	set := m.Set(media.Video)
	if set == nil || len(set.Representations) == 0 || set.Representations[0].Index == nil {
		return nil, fmt.Errorf("%s has no video", mpd.String())
	}
	ix := set.Representations[len(set.Representations)-1].Index // FDSP sends the top rung
	// position = period start + (media time − PTO) / timescale; wall = AST + position.
	tl := &liveTimeline{wallAt0: m.AvailabilityStart.Add(ix.PeriodStart - player.Ticks(ix.PTO, ix.Timescale)), slack: -1}
	for _, ut := range m.UTCTiming {
		switch {
		case strings.Contains(ut.Scheme, ":http-iso:") || strings.Contains(ut.Scheme, ":http-xsdate:"):
			t0 := time.Now()
			b, err := httpGet(ctx, hc, ut.Value)
			t1 := time.Now()
			if err != nil {
				continue
			}
			st, err := player.ParseISOTime(string(b))
			if err != nil {
				continue
			}
			tl.offset, tl.slack, tl.source = st.Sub(t0.Add(t1.Sub(t0)/2)), t1.Sub(t0)/2, ut.Scheme
		case strings.Contains(ut.Scheme, ":direct:"):
			st, err := player.ParseISOTime(ut.Value)
			if err != nil {
				continue
			}
			tl.offset, tl.source = time.Until(st), ut.Scheme
		default:
			continue
		}
		break
	}
	return tl, nil
}

// latency is the live latency at local wall time t with the playhead at media
// time playhead (seconds).
func (tl *liveTimeline) latency(t time.Time, playhead float64) time.Duration {
	return t.Add(tl.offset).Sub(tl.wallAt0.Add(time.Duration(playhead * float64(time.Second))))
}

// addLatency fills the report's latency keys (and each sample's) from the
// session's playhead samples, as the player's recorder does for other transports.
func (tl *liveTimeline) addLatency(r *qoe.Report, st fdsp.Stats) {
	r.ClockOffsetMS = float64(tl.offset) / float64(time.Millisecond)
	r.ClockSource = tl.source
	if tl.slack >= 0 {
		v := float64(tl.slack) / float64(time.Millisecond)
		r.ClockSlackMS = &v
	}
	var sum float64
	n := 0
	for i, x := range st.Samples {
		if x.PlayheadS == nil || x.State != "playing" || i >= len(r.Samples) {
			continue
		}
		v := float64(tl.latency(st.StartedAt.Add(time.Duration(x.T*float64(time.Second))), *x.PlayheadS)) / float64(time.Millisecond)
		r.Samples[i].LatencyMS = &v
		sum += v
		n++
		if r.LatencyMinMS == nil || v < *r.LatencyMinMS {
			r.LatencyMinMS = &v
		}
		if r.LatencyMaxMS == nil || v > *r.LatencyMaxMS {
			r.LatencyMaxMS = &v
		}
		r.LatencyEndMS = &v
	}
	if n > 0 {
		mean := sum / float64(n)
		r.LatencyMS = &mean
	}
}

func httpGet(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 8<<20))
}
