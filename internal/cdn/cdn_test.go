package cdn

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/layout"
)

func TestParseUpstreams(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{in: "http://127.0.0.1:8080", want: "127.0.0.1:8080"},
		{in: "http://a:1, b:2 ,", want: "a:1 b:2"},
		{in: "origin.example", want: "origin.example:80"},
		{in: "http://[::1]:9", want: "[::1]:9"},
		{in: "", err: "no upstream"},
		{in: "https://a:1", err: "only http://"},
		{in: "http://a:1/live", err: "address only"},
		{in: "http://a:99999", err: "bad port"},
		{in: "http://:80", err: "no host"},
	}
	for _, c := range cases {
		ups, err := ParseUpstreams(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want one saying %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var got []string
		for _, u := range ups {
			got = append(got, u.String())
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q: %v, want %s", c.in, got, c.want)
		}
	}
}

func TestOptionsRejectMistakes(t *testing.T) {
	ups := []Upstream{{Host: "127.0.0.1", Port: 8080}}
	for _, o := range []Options{
		{Kind: "squid", Upstreams: ups, Listen: ":1", Dir: "x"},
		{Kind: Nginx, Role: "middle", Upstreams: ups, Listen: ":1", Dir: "x"},
		{Kind: Nginx, Listen: ":1", Dir: "x"},
		{Kind: Nginx, Upstreams: ups, Listen: "8080", Dir: "x"},
		{Kind: Nginx, Upstreams: ups, Listen: ":1"},
		{Kind: Nginx, Upstreams: []Upstream{{Host: "a;b", Port: 1}}, Listen: ":1", Dir: "x"},
		{Kind: Varnish, Upstreams: ups, Listen: ":1", Dir: "x", CacheSize: 1 << 20},
	} {
		if _, err := NginxConfig(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// The configurations say what docs/cdn.md promises: the lines that make collapsing,
// stale-while-revalidate, the query in the key, failover and pass-through.
func TestConfigsHaveTheirBehaviour(t *testing.T) {
	ups := []Upstream{{Host: "10.0.0.1", Port: 8080}, {Host: "10.0.0.2", Port: 8080}}
	o := Options{Upstreams: ups, Listen: ":8090", Dir: t.TempDir()}
	o.Kind = Nginx
	ng, err := NginxConfig(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"proxy_cache_lock on;", "proxy_cache_use_stale updating", "proxy_cache_background_update on;",
		"proxy_cache_key \"$cdn_proto://$cdn_host$request_uri\";", "proxy_next_upstream error timeout http_502 http_503 http_504;",
		"server 10.0.0.1:8080", "server 10.0.0.2:8080", "location /ws/", "proxy_set_header Upgrade $http_upgrade;",
		"location /ingest/", "proxy_request_buffering off;", "UPDATING \"no-cache\";", "listen 0.0.0.0:8090"} {
		if !bytes.Contains(ng, []byte(want)) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
	if bytes.Contains(ng, []byte("hash $request_uri")) {
		t.Error("a shield balances round robin, not by URL")
	}
	o.Role = Edge
	ng, _ = NginxConfig(o)
	if !bytes.Contains(ng, []byte("hash $request_uri consistent;")) {
		t.Error("an edge spreads objects over its shields by URL")
	}
	o.Kind, o.Role = Varnish, Shield
	vcl, err := VarnishVCL(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"directors.round_robin()", "upstreams.add_backend(upstream1);", ".probe = streambed_health;",
		"hash_data(req.url);", "return (retry);", "set beresp.grace = beresp.ttl;", "return (pipe);", "set resp.http.Cache-Control = \"no-cache\";"} {
		if !bytes.Contains(vcl, []byte(want)) {
			t.Errorf("VCL lacks %q", want)
		}
	}
}

// Each generated configuration is accepted by its program and serves the origin's
// manifests and segments byte for byte.
func TestConfigsStartAndServe(t *testing.T) {
	t.Parallel()
	org := startOrigin(t)
	video, audio := org.tracks(t)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			for _, role := range []Role{Shield, Edge} {
				base := startCache(t, Options{Kind: k, Role: role, Upstreams: upstreamsOf(t, org.URL)})
				n, _ := org.liveEdge()
				for _, path := range []string{"/live/loop/manifest.mpd", "/live/loop/master.m3u8",
					layout.TrackFile(true, "loop", video, "init.mp4"), layout.Segment(true, "loop", video, n),
					layout.Segment(true, "loop", audio, n), "/vod/" + org.Asset.Info().Name + "/manifest.mpd"} {
					st, h, b := mustGet(t, base+path)
					if st != http.StatusOK || len(b) == 0 {
						t.Fatalf("%s %s: status %d, %d bytes", role, path, st, len(b))
					}
					if h.Get("X-Cache-"+string(role)) == "" {
						t.Errorf("%s %s: no X-Cache-%s header: %v", role, path, role, h)
					}
					if strings.HasSuffix(path, ".m4s") || strings.HasSuffix(path, ".mp4") {
						_, _, want := mustGet(t, org.URL+path)
						if !bytes.Equal(b, want) {
							t.Errorf("%s %s: %d bytes differ from the origin's %d", role, path, len(b), len(want))
						}
					}
				}
			}
		})
	}
}

func upstreamsOf(t *testing.T, urls ...string) []Upstream {
	t.Helper()
	ups, err := ParseUpstreams(strings.Join(urls, ","))
	if err != nil {
		t.Fatal(err)
	}
	return ups
}

// burst sends n identical GETs at once and returns their statuses.
func burst(t *testing.T, url string, n int) map[int]int {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			st, _, _, err := get(ctx, client, url)
			if err != nil {
				st = -1
			}
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

// Collapsing: 200 concurrent GETs of one object make one origin request — a complete
// segment, and the next live segment, which the origin holds and then streams as it is
// made.
func TestBurstMakesOneOriginRequest(t *testing.T) {
	t.Parallel()
	org := startOrigin(t)
	video, audio := org.tracks(t)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			base := startCache(t, Options{Kind: k, Upstreams: upstreamsOf(t, org.URL)})
			complete, inProgress := org.liveEdge()
			cases := []struct{ name, path string }{
				{"complete segment", layout.Segment(true, "loop", video, complete)},
				{"next segment, held by the origin then streamed", layout.Segment(true, "loop", audio, inProgress+1)},
			}
			for _, c := range cases {
				st := burst(t, base+c.path, 200)
				if st[http.StatusOK] != 200 {
					t.Errorf("%s: statuses %v, want 200 × 200", c.name, st)
				}
				if n := org.Count.Of(c.path); n != 1 {
					t.Errorf("%s: the origin got %d requests for %s, want 1", c.name, n, c.path)
				}
			}
		})
	}
}

