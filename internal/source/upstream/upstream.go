// Package upstream is edge mode: a live channel pulled from an upstream origin — a
// Streambed origin or any DASH origin with a SegmentTemplate of $Number$ and
// @duration — and fed into the local hub like any other source, so the edge packages
// (DASH, HLS, WebSocket push, …) and serves it itself.
//
// The source reads the upstream MPD once for the channel's tracks, fetches every
// representation's init segment, then follows each track from the newest segment the
// MPD makes available: a segment is requested as soon as the MPD says it may be (with
// availabilityTimeOffset, while it is still being made), and each CMAF chunk is
// appended to the hub the moment its mdat has arrived, so a low-latency upstream stays
// low-latency at the edge. Local segment numbers come from media time (round(tfdt/D)),
// as the ingest source counts them, so the edge's URLs are the upstream's when the
// upstream counts from its availabilityStartTime (Streambed does).
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/source/ingest"
)

// Options configure a pulled channel.
type Options struct {
	Name      string        // the local channel's name
	MPD       string        // the upstream MPD's URL
	DVRWindow time.Duration // 0: the upstream's timeShiftBufferDepth, else 60 s
	Client    *http.Client  // nil: a client with a 30 s timeout per request
	Log       *slog.Logger  // nil: discard
}

// maxBody bounds what one upstream response can make the edge hold (an MPD, an init
// segment); media is read chunk by chunk within ingest's box limits.
const maxBody = 8 << 20

// Source pulls one channel. Run feeds the channel; hub.AddChannel runs it.
type Source struct {
	o      Options
	tracks []*pulled
}

// pulled is one upstream representation and its local track.
type pulled struct {
	track  *media.Track
	rep    *player.Representation
	header *ingest.Header
}

// NewChannel reads the upstream MPD and init segments and returns the local channel
// and its source. Register both with Hub.AddChannel, or use AddChannel.
func NewChannel(ctx context.Context, o Options) (*hub.Channel, *Source, error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	body, err := fetch(ctx, o.Client, o.MPD)
	if err != nil {
		return nil, nil, err
	}
	m, err := dash.Parse(body, o.MPD, time.Now())
	if err != nil {
		return nil, nil, err
	}
	if !m.Live {
		return nil, nil, fmt.Errorf("upstream %s: a static MPD; edge mode pulls live channels: %w", o.MPD, media.ErrBadRequest)
	}
	src := &Source{o: o}
	info := &media.Stream{Name: o.Name}
	inits := map[string][]byte{}
	var segDur time.Duration
	var anchor time.Time
	for _, set := range m.Sets {
		for _, rep := range set.Representations {
			ix := rep.Index
			if !ix.IsTemplate() {
				return nil, nil, fmt.Errorf("upstream %s: representation %q is a SegmentTimeline; edge mode pulls $Number$ templates with @duration (Streambed's manifest.mpd): %w", o.MPD, rep.ID, media.ErrBadRequest)
			}
			if d := ix.NominalDuration(); segDur == 0 {
				segDur = d
				// Media time 0 is at availabilityStartTime + Period@start − PTO.
				anchor = ix.AvailabilityStart.Add(ix.PeriodStart - time.Duration(float64(ix.PTO)/float64(ix.Timescale)*float64(time.Second)))
			} else if d != segDur {
				return nil, nil, fmt.Errorf("upstream %s: representation %q has %s segments, others %s: %w", o.MPD, rep.ID, d, segDur, media.ErrBadRequest)
			}
			if rep.InitURL == "" {
				return nil, nil, fmt.Errorf("upstream %s: representation %q has no initialization segment: %w", o.MPD, rep.ID, media.ErrBadRequest)
			}
			b, err := fetch(ctx, o.Client, rep.InitURL)
			if err != nil {
				return nil, nil, err
			}
			in, err := cmaf.ParseInit(b)
			if err != nil {
				return nil, nil, fmt.Errorf("upstream %s: %w", rep.InitURL, err)
			}
			t := &media.Track{ID: rep.ID, Kind: in.Info.Kind, Codec: rep.Codecs, Bandwidth: rep.Bandwidth,
				Width: in.Info.Width, Height: in.Info.Height, FrameRate: in.Info.FrameRate,
				SampleRate: in.Info.SampleRate, Channels: in.Info.Channels, Language: in.Info.Language, Timescale: in.Info.Timescale}
			if t.Codec == "" {
				t.Codec = in.Info.Codec
			}
			if !media.ValidName(t.ID) {
				return nil, nil, fmt.Errorf("upstream %s: representation id %q cannot name a local track: %w", o.MPD, rep.ID, media.ErrBadRequest)
			}
			info.Tracks = append(info.Tracks, t)
			inits[t.ID] = b
			src.tracks = append(src.tracks, &pulled{track: t, rep: rep, header: &ingest.Header{Bytes: b, Init: in}})
		}
	}
	if len(src.tracks) == 0 || segDur <= 0 {
		return nil, nil, fmt.Errorf("upstream %s: no representation to pull: %w", o.MPD, media.ErrBadRequest)
	}
	info.SegmentDuration = segDur
	dvr := o.DVRWindow
	if dvr == 0 {
		dvr = m.TimeShiftBufferDepth
	}
	if dvr == 0 {
		dvr = 60 * time.Second
	}
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info: info, Inits: inits, PresentationDelay: m.SuggestedPresentationDelay,
		Timeline: media.Timeline{AvailabilityStart: anchor, SegmentDuration: segDur, TimeShiftBufferDepth: dvr},
	})
	if err != nil {
		return nil, nil, err
	}
	return c, src, nil
}

