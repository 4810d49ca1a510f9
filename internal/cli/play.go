package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/hls"
)

const playUsage = `Usage: streambed play URL [flags]

Plays a DASH MPD (or an HLS multivariant playlist, URL ending in .m3u8) headlessly:
downloads segments in real time as a player would, without decoding them, and
reports quality of experience. On-demand streams play to the end (or --duration);
live streams start --live-delay behind the live edge and play until --duration or
Ctrl-C.

Transports:
  http1   HTTP/1.1 over TCP or TLS
  h2      HTTP/2 over TLS (https URLs; --insecure for self-signed certificates)
  h2c     HTTP/2 over cleartext TCP, prior knowledge (http URLs)
  pars    ParS: each segment as N byte ranges over N HTTP/1.1 connections at once;
          --connections N (1..8) or auto (the model X_N = N·C/(N+M) picks N; default)
  parallel  N HTTP/1.1 connections each fetching a different segment (--connections N, default 4)
  ws      WebSocket push (ws://HOST/ws/CHANNEL, ws://HOST/ws/vod/ASSET, or the stream's
          MPD URL): the server pushes every segment and chooses the rendition; the
          player's --abr is overruled. ?policy=buffer|tcp|fixed&maxBitrate=BPS on the URL
  h2push-STRATEGY, h2cpush-STRATEGY
          HTTP/2 (TLS, cleartext) with server push: sends ?push=STRATEGY (none, all,
          init, init-first, audio, kK) and claims pushed responses before requesting
  fdsp, fdsp-tcp, fdsp-udp
          FDSP dual TCP+UDP (the origin serves it with --fdsp ADDR; found through
          /api/streams): headers, parameter sets and --bp % of I-frame data on TCP,
          the rest as RTP over UDP; fdsp-tcp and fdsp-udp are the all-TCP and
          all-UDP baselines. Lost UDP packets are NACKed and resent while their
          deadline allows (--repair=false: the study's design, no repair).
          --output FILE|- writes the received H.264 (Annex-B);
          the report adds bp, plr, rebuffer_ms, rebuffer_count, decodable and
          "fdsp" (the session's counters). See docs/protocols/fdsp.md.
  (default: h2 for https URLs, http1 for http URLs, ws for ws(s) URLs)

ABR rules (--abr):
  throughput      highest rendition under 90% of the estimated throughput (default)
  bba             buffer-based BBA-0: reservoir 20%, cushion 60% of the buffer target
  bola            BOLA-BASIC with dash.js parameters
  fixed:TRACKID   always TRACKID (other adaptation sets use throughput)

Report (--json prints one object on stdout; otherwise a summary):
  startup_delay_ms  session start (before the manifest request) to playback start
  stall_count, stall_ms   rebuffering after start-up (start-up is not a stall)
  switches          changes of the played video rendition; switch_events lists them
  avg_bitrate_kbps  declared bandwidth of played video, time-weighted; per_track_s
  played_s, session_s
  requests, media_requests, pushed
  payload_bytes     response bodies; media_bytes: init and media segments only
  overhead_bytes    wire_bytes − payload_bytes, counted on the sockets (overhead_source
                    "socket"): HTTP headers, chunked framing, HTTP/2 frames and control,
                    TLS records and handshakes; not TCP/IP headers.
                    per_request_overhead_bytes: sum per exchange (exact for HTTP/1.1,
                    HPACK + frame-header estimate for HTTP/2)
  throughput_kbps   media bytes over the time spent downloading them
  link_utilisation  media bits per second of session ÷ --link-rate (null without it)
  latency_ms        live: mean of (wall clock − wall time of the playhead), with the
                    clock synchronised to the MPD's UTCTiming source; null on demand.
                    One definition for every transport (the browser page's too)
  target_latency_ms, target_source, chunk_appends, playback_rate_min/max
                    low-latency live (a transport that reports chunks: http1, h2, h2c,
                    h2push, ws; not pars or parallel): media is appended chunk by chunk as it arrives, play
                    starts the target behind the live edge and keeps it by playback
                    rate, as dash.js does. The target comes from the MPD's
                    ServiceDescription (LL-DASH; rates within its PlaybackRate), the
                    browser page's rule for ws push (max(0.5 s, one chunk + 0.4 s, the
                    received edge's lag + 0.5 s); rates 0.95–1.1), LL-HLS's
                    PART-HOLD-BACK (played by parts as hls.js does: the parts listed,
                    blocking playlist reloads, hls.js's start and speed-up-only
                    catch-up), or --live-delay
  samples           time series every --sample-interval: t, buffer_s, bitrate_kbps,
                    state, latency_ms
  transport, protocol, end_reason (ended, duration, canceled, error)
  connections       pars/parallel: connections per segment (auto: the last N chosen);
                    with auto also capacity_kbps, competing_flows (the model's C and M)
                    and estimator_note (how N was chosen, or why the model did not apply)

Progress goes to stderr: one updating line on a terminal, a line every 5 s otherwise.

Flags:
`

