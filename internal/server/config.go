package server

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/transport/h2push"
)

// Config is the whole server configuration: a YAML file, then flags on top.
type Config struct {
	HTTP     string          `yaml:"http"`     // HTTP/1.1 and h2c (prior knowledge) listener; "" disables
	HTTPS    string          `yaml:"https"`    // TLS listener with h2 and HTTP/1.1; "" disables
	TLSCert  string          `yaml:"tls_cert"` // PEM files; empty: a self-signed pair in DataDir/tls
	TLSKey   string          `yaml:"tls_key"`
	Assets   string          `yaml:"assets"`   // folder of packaged assets (each a subfolder)
	DataDir  string          `yaml:"data_dir"` // generated certificate and demo content
	Demo     bool            `yaml:"demo"`     // package the demo asset when missing
	Channels []ChannelConfig `yaml:"channels"`
	Cache    CacheConfig     `yaml:"cache"`
	Log      LogConfig       `yaml:"log"`
	H2Push   h2push.Config   `yaml:"h2push"` // HTTP/2 push: default strategy, rules file, admin token
}

// ChannelConfig declares a live channel that loops a packaged asset.
type ChannelConfig struct {
	Name string `yaml:"name"`
	Loop string `yaml:"loop"` // asset name
	// DVRWindow is the time-shift buffer (MPD@timeShiftBufferDepth).
	DVRWindow time.Duration `yaml:"dvr_window"`
	// ChunkDuration splits segments into chunks for push and low latency; 0: one chunk
	// per segment. One frame (e.g. 40ms at 25 fps) gives the lowest latency.
	ChunkDuration time.Duration `yaml:"chunk_duration"`
	// PresentationDelay is MPD@suggestedPresentationDelay; 0: two segment durations.
	PresentationDelay time.Duration `yaml:"presentation_delay"`
	// AvailabilityStart anchors the channel's timeline; zero: DefaultAvailabilityStart.
	// A fixed anchor means the same URL yields the same bytes across restarts and origins.
	AvailabilityStart time.Time `yaml:"availability_start"`
	WSPolicy          string    `yaml:"ws_policy"` // WebSocket push adaptation: tcp (default), buffer or fixed
	// Archive, when set, is a folder that receives every segment of the channel as it
	// becomes available, laid out like a packaged asset: a recording beyond the DVR window.
	Archive string `yaml:"archive"`
}

// DefaultAvailabilityStart anchors looped channels. Not the Unix epoch (as livesim2
// uses): FFmpeg's DASH demuxer (5.1) takes availabilityStartTime=1970 for "absent" and
// then computes a $Number$ hours in the future, so ffprobe could not open the channel.
var DefaultAvailabilityStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// CacheConfig sets the Cache-Control lifetimes a CDN acts on.
type CacheConfig struct {
	SegmentMaxAge      time.Duration `yaml:"segment_max_age"`       // immutable segments and inits
	VODManifestMaxAge  time.Duration `yaml:"vod_manifest_max_age"`  // on-demand MPD and playlists
	LiveManifestMaxAge time.Duration `yaml:"live_manifest_max_age"` // 0: half a segment duration
	// OpenFiles keeps up to this many segment file descriptors open for reuse (0: open
	// and close a file per request), like nginx's open_file_cache.
	OpenFiles int `yaml:"open_files"`
}

// LogConfig selects the log format and level.
type LogConfig struct {
	Format string `yaml:"format"` // text or json
	Level  string `yaml:"level"`  // debug, info, warn, error
}

// DefaultDataDir is where generated state goes: $XDG_CACHE_HOME/streambed or ~/.cache/streambed.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "streambed")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "streambed")
	}
	return ".streambed"
}

// DefaultConfig is the embedded demo: channel "demo" looping asset "demo".
func DefaultConfig() Config {
	data := DefaultDataDir()
	return Config{
		HTTP:    ":8080",
		HTTPS:   ":8443",
		Assets:  filepath.Join(data, "assets"),
		DataDir: data,
		Demo:    true,
		Channels: []ChannelConfig{{
			Name: "demo", Loop: "demo", DVRWindow: 60 * time.Second,
		}},
		Cache: CacheConfig{SegmentMaxAge: 365 * 24 * time.Hour, VODManifestMaxAge: time.Minute, OpenFiles: 4096},
		Log:   LogConfig{Format: "text", Level: "info"},
	}
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
	if c.HTTP == "" && c.HTTPS == "" {
		return fmt.Errorf("config: both listeners are disabled; set http or https")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("config: tls_cert and tls_key go together")
	}
	seen := map[string]bool{}
	for _, ch := range c.Channels {
		if !media.ValidName(ch.Name) || seen[ch.Name] {
			return fmt.Errorf("config: channel name %q is invalid or repeated (use letters, digits, . _ -)", ch.Name)
		}
		seen[ch.Name] = true
		if ch.Loop == "" {
			return fmt.Errorf("config: channel %q needs `loop: ASSET`", ch.Name)
		}
		if ch.DVRWindow < 0 || ch.ChunkDuration < 0 || ch.PresentationDelay < 0 {
			return fmt.Errorf("config: channel %q has a negative duration", ch.Name)
		}
	}
	return nil
}
