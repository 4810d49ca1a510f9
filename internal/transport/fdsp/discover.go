package fdsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/streambed/streambed/internal/layout"
)

// Endpoint is where a stream is served over FDSP.
type Endpoint struct {
	Addr   string // TCP host:port
	Stream string // "vod/NAME" or "live/NAME"
}

// Discover finds the FDSP endpoint of the stream whose manifest URL is u, from the
// origin's /api/streams ("fdsp": "fdsp://HOST:PORT/vod/NAME"; an empty HOST is the
// manifest URL's host). A URL that is already fdsp://HOST:PORT/vod/NAME is used as
// it is.
func Discover(ctx context.Context, u *url.URL, c *http.Client) (Endpoint, error) {
	if u.Scheme == "fdsp" {
		return parseEndpoint(u.String(), u.Hostname())
	}
	key := layout.Parse(u.Path).StreamKey()
	if key == "" {
		return Endpoint{}, fmt.Errorf("fdsp: %s is not a stream's manifest URL (/vod/NAME/... or /live/NAME/...)", u)
	}
	api := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/api/streams"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.String(), nil)
	if err != nil {
		return Endpoint{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return Endpoint{}, fmt.Errorf("fdsp: finding the endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Endpoint{}, fmt.Errorf("fdsp: %s: %s", api.String(), resp.Status)
	}
	var list struct {
		Streams []struct {
			Name string `json:"name"`
			Live bool   `json:"live"`
			FDSP string `json:"fdsp"`
		} `json:"streams"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&list); err != nil {
		return Endpoint{}, fmt.Errorf("fdsp: %s: %w", api.String(), err)
	}
	for _, s := range list.Streams {
		k := "vod/" + s.Name
		if s.Live {
			k = "live/" + s.Name
		}
		if k != key {
			continue
		}
		if s.FDSP == "" {
			return Endpoint{}, fmt.Errorf("fdsp: the origin does not serve %s over FDSP (serve with --fdsp ADDR or an fdsp: section)", key)
		}
		return parseEndpoint(s.FDSP, u.Hostname())
	}
	return Endpoint{}, fmt.Errorf("fdsp: %s is not in %s", key, api.String())
}

// Live reports whether the endpoint is a live channel's.
func (e Endpoint) Live() bool { return strings.HasPrefix(e.Stream, "live/") }

func parseEndpoint(s, defaultHost string) (Endpoint, error) {
	e, err := url.Parse(s)
	if err != nil || e.Scheme != "fdsp" || e.Port() == "" {
		return Endpoint{}, fmt.Errorf("fdsp: endpoint %q: want fdsp://HOST:PORT/vod/NAME", s)
	}
	host := e.Hostname()
	if host == "" {
		host = defaultHost
	}
	stream := strings.TrimPrefix(e.Path, "/")
	if !strings.HasPrefix(stream, "vod/") && !strings.HasPrefix(stream, "live/") {
		return Endpoint{}, fmt.Errorf("fdsp: endpoint %q: want fdsp://HOST:PORT/vod/NAME", s)
	}
	return Endpoint{Addr: net.JoinHostPort(host, e.Port()), Stream: stream}, nil
}
