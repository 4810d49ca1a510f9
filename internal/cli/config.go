package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/publish"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/ingest"
	"github.com/streambed/streambed/internal/transport/fdsp"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// Config is the whole configuration of `streambed serve`, one YAML file with flags on
// top: the origin's own (listeners, TLS, caching, logs), the media it serves (assets
// and looped channels) and each transport's part, whose types live in the
// transports' own packages.
type Config struct {
	server.Config `yaml:",inline"`
	Assets        string          `yaml:"assets"` // folder of packaged assets (each a subfolder)
	Demo          bool            `yaml:"demo"`   // package the demo asset when missing
	Channels      []ChannelConfig `yaml:"channels"`
	H2Push        h2push.Config   `yaml:"h2push"` // HTTP/2 push: default strategy, rules file, admin token
	WSPush        wspush.Config   `yaml:"wspush"` // WebSocket push: default adaptation policy
	FDSP          fdsp.Config     `yaml:"fdsp"`   // FDSP dual TCP+UDP: listen addresses (off when empty), substream length
	Ingest        ingest.Config   `yaml:"ingest"` // encoder ingest: size limits, idle timeout
	// AdminToken protects /api/channels (publishing points); empty: one generated
	// once in data_dir/admin.token, where `streambed channel` finds it.
	AdminToken string `yaml:"admin_token"`
}

// ChannelConfig declares a live channel: one that loops a packaged asset, or a
// publishing point that an encoder feeds (DASH-IF Live Media Ingest,
// docs/protocols/ingest.md) with the options of docs/protocols/channels.md.
type ChannelConfig struct {
	Name string `yaml:"name"`
	Loop string `yaml:"loop"` // asset name
	// Ingest makes a publishing point that an encoder feeds, instead of looping an
	// asset. It starts empty and waits for its encoder.
	Ingest bool `yaml:"ingest"`
	// Relay makes a relay edge's channel: the upstream Streambed's channel at this
	// push URL (ws://HOST/ws/CHANNEL), received once and served here by every
	// transport. Its segment_duration must be the upstream's (default 2s).
	Relay string `yaml:"relay"`
	// Pull makes an edge-mode channel: the live channel of this upstream MPD
	// (Streambed's, or any DASH $Number$ MPD) pulled into the hub and packaged and
	// served here (docs/cdn.md). It takes dvr_window and ws_policy.
	Pull string `yaml:"pull"`
	// IngestToken is the encoder's bearer token; empty: one generated once and kept
	// in the data folder (data_dir/ingest/NAME.token), printed at start-up.
	IngestToken string `yaml:"ingest_token"`
	// Preset and the publishing-point options (archiving, archive_length,
	// archive_segment_length, dvr_window_length, restart_on_encoder_reconnect,
	// segment_addressing, segment_duration, min_buffer_time,
	// suggested_presentation_delay, hls_fmp4) are for `ingest: true` channels.
	Preset          string `yaml:"preset"`
	publish.Options `yaml:",inline"`
	// DVRWindow is the time-shift buffer (MPD@timeShiftBufferDepth).
	DVRWindow time.Duration `yaml:"dvr_window"`
	// ChunkDuration splits segments into chunks for push and low latency; 0: one chunk
	// per segment. One frame (e.g. 40ms at 25 fps) gives the lowest latency.
	ChunkDuration time.Duration `yaml:"chunk_duration"`
	// PresentationDelay is MPD@suggestedPresentationDelay; 0: two segment durations.
	PresentationDelay time.Duration `yaml:"presentation_delay"`
	// AvailabilityStart anchors the channel's timeline; zero: 2024-01-01T00:00:00Z.
	// A fixed anchor means the same URL yields the same bytes across restarts and origins.
	AvailabilityStart time.Time `yaml:"availability_start"`
	WSPolicy          string    `yaml:"ws_policy"` // WebSocket push adaptation: tcp (default), buffer or fixed
	// Archive, when set, is a folder that receives every segment of the channel as it
	// becomes available, laid out like a packaged asset: a recording beyond the DVR window.
	Archive string `yaml:"archive"`
}

// DefaultConfig is the embedded demo: channels "demo" (one chunk per segment) and
// "demo-ll" (one-frame chunks: low-latency DASH and WebSocket push) looping asset
// "demo".
func DefaultConfig() Config {
	cfg := Config{Config: server.DefaultConfig(), Demo: true}
	cfg.Assets = filepath.Join(cfg.DataDir, "assets")
	cfg.Channels = []ChannelConfig{
		{Name: "demo", Loop: "demo", DVRWindow: 60 * time.Second},
		{Name: "demo-ll", Loop: "demo", DVRWindow: 60 * time.Second, ChunkDuration: 40 * time.Millisecond},
	}
	return cfg
}

// LoadConfig reads a YAML file over the defaults. Unknown keys are errors, so a typo
// does not silently fall back to a default.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	f, err := os.Open(path)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, cfg.Validate()
}

