package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/source/looplive"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/wspush"
)

const wsKey = "dGhlIHNhbXBsZSBub25jZQ==" // RFC 6455's sample key

// handshake is a WebSocket opening handshake for path, with extra header lines.
func handshake(method, path, proto string, extra ...string) string {
	b := method + " " + path + " " + proto + "\r\nHost: 127.0.0.1\r\n"
	for _, l := range extra {
		b += l + "\r\n"
	}
	return b + "\r\n"
}

var goodUpgrade = []string{"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: " + wsKey}

func without(lines []string, drop string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, drop) {
			out = append(out, l)
		}
	}
	return out
}

// upgradeExchange sends raw on a new connection and reads the response head (and
// a refusal's body); it closes the connection.
func upgradeExchange(t *testing.T, addr, raw string) (*http.Response, string) {
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
	body := ""
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	return resp, body
}

// TestLeanUpgradeMatchesNetHTTP: a table of good and bad WebSocket handshakes gets
// the same answer (status, the handshake's headers, the body of a refusal) from
// the lean path as from net/http, since the WebSocket library checks both; the
// upgrades the lean path takes are answered there (none handed on).
func TestLeanUpgradeMatchesNetHTTP(t *testing.T) {
	s, ts := testOrigin(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := wspush.Attach(ctx, s, wspush.Config{}); err != nil {
		t.Fatal(err)
	}
	lean, l := leanOrigin(t, s, 5*time.Second)
	plain := strings.TrimPrefix(ts.URL, "http://")
	for _, tc := range []struct {
		name string
		raw  string
		lean bool // answered on the lean path, not handed to net/http
	}{
		{"good", handshake("GET", "/ws/ch", "HTTP/1.1", goodUpgrade...), true},
		{"good, lower case, tokens in lists", handshake("GET", "/ws/ch", "HTTP/1.1", "connection: keep-alive, Upgrade", "upgrade: WebSocket", "sec-websocket-version: 13", "sec-websocket-key:  "+wsKey+" "), true},
		{"good, origin and subprotocol and deflate asked", handshake("GET", "/ws/ch", "HTTP/1.1", append(goodUpgrade, "Origin: http://elsewhere.example", "Sec-WebSocket-Protocol: chat", "Sec-WebSocket-Extensions: permessage-deflate")...), true},
		{"vod route", handshake("GET", "/ws/vod/clip", "HTTP/1.1", goodUpgrade...), true},
		{"unknown channel", handshake("GET", "/ws/nope", "HTTP/1.1", goodUpgrade...), true},
		{"no key", handshake("GET", "/ws/ch", "HTTP/1.1", without(goodUpgrade, "Sec-WebSocket-Key")...), true},
		{"short key", handshake("GET", "/ws/ch", "HTTP/1.1", append(without(goodUpgrade, "Sec-WebSocket-Key"), "Sec-WebSocket-Key: c2hvcnQ=")...), true},
		{"two keys", handshake("GET", "/ws/ch", "HTTP/1.1", append(goodUpgrade, "Sec-WebSocket-Key: "+wsKey)...), true},
		{"version 8", handshake("GET", "/ws/ch", "HTTP/1.1", append(without(goodUpgrade, "Sec-WebSocket-Version"), "Sec-WebSocket-Version: 8")...), true},
		{"no version", handshake("GET", "/ws/ch", "HTTP/1.1", without(goodUpgrade, "Sec-WebSocket-Version")...), true},
		{"connection without upgrade", handshake("GET", "/ws/ch", "HTTP/1.1", append(without(goodUpgrade, "Connection"), "Connection: keep-alive")...), true},
		{"upgrade to something else", handshake("GET", "/ws/ch", "HTTP/1.1", append(without(goodUpgrade, "Upgrade"), "Upgrade: h2c")...), true},
		{"no upgrade header", handshake("GET", "/ws/ch", "HTTP/1.1", without(goodUpgrade, "Upgrade")...), false},
		{"HTTP/1.0", handshake("GET", "/ws/ch", "HTTP/1.0", goodUpgrade...), false},
		{"POST", handshake("POST", "/ws/ch", "HTTP/1.1", append(goodUpgrade, "Content-Length: 0")...), false},
		{"not a ws path", handshake("GET", "/live/ch/manifest.mpd", "HTTP/1.1", goodUpgrade...), false},
		{"encoded path", handshake("GET", "/ws/%63h", "HTTP/1.1", goodUpgrade...), false},
		{"two hosts", handshake("GET", "/ws/ch", "HTTP/1.1", append(goodUpgrade, "Host: b")...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := l.handedOff.Load()
			want, wantBody := upgradeExchange(t, plain, tc.raw)
			got, gotBody := upgradeExchange(t, lean, tc.raw)
			if got.StatusCode != want.StatusCode || gotBody != wantBody {
				t.Fatalf("lean %d %q, net/http %d %q", got.StatusCode, gotBody, want.StatusCode, wantBody)
			}
			for _, k := range []string{"Upgrade", "Sec-Websocket-Accept", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions", "Content-Type"} {
				if g, w := got.Header.Values(k), want.Header.Values(k); fmt.Sprint(g) != fmt.Sprint(w) {
					t.Errorf("%s: lean %q, net/http %q", k, g, w)
				}
			}
			if want.StatusCode == http.StatusSwitchingProtocols && got.Header.Get("Connection") != "Upgrade" {
				t.Errorf("101 with Connection %q", got.Header.Get("Connection"))
			}
			if handed := l.handedOff.Load() != before; handed == tc.lean {
				t.Errorf("handed to net/http: %v, want %v", handed, !tc.lean)
			}
			t.Logf("%d %q", got.StatusCode, gotBody)
		})
	}
	// The client has closed each connection once it read the answer; the origin
	// counts a connection out when its own goroutine sees that, which may be later.
	for deadline := time.Now().Add(10 * time.Second); gaugeValue(t, s) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("connections gauge %v 10 s after every connection closed or hijacked", gaugeValue(t, s))
		}
	}
}

