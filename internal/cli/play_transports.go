package cli

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/transport/h2push"
	"github.com/streambed/streambed/internal/transport/httppull"
	"github.com/streambed/streambed/internal/transport/pars"
	"github.com/streambed/streambed/internal/transport/wspush"
)

// playTransport is a player transport and how to release it.
type playTransport struct {
	Name    string         // as reported in the QoE output's "transport"
	Fetcher player.Fetcher // may also implement player.Receiver, WireCounter, Protocoler
	// PushWait is the player's Config.PushWait unless --push-wait says otherwise.
	PushWait time.Duration
	close    func() error
}

// Close releases the transport's connections.
func (t *playTransport) Close() error {
	if t.close == nil {
		return nil
	}
	return t.close()
}

type playTransportOptions struct {
	Insecure       bool   // accept self-signed TLS certificates
	Connections    string // pars and parallel: N, or "auto" (pars)
	NoParSPipeline bool   // pars: one request and one range per connection at a time (default: pipelined HTTP/1.1, two ranges per connection)
}

// annotate lets the transport add its own keys to the QoE report.
func (t *playTransport) annotate(rep *qoe.Report) {
	if a, ok := t.Fetcher.(interface{ AddToReport(*qoe.Report) }); ok {
		a.AddToReport(rep)
	}
}

// defaultTransport picks the transport from the URL's scheme.
func defaultTransport(u *url.URL) string {
	if u.Scheme == "https" {
		return string(httppull.H2)
	}
	if u.Scheme == "ws" || u.Scheme == "wss" {
		return "ws"
	}
	return string(httppull.HTTP1)
}

// newPlayTransport builds the transport called name for the manifest URL u. Each
// transport adds its case here.
func newPlayTransport(name string, u *url.URL, o playTransportOptions) (*playTransport, error) {
	if o.Connections != "" && name != "pars" && name != "parallel" {
		return nil, fmt.Errorf("--connections is for --transport pars or parallel, not %s", name)
	}
	switch name {
	case "pars", "parallel":
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("transport %s needs an http(s) URL, not %q", name, u.String())
		}
		return newParSTransport(name, o)
	case string(httppull.HTTP1), string(httppull.H2), string(httppull.H2C):
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("transport %s needs an http(s) URL, not %q", name, u.String())
		}
		proto, err := httppull.ParseProtocol(name)
		if err != nil {
			return nil, err
		}
		c, err := httppull.NewClient(httppull.ClientOptions{Protocol: proto, Insecure: o.Insecure})
		if err != nil {
			return nil, err
		}
		return &playTransport{Name: string(proto), Fetcher: c, close: c.Close}, nil
	case "ws": // WebSocket push (ws://HOST/ws/CHANNEL, ws://HOST/ws/vod/ASSET): server-side adaptation
		t, err := wspush.NewPlayerTransport(u, wspush.PlayerOptions{Insecure: o.Insecure})
		if err != nil {
			return nil, err
		}
		return &playTransport{Name: name, Fetcher: t, close: t.Close, PushWait: wspush.DefaultPushWait}, nil
	case h2push.Match(name): // h2push (TLS), h2cpush (h2c), with -STRATEGY: HTTP/2 accepting server push
		f, err := h2push.NewPlayFetcher(name, u, o.Insecure)
		if err != nil {
			return nil, err
		}
		return &playTransport{Name: name, Fetcher: f, close: f.Close}, nil
	}
	return nil, fmt.Errorf("unknown transport %q (http1, h2, h2c, pars, parallel, ws, h2push-STRATEGY, h2cpush-STRATEGY)", name)
}

// newParSTransport builds ParS (N byte ranges of each segment over N HTTP/1.1
// connections; N fixed or "auto" from the model) or Parallel (N segments at once).
func newParSTransport(name string, o playTransportOptions) (*playTransport, error) {
	conn := pars.ConnOptions{Insecure: o.Insecure}
	ranges := 0 // pars's defaults: pipelined HTTP/1.1, two ranges per connection
	if o.NoParSPipeline && name == "pars" {
		conn.Streams, ranges = 1, 1 // --pars-pipeline=false: one request and one range per connection at a time
	}
	spec := o.Connections
	if spec == "" {
		spec = "4"
		if name == "pars" {
			spec = "auto"
		}
	}
	if spec == "auto" {
		if name != "pars" {
			return nil, errors.New("--connections auto is for --transport pars; parallel takes a number")
		}
		c, err := pars.New(pars.Options{ConnOptions: conn, Auto: true})
		if err != nil {
			return nil, err
		}
		return &playTransport{Name: name, Fetcher: c, close: c.Close}, nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 || n > 8 {
		return nil, fmt.Errorf("--connections %q: want 1..8 or auto", spec)
	}
	if name == "parallel" {
		p, err := pars.NewParallel(n, conn)
		if err != nil {
			return nil, err
		}
		return &playTransport{Name: name, Fetcher: p, close: p.Close}, nil
	}
	c, err := pars.New(pars.Options{ConnOptions: conn, Connections: n, RangesPerConnection: ranges})
	if err != nil {
		return nil, err
	}
	return &playTransport{Name: name, Fetcher: c, close: c.Close}, nil
}
