package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// leanOrigin serves s on loopback with the lean HTTP/1.1 path in front of net/http,
// as Serve does; it returns the address and the lean listener.
func leanOrigin(t *testing.T, s *Server, headerTimeout time.Duration) (string, *h1Listener) {
	t.Helper()
	return leanOriginIdle(t, s, headerTimeout, time.Minute)
}

// leanOriginIdle is leanOrigin with the idle timeout between requests.
func leanOriginIdle(t *testing.T, s *Server, headerTimeout, idleTimeout time.Duration) (string, *h1Listener) {
	t.Helper()
	return leanOriginMode(t, s, headerTimeout, idleTimeout, true)
}

// leanOriginMode is leanOriginIdle with the event loops (h1event.go) or a goroutine
// per waiting connection.
func leanOriginMode(t *testing.T, s *Server, headerTimeout, idleTimeout time.Duration, eventLoops bool) (string, *h1Listener) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, ConnState: s.metrics.connState}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	ctx, cancel := context.WithCancel(context.Background())
	l := newH1Listener(ctx, inner, srv, s.log, s.metrics.conns, eventLoops)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
		_ = l.Close()
		wctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		l.wait(wctx)
	})
	return inner.Addr().String(), l
}

// exchange sends raw on a new connection and reads one response (the request's
// method decides whether a body follows).
func exchange(t *testing.T, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, raw)
	must(t, err)
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: reading the response: %v", raw, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: reading the body: %v", raw, err)
	}
	return resp, body
}

