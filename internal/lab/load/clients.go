package load

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/streambed/streambed/internal/transport/wspush"
)

// httpClient is one client's own connection pool: HTTP/1.1 keeps one connection
// (one request at a time, as a player), HTTP/2 multiplexes on one.
func httpClient(proto string, secure, insecure bool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	tlsConf := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // --insecure for self-signed lab origins
	tr := &http.Transport{DialContext: dial, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, TLSClientConfig: tlsConf}
	tr.Protocols = new(http.Protocols)
	switch {
	case proto != HTTP2:
		tr.Protocols.SetHTTP1(true)
	case secure:
		tr.Protocols.SetHTTP2(true)
	default:
		tr.Protocols.SetUnencryptedHTTP2(true) // h2c with prior knowledge
	}
	return &http.Client{Transport: tr}
}

// pullClient requests each segment of each track when it becomes available (and
// delay later).
func pullClient(ctx context.Context, t *Target, cr *clientResult, proto string, insecure bool, delay time.Duration) {
	hc := httpClient(proto, len(t.HTTPBase) > 5 && t.HTTPBase[:5] == "https", insecure, countingDialer(&cr.wire))
	defer hc.CloseIdleConnections()
	buf := make([]byte, 32<<10)
	fetch := func(u string, media bool) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		if want := map[bool]int{true: 2, false: 1}[proto == HTTP2]; resp.ProtoMajor != want {
			return fmt.Errorf("GET %s: answered over %s, want HTTP/%d", u, resp.Proto, want)
		}
		if media {
			cr.mediaBytes += n
			cr.chunks++
		} else {
			cr.initBytes += n
		}
		return nil
	}
	for _, r := range t.Reps {
		if r.InitURL != "" {
			if err := fetch(r.InitURL, false); err != nil {
				cr.fail(ctx, err)
				return
			}
		}
	}
	ix := t.Reps[0].Index
	seg, ok := ix.Last(time.Now())
	if !ok {
		cr.err = errors.New("no segment available yet")
		return
	}
	pos := seg.Start
	for ctx.Err() == nil {
		s, ok := ix.Next(pos)
		if !ok {
			cr.err = errors.New("the timeline ended")
			return
		}
		if wait := time.Until(s.AvailableAt.Add(delay)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
		}
		for i, r := range t.Reps {
			u := s.URL
			if i > 0 {
				rs, ok := r.Index.Next(pos)
				if !ok {
					continue
				}
				u = rs.URL
			}
			if err := fetch(u, true); err != nil {
				cr.fail(ctx, err)
				return
			}
		}
		if ctx.Err() == nil {
			cr.segments++
		}
		pos = s.End()
	}
}

// fail records err unless the session simply reached its end.
func (cr *clientResult) fail(ctx context.Context, err error) {
	if ctx.Err() == nil {
		cr.err = err
	}
}

// wsClient receives a push session at the fixed rendition.
func wsClient(ctx context.Context, t *Target, cr *clientResult, insecure bool) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext:     countingDialer(&cr.wire),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // --insecure
	}}
	c, err := wspush.Dial(ctx, t.WSURL, wspush.DialOptions{HTTPClient: hc, Start: wspush.Start{Policy: wspush.PolicyFixed, Tracks: t.TrackIDs()}})
	if err != nil {
		cr.fail(ctx, err)
		return
	}
	defer c.CloseNow()
	first := -1
	for i, tr := range c.Ready.Tracks {
		if tr.ID == t.Reps[0].ID {
			first = i
		}
	}
	for {
		m, err := c.Next(ctx)
		if err != nil {
			cr.fail(ctx, err)
			return
		}
		f := m.Frame
		if f == nil {
			continue
		}
		if f.Kind == wspush.KindInit {
			cr.initBytes += int64(len(f.Payload))
			continue
		}
		cr.mediaBytes += int64(len(f.Payload))
		cr.chunks++
		if f.End && int(f.Track) == first {
			cr.segments++
		}
	}
}

// idleClient opens a socket and never starts a session.
func idleClient(ctx context.Context, t *Target, cr *clientResult, insecure bool) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext:     countingDialer(&cr.wire),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // --insecure
	}}
	c, _, err := websocket.Dial(ctx, t.WSURL, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		cr.fail(ctx, err)
		return
	}
	defer c.CloseNow()
	_, _, err = c.Read(ctx) // nothing comes until the start timeout closes it
	cr.fail(ctx, err)
}