// TestLeanUpgradeSessionInFanOut: a push session opened through the lean path
// streams the channel (ready, inits, chunks byte for byte as stored) and is served
// by the channel's fan-out, on the bare TCP socket; with bytes the client sent right
// behind the head (its start message) nothing is lost.
func TestLeanUpgradeSessionInFanOut(t *testing.T) {
	h := hub.New()
	t.Cleanup(h.Close)
	dir := filepath.Join(t.TempDir(), "test")
	must(t, os.Symlink(testmedia.Asset(t), dir))
	a, err := hub.OpenAsset(dir)
	must(t, err)
	h.AddAsset(a)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := looplive.AddChannel(ctx, h, a, looplive.ChannelOptions{Name: "live", ChunkDuration: 40 * time.Millisecond, DVRWindow: 20 * time.Second, AvailabilityStart: time.Unix(0, 0)})
	must(t, err)
	s := New(DefaultConfig(), h, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	ws, err := wspush.Attach(ctx, s, wspush.Config{})
	must(t, err)
	addr, l := leanOrigin(t, s, 5*time.Second)

	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	cl, err := wspush.Dial(dctx, "ws://"+addr+"/ws/live", wspush.DialOptions{Start: wspush.Start{Policy: wspush.PolicyFixed, Tracks: []string{"v180"}}})
	must(t, err)
	defer cl.CloseNow()
	chunks := 0
	for chunks < 30 {
		m, err := cl.Next(dctx)
		must(t, err)
		if m.Frame == nil || m.Frame.Kind != wspush.KindChunk {
			continue
		}
		chunks++
	}
	if ws.FanOutViewers() != 1 {
		t.Errorf("%d sessions in the fan-out, want 1", ws.FanOutViewers())
	}
	if n := l.handedOff.Load(); n != 0 {
		t.Errorf("%d connections handed to net/http, want 0", n)
	}

	// The start message right behind the head, in the same write: the bytes read
	// ahead go with the hijacked connection.
	nc, err := net.Dial("tcp", addr)
	must(t, err)
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	start := []byte(`{"type":"start","policy":"fixed","tracks":["v180"]}`)
	frame := append([]byte{0x81, 0x80 | byte(len(start)), 1, 2, 3, 4}, start...) // masked text frame
	for i := range start {
		frame[6+i] ^= []byte{1, 2, 3, 4}[i%4]
	}
	_, err = nc.Write(append([]byte(handshake("GET", "/ws/live", "HTTP/1.1", goodUpgrade...)), frame...))
	must(t, err)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	must(t, err)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	hdr := make([]byte, 2)
	_, err = io.ReadFull(br, hdr)
	must(t, err)
	if hdr[0] != 0x81 {
		t.Fatalf("first frame %x, want a text frame (ready)", hdr)
	}
	n := int(hdr[1])
	if n == 126 {
		ext := make([]byte, 2)
		_, err = io.ReadFull(br, ext)
		must(t, err)
		n = int(ext[0])<<8 | int(ext[1])
	}
	ready := make([]byte, n)
	_, err = io.ReadFull(br, ready)
	must(t, err)
	if !bytes.Contains(ready, []byte(`"type":"ready"`)) {
		t.Fatalf("first message %q, want ready", ready)
	}
	_ = c
}

// FuzzParseUpgradeHead checks the upgrade parser against net/http's: whatever it
// accepts, net/http reads the same way (method, path, query, Host, headers, no
// body); it never panics.
func FuzzParseUpgradeHead(f *testing.F) {
	for _, seed := range []string{
		handshake("GET", "/ws/ch", "HTTP/1.1", goodUpgrade...),
		handshake("GET", "/ws/vod/a?x=1", "HTTP/1.1", "connection: upgrade", "upgrade: websocket", "X-Dup: 1", "X-Dup: 2"),
		"GET /ws/ch HTTP/1.1\nHost: a\nUpgrade: websocket\n\n",
		"GET /ws/ch HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nX-A: 1\r\n  2\r\n\r\n",
		"GET /ws/ch HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nContent-Length: 1\r\n\r\nx",
		"GET /ws/ch HTTP/1.1\r\nHost: a b\r\nUpgrade: websocket\r\n\r\n",
		"GET /ws/../x HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",
		"GET /ws/ch HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nX: \x7f\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end := headEnd(data, 0)
		if end == 0 {
			return
		}
		var u upgradeHead
		if !parseUpgradeHead(data[:end], &u) {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data[:end])))
		if err != nil {
			t.Fatalf("upgrade parser accepted %q, net/http refuses it: %v", data[:end], err)
		}
		if r.Method != http.MethodGet || r.URL.Path != u.path || r.URL.RawQuery != u.query || r.Host != u.host || r.RequestURI != u.target {
			t.Fatalf("%q: lean %q ? %q host %q; net/http %s %q ? %q host %q", data[:end], u.path, u.query, u.host, r.Method, r.URL.Path, r.URL.RawQuery, r.Host)
		}
		if fmt.Sprint(r.Header) != fmt.Sprint(u.header) {
			t.Fatalf("%q: headers lean %v, net/http %v", data[:end], u.header, r.Header)
		}
		if r.ContentLength != 0 || len(r.TransferEncoding) != 0 || !strings.HasPrefix(u.path, wsPathPrefix) {
			t.Fatalf("%q: body length %d %v, path %q", data[:end], r.ContentLength, r.TransferEncoding, u.path)
		}
	})
}

// TestLeanUpgradePanickingHandler: a handler that panics on an upgrade request
// ends the connection quietly (as net/http does) and the connection is not handed
// on to net/http afterwards.
func TestLeanUpgradePanickingHandler(t *testing.T) {
	s, _ := testOrigin(t)
	s.Handle("GET /ws/panic", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	addr, l := leanOrigin(t, s, 5*time.Second)
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(c, handshake("GET", "/ws/panic", "HTTP/1.1", goodUpgrade...))
	must(t, err)
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Fatalf("read %q, %v; want the connection closed without an answer", b, err)
	}
	if n := l.handedOff.Load(); n != 0 {
		t.Errorf("%d connections handed to net/http after the panic", n)
	}
}
