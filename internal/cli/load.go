package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/lab/load"
)

const loadUsage = `Usage: streambed load URL [flags]

Runs N concurrent lightweight clients of a live channel and reports what each
received: WebSocket push (ws), HTTP/1.1 pull (http1) or HTTP/2 pull (http2: h2c on
http URLs). URL is ws://HOST/ws/CHANNEL or http://HOST/live/CHANNEL/manifest.mpd;
every transport receives the same tracks (--tracks; default the highest video rung
and the first audio track), push sessions at the fixed policy.

Lists run as steps, every transport at every client count, one after another:
  streambed load ws://127.0.0.1:8080/ws/demo --transport ws,http1 --clients 100,200,400

Per step: received bitrate per client (media bits ÷ session time), the encoded
bitrate (measured once on the newest segments), the share of clients at or above 95%
of it, bytes on the wire (counted on the client sockets) and overhead per chunk, and the
origin's CPU and memory from its /metrics (heap + stack per client). The inflexion
point of a transport is the largest client count whose share is at least --most.
--idle opens WebSocket sockets that send no start message (memory per idle socket;
the origin closes them after its 30 s start timeout).
--server-pids measures a server that is not Streambed (nginx serving the channel's
archive by pull: bench/ws-capacity-nginx.sh): CPU and RSS come from /proc/PID/stat of
those processes; memory per client is then not reported.

Keep steps bounded: clients and origin share this machine's cores.

The workload generator (players' request loops, ramps, Poisson arrivals, mergeable
reports) is 'streambed load --mode dash-live|hls-live|abr URL': see
'streambed load --mode dash-live -h'.

Flags:
`

