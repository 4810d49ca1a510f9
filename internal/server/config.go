package server

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/streambed/streambed/internal/manifest"
)

// Config configures the HTTP origin: listeners, TLS, caching headers and logs. It
// knows no source and no transport: those configure themselves (their types live in
// their own packages) and the serve command assembles them (internal/cli).
type Config struct {
	HTTP    string      `yaml:"http"`     // HTTP/1.1 and h2c (prior knowledge) listener; "" disables
	HTTPS   string      `yaml:"https"`    // TLS listener with h2 and HTTP/1.1; "" disables
	TLSCert string      `yaml:"tls_cert"` // PEM files; empty: a self-signed pair in DataDir/tls
	TLSKey  string      `yaml:"tls_key"`
	DataDir string      `yaml:"data_dir"` // generated certificate, push rules, demo content
	Cache   CacheConfig `yaml:"cache"`
	Log     LogConfig   `yaml:"log"`
	// NetHTTPOnly turns off the lean HTTP/1.1 path for segments and manifests on the
	// plain-HTTP listener (h1fast.go), so net/http answers every request.
	NetHTTPOnly bool `yaml:"net_http_only"`
	// LeanGoroutinePerConn keeps each lean-path connection on a goroutine of its own
	// while it waits for a request, instead of in the event loops (h1event.go).
	LeanGoroutinePerConn bool `yaml:"lean_goroutine_per_conn"`
	// TCPRTOMin is the listeners' connections' minimum retransmission timeout (Linux
	// 6.15+; 0: the kernel's 200 ms). Lower, a lost tail packet of a small response
	// (an LL-HLS part or held playlist over HTTP/1.1) is resent sooner
	// (netutil.ListenRTOMin; docs/results/latency.md).
	TCPRTOMin time.Duration `yaml:"tcp_rto_min"`
	// TCPCongestion is the listeners' connections' congestion control (TCP_CONGESTION,
	// e.g. cubic or bbr; "": the system's default). On a lossy link BBR collapses its
	// pacing rate after a tail loss on an idle LL-HLS connection and the next part
	// arrives late (netutil.ListenTCP; docs/results/latency.md).
	TCPCongestion string `yaml:"tcp_congestion"`
	// TCPPacingGuard restarts a connection's congestion control before a live
	// response when its pacing rate has collapsed (BBR after a loss on an idle LL-HLS
	// connection; pacingguard.go, docs/results/latency.md). On by default.
	TCPPacingGuard bool `yaml:"tcp_pacing_guard"`
	// LLHLSPartHoldBack is the LL-HLS playlists' PART-HOLD-BACK, how far behind the
	// newest part players aim (0: three part targets, 0.6 s with 200 ms parts). More
	// leaves room for a lost packet's retransmission timeout on a lossy link
	// (docs/results/latency.md). Every LL channel gets at least two of its part targets.
	LLHLSPartHoldBack time.Duration `yaml:"ll_hls_part_hold_back"`
}

// CacheConfig sets the Cache-Control lifetimes a CDN acts on.
type CacheConfig struct {
	SegmentMaxAge      time.Duration `yaml:"segment_max_age"`       // immutable segments and inits
	VODManifestMaxAge  time.Duration `yaml:"vod_manifest_max_age"`  // on-demand MPD and playlists
	LiveManifestMaxAge time.Duration `yaml:"live_manifest_max_age"` // 0: half a segment duration; sent as an absolute Expires (docs/cdn.md)
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

// DefaultConfig listens on :8080 (HTTP/1.1, h2c) and :8443 (TLS).
func DefaultConfig() Config {
	return Config{
		HTTP:    ":8080",
		HTTPS:   ":8443",
		DataDir: DefaultDataDir(),
		Cache:   CacheConfig{SegmentMaxAge: 365 * 24 * time.Hour, VODManifestMaxAge: time.Minute, OpenFiles: 4096},
		Log:     LogConfig{Format: "text", Level: "info"},

		TCPPacingGuard: true,
	}
}

// Validate checks the configuration for mistakes a person can fix.
func (c *Config) Validate() error {
	if c.HTTP == "" && c.HTTPS == "" {
		return fmt.Errorf("config: both listeners are disabled; set http or https")
	}
	if c.TCPRTOMin != 0 && (c.TCPRTOMin < time.Millisecond || c.TCPRTOMin > 200*time.Millisecond) {
		return fmt.Errorf("config: tcp_rto_min %s: want 1ms to 200ms, or 0 for the kernel's", c.TCPRTOMin)
	}
	if err := checkPartHoldBack(c.LLHLSPartHoldBack, manifest.PartTargetGoal); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("config: tls_cert and tls_key go together")
	}
	return nil
}

// checkPartHoldBack refuses an LL-HLS PART-HOLD-BACK below two part targets of
// partTarget, the spec's floor (RFC 8216bis 4.4.3.8); 0 is the default, three.
func checkPartHoldBack(hold, partTarget time.Duration) error {
	floor := manifest.MinPartHoldBackParts * partTarget
	if hold == 0 || hold >= floor {
		return nil
	}
	return fmt.Errorf("ll_hls_part_hold_back (--ll-hls-part-hold-back) %s is below two part targets (%s with %s parts), the LL-HLS minimum: "+
		"give at least %s, or 0 for the default of three part targets (%s)",
		hold, floor, partTarget, floor, manifest.DefaultPartHoldBackParts*partTarget)
}

// CheckPartHoldBack checks the configured PART-HOLD-BACK against a channel whose
// chunks are chunk long (its part target is manifest.PartTarget(chunk)); the serve
// command calls it for every channel whose chunks it knows.
func (c *Config) CheckPartHoldBack(channel string, chunk time.Duration) error {
	if err := checkPartHoldBack(c.LLHLSPartHoldBack, manifest.PartTarget(chunk)); err != nil {
		return fmt.Errorf("config: channel %q: %w", channel, err)
	}
	return nil
}
