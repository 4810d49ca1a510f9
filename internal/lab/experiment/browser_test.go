package experiment

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBrowserCanPlay(t *testing.T) {
	for _, c := range []struct {
		transport, player string
		tls               bool
		why               string // substring of the reason it cannot, "" if it can
	}{
		{"http1", "dashjs", false, ""},
		{"", "dashjs", false, ""},
		{"h2", "dashjs", true, ""},
		{"hls", "hlsjs", false, ""},
		{"hls-h2", "hlsjs", true, ""},
		{"ws", "wspush", false, ""},
		{"h2c", "", false, "no h2c"},
		{"h2cpush-all", "", false, "no h2c"},
		{"h2push-init", "", false, "server push"},
		{"pars", "", false, "parallel range"},
		{"fdsp", "", false, "UDP"},
		{"carrier-pigeon", "", false, "browsers play h2, hls, hls-h2, http1, https, ws"},
	} {
		p, why := BrowserCanPlay(c.transport)
		if c.why == "" {
			if why != "" || p.Player != c.player || p.TLS != c.tls {
				t.Errorf("%q: %+v %q, want %s tls=%v", c.transport, p, why, c.player, c.tls)
			}
			continue
		}
		if !strings.HasPrefix(why, "not playable by a browser") || !strings.Contains(why, c.why) {
			t.Errorf("%q: reason %q, want one that says %q", c.transport, why, c.why)
		}
	}
}

func TestPageURL(t *testing.T) {
	s := &Scenario{Name: "x", Content: Content{Synthetic: "16s"}, Play: Play{Live: true, Client: ClientBrowser},
		Matrix: Matrix{{Name: "transport", Values: []string{"h2", "ws", "h2c"}}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for tr, want := range map[string]string{
		"h2": "https://10.0.0.1:8443/?live=1&player=dashjs&stream=live-seg-2s",
		"ws": "http://10.0.0.1:8080/?live=1&player=wspush&stream=live-seg-2s",
		// hls is LL-HLS over HTTP/1.1: the page must not move it to its TLS port.
		"hls":    "http://10.0.0.1:8080/?hlsproto=http1&live=1&player=hlsjs&stream=live-seg-2s",
		"hls-h2": "https://10.0.0.1:8443/?live=1&player=hlsjs&stream=live-seg-2s",
	} {
		got, err := s.pageURL("10.0.0.1", Cell{"transport": tr})
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", tr, got, err, want)
		}
	}
	if _, err := s.pageURL("10.0.0.1", Cell{"transport": "h2c"}); err == nil {
		t.Error("h2c: a page URL, want the reason a browser cannot play it")
	}
	if why := s.browserSkip(Cell{"transport": "h2c"}); why == "" {
		t.Error("h2c in a browser scenario is not skipped")
	}
	// More page parameters from the scenario; the lab's own cannot be overridden.
	s.Play.PageQuery = "hlsdebug=abr"
	if got, err := s.pageURL("10.0.0.1", Cell{"transport": "hls"}); err != nil || got != "http://10.0.0.1:8080/?hlsdebug=abr&hlsproto=http1&live=1&player=hlsjs&stream=live-seg-2s" {
		t.Errorf("page_query: %q %v", got, err)
	}
	for _, bad := range []string{"player=dashjs", "a=%zz"} {
		s.Play.PageQuery = bad
		if got, err := s.pageURL("10.0.0.1", Cell{"transport": "hls"}); err == nil {
			t.Errorf("page_query %q: %q, want an error", bad, got)
		}
	}
	// A cell's page_query (matrix parameter) adds to the scenario's; neither may set
	// what the other or the lab sets.
	s.Play.PageQuery = "hlsdebug=abr"
	if got, err := s.pageURL("10.0.0.1", Cell{"transport": "hls", "page_query": "hlsabandon=hlsjs"}); err != nil || got != "http://10.0.0.1:8080/?hlsabandon=hlsjs&hlsdebug=abr&hlsproto=http1&live=1&player=hlsjs&stream=live-seg-2s" {
		t.Errorf("cell page_query: %q %v", got, err)
	}
	for _, bad := range []string{"hlsdebug=off", "player=dashjs", "a=%zz"} {
		if got, err := s.pageURL("10.0.0.1", Cell{"transport": "hls", "page_query": bad}); err == nil {
			t.Errorf("cell page_query %q: %q, want an error", bad, got)
		}
	}
	s.Play.PageQuery = ""
	// On demand, by segment duration: the asset itself.
	vod := &Scenario{Name: "v", Content: Content{Synthetic: "91s", KeepDuration: true}, Play: Play{Client: ClientBrowser},
		Matrix: Matrix{{Name: "segment_duration", Values: []string{"10s"}}}}
	if err := vod.Validate(); err != nil {
		t.Fatal(err)
	}
	got, _ := vod.pageURL("10.0.0.1", Cell{"segment_duration": "10s"})
	u, err := url.Parse(got)
	if err != nil || u.Query().Get("stream") != "seg-10s" || u.Query().Get("live") != "0" {
		t.Errorf("VOD page %q: want stream=seg-10s live=0", got)
	}
	// A headless scenario skips nothing.
	s.Play.Client = ""
	if why := s.browserSkip(Cell{"transport": "h2c"}); why != "" {
		t.Errorf("headless scenario skips h2c: %q", why)
	}
}

func TestBrowserScenarioValidate(t *testing.T) {
	base := func() *Scenario {
		return &Scenario{Name: "x", Content: Content{Synthetic: "16s"}, Play: Play{Live: true, Client: ClientBrowser}}
	}
	s := base()
	s.Play.Client = "firefox"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "headless or browser") {
		t.Errorf("client firefox: %v", err)
	}
	s = base()
	s.Play.ABR = "bola"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "headless player's") {
		t.Errorf("browser with abr: %v", err)
	}
	s = base()
	s.Matrix = Matrix{{Name: "abr", Values: []string{"bba"}}}
	if err := s.Validate(); err == nil {
		t.Error("browser with an abr matrix: no error")
	}
	s = base()
	s.Matrix = Matrix{{Name: "page_query", Values: []string{"hlsabandon=part", "hlsabandon=hlsjs"}}}
	if err := s.Validate(); err != nil {
		t.Errorf("browser with a page_query matrix: %v", err)
	}
	s.Play.Client = ClientHeadless
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "page_query") {
		t.Errorf("headless with a page_query matrix: %v", err)
	}
}

