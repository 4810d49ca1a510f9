package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// FuzzParseHead checks the lean path's head parser against net/http's: whatever it
// accepts, net/http reads the same way (method, path, query, Host, headers,
// Connection: close); it never panics; everything else is handed on, never served.
func FuzzParseHead(f *testing.F) {
	for _, seed := range []string{
		"GET /vod/a/v1/1.m4s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
		"GET /live/ch/v1/49.m4s?nowMS=1 HTTP/1.1\r\nhost: a\r\nRange: bytes=0-9\r\nConnection: keep-alive, close\r\n\r\n",
		"GET /vod/a/manifest.mpd HTTP/1.1\nHost: a\nAccept-Encoding: gzip\nX-Dup: 1\nX-Dup: 2\n\n",
		"GET /vod/a/v1/1.m4s HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  2\r\n\r\n",
		"GET /vod/a/../b HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://a/vod/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /vod/%2e%2e/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx",
		"GET /x HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		"GET /x?a=%zz&b=\"c\" HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end := headEnd(data, 0)
		if end == 0 {
			return
		}
		var h h1Head
		if parseHead(data[:end], &h) != nil {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data[:end])))
		if err != nil {
			t.Fatalf("lean parser accepted %q, net/http refuses it: %v", data[:end], err)
		}
		if r.Method != h.method || r.URL.Path != h.path || r.URL.RawQuery != h.query || r.Host != h.host || r.RequestURI != h.target {
			t.Fatalf("%q: lean %s %q ? %q host %q; net/http %s %q ? %q host %q", data[:end],
				h.method, h.path, h.query, h.host, r.Method, r.URL.Path, r.URL.RawQuery, r.Host)
		}
		if fmt.Sprint(r.Header) != fmt.Sprint(h.header) {
			t.Fatalf("%q: headers lean %v, net/http %v", data[:end], h.header, r.Header)
		}
		if r.Close != h.close || r.ContentLength != 0 || len(r.TransferEncoding) != 0 {
			t.Fatalf("%q: close %v (net/http %v), body length %d %v", data[:end], h.close, r.Close, r.ContentLength, r.TransferEncoding)
		}
	})
}

// FuzzAppendHeader: the lean writer's header lines are net/http's Header.Write lines
// (the order aside) for any names and values, line breaks and odd spaces included.
func FuzzAppendHeader(f *testing.F) {
	f.Add("Etag", `"6b05fc53-8299"`, "X-A", " spaced\t")
	f.Add("Cache-Control", "a\r\nInjected: yes", "Bad Name", "v")
	f.Add("Date", "\n", "X-B", "a\rb\nc")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		h := http.Header{k1: {v1}, k2: {v2, v1}}
		var ref bytes.Buffer
		if err := h.Write(&ref); err != nil {
			t.Fatal(err)
		}
		lines := func(b []byte) []string {
			l := strings.SplitAfter(string(b), "\r\n")
			slices.Sort(l)
			return l
		}
		if got, want := lines(appendHeader(nil, h, nil)), lines(ref.Bytes()); !slices.Equal(got, want) {
			t.Fatalf("appendHeader %q\nHeader.Write %q", got, want)
		}
	})
}