// Validate checks the configuration for mistakes a person can fix.
func (c *Config) Validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if c.Ingest.MaxBox < 0 || c.Ingest.MaxRequest < 0 || c.Ingest.IdleTimeout < 0 {
		return fmt.Errorf("config: ingest limits and idle_timeout cannot be negative")
	}
	seen := map[string]bool{}
	for _, ch := range c.Channels {
		if !media.ValidName(ch.Name) || seen[ch.Name] {
			return fmt.Errorf("config: channel name %q is invalid or repeated (use letters, digits, . _ -)", ch.Name)
		}
		seen[ch.Name] = true
		kinds := 0
		for _, set := range []bool{ch.Loop != "", ch.Ingest, ch.Relay != "", ch.Pull != ""} {
			if set {
				kinds++
			}
		}
		relayOpts := ch.Options
		relayOpts.SegmentDuration = 0
		switch {
		case kinds == 0:
			return fmt.Errorf("config: channel %q needs `loop: ASSET`, `ingest: true`, `relay: ws://HOST/ws/CHANNEL` or `pull: MPD_URL`", ch.Name)
		case kinds > 1:
			return fmt.Errorf("config: channel %q has more than one of `loop`, `ingest`, `relay` and `pull`: choose one", ch.Name)
		case ch.Pull != "" && checkPullURL(ch.Pull) != nil:
			return fmt.Errorf("config: channel %q: %w", ch.Name, checkPullURL(ch.Pull))
		case ch.Pull != "" && (ch.ChunkDuration != 0 || !ch.AvailabilityStart.IsZero() || ch.IngestToken != "" || ch.Preset != "" ||
			ch.Options != (publish.Options{}) || ch.PresentationDelay != 0 || ch.Archive != ""):
			return fmt.Errorf("config: channel %q pulls %s: its media, timeline and options come from upstream; it takes dvr_window and ws_policy only", ch.Name, ch.Pull)
		case ch.Relay != "" && !strings.HasPrefix(ch.Relay, "ws://") && !strings.HasPrefix(ch.Relay, "wss://"):
			return fmt.Errorf("config: channel %q: relay %q is not a push URL: want ws://HOST/ws/CHANNEL (or wss://)", ch.Name, ch.Relay)
		case ch.Relay != "" && (ch.ChunkDuration != 0 || !ch.AvailabilityStart.IsZero() || ch.IngestToken != "" || ch.Preset != "" || relayOpts != (publish.Options{})):
			return fmt.Errorf("config: channel %q relays %s: its chunks and timeline come from upstream; it takes segment_duration, dvr_window, presentation_delay, archive and ws_policy only", ch.Name, ch.Relay)
		case ch.Ingest && (ch.ChunkDuration != 0 || !ch.AvailabilityStart.IsZero()):
			return fmt.Errorf("config: channel %q takes ingest: its chunks and timeline come from the encoder (no chunk_duration or availability_start)", ch.Name)
		case ch.Ingest && (ch.DVRWindow != 0 || ch.PresentationDelay != 0 || ch.Archive != ""):
			return fmt.Errorf("config: channel %q takes ingest: write its options as a publishing point's (dvr_window_length, suggested_presentation_delay, archiving: true / archive_dir; docs/protocols/channels.md)", ch.Name)
		case ch.Loop != "" && (ch.IngestToken != "" || ch.Preset != "" || ch.Options != (publish.Options{})):
			return fmt.Errorf("config: channel %q loops an asset: ingest_token, preset and the publishing-point options are for `ingest: true` channels", ch.Name)
		}
		if ch.Ingest {
			if _, err := publish.Resolve(ch.Preset, ch.Options); err != nil {
				return fmt.Errorf("config: channel %q: %w", ch.Name, err)
			}
		}
		if ch.DVRWindow < 0 || ch.ChunkDuration < 0 || ch.PresentationDelay < 0 {
			return fmt.Errorf("config: channel %q has a negative duration", ch.Name)
		}
		if ch.Loop != "" && ch.ChunkDuration > 0 {
			if err := c.CheckPartHoldBack(ch.Name, ch.ChunkDuration); err != nil {
				return err // its part target is known: an encoder's is only once it sends
			}
		}
		if ch.WSPolicy != "" {
			if _, err := wspush.NewPolicy(ch.WSPolicy); err != nil {
				return fmt.Errorf("config: channel %q: ws_policy: %w", ch.Name, err)
			}
		}
	}
	return nil
}

// wsPushConfig is WebSocket push's configuration with each channel's ws_policy.
func (c *Config) wsPushConfig() wspush.Config {
	ws := c.WSPush
	for _, ch := range c.Channels {
		if ch.WSPolicy == "" {
			continue
		}
		if ws.Channels == nil {
			ws.Channels = map[string]string{}
		}
		ws.Channels[ch.Name] = ch.WSPolicy
	}
	return ws
}
