// Package wsrelay is the source of a relay edge: it subscribes once to a channel on an
// upstream Streambed by WebSocket push (every track at once, a "relay" session) and
// stores the chunks in a local channel as they arrive, with their own media times,
// like any other source. The edge's transports then serve that channel: its
// WebSocket push viewers each get the rendition their own connection carries, and
// DASH and HLS work too. One upstream connection per channel, whatever the number of
// viewers. A lost upstream is dialled again, resuming after the last segment the
// edge stored completely; the edge's viewers stay connected and wait.
package wsrelay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// Source relays an upstream channel into a local one (hub.Source).
type Source struct {
	// URL is the upstream channel's push endpoint: ws://HOST/ws/{channel} (wss:// over TLS).
	URL string
	// Tracks limits the relayed tracks (empty: every track of the upstream channel).
	Tracks []string
	// HTTPClient performs the opening handshake (nil: http.DefaultClient).
	HTTPClient *http.Client
	Log        *slog.Logger
	// Retry is the first pause before dialling a lost upstream again (default 100 ms),
	// doubled up to MaxRetry (default 5 s) while dialling fails.
	Retry, MaxRetry time.Duration

	// OnSession, when set, is called with each upstream session's counters as it ends
	// (tests, metrics).
	OnSession func(Stats)
}

// Stats is what one upstream session brought.
type Stats struct {
	Chunks, Dropped int
	Ready           wspush.Ready
	Err             error
}

// ErrUpstream marks an upstream that cannot be relayed as configured (a mismatch a
// person must fix, not a network failure).
var ErrUpstream = errors.New("wsrelay: upstream")

