package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/publish"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/ingest"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/source/wsrelay"
)

// demoDuration is the synthetic demo clip: a multiple of 8 s, so 25 fps video and
// 48 kHz AAC loop seamlessly with 2 s segments.
const demoDuration = "40s"

// Serve runs the origin.
func Serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := DefaultConfig()
	var (
		configPath = fs.String("config", "", "YAML configuration `file` (flags given here override it)")
		httpAddr   = fs.String("http", def.HTTP, "HTTP/1.1 + h2c listener `address`; \"\" disables")
		httpsAddr  = fs.String("https", def.HTTPS, "TLS (h2, HTTP/1.1) listener `address`; \"\" disables")
		assets     = fs.String("assets", def.Assets, "`folder` of packaged assets, one subfolder each")
		dataDir    = fs.String("data-dir", def.DataDir, "`folder` for generated state: TLS certificate, tokens, publishing points, archives")
		tlsCert    = fs.String("tls-cert", "", "TLS certificate PEM `file` (default: self-signed, generated)")
		tlsKey     = fs.String("tls-key", "", "TLS key PEM `file`")
		noDemo     = fs.Bool("no-demo", false, "do not package the demo asset when it is missing")
		logFormat  = fs.String("log-format", def.Log.Format, "log format: text or json")
		logLevel   = fs.String("log-level", def.Log.Level, "log level: debug, info, warn, error")
		cpuProfile = fs.String("cpuprofile", "", "write a Go CPU profile to `file` until the server stops (for performance work)")
		fdspAddr   = fs.String("fdsp", "", "FDSP dual TCP+UDP transport: TCP listener `address` (e.g. :9710; UDP on the next port); \"\" (default) disables")
		rtoMin     = fs.Duration("tcp-rto-min", 0, "minimum TCP retransmission timeout of the HTTP listeners' connections (Linux 6.15+, 1ms–200ms; 0: the kernel's 200 ms): a lost tail of a small live response is resent sooner")
		tcpCC      = fs.String("tcp-cc", "", "TCP congestion control of the HTTP listeners' connections (TCP_CONGESTION), e.g. cubic or bbr; empty: the system's default. On a lossy link BBR's pacing can collapse after a tail loss on an idle LL-HLS connection (docs/results/latency.md)")
		pacing     = fs.Bool("tcp-pacing-guard", def.TCPPacingGuard, "restart a connection's congestion control (TCP_CONGESTION away and back) before a live response when its pacing rate has collapsed, as BBR's does after a loss on an idle LL-HLS connection (docs/results/latency.md); --tcp-pacing-guard=false turns it off")
		partHold   = fs.Duration("ll-hls-part-hold-back", 0, "LL-HLS PART-HOLD-BACK: how far behind the newest part players aim (at least two part targets, 400ms with 200 ms parts; 0: three part targets, 600ms); more leaves room for a retransmission timeout on a lossy link")
		fdspCC     = fs.String("fdsp-cc", "", "FDSP: TCP congestion control of the critical path (TCP_CONGESTION), e.g. cubic or bbr; \"system\" keeps the kernel's default (default cubic, the FDSP study's)")
		channels   channelFlags
		ingests    ingestFlags
		relays     relayFlags
	)
	fs.Var(&relays, "relay", "relay edge channel `NAME=ws://HOST/ws/CHANNEL[,segment=2s][,dvr=60s][,delay=4s]`: another Streambed's channel received once by WebSocket push and served here (repeatable; added to the other channels)")
	fs.Var(&channels, "channel", "live channel `NAME=ASSET[,dvr=60s][,chunk=40ms][,delay=4s][,archive=DIR]` looping a packaged asset (repeatable; replaces the demo channel; --channel \"\" for none)")
	var pulls pullList
	fs.Var(&pulls, "pull", "edge mode: live channel `NAME=MPD_URL` pulled from an upstream origin (Streambed, or a DASH $Number$ MPD) and served from this hub (repeatable; docs/cdn.md)")
	fs.Var(&ingests, "ingest", "publishing point `NAME[,preset=P][,segment=2s][,dvr=60s][,delay=4s][,token=T][,archive=DIR]` that an encoder feeds (DASH-IF ingest; presets pure-live, archive, archive-dvr; repeatable; added to the other channels)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: streambed serve [flags]

Serves packaged assets on demand and live channels that loop them, as DASH and HLS
over HTTP/1.1, h2c (prior knowledge) and TLS h2, with the player page at /.

With no flags it is the demo: the asset "demo" (packaged on first start, about a
minute) served on demand and as the live channels "demo" and "demo-ll" (one-frame
chunks: low-latency DASH and WebSocket push), on :8080 and :8443.

Channels made with --ingest (or "ingest: true" in the configuration, or
"streambed channel create" while serving) are publishing points: they start
empty and wait for an encoder to POST its tracks (docs/protocols/ingest.md);
their tokens are printed below the URLs. /api/channels manages them
(docs/protocols/channels.md).

URLs: /  /api/streams  /vod/{asset}/manifest.mpd  /vod/{asset}/master.m3u8
      /live/{channel}/manifest.mpd  /live/{channel}/manifest-timeline.mpd
      /live/{channel}/master.m3u8  /time  /metrics
      POST /ingest/{channel}/Streams({track}.cmfv|.cmfa)  (one request per track)
      PUT  /ingest/{channel}/{file}  (one per segment: FFmpeg's dash muxer, or the
           SegmentTemplate paths of the MPD it PUTs)  /api/channels
Live routes take ?nowMS=<ms since epoch> to pin the clock (for tests).

Examples:
  streambed serve
  streambed serve --assets ./assets --channel news=clip,dvr=120s --https ""
  streambed serve --channel "" --ingest studio,segment=2s
  streambed serve --config streambed.yaml
  streambed serve --channel "" --pull demo=http://origin:8080/live/demo/manifest.mpd

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	cfg := def
	if *configPath != "" {
		var err error
		if cfg, err = LoadConfig(*configPath); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "http":
			cfg.HTTP = *httpAddr
		case "https":
			cfg.HTTPS = *httpsAddr
		case "fdsp":
			cfg.FDSP.Listen = *fdspAddr
		case "fdsp-cc":
			cfg.FDSP.CC = *fdspCC
		case "tcp-rto-min":
			cfg.TCPRTOMin = *rtoMin
		case "tcp-cc":
			cfg.TCPCongestion = *tcpCC
		case "tcp-pacing-guard":
			cfg.TCPPacingGuard = *pacing
		case "ll-hls-part-hold-back":
			cfg.LLHLSPartHoldBack = *partHold
		case "assets":
			cfg.Assets = *assets
		case "data-dir":
			cfg.DataDir = *dataDir
		case "tls-cert":
			cfg.TLSCert = *tlsCert
		case "tls-key":
			cfg.TLSKey = *tlsKey
		case "no-demo":
			cfg.Demo = !*noDemo
		case "log-format":
			cfg.Log.Format = *logFormat
		case "log-level":
			cfg.Log.Level = *logLevel
		case "channel":
			cfg.Channels = channels
		}
	})
	cfg.Channels = append(cfg.Channels, ingests...)
	cfg.Channels = append(cfg.Channels, relays...)
	cfg.Channels = append(cfg.Channels, pulls...)
	if err := cfg.Validate(); err != nil {
		return err
	}
	log, err := newLogger(cfg.Log, stderr)
	if err != nil {
		return err
	}
	if cfg.Demo && usesDemo(cfg) {
		if err := prepareDemo(ctx, cfg.Assets, stderr); err != nil {
			return err
		}
	}
	h := hub.New(hub.WithLogger(log))
	defer h.Close()
	in := ingest.New(cfg.Ingest, log)
	if err := openMedia(ctx, h, cfg, log); err != nil {
		return err
	}
	points, err := openPoints(ctx, h, in, cfg, log)
	if err != nil {
		return err
	}
	adminToken, err := publish.AdminToken(cfg.DataDir, cfg.AdminToken)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	srv := server.New(cfg.Config, h, log, nil)
	for _, p := range ingest.Patterns {
		srv.Handle(p, in)
	}
	points.Routes(srv.Handle, adminToken)
	if err := attachTransports(ctx, srv, cfg); err != nil {
		return err
	}
	ls, err := srv.Listen()
	if err != nil {
		return err
	}
	printURLs(stdout, ls, h)
	printIngest(stdout, ls, points, cfg.DataDir)
	log.Info("serving", "http", addrOf(ls.HTTP), "https", addrOf(ls.HTTPS), "assets", len(h.Assets()), "channels", len(h.Channels()))
	err = srv.Serve(ctx, ls)
	log.Info("stopped")
	return err
}

