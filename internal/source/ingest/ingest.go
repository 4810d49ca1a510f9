// Package ingest receives live CMAF from encoders over HTTP, as DASH-IF Live Media
// Ingest (Interface 1) describes it, into the hub's channels: one long-running POST
// or PUT per track to /ingest/{channel}/Streams({track}.cmfv|.cmfa), starting with
// the track's CMAF header (ftyp+moov), then its chunks (moof+mdat, each segment
// optionally opened by a styp). Each chunk is stored the moment its mdat has arrived,
// so every transport serves it within milliseconds; segments are numbered by media
// time (see segments.go) so a channel's tracks stay aligned.
//
// The layers: BoxReader reads boxes one by one from a body within Limits; Parser
// turns them into CMAF headers and chunks; Ingest is the HTTP handler that feeds
// them to the hub. docs/protocols/ingest.md is the user's description.
package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// Config is the ingest part of the serve configuration.
type Config struct {
	Limits `yaml:",inline"`
	// IdleTimeout ends a request that sends nothing for this long (a stalled or
	// vanished encoder whose connection stays open); its open segment ends. 0: 30 s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// DefaultIdleTimeout is Config.IdleTimeout's default.
const DefaultIdleTimeout = 30 * time.Second

// Ingest receives encoders' tracks into the hub's ingest channels. It is an
// http.Handler for the routes Patterns lists.
type Ingest struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	channels map[string]*channel
}

// New returns an Ingest with no channels. log may be nil.
func New(cfg Config, log *slog.Logger) *Ingest {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Ingest{cfg: cfg, log: log, channels: map[string]*channel{}}
}

// ChannelOptions configure AddChannel.
type ChannelOptions struct {
	Name  string
	Token string // the encoder's bearer token (required)
	// SegmentDuration is the nominal segment duration D that numbers segments
	// (round(start/D)) and that $Number$ MPDs announce: set it to the encoder's
	// segment (GOP) duration. 0: 2 s.
	SegmentDuration   time.Duration
	DVRWindow         time.Duration // timeShiftBufferDepth; 0: 60 s
	PresentationDelay time.Duration // MPD@suggestedPresentationDelay; 0: two segments
	MinBufferTime     time.Duration // MPD@minBufferTime; 0: one segment
	ArchiveDir        string        // optional: keep every segment on disk
	// ArchiveLength prunes archived segments older than this (0: keep all), and
	// ArchiveSegmentLength groups the archive on disk in folders of this much media
	// time (0: one folder). Publishing points' archive_length and
	// archive_segment_length.
	ArchiveLength, ArchiveSegmentLength time.Duration
	// RestartOnReconnect continues the timeline when an encoder reconnects with
	// timestamps that do not follow on (publishing points'
	// restart_on_encoder_reconnect); without it such a reconnect starts a new period.
	RestartOnReconnect bool
	Clock              hub.Clock // nil: time.Now
}

// channel is one ingest channel: its hub channel, its token and its tracks' state.
type channel struct {
	name  string
	token string
	log   *slog.Logger
	hc    *hub.Channel
	tl    *timeline
	now   hub.Clock
	life  context.Context // ends when the hub stops the channel
	stop  context.CancelFunc

	mu       sync.Mutex
	anchored bool            // the availability start is set (from the first chunk, or the archive)
	settled  map[string]bool // tracks whose first segment completion placed the start (settle)
	maxEnd   time.Duration   // media time at the end of the newest stored chunk, any track
	restart  *clockRestart   // the newest restart of the encoder's clock
	period   uint32          // the newest live period (a restart without restart_on_encoder_reconnect starts one)

	restartOnReconnect bool
	tracks             map[string]*trackState

	// templates maps the per-segment form's paths to Representations, from the
	// newest MPD the encoder sent (nil before one).
	templates atomic.Pointer[templateMatcher]
}

