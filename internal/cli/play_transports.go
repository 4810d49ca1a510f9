package cli

import (
	"fmt"
	"net/url"

	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/transport/httppull"
)

// playTransport is a player transport and how to release it.
type playTransport struct {
	Name    string         // as reported in the QoE output's "transport"
	Fetcher player.Fetcher // may also implement player.Receiver, WireCounter, Protocoler
	close   func() error
}

// Close releases the transport's connections.
func (t *playTransport) Close() error {
	if t.close == nil {
		return nil
	}
	return t.close()
}

type playTransportOptions struct {
	Insecure bool // accept self-signed TLS certificates
}

// defaultTransport picks the transport from the URL's scheme.
func defaultTransport(u *url.URL) string {
	if u.Scheme == "https" {
		return string(httppull.H2)
	}
	return string(httppull.HTTP1)
}

// newPlayTransport builds the transport called name for the manifest URL u. Each
// transport adds its case here.
func newPlayTransport(name string, u *url.URL, o playTransportOptions) (*playTransport, error) {
	switch name {
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
	}
	return nil, fmt.Errorf("unknown transport %q (http1, h2, h2c)", name)
}