// startCPUProfile profiles until the returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// usesDemo reports whether the configuration expects the demo asset.
func usesDemo(cfg Config) bool {
	for _, c := range cfg.Channels {
		if c.Loop == "demo" {
			return true
		}
	}
	return false
}

// prepareDemo packages the demo asset once, by running this binary's package command
// (so serve has no build-time dependency on the packager).
func prepareDemo(ctx context.Context, assets string, stderr io.Writer) error {
	dir := filepath.Join(assets, "demo")
	if _, err := os.Stat(filepath.Join(dir, media.AssetFile)); err == nil {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Preparing the demo asset in %s (once)...\n", dir)
	cmd := exec.CommandContext(ctx, self, "package", "--synthetic", demoDuration, "--name", "demo", "-o", dir)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("preparing the demo asset failed (%w); run `streambed package --synthetic %s -o %s` to see why, or serve with --no-demo", err, demoDuration, dir)
	}
	return nil
}

// openMedia opens the assets into h and registers the looped live channels, whose
// sources the hub runs until ctx ends.
func openMedia(ctx context.Context, h *hub.Hub, cfg Config, log *slog.Logger) error {
	if err := os.MkdirAll(cfg.Assets, 0o755); err != nil {
		return fmt.Errorf("assets folder: %w", err)
	}
	assets, errs := hub.OpenAssets(cfg.Assets)
	for _, err := range errs {
		log.Warn("skipping asset", "err", err)
	}
	for _, a := range assets {
		h.AddAsset(a)
	}
	for _, cc := range cfg.Channels {
		if cc.Ingest {
			continue
		}
		if cc.Pull != "" {
			if err := addPull(ctx, h, cc, log); err != nil {
				return err
			}
			continue
		}
		if cc.Relay != "" {
			if _, err := wsrelay.AddChannel(ctx, h, wsrelay.ChannelOptions{
				Name: cc.Name, URL: cc.Relay, SegmentDuration: time.Duration(cc.SegmentDuration), DVRWindow: cc.DVRWindow,
				PresentationDelay: cc.PresentationDelay, ArchiveDir: cc.Archive, Log: log,
			}); err != nil {
				return fmt.Errorf("channel %q: %w", cc.Name, err)
			}
			continue
		}
		a, err := h.Asset(cc.Loop)
		if err != nil {
			return fmt.Errorf("channel %q loops asset %q, which is not in %s: package it with `streambed package IN -o %s`",
				cc.Name, cc.Loop, cfg.Assets, filepath.Join(cfg.Assets, cc.Loop))
		}
		ast := cc.AvailabilityStart
		if ast.IsZero() {
			ast = looplive.DefaultAvailabilityStart
		}
		if _, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{
			Name: cc.Name, ChunkDuration: cc.ChunkDuration, DVRWindow: cc.DVRWindow, PresentationDelay: cc.PresentationDelay,
			AvailabilityStart: ast, ArchiveDir: cc.Archive,
		}); err != nil {
			return err
		}
	}
	return nil
}