// Play runs `streambed play`.
func Play(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("play", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		transport   = fs.String("transport", "", "http1, h2, h2c, pars, parallel, ws, h2push-STRATEGY or h2cpush-STRATEGY (default: h2 for https, http1 for http, ws for ws)")
		connections = fs.String("connections", "", "pars: N (1..8) or auto (default auto); parallel: N (default 4)")
		parsPipe    = fs.Bool("pars-pipeline", true, "pars: pipelined HTTP/1.1 (each connection asks for its next range before the current one ends) and two ranges per connection and segment; =false: one request and one range per connection at a time")
		duration    = durationFlag(fs, "duration", 0, "stop after this much session time (0: to the end; live: until interrupted)")
		asJSON      = fs.Bool("json", false, "print the report as one JSON object on stdout")
		abrSpec     = fs.String("abr", "throughput", "ABR rule: throughput, bba, bola or fixed:TRACKID")
		insecure    = fs.Bool("insecure", false, "accept any TLS certificate (self-signed origins)")
		linkRate    = fs.String("link-rate", "", "bandwidth of the bottleneck link, e.g. 10M, 2.5Mbit, 800k (for link_utilisation)")
		maxBuffer   = durationFlag(fs, "buffer", 30*time.Second, "stop requesting above this buffer level (the ABR buffer target)")
		startBuffer = durationFlag(fs, "startup-buffer", 0, "buffer level that starts and resumes playback (0: one segment)")
		liveDelay   = durationFlag(fs, "live-delay", 0, "live: distance behind the live edge (0: MPD suggestedPresentationDelay, else 3 segments; low-latency live: the target latency, default the ServiceDescription's or the push rule's)")
		sampleEvery = durationFlag(fs, "sample-interval", time.Second, "period of the report's time series")
		reqTimeout  = durationFlag(fs, "request-timeout", 30*time.Second, "give up on a request after this long and retry (0: never)")
		pushWait    = durationFlag(fs, "push-wait", 0, "push transports: wait this long for a pushed segment before requesting it (default: ws 4s, which lets the server's rendition choice stand; others 0)")
		sequential  = fs.Bool("sequential", false, "one request at a time for the whole player (default: audio and video download concurrently, one request each, as dash.js)")
		noSamples   = fs.Bool("no-samples", false, "leave the time series out of the JSON report")
		quiet       = fs.Bool("quiet", false, "no progress on stderr")
		verbose     = fs.Bool("v", false, "log requests and retries to stderr")
		fdspFlags   = addFDSPFlags(fs)
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), playUsage)
		fs.PrintDefaults()
	}
	pos, err := parseOneURL(fs, args)
	if err != nil {
		return err
	}
	u, err := url.Parse(pos[0])
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL (http://, https://)", pos[0])
	}
	if *transport == "" {
		*transport = defaultTransport(u)
	}
	if isFDSP(*transport) {
		return playFDSP(ctx, u, *transport, fdspFlags, fdspRun{Duration: *duration, JSON: *asJSON, Insecure: *insecure, Quiet: *quiet, Sample: *sampleEvery, NoSamples: *noSamples}, stdout, stderr)
	}
	rule, err := abr.Parse(*abrSpec)
	if err != nil {
		return err
	}
	var rate float64
	if *linkRate != "" {
		if rate, err = ParseBitRate(*linkRate); err != nil {
			return err
		}
	}
	client, err := newPlayTransport(*transport, u, playTransportOptions{Insecure: *insecure, Connections: *connections, NoParSPipeline: !*parsPipe})
	if err != nil {
		return err
	}
	defer client.Close()
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if !flagSet(fs, "push-wait") {
		*pushWait = client.PushWait
	}
	load := dash.Load
	if strings.HasSuffix(strings.ToLower(u.Path), ".m3u8") {
		load = hls.NewLoader()
	}
	p, err := player.New(player.Config{
		URL: u.String(), Fetcher: client.Fetcher, Load: load, ABR: rule,
		Duration: *duration, MaxBuffer: *maxBuffer, StartupBuffer: *startBuffer, ResumeBuffer: *startBuffer,
		LiveDelay: *liveDelay, SampleInterval: *sampleEvery, RequestTimeout: *reqTimeout, Sequential: *sequential,
		Transport: client.Name, LinkRate: rate, Logger: logger, PushWait: *pushWait,
	})
	if err != nil {
		return err
	}
	stop := func() {}
	if !*quiet {
		stop = progress(p, stderr)
	}
	rep, runErr := p.Run(ctx)
	stop()
	client.annotate(&rep)
	if *noSamples {
		rep.Samples = nil
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.WriteSummary(stdout)
	}
	return runErr
}

