package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// `streambed lab compare`: the same live stream over every transport Streambed has,
// on one emulated link, in one report. It is a scenario like the files in
// experiments/, made from a link profile and a list of transports.

// DefaultCompareTransports are the transports for one live channel: LL-DASH over
// HTTP/1.1, h2c and h2 (TLS), HTTP/2 push of the init segments and K-push of media
// (k3: the segments in progress pushed chunk by chunk), WebSocket push, ParS (N
// chosen by its model), LL-HLS over HTTP/1.1 and h2 (TLS), and FDSP (dual TCP+UDP,
// adaptive BP; the top video rung in 10 s substreams, so its start-up is a substream's).
var DefaultCompareTransports = []string{"http1", "h2c", "h2", "h2push-init", "h2push-k3", "ws", "pars", "hls", "hls-h2", "fdsp"}

// DefaultBrowserCompareTransports are the same transports for browser clients: the
// browser plays http1 and h2 with dash.js (LL-DASH on this channel), hls and hls-h2 with
// hls.js (LL-HLS), ws with the page's WebSocket push player; h2c, push and ParS are
// listed in the report as not playable by a browser, and so is FDSP.
var DefaultBrowserCompareTransports = DefaultCompareTransports

// CompareMetrics are the columns of the comparison, the player's JSON keys.
var CompareMetrics = []string{
	"startup_delay_ms", "latency_ms", "target_latency_ms", "stall_count", "stall_ms", "avg_bitrate_kbps", "switches",
	"requests", "overhead_bytes", "link_utilisation", "chunk_appends",
}

// CompareOptions make a comparison scenario.
type CompareOptions struct {
	// Profile is a link profile: a name of a file in ProfileDir (without .yaml) or a
	// path to a profile file (netem profile YAML).
	Profile    string
	ProfileDir string // default experiments/profiles
	Transports []string
	Duration   time.Duration // each player's session (default 30 s)
	// Chunk is the live channel's chunk duration (default 40 ms: one frame at 25 fps,
	// so the $Number$ MPD is low-latency DASH and push sends one chunk per frame).
	Chunk       time.Duration
	Repetitions int
	// Clients is headless (the default) or browser (ClientBrowser).
	Clients string
}

// CompareScenario builds the comparison's scenario.
func CompareScenario(o CompareOptions) (*Scenario, error) {
	if o.ProfileDir == "" {
		o.ProfileDir = filepath.Join("experiments", "profiles")
	}
	switch o.Clients {
	case "", ClientHeadless:
		o.Clients = ClientHeadless
	case ClientBrowser:
	default:
		return nil, fmt.Errorf("clients %q: want %s or %s", o.Clients, ClientHeadless, ClientBrowser)
	}
	if len(o.Transports) == 0 {
		o.Transports = DefaultCompareTransports
		if o.Clients == ClientBrowser {
			o.Transports = DefaultBrowserCompareTransports
		}
	}
	if o.Duration <= 0 {
		o.Duration = 30 * time.Second
	}
	if o.Chunk <= 0 {
		o.Chunk = 40 * time.Millisecond
	}
	if o.Repetitions <= 0 {
		o.Repetitions = 1
	}
	path, name, err := profilePath(o.Profile, o.ProfileDir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("profile %s: not YAML: %v", path, err)
	}
	network := *doc.Content[0]
	stripKeys(&network, "name", "description") // the scenario's own; the link fields stay
	player := "the headless player"
	how := "The headless player appends each chunk as it arrives and steers to a target latency by playback rate: " +
		"the MPD's ServiceDescription for pull, the browser page's rule for WebSocket push."
	if o.Clients == ClientBrowser {
		player = "headless Chromium with the player page (dash.js, hls.js or WebSocket push, by transport)"
		how = "In the browser, latency is the page's (its origin clock minus the playhead's wall time), " +
			"the median after the first quarter of the session; requests and media bytes are Chromium's own count (DevTools)."
	}
	s := &Scenario{
		Name:  "compare-" + name,
		Title: fmt.Sprintf("Every transport on one link (%s)", name),
		Description: fmt.Sprintf("One live channel (2 s segments in %v chunks, a four-rung ladder with 64 kbit/s audio) "+
			"played for %v by %s over each transport on the %s link (%s), %d time(s) each. "+
			"Latency is wall-clock time minus the playhead's wall time, with the clock synchronised from the origin's UTCTiming source, "+
			"the same definition for every transport. %s", o.Chunk, o.Duration, player, name, path, o.Repetitions, how),
		Content: Content{
			Synthetic: "16s", SegmentDuration: Duration(2 * time.Second),
			Ladder: "180p:100k,360p:400k,540p:800k,720p:1500k", AudioBitrate: "64k", Preset: "ultrafast",
		},
		Network:     network,
		Matrix:      Matrix{{Name: "transport", Values: o.Transports}},
		Repetitions: o.Repetitions,
		Play:        Play{Duration: Duration(o.Duration), Live: true, Chunk: Duration(o.Chunk), Timeout: Duration(o.Duration + 2*time.Minute), Client: o.Clients},
		Metrics:     CompareMetrics,
		Plot:        Plot{X: "transport"},
	}
	if o.Clients == ClientBrowser {
		s.Name += "-browser"
		s.Title = fmt.Sprintf("Every transport on one link, in a browser (%s)", name)
	}
	return s, s.Validate()
}

// profilePath resolves a profile name or file.
func profilePath(p, dir string) (path, name string, err error) {
	if p == "" {
		p = "broadband"
	}
	if strings.ContainsAny(p, "/.") {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("profile %s: %w", p, err)
		}
		return p, strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)), nil
	}
	path = filepath.Join(dir, p+".yaml")
	if _, err := os.Stat(path); err != nil {
		return "", "", fmt.Errorf("no profile %q in %s (have: %s); or give a profile file's path", p, dir, strings.Join(profileNames(dir), ", "))
	}
	return path, p, nil
}

func profileNames(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var out []string
	for _, f := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// stripKeys removes keys from a YAML mapping node.
func stripKeys(n *yaml.Node, keys ...string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		drop := false
		for _, k := range keys {
			if n.Content[i].Value == k {
				drop = true
			}
		}
		if !drop {
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
	}
	n.Content = kept
}