// openPoints starts the publishing points: those of the configuration, then those
// made through /api/channels by an earlier run.
func openPoints(ctx context.Context, h *hub.Hub, in *ingest.Ingest, cfg Config, log *slog.Logger) (*publish.Points, error) {
	pts := publish.New(ctx, h, in, cfg.DataDir, log)
	pts.AssetsDir = cfg.Assets // clips cut from archives are assets, served again after a restart
	for _, cc := range cfg.Channels {
		if !cc.Ingest {
			continue
		}
		if _, err := pts.AddConfigured(publish.Spec{Name: cc.Name, Preset: cc.Preset, Options: cc.Options, Token: cc.IngestToken}); err != nil {
			return nil, fmt.Errorf("channel %q: %w", cc.Name, err)
		}
	}
	if err := pts.Restore(); err != nil {
		return nil, err
	}
	return pts, nil
}

// printIngest tells where each publishing point's encoder sends its tracks.
func printIngest(w io.Writer, ls *server.Listeners, pts *publish.Points, dataDir string) {
	base := ""
	switch {
	case ls.HTTP != nil:
		base = "http://" + displayAddr(ls.HTTP.Addr())
	case ls.HTTPS != nil:
		base = "https://" + displayAddr(ls.HTTPS.Addr())
	}
	for _, p := range pts.List() {
		fmt.Fprintf(w, "  ingest %-8s POST %s%s  (and audio .cmfa)  Authorization: Bearer %s\n",
			p.Name, base, ingest.Path(p.Name, "{track}", "cmfv"), p.Token)
	}
	if base != "" {
		fmt.Fprintf(w, "  channels API %s/api/channels (admin token in %s, or admin_token in the configuration); `streambed channel --help`\n",
			base, publish.AdminTokenFile(dataDir))
	}
}

func newLogger(c server.LogConfig, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: use text or json", c.Format)
}