// progress prints the player's status on w until the returned stop is called.
func progress(p *player.Player, w io.Writer) (stop func()) {
	tty := isTerminal(w)
	every := 5 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-t.C:
				line := statusLine(p.Status())
				if tty {
					fmt.Fprint(w, "\r\033[K"+line)
				} else {
					fmt.Fprintln(w, line)
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

func statusLine(s player.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %6.1fs  pos %6.1fs  buf %5.1fs", s.State, s.Session.Seconds(), s.Position.Seconds(), s.Buffer.Seconds())
	if s.Rendition != "" {
		fmt.Fprintf(&b, "  %s %.0f kbit/s", s.Rendition, s.BitrateKbps)
	}
	fmt.Fprintf(&b, "  stalls %d (%.1fs)  switches %d", s.Stalls, s.StallTime.Seconds(), s.Switches)
	if s.Latency != nil {
		fmt.Fprintf(&b, "  latency %.2fs", s.Latency.Seconds())
		if s.TargetLatency > 0 {
			fmt.Fprintf(&b, " (target %.2fs, rate %.2f)", s.TargetLatency.Seconds(), s.PlaybackRate)
		}
	}
	fmt.Fprintf(&b, "  %.1f MB in %d req  est %.0f kbit/s", float64(s.Bytes)/1e6, s.Requests, s.Throughput/1000)
	return b.String()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ParseBitRate parses a bit rate such as "10M", "2.5Mbit", "800k", "800kbps" or
// "1000000" into bit/s (decimal prefixes).
func ParseBitRate(s string) (float64, error) {
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	for _, suf := range []string{"bit/s", "bps", "bit", "b"} {
		if strings.HasSuffix(s, suf) {
			s = strings.TrimSuffix(s, suf)
			break
		}
	}
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "m"):
		mult, s = 1e6, strings.TrimSuffix(s, "m")
	case strings.HasSuffix(s, "g"):
		mult, s = 1e9, strings.TrimSuffix(s, "g")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("link rate %q: want a positive bit rate such as 10M or 800k", orig)
	}
	return v * mult, nil
}

// flagSet says whether the command line set the flag called name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseOneURL parses flags that may come before or after the one positional
// argument, a URL, and returns it; otherwise it prints the usage and says why.
func parseOneURL(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 {
		fs.Usage()
		return nil, fmt.Errorf("want exactly one URL, got %d arguments", len(pos))
	}
	return pos, nil
}
