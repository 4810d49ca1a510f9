package experiment

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/lab/netem"
)

// Client kinds: what plays each cell of a scenario (play.client).
const (
	ClientHeadless = "headless" // `streambed play --json` (the default)
	ClientBrowser  = "browser"  // headless Chromium with the player page (web/scripts/labclient.mjs)
)

// BrowserPlay is how a browser plays a transport: the player page's player and
// whether the page is loaded over TLS. Chromium speaks HTTP/1.1 to an http:// origin
// and HTTP/2 (ALPN) to an https:// one.
type BrowserPlay struct {
	Player string // dashjs, hlsjs, wspush (the page's ?player=)
	TLS    bool
	// HLSProto is the page's ?hlsproto=: "http1" keeps LL-HLS on the page's own
	// origin. Without it a page on http: plays LL-HLS over HTTP/2 from the origin's
	// TLS port (web/src/h2.ts), which the lab's browser reaches (it ignores
	// certificate errors).
	HLSProto string
}

// browserTransports are the transports a browser can play, by the lab's transport
// names. On a live channel in chunks shorter than its segments, dash.js plays the
// low-latency MPD (LL-DASH) and hls.js the LL-HLS playlists.
var browserTransports = map[string]BrowserPlay{
	"":       {Player: "dashjs"},
	"http1":  {Player: "dashjs"},
	"h2":     {Player: "dashjs", TLS: true},
	"https":  {Player: "dashjs", TLS: true},
	"hls":    {Player: "hlsjs", HLSProto: "http1"},
	"hls-h2": {Player: "hlsjs", TLS: true},
	"ws":     {Player: "wspush"},
}

// BrowserTransports lists the transports a browser plays, sorted.
func BrowserTransports() []string {
	var out []string
	for t := range browserTransports {
		if t != "" {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// BrowserCanPlay says how a browser plays transport t, or why it cannot.
func BrowserCanPlay(t string) (BrowserPlay, string) {
	if p, ok := browserTransports[t]; ok {
		return p, ""
	}
	switch {
	case t == "h2c" || strings.HasPrefix(t, "h2cpush-"):
		return BrowserPlay{}, "not playable by a browser: browsers speak HTTP/2 only over TLS (no h2c)"
	case strings.HasPrefix(t, "h2push-"):
		return BrowserPlay{}, "not playable by a browser: browsers refuse HTTP/2 server push (Chrome since 106, Firefox since 132)"
	case t == "pars" || t == "parallel":
		return BrowserPlay{}, "not playable by a browser: parallel range requests are the headless player's"
	case strings.HasPrefix(t, "fdsp"):
		return BrowserPlay{}, "not playable by a browser: FDSP needs a raw UDP socket"
	}
	return BrowserPlay{}, fmt.Sprintf("not playable by a browser: no browser player for transport %q (browsers play %s)", t, strings.Join(BrowserTransports(), ", "))
}

// browserSkip is why a browser cannot play cell, or "" when it can (or the scenario's
// client is not a browser).
func (s *Scenario) browserSkip(cell Cell) string {
	if s.Play.Client != ClientBrowser {
		return ""
	}
	_, why := BrowserCanPlay(cell["transport"])
	return why
}

// pageURL is the player page's deep link that plays a cell in a browser.
func (s *Scenario) pageURL(server string, cell Cell) (string, error) {
	bp, why := BrowserCanPlay(cell["transport"])
	if why != "" {
		return "", fmt.Errorf("%s", why)
	}
	name, live := s.streamName(cell)
	origin := fmt.Sprintf("http://%s:%d", server, httpPort)
	if bp.TLS {
		origin = fmt.Sprintf("https://%s:%d", server, httpsPort)
	}
	q := url.Values{"stream": {name}, "live": {"0"}, "player": {bp.Player}}
	if live {
		q.Set("live", "1")
	}
	if bp.HLSProto != "" {
		q.Set("hlsproto", bp.HLSProto)
	}
	// play.page_query for every cell, then the cell's page_query (a matrix parameter,
	// so arms of one page setting alternate within one run).
	for _, pq := range []string{s.Play.PageQuery, cell["page_query"]} {
		extra, err := url.ParseQuery(pq)
		if err != nil {
			return "", fmt.Errorf("page_query %q: %w", pq, err)
		}
		for k, v := range extra {
			if q.Has(k) {
				return "", fmt.Errorf("page_query %q: %s is set already", pq, k)
			}
			q[k] = v
		}
	}
	return origin + "/?" + q.Encode(), nil
}

// LabClientScript finds web/scripts/labclient.mjs: $STREAMBED_LABCLIENT, else under
// the working directory, else beside the binary (bin/../web/scripts). It also checks
// that the web app's packages are installed (playwright-core, by `make web`).
func LabClientScript(bin string) (string, error) {
	var candidates []string
	if env := os.Getenv("STREAMBED_LABCLIENT"); env != "" {
		candidates = []string{env}
	} else {
		candidates = []string{filepath.Join("web", "scripts", "labclient.mjs")}
		if bin != "" {
			candidates = append(candidates, filepath.Join(filepath.Dir(bin), "..", "web", "scripts", "labclient.mjs"))
		}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err != nil {
			continue
		}
		abs, err := filepath.Abs(c)
		if err != nil {
			return "", err
		}
		pw := filepath.Join(filepath.Dir(abs), "..", "node_modules", "playwright-core")
		if _, err := os.Stat(pw); err != nil {
			return "", fmt.Errorf("browser clients: %s has no playwright-core beside it (%s): run `make web`", abs, pw)
		}
		return abs, nil
	}
	return "", fmt.Errorf("browser clients: no lab client script at %s: run from the repository root, or set STREAMBED_LABCLIENT", strings.Join(candidates, " or "))
}

// runBrowser plays one cell with headless Chromium and the player page in the client
// host (node web/scripts/labclient.mjs), whose JSON has the player's keys.
func runBrowser(ctx context.Context, nw *netem.Network, s *Scenario, cell Cell, opts Options) Run {
	start := time.Now()
	page, err := s.pageURL(nw.Server().String(), cell)
	if err == nil && opts.LabClient == "" {
		opts.LabClient, err = LabClientScript(opts.Bin)
	}
	if err != nil {
		return Run{Error: err.Error()}
	}
	node := opts.Node
	if node == "" {
		node = "node"
	}
	args := []string{node, opts.LabClient, "--page", page, "--transport", cell["transport"]}
	if s.Play.Duration > 0 {
		args = append(args, "--seconds", strconv.FormatFloat(s.Play.Duration.D().Seconds(), 'f', -1, 64))
	} else {
		// An on-demand stream to its end: stop a little before the run's timeout so
		// the figures of a slow run are still written.
		args = append(args, "--seconds", "0", "--max-seconds", strconv.FormatFloat(max(s.runTimeout()-30*time.Second, 30*time.Second).Seconds(), 'f', 0, 64))
	}
	if v := s.CellRate(cell); v != "" {
		rate, err := netem.ParseRate(v)
		if err != nil {
			return Run{Error: fmt.Sprintf("link rate: %v", err)}
		}
		if rate > 0 {
			args = append(args, "--link-rate", strconv.FormatFloat(float64(rate), 'f', 0, 64))
		}
	}
	return RunPlayer(ctx, nw, s, start, args)
}
