// Package cdn writes configurations for real caches in front of Streambed — nginx and
// Varnish, as a shield (one cache tier in front of one or more origins) or an edge (a
// cache in front of a shield) — and runs them in the foreground.
//
// The configurations act on the origin's own headers: what a response may be cached
// for is its Cache-Control (live manifests a fraction of a segment, segments a year,
// a live segment that is not there yet not at all), so nothing here names a URL except
// the few that are not HTTP pulls at all (/ws/ WebSocket upgrades, /ingest/ uploads).
// What the caches add is what an origin cannot say: request collapsing, serving a
// stale copy while one request refreshes it, and balancing and failover between
// origins that serve byte-identical segments. docs/cdn.md explains each line.
package cdn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Kind is the cache program.
type Kind string

const (
	Nginx   Kind = "nginx"
	Varnish Kind = "varnish"
)

// Role is where the cache stands.
type Role string

const (
	// Shield is the tier in front of the origins: balancing and failover between
	// them, and their protection (one request per object per shield).
	Shield Role = "shield"
	// Edge is a cache in front of a shield (or any cache): close to viewers.
	Edge Role = "edge"
)

// Options configure a cache.
type Options struct {
	Kind      Kind
	Role      Role
	Upstreams []Upstream // the origins (shield) or the shield (edge); several are balanced
	Listen    string     // host:port the cache serves on
	Dir       string     // configuration, cache storage, pid and logs
	// CacheSize bounds the cache's storage (nginx: on disk under Dir; Varnish: memory).
	CacheSize int64
	// LockTimeout is how long a request waits for another one that is fetching the
	// same object before it goes to the upstream itself. Longer than the longest an
	// origin holds a request: a live segment in progress, or an HLS blocking reload
	// (up to three target durations).
	LockTimeout time.Duration
	// User is the nginx worker user; empty: nginx's default, or root when run as
	// root, so that workers can write Dir (a folder only root may enter).
	User string // nginx worker user, or Varnish jail user
}

// Upstream is one origin (or shield) address.
type Upstream struct {
	Host string // IP address or name
	Port int
}

func (u Upstream) String() string { return net.JoinHostPort(u.Host, strconv.Itoa(u.Port)) }

// ParseUpstreams reads a comma-separated list of http:// URLs (or host:port pairs).
// Only the scheme, host and port count: a cache passes every path on as it is.
func ParseUpstreams(list string) ([]Upstream, error) {
	var ups []Upstream
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "http://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", s, err)
		}
		if u.Scheme != "http" {
			return nil, fmt.Errorf("upstream %q: only http:// origins (the cache talks HTTP/1.1 to its upstreams; put TLS on the cache's listener side)", s)
		}
		if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
			return nil, fmt.Errorf("upstream %q: give the origin's address only (http://HOST:PORT); paths are passed on as requested", s)
		}
		port := 80
		if p := u.Port(); p != "" {
			if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
				return nil, fmt.Errorf("upstream %q: bad port", s)
			}
		}
		if u.Hostname() == "" {
			return nil, fmt.Errorf("upstream %q: no host", s)
		}
		ups = append(ups, Upstream{Host: u.Hostname(), Port: port})
	}
	if len(ups) == 0 {
		return nil, errors.New("no upstream: give --upstream http://HOST:PORT[,http://HOST2:PORT2]")
	}
	return ups, nil
}

// withDefaults fills the zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	switch o.Kind {
	case Nginx, Varnish:
	default:
		return o, fmt.Errorf("cache %q: want nginx or varnish", o.Kind)
	}
	switch o.Role {
	case "":
		o.Role = Shield
	case Shield, Edge:
	default:
		return o, fmt.Errorf("role %q: want shield or edge", o.Role)
	}
	if len(o.Upstreams) == 0 {
		return o, errors.New("no upstream")
	}
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return o, fmt.Errorf("listen %q: want HOST:PORT or :PORT: %w", o.Listen, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return o, fmt.Errorf("listen %q: bad port", o.Listen)
	}
	if host == "" {
		o.Listen = "0.0.0.0:" + port // both programs read a bare :PORT differently
	}
	if o.Dir == "" {
		return o, errors.New("no folder for the configuration and the cache (--out)")
	}
	if o.CacheSize == 0 {
		o.CacheSize = 1 << 30
	}
	if o.CacheSize < 16<<20 {
		return o, fmt.Errorf("cache size %d: want at least 16 MiB", o.CacheSize)
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = 20 * time.Second
	}
	if o.LockTimeout < time.Second {
		return o, fmt.Errorf("lock timeout %s: want at least 1s", o.LockTimeout)
	}
	for _, u := range o.Upstreams {
		if strings.ContainsAny(u.Host, " ;{}\"'\\\n\t") {
			return o, fmt.Errorf("upstream host %q: not a host name", u.Host)
		}
	}
	if strings.ContainsAny(o.User, " ;{}\"'\\\n\t") {
		return o, fmt.Errorf("user %q: not a user name", o.User)
	}
	return o, nil
}