// AddChannel pulls o.MPD into a new channel of h.
func AddChannel(ctx context.Context, h *hub.Hub, o Options) (*hub.Channel, error) {
	c, src, err := NewChannel(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := h.AddChannel(ctx, c, src); err != nil {
		return nil, err
	}
	return c, nil
}

// Run follows every track until ctx ends. A track that fails stops the others, and
// the hub restarts the source with back-off.
func (s *Source) Run(ctx context.Context, c *hub.Channel) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(s.tracks))
	for _, p := range s.tracks {
		go func() { errc <- s.follow(ctx, c, p) }()
	}
	var first error
	for range s.tracks {
		if err := <-errc; err != nil && first == nil && ctx.Err() == nil {
			first = err
			cancel()
		}
	}
	return first
}

// follow pulls one track's segments, from the newest the MPD makes available.
func (s *Source) follow(ctx context.Context, c *hub.Channel, p *pulled) error {
	ix := p.rep.Index
	seg, ok := ix.Last(time.Now())
	if !ok {
		seg, _ = ix.First()
	}
	failures := 0
	for ctx.Err() == nil {
		if d := time.Until(seg.AvailableAt); d > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(d):
			}
		}
		err := s.pullSegment(ctx, c, p, seg)
		switch {
		case err == nil:
			failures = 0
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, media.ErrNotYet) && time.Since(seg.AvailableAt) < seg.Duration+5*time.Second:
			// Not there yet (clocks differ a little): ask again shortly.
			s.pause(ctx, 200*time.Millisecond)
			continue
		default:
			failures++
			s.o.Log.Warn("upstream segment", "channel", s.o.Name, "track", p.track.ID, "segment", seg.Number, "err", err)
			if failures >= 5 {
				return fmt.Errorf("track %s: %d segments in a row failed, the last: %w", p.track.ID, failures, err)
			}
			s.pause(ctx, 500*time.Millisecond)
		}
		// Next: the one after, unless the edge fell behind the upstream's window.
		next, ok := ix.Next(seg.End())
		if last, lok := ix.Last(time.Now()); lok && (!ok || last.Number > next.Number+3) {
			next, ok = last, true
		}
		if !ok {
			return fmt.Errorf("track %s: no segment after %d", p.track.ID, seg.Number)
		}
		seg = next
	}
	return nil
}

func (s *Source) pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// pullSegment fetches one segment and appends its chunks as they arrive.
func (s *Source) pullSegment(ctx context.Context, c *hub.Channel, p *pulled, seg player.Segment) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, seg.URL, nil)
	if err != nil {
		return err
	}
	// The response is read as it arrives; the client's own timeout would cut a long
	// segment in progress, so only the request's context bounds it.
	client := *s.o.Client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", seg.URL, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("GET %s: 404: %w", seg.URL, media.ErrNotYet)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: status %d", seg.URL, resp.StatusCode)
	}
	parser := ingest.NewParser(resp.Body, ingest.Limits{}, p.header)
	n, started := uint64(0), false
	segDur := c.Timeline().SegmentDuration
	for {
		_, ch, err := parser.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// The upstream broke off (it aborts a segment it cannot finish): what
			// arrived stays, the segment stays open, and the next request for it
			// brings the rest (chunks already stored are duplicates, skipped).
			return fmt.Errorf("GET %s: %w", seg.URL, err)
		}
		if ch == nil {
			continue // a header inside a media response: nothing to append
		}
		f := ch.Fragment
		if !started {
			// The segment's number from its media time, as ingest counts it.
			t := time.Duration(float64(f.BaseMediaDecodeTime) / float64(p.track.Timescale) * float64(time.Second))
			n = uint64((t + segDur/2) / segDur)
			started = true
		}
		chunk := &media.Chunk{Data: ch.Data, Start: f.BaseMediaDecodeTime, Duration: f.Duration(), Keyframe: f.Keyframe()}
		if err := c.AppendChunk(p.track.ID, n, chunk, false); err != nil && !errors.Is(err, media.ErrGone) {
			return fmt.Errorf("segment %d of %s: %w", n, p.track.ID, err)
		}
	}
	if !started {
		return fmt.Errorf("GET %s: no media: %w", seg.URL, media.ErrInvalidMedia)
	}
	if err := c.EndSegment(p.track.ID, n); err != nil && !errors.Is(err, media.ErrGone) {
		return fmt.Errorf("segment %d of %s: %w", n, p.track.ID, err)
	}
	return nil
}

// fetch GETs a small upstream resource (an MPD, an init segment).
func fetch(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", url, media.ErrBadRequest)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream GET %s: status %d", url, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("upstream GET %s: %w", url, err)
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("upstream GET %s: over %d bytes", url, maxBody)
	}
	return b, nil
}