func printURLs(w io.Writer, ls *server.Listeners, h *hub.Hub) {
	base := ""
	if ls.HTTP != nil {
		base = "http://" + displayAddr(ls.HTTP.Addr())
		fmt.Fprintf(w, "Streambed is serving. Player: %s/\n", base)
	}
	if ls.HTTPS != nil {
		fmt.Fprintf(w, "TLS (h2, self-signed unless configured): https://%s/\n", displayAddr(ls.HTTPS.Addr()))
		if base != "" {
			// web/src/h2.ts: hls.js meets the lossy LL-HLS goal over HTTP/2, not HTTP/1.1.
			fmt.Fprintf(w, "  LL-HLS in the page goes over HTTP/2 (this TLS port) once the browser trusts the certificate: open https://%s/ once\n", displayAddr(ls.HTTPS.Addr()))
		}
		if base == "" {
			base = "https://" + displayAddr(ls.HTTPS.Addr())
		}
	}
	for _, c := range h.Channels() {
		n := c.Info().Name
		fmt.Fprintf(w, "  live %-10s %s%s  %s%s\n", n, base, layout.Manifest(true, n, layout.MPD), base, layout.Manifest(true, n, layout.Master))
	}
	for _, a := range h.Assets() {
		n := a.Info().Name
		fmt.Fprintf(w, "  vod  %-10s %s%s  %s%s\n", n, base, layout.Manifest(false, n, layout.MPD), base, layout.Manifest(false, n, layout.Master))
	}
}

// displayAddr shows a wildcard listener as localhost, which a person can open.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// channelFlags parses repeated --channel NAME=ASSET[,dvr=D][,chunk=D][,delay=D].
type channelFlags []ChannelConfig

func (c *channelFlags) String() string { return "" }

func (c *channelFlags) Set(v string) error {
	if v == "" { // --channel "": no live channels at all
		*c = channelFlags{}
		return nil
	}
	parts := strings.Split(v, ",")
	name, asset, ok := strings.Cut(parts[0], "=")
	if !ok || name == "" || asset == "" {
		return errors.New("want NAME=ASSET, e.g. demo=demo")
	}
	cc := ChannelConfig{Name: name, Loop: asset}
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(p, "=")
		var d time.Duration
		if k != "archive" {
			var err error
			if d, err = time.ParseDuration(val); err != nil {
				return fmt.Errorf("%s=%q: %w", k, val, err)
			}
		}
		switch k {
		case "dvr":
			cc.DVRWindow = d
		case "chunk":
			cc.ChunkDuration = d
		case "delay":
			cc.PresentationDelay = d
		case "archive":
			cc.Archive = val
		default:
			return fmt.Errorf("unknown channel option %q (dvr, chunk, delay, archive)", k)
		}
	}
	*c = append(*c, cc)
	return nil
}

// relayFlags parses repeated --relay NAME=URL[,segment=D][,dvr=D][,delay=D].
type relayFlags []ChannelConfig

func (c *relayFlags) String() string { return "" }

func (c *relayFlags) Set(v string) error {
	const want = "NAME=ws://HOST/ws/CHANNEL[,segment=2s][,dvr=60s][,delay=4s]"
	parts := strings.Split(v, ",")
	name, url, ok := strings.Cut(parts[0], "=")
	if !ok || name == "" || url == "" {
		return errors.New("want " + want)
	}
	cc := ChannelConfig{Name: name, Relay: url}
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(p, "=")
		var d time.Duration
		if err := (secondsOrDuration{&d}).Set(val); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		switch k {
		case "segment":
			cc.SegmentDuration = publish.Duration(d)
		case "dvr":
			cc.DVRWindow = d
		case "delay":
			cc.PresentationDelay = d
		default:
			return fmt.Errorf("unknown relay option %q: want %s", k, want)
		}
	}
	*c = append(*c, cc)
	return nil
}

// ingestFlags parses repeated --ingest NAME[,segment=D][,dvr=D][,delay=D][,token=T][,archive=DIR].
type ingestFlags []ChannelConfig

func (c *ingestFlags) String() string { return "" }

func (c *ingestFlags) Set(v string) error {
	const want = "NAME[,preset=pure-live|archive|archive-dvr][,segment=2s][,dvr=60s][,delay=4s][,token=T][,archive=DIR]"
	parts := strings.Split(v, ",")
	cc := ChannelConfig{Name: parts[0], Ingest: true}
	if cc.Name == "" {
		return errors.New("want " + want)
	}
	for _, p := range parts[1:] {
		k, val, _ := strings.Cut(p, "=")
		var d publish.Duration
		if k == "segment" || k == "dvr" || k == "delay" {
			var err error
			if d, err = publish.ParseDuration(val); err != nil {
				return fmt.Errorf("%s=%q: %w", k, val, err)
			}
		}
		switch k {
		case "preset":
			cc.Preset = val
		case "segment":
			cc.SegmentDuration = d
		case "dvr":
			cc.DVRWindowLength = d
		case "delay":
			cc.SuggestedPresentationDelay = d
		case "token":
			cc.IngestToken = val
		case "archive":
			cc.Archiving, cc.ArchiveDir = true, val
		default:
			return fmt.Errorf("unknown ingest channel option %q: want %s", k, want)
		}
	}
	*c = append(*c, cc)
	return nil
}