// The lean path answers exactly as net/http did: status, every header but Date's
// value, and body, for a table of requests it serves and requests it hands on.
func TestLeanPathMatchesNetHTTP(t *testing.T) {
	s, ts := testOrigin(t) // ts: net/http alone
	addr, lean := leanOrigin(t, s, 10*time.Second)
	ref := strings.TrimPrefix(ts.URL, "http://")
	_, etag := func() (*http.Response, string) {
		r, _ := exchange(t, ref, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: x\r\n\r\n")
		return r, r.Header.Get("Etag")
	}()
	get := func(path string, hdr ...string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: origin.example\r\n" + strings.Join(hdr, "") + "\r\n"
	}
	tests := []struct {
		name string
		raw  string
		lean bool // answered by the lean path, not handed on
	}{
		{"vod segment", get("/vod/clip/v1/2.m4s"), true},
		{"vod audio segment", get("/vod/clip/a1/1.m4s"), true},
		{"vod segment by time", get("/vod/clip/v1/t25600.m4s"), true},
		{"vod segment, lower-case header names", "GET /vod/clip/v1/2.m4s HTTP/1.1\r\nhost: a\r\nuser-agent: wrk\r\naccept: */*\r\n\r\n", true},
		{"vod segment, bare LF", "GET /vod/clip/v1/2.m4s HTTP/1.1\nHost: a\n\n", true},
		{"vod segment, Connection: close", get("/vod/clip/v1/1.m4s", "Connection: close\r\n"), true},
		{"vod range", get("/vod/clip/v1/1.m4s", "Range: bytes=2-6\r\n"), true},
		{"vod open range", get("/vod/clip/v1/1.m4s", "Range: bytes=100-\r\n"), true},
		{"vod suffix range", get("/vod/clip/v1/1.m4s", "Range: bytes=-10\r\n"), true},
		{"vod two ranges", get("/vod/clip/v1/1.m4s", "Range: bytes=0-1,5-9\r\n"), true},
		{"vod unsatisfiable range", get("/vod/clip/v1/1.m4s", "Range: bytes=99999-\r\n"), true},
		{"vod If-None-Match", get("/vod/clip/v1/1.m4s", "If-None-Match: "+etag+"\r\n"), true},
		{"vod If-Modified-Since", get("/vod/clip/v1/1.m4s", "If-Modified-Since: "+time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)+"\r\n"), true},
		{"vod init", get("/vod/clip/v1/init.mp4"), true},
		{"vod MPD", get("/vod/clip/manifest.mpd"), true},
		{"vod MPD gzip", get("/vod/clip/manifest.mpd", "Accept-Encoding: gzip, br\r\n"), true},
		{"vod multivariant", get("/vod/clip/master.m3u8"), true},
		{"vod media playlist", get("/vod/clip/v1/playlist.m3u8"), true},
		{"unknown asset", get("/vod/nope/manifest.mpd"), true},
		{"unknown segment", get("/vod/clip/v1/3.m4s"), true},
		{"malformed segment name", get("/vod/clip/v1/abc.m4s"), false}, // not a segment path by layout
		{"live segment", get("/live/ch/v1/49.m4s"), true},
		{"live segment range", get("/live/ch/v1/49.m4s", "Range: bytes=1-3\r\n"), true},
		{"live segment gone", get("/live/ch/v1/39.m4s"), true},
		{"live segment not yet", get("/live/ch/v1/52.m4s"), true},
		{"live pinned", get("/live/ch/v1/39.m4s?nowMS=80000"), true},
		{"live bad nowMS", get("/live/ch/v1/39.m4s?nowMS=soon"), true},
		{"live init", get("/live/ch/a1/init.mp4"), true},
		{"live MPD", get("/live/ch/manifest.mpd"), true},
		{"live MPD, forwarded proto", get("/live/ch/manifest.mpd", "X-Forwarded-Proto: https\r\n"), true},
		{"live timeline MPD", get("/live/ch/manifest-timeline.mpd"), true},
		{"live playlist", get("/live/ch/v1/playlist.m3u8"), true},
		{"live playlist with a query", get("/live/ch/v1/playlist.m3u8?_HLS_msn=3"), false},
		{"page", get("/"), false},
		{"time", get("/time?nowMS=1500"), false},
		{"HEAD", "HEAD /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"OPTIONS", "OPTIONS /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nOrigin: https://p.example\r\n\r\n", false},
		{"HTTP/1.0", "GET /vod/clip/v1/1.m4s HTTP/1.0\r\n\r\n", false},
		{"encoded path", get("/vod/clip/v1/%31.m4s"), false},
		{"dot segment", get("/vod/clip/../clip/v1/1.m4s"), false},
		{"no Host", "GET /vod/clip/v1/1.m4s HTTP/1.1\r\n\r\n", false},
		{"two Hosts", "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false},
		{"folded header", "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  2\r\n\r\n", false},
		{"space before colon", "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost : a\r\n\r\n", false},
		{"garbage request line", "GET  /vod HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"GET with a body", "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			served, handed := lean.served.Load(), lean.handedOff.Load()
			want, wantBody := exchange(t, ref, tt.raw)
			got, gotBody := exchange(t, addr, tt.raw)
			if got.StatusCode != want.StatusCode {
				t.Fatalf("status %d, net/http %d", got.StatusCode, want.StatusCode)
			}
			// A multipart answer's boundary is random: compare it as one word.
			if _, b, ok := strings.Cut(got.Header.Get("Content-Type"), "boundary="); ok {
				gotBody = bytes.ReplaceAll(gotBody, []byte(b), []byte("BOUNDARY"))
				got.Header.Set("Content-Type", strings.ReplaceAll(got.Header.Get("Content-Type"), b, "BOUNDARY"))
			}
			if _, b, ok := strings.Cut(want.Header.Get("Content-Type"), "boundary="); ok {
				wantBody = bytes.ReplaceAll(wantBody, []byte(b), []byte("BOUNDARY"))
				want.Header.Set("Content-Type", strings.ReplaceAll(want.Header.Get("Content-Type"), b, "BOUNDARY"))
			}
			if !bytes.Equal(gotBody, wantBody) {
				t.Errorf("body %.120q, net/http %.120q", gotBody, wantBody)
			}
			// net/http's own 400s carry no Date; every handler's answer does.
			if (got.Header.Get("Date") == "") != (want.Header.Get("Date") == "") {
				t.Errorf("Date %q, net/http %q", got.Header.Get("Date"), want.Header.Get("Date"))
			}
			for _, h := range []http.Header{got.Header, want.Header} {
				if d := h.Get("Date"); d == "" {
					continue
				} else if _, err := http.ParseTime(d); err != nil {
					t.Errorf("Date %q: %v", d, err)
				}
				h.Del("Date")
			}
			if fmt.Sprint(got.Header) != fmt.Sprint(want.Header) {
				t.Errorf("headers\n  lean     %v\n  net/http %v", got.Header, want.Header)
			}
			if got.ContentLength != want.ContentLength || !slices.Equal(got.TransferEncoding, want.TransferEncoding) || got.Close != want.Close {
				t.Errorf("framing: length %d %v close %v; net/http %d %v %v",
					got.ContentLength, got.TransferEncoding, got.Close, want.ContentLength, want.TransferEncoding, want.Close)
			}
			if wasLean := lean.served.Load() > served; wasLean != tt.lean || (lean.handedOff.Load() > handed) == tt.lean {
				t.Errorf("answered by the lean path: %v, want %v", wasLean, tt.lean)
			}
		})
	}
}

// Requests sent back to back without waiting (pipelined) are answered in order, on
// the lean path and across a hand-off to net/http in the middle.
func TestLeanPathPipelining(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	paths := []string{"/vod/clip/v1/1.m4s", "/vod/clip/a1/2.m4s", "/live/ch/v1/49.m4s", "/vod/clip/manifest.mpd", "/time?nowMS=1", "/vod/clip/v1/2.m4s"}
	var raw strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&raw, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", p)
	}
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, raw.String())
	must(t, err)
	br := bufio.NewReader(c)
	want := []string{"v1-seg1;", "a1-seg2;", "v1-live-49", "<MPD", "1970-01-01T00:00:00.001Z", "v1-seg2;"}
	for i, p := range paths {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d (%s): %v", i, p, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), want[i]) {
			t.Errorf("response %d (%s): %d %.80q, want 200 with %q", i, p, resp.StatusCode, b, want[i])
		}
	}
	if lean.served.Load() != 4 || lean.handedOff.Load() != 1 {
		t.Errorf("lean answered %d and handed on %d connections; want 4 answered before /time's hand-off, 1 hand-off",
			lean.served.Load(), lean.handedOff.Load())
	}
}