// Run relays until ctx ends. Network failures are retried here, so the channel's
// viewers never see the source restart; a configuration mismatch is returned.
func (s *Source) Run(ctx context.Context, c *hub.Channel) error {
	log := s.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("channel", c.Info().Name, "upstream", s.URL)
	retry, maxRetry := s.Retry, s.MaxRetry
	if retry <= 0 {
		retry = 100 * time.Millisecond
	}
	if maxRetry <= 0 {
		maxRetry = 5 * time.Second
	}
	pause := retry
	for {
		st := s.session(ctx, c)
		if s.OnSession != nil {
			s.OnSession(st)
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(st.Err, ErrUpstream) {
			return st.Err
		}
		if st.Chunks > 0 {
			pause = retry // it worked for a while: come back at once
			log.Warn("upstream lost; dialling again", "err", st.Err, "chunks", st.Chunks, "in", pause)
		} else {
			log.Debug("upstream not reachable; dialling again", "err", st.Err, "in", pause)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, maxRetry)
	}
}

// resumeAt is where a new upstream session starts: where the first segment that
// some track has not stored completely begins (the relay may have been cut between
// one track's last chunk of a segment and another's). What the edge has of it is
// sent again and dropped as duplicates, so no segment is completed short. With
// nothing stored: the live edge.
func resumeAt(c *hub.Channel) wspush.At {
	w, err := c.Window(c.Now())
	if err != nil {
		return wspush.At{}
	}
	pos, ok := 0.0, false
	for _, t := range c.Info().Tracks {
		refs := w[t.ID]
		if len(refs) == 0 {
			continue
		}
		if end := t.Seconds(refs[len(refs)-1].End()); !ok || end < pos {
			pos, ok = end, true
		}
	}
	if !ok {
		return wspush.At{}
	}
	return wspush.AtSeconds(pos)
}

// session runs one upstream session until it fails.
func (s *Source) session(ctx context.Context, c *hub.Channel) (st Stats) {
	cl, err := wspush.Dial(ctx, s.URL, wspush.DialOptions{
		Start:      wspush.Start{Relay: true, At: resumeAt(c), Tracks: s.Tracks},
		HTTPClient: s.HTTPClient,
	})
	if err != nil {
		st.Err = err
		return st
	}
	defer cl.CloseNow()
	st.Ready = cl.Ready
	r, err := newRelay(c, &cl.Ready)
	if err != nil {
		st.Err = err
		return st
	}
	for {
		m, err := cl.Next(ctx)
		if err != nil {
			st.Err = err
			return st
		}
		if m.Frame == nil {
			if m.Type == "skip" {
				var sk wspush.Skip
				_ = json.Unmarshal(m.Text, &sk)
				s.logger().Info("upstream skipped media (this edge read too slowly)", "channel", c.Info().Name, "segment", sk.Segment, "lost", sk.Lost, "reason", sk.Reason)
			}
			continue
		}
		if err := r.frame(m.Frame); err != nil {
			if errors.Is(err, ErrUpstream) {
				st.Err = err
				return st
			}
			st.Dropped++
			s.logger().Debug("relayed chunk dropped", "channel", c.Info().Name, "err", err)
			continue
		}
		if m.Frame.Kind == wspush.KindChunk {
			st.Chunks++
		}
	}
}

func (s *Source) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// relay turns one session's frames into the channel's tracks, inits and chunks.
type relay struct {
	c      *hub.Channel
	ready  *wspush.Ready
	tracks []relayTrack // by ready index
}

type relayTrack struct {
	id       string
	defaults cmaf.TrackDefaults
	hasInit  bool
	seg      uint64 // segment of the last chunk stored
	next     int    // index of the next chunk expected in it
	wait     bool   // a chunk was missed: drop until the next segment start
}

func newRelay(c *hub.Channel, rd *wspush.Ready) (*relay, error) {
	if !rd.Live {
		return nil, fmt.Errorf("%w: %s is not a live channel", ErrUpstream, rd.Stream)
	}
	want := c.Timeline().SegmentDuration
	got := time.Duration(rd.SegmentDuration * float64(time.Second))
	if d := got - want; d > time.Millisecond || d < -time.Millisecond {
		return nil, fmt.Errorf("%w: channel %s has %v segments upstream and %v here: set the relay's segment duration to %v",
			ErrUpstream, rd.Stream, got, want, got)
	}
	ast, err := time.Parse(time.RFC3339Nano, rd.AvailabilityStart)
	if err != nil {
		return nil, fmt.Errorf("%w: ready has no availabilityStart: %v", ErrUpstream, err)
	}
	if !c.Timeline().AvailabilityStart.Equal(ast) {
		c.SetAvailabilityStart(ast)
	}
	r := &relay{c: c, ready: rd, tracks: make([]relayTrack, len(rd.Tracks))}
	for i, t := range rd.Tracks {
		r.tracks[i] = relayTrack{id: t.ID, wait: true}
	}
	return r, nil
}

// frame stores one media frame.
func (r *relay) frame(f *wspush.Frame) error {
	rt := &r.tracks[f.Track] // the client checked the index against ready
	if f.Kind == wspush.KindInit {
		return r.init(rt, r.ready.Tracks[f.Track], f.Payload)
	}
	if !rt.hasInit {
		return fmt.Errorf("track %s: a chunk before its init", rt.id)
	}
	n := r.ready.Base + f.Sequence
	index := 0
	if f.Start {
		rt.seg, rt.wait = n, false
	} else {
		n, index = rt.seg, int(f.Sequence)
		if rt.wait || index != rt.next {
			rt.wait = true
			return fmt.Errorf("track %s segment %d: chunk %d after a gap", rt.id, n, index)
		}
	}
	frags, err := cmaf.ParseSegment(f.Payload, rt.defaults)
	if err != nil || len(frags.Fragments) == 0 {
		rt.wait = true
		return fmt.Errorf("track %s segment %d chunk %d: %w", rt.id, n, index, errors.Join(err, media.ErrInvalidMedia))
	}
	first := frags.Fragments[0]
	var dur uint64
	for i := range frags.Fragments {
		dur += frags.Fragments[i].Duration()
	}
	ch := &media.Chunk{Data: f.Payload, Start: first.BaseMediaDecodeTime, Duration: dur, Keyframe: first.Keyframe()}
	if err := r.c.AppendChunk(rt.id, n, ch, f.End); err != nil {
		rt.wait = true
		return err
	}
	rt.next = index + 1
	return nil
}

// init adds (or describes again) the track and stores its init segment.
func (r *relay) init(rt *relayTrack, ti wspush.TrackInfo, b []byte) error {
	in, err := cmaf.ParseInit(b)
	if err != nil {
		return fmt.Errorf("%w: track %s: %w", ErrUpstream, ti.ID, err)
	}
	t := &media.Track{
		ID: ti.ID, Kind: in.Info.Kind, Codec: in.Info.Codec, Bandwidth: ti.Bandwidth,
		Width: in.Info.Width, Height: in.Info.Height, FrameRate: in.Info.FrameRate,
		SampleRate: in.Info.SampleRate, Channels: in.Info.Channels, Language: in.Info.Language,
		Timescale: in.Info.Timescale,
	}
	if err := r.c.AddTrack(t); err != nil {
		return fmt.Errorf("%w: track %s: %w", ErrUpstream, ti.ID, err)
	}
	if err := r.c.SetInit(ti.ID, b); err != nil {
		return fmt.Errorf("%w: track %s: %w", ErrUpstream, ti.ID, err)
	}
	rt.defaults, rt.hasInit = in.Defaults, true
	return nil
}

// ChannelOptions make a relay channel.
type ChannelOptions struct {
	Name string
	// URL is the upstream's push endpoint of the channel, ws://HOST/ws/{channel}.
	URL string
	// SegmentDuration is the upstream's nominal segment duration (default 2 s); a
	// relay whose upstream has another says so and stops.
	SegmentDuration   time.Duration
	DVRWindow         time.Duration // default 60 s
	PresentationDelay time.Duration // 0: two segment durations
	ArchiveDir        string
	Log               *slog.Logger
}

// AddChannel makes a channel fed by a relay of o.URL and registers it with h, which
// runs the relay until ctx ends.
func AddChannel(ctx context.Context, h *hub.Hub, o ChannelOptions) (*hub.Channel, error) {
	if o.SegmentDuration <= 0 {
		o.SegmentDuration = 2 * time.Second
	}
	if o.DVRWindow <= 0 {
		o.DVRWindow = 60 * time.Second
	}
	c, err := hub.NewChannel(hub.ChannelConfig{
		Info:              &media.Stream{Name: o.Name, SegmentDuration: o.SegmentDuration},
		Timeline:          media.Timeline{SegmentDuration: o.SegmentDuration, TimeShiftBufferDepth: o.DVRWindow},
		PresentationDelay: o.PresentationDelay,
		ArchiveDir:        o.ArchiveDir,
	})
	if err != nil {
		return nil, err
	}
	if err := h.AddChannel(ctx, c, &Source{URL: o.URL, Log: o.Log}); err != nil {
		return nil, err
	}
	return c, nil
}