// Upstream lists come from a person or a script: whatever ParseUpstreams accepts must
// make a configuration with nothing injected into it (no extra directive, no VCL).
func FuzzParseUpstreams(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080", "a:1,b:2", "http://[::1]:9", "http://a;b:1", "http://a}:1", "x\ny", "http://a b:1", "http://%41:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		ups, err := ParseUpstreams(list)
		if err != nil {
			return
		}
		o := Options{Upstreams: ups, Listen: "127.0.0.1:8090", Dir: "/tmp/x"}
		o.Kind = Nginx
		ng, nerr := NginxConfig(o)
		o.Kind = Varnish
		vcl, verr := VarnishVCL(o)
		if (nerr == nil) != (verr == nil) {
			t.Fatalf("%q: nginx %v, varnish %v", list, nerr, verr)
		}
		if nerr != nil {
			return
		}
		for _, u := range ups {
			if strings.ContainsAny(u.Host, " \t\r\n;{}\"'\\#") {
				t.Fatalf("%q: host %q would break the configuration", list, u.Host)
			}
			if !bytes.Contains(ng, []byte("server "+u.String()+" max_fails")) || !bytes.Contains(vcl, []byte(`.host = "`+u.Host+`";`)) {
				t.Fatalf("%q: upstream %s not written as one", list, u)
			}
		}
	})
}

// Run keeps the program's files in its folder and stops it, and all its processes,
// when its context ends (SIGINT or SIGTERM to `streambed cdn --run`).
func TestRunWritesPidAndStopsCleanly(t *testing.T) {
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			requireProgram(t, k)
			dir := t.TempDir()
			p, err := Write(Options{Kind: k, Upstreams: []Upstream{{Host: "127.0.0.1", Port: 9}}, Listen: freeAddr(t), Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx, io.Discard) }()
			pidFile := filepath.Join(dir, map[Kind]string{Nginx: "nginx.pid", Varnish: "varnishd.pid"}[k])
			var pid int
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if b, err := os.ReadFile(pidFile); err == nil {
					if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no pid in %s after 30 s", pidFile)
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return 20 s after its context ended")
			}
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("%s (pid %d) still runs after Run returned", k, pid)
			}
		})
	}
}
