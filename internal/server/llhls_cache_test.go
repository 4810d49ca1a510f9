package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nginxConf is a caching reverse proxy in front of origin, as docs/protocols/ll-hls.md
// asks of a cache: the default key (the whole URL with its query), a cache lock whose
// timeout is above a reload's hold, and the cache status in X-Cache.
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  proxy_cache_path %[1]s/cache levels=1:2 keys_zone=ll:1m max_size=64m;
  server {
    listen 127.0.0.1:%[2]d;
    location / {
      proxy_pass http://%[3]s;
      proxy_http_version 1.1;
      proxy_cache ll;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 10s;
      add_header X-Cache $upstream_cache_status always;
    }
  }
}
`

// startNginx runs nginx (the Debian package the Makefile's TEST_DEPS installs) in front
// of origin and returns its base URL.
func startNginx(t *testing.T, origin string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Fatalf("nginx is not installed (make test installs it: TEST_DEPS nginx:nginx): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "nginx.conf")
	must(t, os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, dir, port, strings.TrimPrefix(origin, "http://"))), 0o644))
	cmd := exec.Command(bin, "-p", dir, "-c", conf)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitUntil(t, "nginx listens", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return base
}

// varnishVCL is Varnish in front of origin with its built-in rules (the default hash
// is the whole URL; Cache-Control decides the TTL; a miss already being fetched is
// waited for), and the cache status in X-Cache.
const varnishVCL = `vcl 4.1;
backend origin { .host = "%s"; .port = "%s"; }
sub vcl_deliver { if (obj.hits > 0) { set resp.http.X-Cache = "HIT"; } else { set resp.http.X-Cache = "MISS"; } }
`

// startVarnish runs varnishd (TEST_DEPS varnishd:varnish) in front of origin and
// returns its base URL.
func startVarnish(t *testing.T, origin string) string {
	t.Helper()
	bin, err := exec.LookPath("varnishd")
	if err != nil {
		t.Fatalf("varnishd is not installed (make test installs it: TEST_DEPS varnishd:varnish): %v", err)
	}
	host, port, err := net.SplitHostPort(strings.TrimPrefix(origin, "http://"))
	must(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	vcl := filepath.Join(dir, "default.vcl")
	must(t, os.WriteFile(vcl, []byte(fmt.Sprintf(varnishVCL, host, port)), 0o644))
	// -j none: no jail, so it runs as the test's user in the test's folder.
	cmd := exec.Command(bin, "-F", "-j", "none", "-a", addr, "-f", vcl, "-n", filepath.Join(dir, "n"), "-s", "malloc,16m")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := "http://" + addr
	waitUntil(t, "varnish answers", func() bool {
		resp, err := http.Get(base + "/time")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return base
}

// Through nginx and Varnish: a blocked reload is held through the cache and answered
// when its part comes; the answer is cached under its URL (a second client gets a
// HIT with the same playlist) while another part's URL is its own entry; identical
// reloads held at once reach the origin as one (nginx's cache lock, Varnish's waiting
// list); the plain playlist is not kept; a part is cached once complete. How long the
// coalesced reloads waited is logged: nginx re-checks a cache lock every 500 ms.
func TestLowLatencyThroughCaches(t *testing.T) {
	for name, start := range map[string]func(*testing.T, string) string{"nginx": startNginx, "varnish": startVarnish} {
		t.Run(name, func(t *testing.T) { throughCache(t, start) })
	}
}

func throughCache(t *testing.T, start func(*testing.T, string) string) {
	c, s, ts, client := llhlsOrigin(t)
	feed(t, c, 2)
	cache := start(t, ts.URL)
	reload := cache + "/live/ll/v/playlist.m3u8?_HLS_msn=1&_HLS_part=2"

	const k = 5
	held := make([]<-chan answer, k)
	for i := range held {
		held[i] = getAsync(context.Background(), client, reload)
	}
	waitUntil(t, "the reload is held at the origin", func() bool { return blocked(s) == 1 })
	for i := range held {
		notYet(t, held[i], "a reload through nginx")
	}
	appended := time.Now()
	appendChunk(t, c, 1, 2, 1000)
	var first string
	for i, ch := range held {
		a := await(t, ch)
		if a.status != http.StatusOK || !strings.Contains(a.body, `URI="1.2.m4s"`) {
			t.Fatalf("reload %d through nginx: %d %v\n%s", i, a.status, a.header, a.body)
		}
		if i == 0 {
			first = a.body
		} else if a.body != first {
			t.Errorf("reload %d got another playlist than the first", i)
		}
		t.Logf("reload %d answered %v after the part was appended (X-Cache %s)", i, time.Since(appended), a.header.Get("X-Cache"))
	}
	waitUntil(t, "the origin counted the reload", func() bool { return requestsOf(t, s, "manifest") >= 1 })
	if n := requestsOf(t, s, "manifest"); n != 1 {
		t.Errorf("the origin answered %d playlist requests for %d identical held reloads: nginx's cache lock did not coalesce them", n, k)
	}
	a := await(t, getAsync(context.Background(), client, reload))
	if a.header.Get("X-Cache") != "HIT" || a.body != first {
		t.Errorf("the same reload again: X-Cache %q, same body %v", a.header.Get("X-Cache"), a.body == first)
	}
	a = await(t, getAsync(context.Background(), client, cache+"/live/ll/v/playlist.m3u8?_HLS_msn=1&_HLS_part=1"))
	if a.header.Get("X-Cache") != "MISS" || a.status != http.StatusOK {
		t.Errorf("another part's reload: X-Cache %q, status %d: the query is not in the key", a.header.Get("X-Cache"), a.status)
	}
	for i := 0; i < 2; i++ {
		if a := await(t, getAsync(context.Background(), client, cache+"/live/ll/v/playlist.m3u8")); a.header.Get("X-Cache") == "HIT" {
			t.Errorf("the playlist without directives was served from the cache")
		}
	}
	for i, want := range []string{"MISS", "HIT"} {
		a := await(t, getAsync(context.Background(), client, cache+"/live/ll/v/1.2.m4s"))
		if a.status != http.StatusOK || a.body != string(chunkOf(1, 2, 1000).Data) || a.header.Get("X-Cache") != want {
			t.Errorf("part 1.2 through nginx, request %d: %d, X-Cache %q (want %s), %d bytes", i, a.status, a.header.Get("X-Cache"), want, len(a.body))
		}
	}
}

// requestsOf counts the origin's answered requests of a kind (every status).
func requestsOf(t *testing.T, s *Server, kind string) int {
	t.Helper()
	n := 0
	fams, err := s.metrics.reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != "streambed_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					n += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return n
}
