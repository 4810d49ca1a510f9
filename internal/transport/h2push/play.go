package h2push

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// Play transport names: "h2push" (TLS, https URLs) and "h2cpush" (cleartext, http
// URLs), optionally followed by "-STRATEGY" to choose the origin's strategy for the
// session: h2cpush-k5, h2push-init-first, h2cpush-none. "-nopush" refuses pushes
// (SETTINGS_ENABLE_PUSH=0), the baseline of the same client.
const (
	PlayTLS       = "h2push"
	PlayCleartext = "h2cpush"
)

// StatsEnv names a file that play transports append their pushclient.Stats to, one JSON
// line per session, when they close.
const StatsEnv = "STREAMBED_H2PUSH_STATS"

// Match returns name when it names an h2push play transport and "" otherwise, so a
// switch on the transport name selects the whole family in one case.
func Match(name string) string {
	if _, _, _, err := parsePlayName(name); err == nil {
		return name
	}
	return "\x00not-h2push"
}

func parsePlayName(name string) (tlsOn bool, strategy string, noPush bool, err error) {
	base, rest, hasRest := strings.Cut(name, "-")
	switch base {
	case PlayTLS:
		tlsOn = true
	case PlayCleartext:
	default:
		return false, "", false, fmt.Errorf("%q is not an h2push transport", name)
	}
	if !hasRest {
		return tlsOn, "", false, nil
	}
	if rest == "nopush" {
		return tlsOn, "", true, nil
	}
	st, err := ParseStrategy(rest)
	if err != nil {
		return false, "", false, err
	}
	return tlsOn, st.String(), false, nil
}

// NewPlayFetcher builds the transport called name (see PlayTLS) for the manifest URL u.
func NewPlayFetcher(name string, u *url.URL, insecure bool) (*Fetcher, error) {
	tlsOn, strategy, noPush, err := parsePlayName(name)
	if err != nil {
		return nil, err
	}
	switch {
	case tlsOn && u.Scheme != "https":
		return nil, fmt.Errorf("transport %s needs an https URL (use %s for http)", name, PlayCleartext)
	case !tlsOn && u.Scheme != "http":
		return nil, fmt.Errorf("transport %s needs an http URL (use %s for https)", name, PlayTLS)
	}
	return NewFetcher(FetcherOptions{
		Client:    pushclient.Options{Insecure: insecure, DisablePush: noPush},
		Strategy:  strategy,
		StatsFile: os.Getenv(StatsEnv),
		Name:      name,
	})
}