// Load runs `streambed load`.
func Load(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if isWorkload(args) { // --mode or merge: the workload generator (load_workload.go)
		return loadWorkload(ctx, args, stdout, stderr)
	}
	if isSoak(args) { // --soak: a long mixed run (load_soak.go)
		return loadSoak(ctx, args, stdout, stderr)
	}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		transports = fs.String("transport", "ws", "comma-separated: ws, http1, http2")
		clients    = fs.String("clients", "10", "comma-separated client counts (steps)")
		duration   = durationFlag(fs, "duration", 20*time.Second, "each client's session")
		ramp       = durationFlag(fs, "ramp", 0, "spread client starts over this (0: min(duration/4, 2s))")
		pause      = durationFlag(fs, "pause", 3*time.Second, "rest between steps")
		tracks     = fs.String("tracks", "", "comma-separated track IDs to receive (default: top video rung and first audio)")
		idle       = fs.Bool("idle", false, "ws only: open sockets that never start (memory per idle socket)")
		most       = fs.Float64("most", 0.9, "share of clients that must keep up for a step to count toward the inflexion point")
		asJSON     = fs.Bool("json", false, "print the results as one JSON object on stdout")
		insecure   = fs.Bool("insecure", false, "accept any TLS certificate")
		quiet      = fs.Bool("quiet", false, "no progress on stderr")
		pullDelay  = durationFlag(fs, "pull-delay", 0, "pull clients ask for each segment this long after its availability (0: at once)")
		serverPIDs = fs.String("server-pids", "", "comma-separated PIDs of the server (e.g. nginx master and worker): CPU and memory from /proc instead of the origin's /metrics")
	)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), loadUsage)
		fs.PrintDefaults()
	}
	pos, err := parseOneURL(fs, args)
	if err != nil {
		return err
	}
	counts, err := parseCounts(*clients)
	if err != nil {
		return err
	}
	names := splitList(*transports)
	if len(names) == 0 {
		return errors.New("--transport: name at least one of ws, http1, http2")
	}
	if *duration <= 0 || *duration > time.Hour {
		return errors.New("--duration: want a positive duration up to 1h")
	}
	progressW := stderr
	if *quiet {
		progressW = nil
	}
	pids, err := load.ParsePIDs(*serverPIDs)
	if err != nil {
		return err
	}
	target, err := load.Resolve(ctx, pos[0], splitList(*tracks), *insecure)
	if err != nil {
		return err
	}
	out := loadReport{URL: pos[0], Channel: target.Channel, Tracks: target.TrackIDs(), SegmentS: target.SegmentDuration.Seconds(), Most: *most, Inflexion: map[string]int{}}
	for i, n := range counts {
		for j, tr := range names {
			if i+j > 0 && *pause > 0 {
				select {
				case <-time.After(*pause):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if progressW != nil {
				fmt.Fprintf(progressW, "step: %s, %d clients, %v\n", tr, n, *duration)
			}
			res, err := load.Run(ctx, load.Options{Transport: tr, Clients: n, Duration: *duration, Ramp: *ramp, Target: target, Insecure: *insecure, Idle: *idle, Progress: progressW, ServerPIDs: pids, PullDelay: *pullDelay})
			if err != nil {
				return err
			}
			out.Steps = append(out.Steps, res)
			if progressW != nil {
				fmt.Fprintln(progressW, "  "+stepLine(res))
			}
			if res.Share >= *most && n > out.Inflexion[tr] {
				out.Inflexion[tr] = n
			}
		}
	}
	// A transport that kept up at the largest count tried has its inflexion beyond it:
	// the figure is a lower bound, and a ratio with it is not a measurement.
	largest := counts[len(counts)-1]
	for _, s := range out.Steps {
		if s.Clients == largest && s.Share >= *most {
			out.Beyond = append(out.Beyond, s.Transport)
		}
	}
	ws, h1 := out.Inflexion[load.WS], out.Inflexion[load.HTTP1]
	if ws > 0 && h1 > 0 && !slices.Contains(out.Beyond, load.WS) && !slices.Contains(out.Beyond, load.HTTP1) {
		r := float64(ws) / float64(h1)
		out.RatioWSHTTP1 = &r
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(stdout, "load %s  tracks %s  segments %.1fs\n", out.URL, strings.Join(out.Tracks, ","), out.SegmentS)
	for _, s := range out.Steps {
		fmt.Fprintln(stdout, stepLine(s))
	}
	for tr, n := range out.Inflexion {
		at := ""
		if slices.Contains(out.Beyond, tr) {
			at = "≥ "
		}
		fmt.Fprintf(stdout, "inflexion %s: %s%d clients (share ≥ %.2f)\n", tr, at, n, *most)
	}
	if out.RatioWSHTTP1 != nil {
		fmt.Fprintf(stdout, "ws ÷ http1: %.2f\n", *out.RatioWSHTTP1)
	}
	return nil
}

type loadReport struct {
	URL          string         `json:"url"`
	Channel      string         `json:"channel"`
	Tracks       []string       `json:"tracks"`
	SegmentS     float64        `json:"segment_duration_s"`
	Most         float64        `json:"most"`
	Steps        []*load.Result `json:"steps"`
	Inflexion    map[string]int `json:"inflexion"`                          // largest client count with share ≥ most, per transport
	Beyond       []string       `json:"inflexion_beyond_largest,omitempty"` // kept up at the largest count: a lower bound
	RatioWSHTTP1 *float64       `json:"ratio_ws_http1,omitempty"`           // inflexion ws ÷ http1, when both were reached
}

func stepLine(r *load.Result) string {
	s := fmt.Sprintf("%-5s ×%-5d keep-up %5.1f%%  received p5 %.0f / p50 %.0f kbit/s (encoded %.0f)  overhead %.0f B/chunk  failed %d",
		r.Transport, r.Clients, 100*r.Share, r.ReceivedKbps.P5, r.ReceivedKbps.P50, r.EncodedKbps, r.OverheadPerChunk, r.Failed)
	if r.Idle {
		s = fmt.Sprintf("%-5s ×%-5d idle sockets  failed %d", r.Transport, r.Clients, r.Failed)
	}
	if st := r.Server; st != nil {
		s += fmt.Sprintf("  server cpu %.2f cores, rss %.0f MiB", st.CPUShare, float64(st.RSSMax)/(1<<20))
		if st.MemPerClient != 0 {
			s += fmt.Sprintf(", %.1f KiB/client", st.MemPerClient/1024)
		}
	}
	return s
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 20000 {
			return nil, fmt.Errorf("--clients %q: want counts from 1 to 20000", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("--clients: give at least one count")
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
