package netutil

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"testing"
)

func TestCountingConn(t *testing.T) {
	a, b := net.Pipe()
	var total, other Counter
	c := NewCountingConn(a, &total, &other)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 5)
		_, _ = io.ReadFull(b, buf)
		_, _ = b.Write([]byte("pong!!!"))
		b.Close()
	}()
	if _, err := c.Write([]byte("ping!")); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	wg.Wait()
	if string(got) != "pong!!!" {
		t.Fatalf("read %q", got)
	}
	for name, k := range map[string]interface{ Bytes() (int64, int64) }{"conn": c, "total": &total, "other": &other} {
		if r, w := k.Bytes(); r != 7 || w != 5 {
			t.Errorf("%s: read %d written %d", name, r, w)
		}
	}
	if total.Conns() != 1 || other.Conns() != 1 {
		t.Errorf("conns %d %d", total.Conns(), other.Conns())
	}
}

func TestCountingDialerUnderTLS(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, 10000))
	}))
	defer s.Close()
	var total Counter
	var seen *CountingConn
	var mu sync.Mutex
	tr := &http.Transport{
		DialContext:     CountingDialer((&net.Dialer{}).DialContext, &total),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL, nil)
	req = req.WithContext(withConnTrace(req.Context(), func(nc net.Conn) {
		mu.Lock()
		seen = FindCountingConn(nc)
		mu.Unlock()
	}))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if seen == nil {
		t.Fatal("no counting connection under the TLS connection")
	}
	r, w := total.Bytes()
	if cr, cw := seen.Bytes(); cr != r || cw != w {
		t.Errorf("connection %d/%d, total %d/%d", cr, cw, r, w)
	}
	if r <= n || w <= 0 || total.Conns() != 1 {
		t.Errorf("read %d (body %d) written %d conns %d", r, n, w, total.Conns())
	}
	if FindCountingConn(nil) != nil {
		t.Error("found a counting connection in nil")
	}
}

func withConnTrace(ctx context.Context, got func(net.Conn)) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { got(info.Conn) },
	})
}