func TestCompareScenarioBrowser(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "experiments", "profiles")
	s, err := CompareScenario(CompareOptions{Profile: "lossy-50ms", ProfileDir: dir, Clients: ClientBrowser, Duration: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if s.Play.Client != ClientBrowser || s.Name != "compare-lossy-50ms-browser" {
		t.Errorf("client %q name %q", s.Play.Client, s.Name)
	}
	var played, skipped []string
	for _, c := range s.Cells() {
		if s.browserSkip(c) == "" {
			played = append(played, c["transport"])
		} else {
			skipped = append(skipped, c["transport"])
		}
	}
	if strings.Join(played, ",") != "http1,h2,ws,hls,hls-h2" || strings.Join(skipped, ",") != "h2c,h2push-init,h2push-k3,pars,fdsp" {
		t.Errorf("played %v, not played %v", played, skipped)
	}
	if _, err := CompareScenario(CompareOptions{Profile: "lossy-50ms", ProfileDir: dir, Clients: "vlc"}); err == nil {
		t.Error("clients vlc: no error")
	}
}

// A cell a browser cannot play is in the results (CSV, report) with its reason, is
// neither a failure nor a row of figures.
func TestReportNotPlayed(t *testing.T) {
	s := &Scenario{Name: "x", Title: "T", Content: Content{Synthetic: "16s"}, Play: Play{Live: true, Client: ClientBrowser},
		Matrix: Matrix{{Name: "transport", Values: []string{"ws", "h2c"}}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	why := s.browserSkip(Cell{"transport": "h2c"})
	r := NewResults(s)
	r.Runs = []Run{
		{Key: "transport=ws", Cell: Cell{"transport": "ws"}, Rep: 1, Metrics: map[string]any{"startup_delay_ms": 250.0, "stall_count": 0.0}},
		{Key: "transport=h2c", Cell: Cell{"transport": "h2c"}, Rep: 1, Skipped: why},
	}
	sums := r.CellSummaries()
	if _, ok := sums["transport=h2c"]; ok {
		t.Error("a skipped cell has a summary row")
	}
	if sums["transport=ws"]["startup_delay_ms"].Median != 250 {
		t.Errorf("ws summary %+v", sums["transport=ws"])
	}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	html, csv := readFile(t, filepath.Join(dir, "report.html")), readFile(t, filepath.Join(dir, "results.csv"))
	if !strings.Contains(html, "Not played") || !strings.Contains(html, "no h2c") || !strings.Contains(html, "0 failed, 1 cell(s) not played") {
		t.Errorf("report does not list the cell not played:\n%s", html)
	}
	if !strings.Contains(csv, "h2c,1,") || !strings.Contains(csv, "not playable by a browser") {
		t.Errorf("CSV:\n%s", csv)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