// AddChannel makes an empty live channel that waits for its encoder and registers it
// with h, which keeps it until it is removed or ctx ends.
func (in *Ingest) AddChannel(ctx context.Context, h *hub.Hub, o ChannelOptions) (*hub.Channel, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("ingest channel %q: no token: %w", o.Name, media.ErrBadRequest)
	}
	if o.SegmentDuration == 0 {
		o.SegmentDuration = 2 * time.Second
	}
	if o.DVRWindow == 0 {
		o.DVRWindow = 60 * time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	hc, err := hub.NewChannel(hub.ChannelConfig{
		Info:              &media.Stream{Name: o.Name, SegmentDuration: o.SegmentDuration},
		Timeline:          media.Timeline{SegmentDuration: o.SegmentDuration, TimeShiftBufferDepth: o.DVRWindow},
		PresentationDelay: o.PresentationDelay,
		MinBufferTime:     o.MinBufferTime,
		ArchiveDir:        o.ArchiveDir,
		ArchiveGroup:      o.ArchiveSegmentLength,
		ArchiveLength:     o.ArchiveLength,
		Clock:             o.Clock,
	})
	if err != nil {
		return nil, err
	}
	life, stop := context.WithCancel(context.Background())
	ch := &channel{name: o.Name, token: o.Token, log: in.log, hc: hc, tl: newTimeline(o.SegmentDuration), now: o.Clock,
		life: life, stop: stop, tracks: map[string]*trackState{}, settled: map[string]bool{},
		restartOnReconnect: o.RestartOnReconnect}
	if len(hc.Info().Tracks) > 0 {
		// Restored from the archive with its timeline: an encoder that comes back
		// continues it, and the start stays where the archive put it.
		ch.anchored = true
		w, _ := hc.Window(o.Clock())
		for _, t := range hc.Info().Tracks {
			ch.settled[t.ID] = true
			if refs := w[t.ID]; len(refs) > 0 {
				ch.maxEnd = max(ch.maxEnd, t.Duration(refs[len(refs)-1].End()))
				ch.period = max(ch.period, refs[len(refs)-1].Period)
			}
		}
	}
	in.mu.Lock()
	if _, taken := in.channels[o.Name]; taken {
		in.mu.Unlock()
		stop()
		return nil, fmt.Errorf("ingest channel %q exists already: %w", o.Name, media.ErrBadRequest)
	}
	in.channels[o.Name] = ch
	in.mu.Unlock()
	if err := h.AddChannel(ctx, hc, &source{in: in, ch: ch}); err != nil {
		in.mu.Lock()
		delete(in.channels, o.Name)
		in.mu.Unlock()
		stop()
		return nil, err
	}
	return hc, nil
}

// source ties an ingest channel's life to the hub's: when the hub stops the channel
// (removed, or shutdown), the requests feeding it end and its name is free again.
type source struct {
	in *Ingest
	ch *channel
}

func (s *source) Run(ctx context.Context, _ *hub.Channel) error {
	<-ctx.Done()
	s.ch.stop()
	s.in.mu.Lock()
	if s.in.channels[s.ch.name] == s.ch {
		delete(s.in.channels, s.ch.name)
	}
	s.in.mu.Unlock()
	return nil
}

func (in *Ingest) channel(name string) (*channel, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if ch, ok := in.channels[name]; ok && ch.life.Err() == nil {
		return ch, nil
	}
	return nil, fmt.Errorf("no ingest channel %q: %w", name, media.ErrNotFound)
}

// TrackStatus is what an ingest channel knows of one of its tracks.
type TrackStatus struct {
	ID        string        `json:"id"`
	Connected bool          `json:"connected"`           // a request (or several: redundant encoders) is feeding it now
	Ended     bool          `json:"ended"`               // its encoder sent lmsg
	Chunks    int64         `json:"chunks"`              // stored
	Dropped   int64         `json:"dropped"`             // duplicates and video before a keyframe
	Bytes     int64         `json:"bytes"`               // of the chunks stored
	Latency   time.Duration `json:"latency_ns"`          // arrival minus the newest prft's wall-clock time
	LastChunk time.Time     `json:"last_chunk,omitzero"` // when the newest chunk arrived
	// Misaligned says why the track is kept out of the manifests: its segment
	// boundaries disagree with the reference rung's.
	Misaligned string `json:"misaligned,omitempty"`
}

// Status lists the tracks of ingest channel name that encoders have sent.
func (in *Ingest) Status(name string) ([]TrackStatus, error) {
	ch, err := in.channel(name)
	if err != nil {
		return nil, err
	}
	// In stream order, then the tracks kept out of the manifests.
	ids := make([]string, 0, len(ch.tracks))
	for _, t := range ch.hc.Info().Tracks {
		ids = append(ids, t.ID)
	}
	excluded := ch.hc.Excluded()
	for id := range excluded {
		ids = append(ids, id)
	}
	sort.Strings(ids[len(ids)-len(excluded):])
	var out []TrackStatus
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for _, id := range ids {
		if ts, ok := ch.tracks[id]; ok {
			st := ts.stats
			st.ID, st.Connected = id, ts.sessions > 0
			out = append(out, st)
		}
	}
	return out, nil
}