// A client that sends part of a head and stalls (slowloris) is cut off after the
// header timeout without an answer; malformed heads get net/http's error answer
// (400, or 501 for a transfer coding it does not know) and a close.
func TestLeanPathSlowAndMalformedClients(t *testing.T) {
	s, _ := testOrigin(t)
	addr, _ := leanOrigin(t, s, 300*time.Millisecond)
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nX-Slow: ")
	must(t, err)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err == nil || isTimeout(err) {
		t.Errorf("stalled head: read %d bytes, %v; want the connection closed by the server", n, err)
	}
	for _, raw := range []string{
		"GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n",
		"GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n",
		"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", // a TLS hello on the plain port
		"GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
	} {
		resp, _ := exchange(t, addr, raw)
		if want := 400 + 101*strings.Count(raw, "gzip"); resp.StatusCode != want || !resp.Close {
			t.Errorf("%q: %d close=%v, want %d and close", raw, resp.StatusCode, resp.Close, want)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return err != nil && errors.As(err, &ne) && ne.Timeout()
}

// A head longer than the lean path reads goes to net/http whole.
func TestLeanPathLongHead(t *testing.T) {
	s, _ := testOrigin(t)
	addr, lean := leanOrigin(t, s, 10*time.Second)
	long := strings.Repeat("x", 2*h1HeadMax)
	resp, b := exchange(t, addr, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\nCookie: "+long+"\r\n\r\n")
	if resp.StatusCode != 200 || !strings.Contains(string(b), "v1-seg1;") || lean.handedOff.Load() != 1 {
		t.Errorf("long head: %d %.40q, hand-offs %d; want 200 from net/http", resp.StatusCode, b, lean.handedOff.Load())
	}
}

// Shutting down closes idle lean connections, and the open-connections gauge
// counts lean and handed-off connections once each.
func TestLeanPathShutdownAndGauge(t *testing.T) {
	s, _ := testOrigin(t)
	s.cfg.HTTP, s.cfg.HTTPS = "127.0.0.1:0", ""
	ls, err := s.Listen()
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ls) }()
	addr := ls.HTTP.Addr().String()
	idle, err := net.Dial("tcp", addr)
	must(t, err)
	defer idle.Close()
	br := bufio.NewReader(idle)
	_, _ = io.WriteString(idle, "GET /vod/clip/v1/1.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	must(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	handed, err := net.Dial("tcp", addr)
	must(t, err)
	defer handed.Close()
	_, _ = io.WriteString(handed, "GET /time HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(handed), nil)
	must(t, err)
	resp.Body.Close()
	if g := gaugeValue(t, s); g != 2 {
		t.Errorf("open connections %v, want 2 (one lean, one handed off)", g)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no graceful shutdown within 10 s")
	}
	_ = idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Errorf("idle lean connection after shutdown: %v, want closed", err)
	}
	// net/http counts a connection closed just after Shutdown returns: poll.
	for deadline := time.Now().Add(5 * time.Second); gaugeValue(t, s) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("open connections after shutdown %v, want 0", gaugeValue(t, s))
		}
	}
}

