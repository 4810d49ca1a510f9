package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/streambed/streambed/internal/lab/netem"
	"github.com/streambed/streambed/internal/layout"
)

// Options tune a run of a scenario.
type Options struct {
	Bin      string        // the streambed binary (default: this executable)
	OutDir   string        // where results and the report go
	CacheDir string        // packaged content, reused across runs
	Backend  netem.Backend // netem backend (default auto)
	Progress io.Writer     // progress bar (stderr); nil: none
	Log      *slog.Logger
	// Limit runs only the first Limit runs (a smoke test); 0: all.
	Limit int
	// Browser clients (play.client: browser): node and web/scripts/labclient.mjs
	// (default: "node" and LabClientScript).
	Node, LabClient string
}

// Run is one player run in one cell.
type Run struct {
	Key     string         `json:"key"`
	Cell    Cell           `json:"cell"`
	Rep     int            `json:"rep"`
	Metrics map[string]any `json:"metrics,omitempty"` // the player's --json output
	Error   string         `json:"error,omitempty"`
	// Skipped says why the cell was not played (a transport the scenario's client
	// cannot play); such a run is neither a result nor a failure.
	Skipped string  `json:"skipped,omitempty"`
	Seconds float64 `json:"seconds"` // wall time of the run
}

// Results are everything a scenario produced.
type Results struct {
	Scenario *Scenario `json:"scenario"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Backend  string    `json:"netem_backend"`
	Host     string    `json:"host"`
	Commit   string    `json:"commit,omitempty"`
	Command  string    `json:"command"`
	Runs     []Run     `json:"runs"`
}

const (
	httpPort  = 8080
	httpsPort = 8443
)

// LinkSettle is how long a run waits after its cell's link profile is set. The
// emulated link keeps packets in order, so after a cell with a long delay the last
// packets of the previous run (its connections closing) still hold the delay line,
// and the next run's first packets wait behind them: up to the previous one-way delay
// (measured: a page load at RTT 0 right after one at RTT 300 ms took 130 ms longer).
// One second drains every delay the scenarios use.
const LinkSettle = time.Second

// Settle waits LinkSettle, or until ctx ends.
func Settle(ctx context.Context) error {
	t := time.NewTimer(LinkSettle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Execute runs every cell of s the scenario's number of times.
func Execute(ctx context.Context, s *Scenario, opts Options) (*Results, error) {
	var err error
	if opts.Bin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		opts.Bin = self
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.Play.Client == ClientBrowser && opts.LabClient == "" {
		// Before packaging and the network: a missing script is the user's to fix.
		if opts.LabClient, err = LabClientScript(opts.Bin); err != nil {
			return nil, err
		}
	}
	res := NewResults(s)

	// 1. Content: one packaged asset per segment duration, cached across runs.
	assets, durs, err := PrepareAssets(ctx, s, opts)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(assets)

	// 2. Network and origin.
	base, err := s.CellProfile(Cell{})
	if err != nil {
		return nil, err
	}
	nw, err := netem.Up(ctx, netem.TwoHosts(base), netem.Options{Backend: opts.Backend, Name: "lab-" + s.Name, Logger: opts.Log})
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	defer nw.Close()
	res.Backend = string(nw.Backend())
	opts.Log.Info("network up", "backend", nw.Backend(), "why", nw.Why(), "server", nw.Server())

	defer os.RemoveAll(filepath.Join(opts.OutDir, ".origin")) // after the origin stops
	origin, err := StartOrigin(ctx, nw, s, durs, assets, opts)
	if err != nil {
		return nil, err
	}
	defer func() { _ = origin.Process.Signal(os.Interrupt); _ = origin.Wait() }()

	// 3. Every cell, every repetition. Repetitions are the outer loop so a drift in the
	// machine's load spreads over all cells instead of biasing the last ones.
	cells := s.Cells()
	total := len(cells) * s.Repetitions
	if opts.Limit > 0 && opts.Limit < total {
		total = opts.Limit
	}
	bar := newProgress(opts.Progress, total)
	done := 0
	for rep := 1; rep <= s.Repetitions && done < total; rep++ {
		for _, cell := range cells {
			if done >= total {
				break
			}
			if err := ctx.Err(); err != nil {
				return res, err
			}
			key := s.Key(cell)
			bar.update(done, key)
			if why := s.browserSkip(cell); why != "" {
				res.Runs = append(res.Runs, Run{Key: key, Cell: cell, Rep: rep, Skipped: why})
				done++
				continue
			}
			prof, err := s.CellProfile(cell)
			if err != nil {
				return nil, err
			}
			if err := nw.SetLink("client", "server", prof); err != nil {
				return nil, fmt.Errorf("%s: set link: %w", key, err)
			}
			if err := Settle(ctx); err != nil {
				return res, err
			}
			tcp0 := tcpCounters(nw, serverHost(nw))
			link0 := nw.Stats()
			ctcp := watchTCP(ctx, nw)
			r := runPlayer(ctx, nw, s, cell, opts)
			r.Key, r.Cell, r.Rep = key, cell, rep
			if c := ctcp.stop(); r.Metrics != nil {
				r.Metrics["client_tcp"] = c // the client's side: its counters, connections, each end's loss events
				if d := linkDrops(nw.Drops(c.StartMS)); d != nil {
					r.Metrics["link_drops"] = d // which packets the link lost, when
				}
			}
			if d := counterDelta(tcp0, tcpCounters(nw, serverHost(nw))); d != nil && r.Metrics != nil {
				r.Metrics["server_tcp"] = d // how the origin's sockets recovered losses
			}
			if l := linkRuns(link0, nw.Stats()); l != nil && r.Metrics != nil {
				r.Metrics["link"] = l // the emulator's own drops and lateness in this run
			}
			if r.Error != "" {
				opts.Log.Warn("run failed", "cell", key, "rep", rep, "err", r.Error)
			}
			res.Runs = append(res.Runs, r)
			done++
		}
	}
	bar.finish(done)
	res.Finished = time.Now().UTC()
	return res, nil
}

// AssetName names the packaged content of one segment duration: "seg-2s".
func AssetName(d time.Duration) string { return "seg-" + d.String() }

// PrepareAssets packages the scenario's content once per segment duration (cached in
// opts.CacheDir) and links each package into OUTDIR/.assets as AssetName(d), the
// folder to give `streambed serve --assets`. The caller removes the folder.
func PrepareAssets(ctx context.Context, s *Scenario, opts Options) (assets string, durs []time.Duration, err error) {
	assets = filepath.Join(opts.OutDir, ".assets")
	if err := os.MkdirAll(assets, 0o755); err != nil {
		return "", nil, err
	}
	if durs, err = s.SegmentDurations(); err != nil {
		return "", nil, err
	}
	for _, d := range durs {
		dir, err := prepareContent(ctx, s, d, opts)
		if err == nil {
			link := filepath.Join(assets, AssetName(d))
			_ = os.Remove(link)
			err = os.Symlink(dir, link)
		}
		if err != nil {
			os.RemoveAll(assets)
			return "", nil, err
		}
	}
	return assets, durs, nil
}

// prepareContent packages the scenario's content for segment duration d, once.
func prepareContent(ctx context.Context, s *Scenario, d time.Duration, opts Options) (string, error) {
	src := s.Content.Input
	if src == "" {
		src = "synthetic-" + s.Content.Synthetic
	}
	tag := strings.NewReplacer("/", "_", " ", "_", ":", "_", ",", "_").Replace(fmt.Sprintf("%s-%s-%s-%s-keep%v", filepath.Base(src), d, s.Content.Ladder, s.Content.AudioBitrate, s.Content.KeepDuration))
	dir := filepath.Join(opts.CacheDir, tag)
	args := []string{"package", "-o", dir, "--segment-duration", d.String(), "--name", AssetName(d)}
	if s.Content.Synthetic != "" {
		args = append(args, "--synthetic", s.Content.Synthetic)
	} else {
		args = append(args, s.Content.Input)
	}
	if s.Content.Ladder != "" {
		args = append(args, "--ladder", s.Content.Ladder)
	}
	if s.Content.AudioBitrate != "" {
		args = append(args, "--audio-bitrate", s.Content.AudioBitrate)
	}
	if s.Content.Preset != "" {
		args = append(args, "--preset", s.Content.Preset)
	}
	if s.Content.KeepDuration {
		args = append(args, "--no-loop-trim")
	}
	cmd := exec.CommandContext(ctx, opts.Bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "content: packaging %s segments (cached after the first run)\n", d)
		cmd.Stderr = io.MultiWriter(&out, opts.Progress)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("packaging content (%s): %w\n%s", strings.Join(args, " "), err, Tail(out.String(), 20))
	}
	return dir, nil
}

// StartOrigin runs `streambed serve` in the server host — HTTP on :8080, HTTPS on
// :8443, data in OUTDIR/.origin (the caller removes it), log in OUTDIR/origin.log,
// the assets on demand and, for live scenarios only, one channel per segment
// duration — and waits until the client host can reach it.
func StartOrigin(ctx context.Context, nw *netem.Network, s *Scenario, durs []time.Duration, assets string, opts Options) (*exec.Cmd, error) {
	args := []string{"serve", "--assets", assets, "--no-demo", "--log-level", "warn",
		"--http", fmt.Sprintf("0.0.0.0:%d", httpPort), "--https", fmt.Sprintf("0.0.0.0:%d", httpsPort),
		"--data-dir", filepath.Join(opts.OutDir, ".origin")}
	for _, d := range durs {
		if s.Play.Live { // only loopable content can be a channel
			ch := fmt.Sprintf("live-%s=%s", AssetName(d), AssetName(d))
			if s.Play.Chunk > 0 {
				ch += ",chunk=" + s.Play.Chunk.D().String()
			}
			args = append(args, "--channel", ch)
		}
	}
	if !s.Play.Live {
		args = append(args, "--channel", "") // none: serve the assets on demand only
	}
	args = append(args, s.Origin.Args...)
	if s.usesFDSP() { // FDSP's own TCP listener and UDP socket (the next port)
		args = append(args, "--fdsp", fmt.Sprintf("0.0.0.0:%d", fdspPort))
	}
	cmd := nw.CommandContext(ctx, "server", append([]string{opts.Bin}, args...)...)
	logf, err := os.Create(filepath.Join(opts.OutDir, "origin.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	addr := net.JoinHostPort(nw.Server().String(), fmt.Sprint(httpPort))
	if err := WaitReachable(nw, "client", addr, 30*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b, _ := os.ReadFile(logf.Name())
		return nil, fmt.Errorf("origin: %v\n%s", err, Tail(string(b), 20))
	}
	return cmd, nil
}

// fdspPort is the origin's FDSP TCP port in the server host; UDP is the next port.
const fdspPort = 9710

// usesFDSP says whether a cell of the scenario plays over FDSP (fdsp, fdsp-tcp,
// fdsp-udp), so the origin must listen for it.
func (s *Scenario) usesFDSP() bool {
	for _, p := range s.Matrix {
		if p.Name != "transport" {
			continue
		}
		for _, v := range p.Values {
			if strings.HasPrefix(v, "fdsp") {
				return true
			}
		}
	}
	return false
}

// WaitReachable waits until a TCP connection from host to addr succeeds, for at most
// timeout.
func WaitReachable(nw *netem.Network, host, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := nw.Do(host, func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not reachable from host %s after %s: %w", addr, host, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// streamName is the stream a cell plays: the asset of its segment duration, or that
// asset's live channel.
func (s *Scenario) streamName(cell Cell) (name string, live bool) {
	name = AssetName(s.Content.SegmentDuration.D())
	if v, ok := cell["segment_duration"]; ok {
		d, _ := time.ParseDuration(v)
		name = AssetName(d)
	}
	if s.Play.Live {
		return "live-" + name, true
	}
	return name, false
}

// hlsTransports play the stream's HLS master playlist instead of its MPD (LL-HLS on a
// chunked channel): the headless player over HTTP/1.1 or TLS h2 (the value), hls.js in
// a browser.
var hlsTransports = map[string]string{"hls": "http1", "hls-h2": "h2"}

// playURL is the manifest URL for a cell, by transport.
func (s *Scenario) playURL(server string, cell Cell) string {
	name, live := s.streamName(cell)
	path := layout.Manifest(live, name, layout.MPD)
	if _, ok := hlsTransports[cell["transport"]]; ok {
		path = layout.Manifest(live, name, layout.Master)
	}
	if tlsTransport(cell["transport"]) {
		return fmt.Sprintf("https://%s:%d%s", server, httpsPort, path)
	}
	return fmt.Sprintf("http://%s:%d%s", server, httpPort, path)
}

// tlsTransport says whether a player transport speaks TLS (HTTP/2 over TLS, with or
// without push); the origin's certificate is self-signed.
func tlsTransport(t string) bool {
	return t == "h2" || t == "https" || t == "hls-h2" || strings.HasPrefix(t, "h2push-")
}

// runPlayer runs the scenario's client in the client host for one cell: `streambed
// play --json`, or a browser (runBrowser).
func runPlayer(ctx context.Context, nw *netem.Network, s *Scenario, cell Cell, opts Options) Run {
	if s.Play.Client == ClientBrowser {
		return runBrowser(ctx, nw, s, cell, opts)
	}
	start := time.Now()
	args := []string{opts.Bin, "play", s.playURL(nw.Server().String(), cell), "--json"}
	if t := cell["transport"]; t != "" {
		pt := t
		if h, ok := hlsTransports[t]; ok {
			pt = h
		}
		args = append(args, "--transport", pt)
		if tlsTransport(t) {
			args = append(args, "--insecure")
		}
	}
	if v := cell["connections"]; v != "" {
		args = append(args, "--connections", v)
	}
	if s.Play.Duration > 0 {
		args = append(args, "--duration", s.Play.Duration.D().String())
	}
	abr := s.Play.ABR
	if v, ok := cell["abr"]; ok {
		abr = v
	}
	if abr != "" {
		args = append(args, "--abr", abr)
	}
	if rate := s.CellRate(cell); rate != "" {
		args = append(args, "--link-rate", rate)
	}
	args = append(args, s.Play.Args...)
	return RunPlayer(ctx, nw, s, start, args)
}

// RunPlayer runs a player command line (`streambed play … --json`, perhaps behind
// env) in the client host within the scenario's play timeout, and reads its JSON
// report into a Run; start is when the run began (for Seconds).
func RunPlayer(ctx context.Context, nw *netem.Network, s *Scenario, start time.Time, args []string) Run {
	timeout := s.runTimeout()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := nw.CommandContext(rctx, "client", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Run{Seconds: time.Since(start).Seconds()}
	if err != nil {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		r.Error = fmt.Sprintf("%v: %s", err, Tail(stderr.String(), 5))
		return r
	}
	if err := json.Unmarshal(stdout.Bytes(), &r.Metrics); err != nil {
		r.Error = fmt.Sprintf("player output is not JSON: %v: %s", err, Tail(stdout.String(), 5))
	}
	return r
}

// runTimeout bounds one run: play.timeout, or the duration + 2 min (10 min for a
// whole on-demand asset).
func (s *Scenario) runTimeout() time.Duration {
	if t := s.Play.Timeout.D(); t > 0 {
		return t
	}
	if s.Play.Duration == 0 {
		return 10 * time.Minute
	}
	return s.Play.Duration.D() + 2*time.Minute
}

// CellProfile applies a cell's network parameters (rtt, delay, jitter, loss, rate)
// over the scenario's base profile; other parameters are ignored. Cell{} gives the
// base profile.
func (s *Scenario) CellProfile(cell Cell) (netem.Profile, error) {
	base := map[string]any{}
	if s.Network.Kind != 0 {
		if err := s.Network.Decode(&base); err != nil {
			return netem.Profile{}, fmt.Errorf("network: %w", err)
		}
	}
	for k, v := range cell {
		switch k {
		case "rtt":
			d, err := time.ParseDuration(v)
			if err != nil {
				return netem.Profile{}, fmt.Errorf("rtt %q: %w", v, err)
			}
			base["delay"] = (d / 2).String()
		case "delay", "jitter", "loss", "rate":
			base[k] = v
		}
	}
	b, err := yaml.Marshal(base)
	if err != nil {
		return netem.Profile{}, err
	}
	p, err := netem.ParseProfile(b, ".")
	if err != nil {
		return netem.Profile{}, fmt.Errorf("network profile for %s: %w", s.Key(cell), err)
	}
	return p, nil
}

// CellRate is the link rate the player should divide by for utilisation, if constant.
func (s *Scenario) CellRate(cell Cell) string {
	if v, ok := cell["rate"]; ok {
		return v
	}
	var base map[string]any
	if s.Network.Kind != 0 && s.Network.Decode(&base) == nil {
		if r, ok := base["rate"].(string); ok {
			return r
		}
	}
	return ""
}

// Tail is the last lines of s, for error messages that quote a command's output.
func Tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
