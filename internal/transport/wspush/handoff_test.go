package wspush

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// handOffConn imitates the lean HTTP/1.1 path's hand-off to net/http
// (internal/server's replayConn): a TCP connection behind a wrapper that offers the
// socket beneath with NetConn, as tls.Conn does, and writes straight to it.
type handOffConn struct{ net.Conn }

func (c handOffConn) NetConn() net.Conn { return c.Conn }

type handOffListener struct{ net.Listener }

func (l handOffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return handOffConn{c}, nil
}

// TestFanOutBehindHandOffAndNotOverTLS: a session whose connection came through a
// hand-off wrapper over a plain TCP socket is served by the fan-out (it was not,
// once, when the lean path began wrapping every connection it hands on), and gets
// every chunk of the store; a session over TLS, whose bytes the TLS layer must
// seal, keeps the per-session path.
func TestFanOutBehindHandOffAndNotOverTLS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		fanned int
	}{{"hand-off", false, 1}, {"tls", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t, 40*time.Millisecond, Options{})
			mux := http.NewServeMux()
			mux.Handle("GET /ws/{channel}", o.handler)
			srv := httptest.NewUnstartedServer(mux)
			srv.Listener = handOffListener{srv.Listener}
			client := http.DefaultClient
			if tc.tls {
				srv.StartTLS()
				client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own certificate
			} else {
				srv.Start()
			}
			t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			url := "ws" + srv.URL[len("http"):] + "/ws/live"
			c, err := Dial(ctx, url, DialOptions{HTTPClient: client, Start: Start{Policy: PolicyFixed, Tracks: []string{"v180", "a64"}}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			waitFor(t, 5*time.Second, "the session to stream", func() bool { return o.handler.Active() == 1 })
			if got := o.handler.FanOutViewers(); got != tc.fanned {
				t.Fatalf("%d sessions in the fan-out, want %d", got, tc.fanned)
			}
			checkChunksFromStore(t, ctx, o.channel, c, 2)
		})
	}
}