func gaugeValue(t *testing.T, s *Server) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	s.metrics.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "streambed_http_open_connections "); ok {
			var f float64
			_, _ = fmt.Sscan(v, &f)
			return f
		}
	}
	t.Fatal("no streambed_http_open_connections in /metrics")
	return 0
}

// A request pipelined behind a live segment that is still being made waits for it:
// the bytes the client-gone watcher read meanwhile are the next head, answered
// after the segment ends, on the same connection.
func TestLeanPathPipelinedBehindStreamedSegment(t *testing.T) {
	const d = 1000
	c, ts, _ := llOrigin(t, d*time.Millisecond, leanProto)
	appendChunk(t, c, 0, 0, d)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	must(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(guard))
	_, err = io.WriteString(conn, "GET /live/ll/v/0.m4s HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	must(t, err)
	if resp.StatusCode != 200 || len(resp.TransferEncoding) == 0 {
		t.Fatalf("segment in progress: %d %v, want 200 chunked", resp.StatusCode, resp.TransferEncoding)
	}
	first := readN(t, resp.Body, len(chunkOf(0, 0, d).Data))
	// The watcher is reading now; the next request reaches it, not the head reader.
	_, err = io.WriteString(conn, "GET /live/ll/v/init.mp4 HTTP/1.1\r\nHost: a\r\n\r\n")
	must(t, err)
	var want []byte
	want = append(want, first...)
	for i := uint64(1); i < 4; i++ {
		want = append(want, appendChunk(t, c, 0, i, d)...)
	}
	rest, err := readRest(t, resp.Body)
	if err != nil {
		t.Fatalf("segment body: %v", err)
	}
	if got := append(first, rest...); !bytes.Equal(got, want) {
		t.Fatalf("segment body %d bytes, want the 4 chunks (%d bytes)", len(got), len(want))
	}
	resp, err = http.ReadResponse(br, nil)
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "vinit" {
		t.Errorf("pipelined init: %d %q, want 200 vinit", resp.StatusCode, b)
	}
}

// waitingInLoops counts the connections waiting in the listener's event loops.
func (l *h1Listener) waitingInLoops() int {
	n := 0
	for _, lp := range l.loops {
		n += lp.waiting()
	}
	return n
}
