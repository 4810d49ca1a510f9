package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/source/upstream"
)

// pullList is serve's repeatable --pull NAME=MPD_URL: live channels pulled from an
// upstream origin (edge mode).
type pullList []upstream.Options

func (p *pullList) String() string {
	var s []string
	for _, o := range *p {
		s = append(s, o.Name+"="+o.MPD)
	}
	return strings.Join(s, " ")
}

func (p *pullList) Set(v string) error {
	name, raw, ok := strings.Cut(v, "=")
	if !ok || !media.ValidName(name) {
		return fmt.Errorf("%q: want NAME=MPD_URL, NAME of [A-Za-z0-9._-]", v)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: the upstream MPD must be an http(s) URL, e.g. http://origin:8080/live/demo/manifest.mpd", raw)
	}
	*p = append(*p, upstream.Options{Name: name, MPD: raw})
	return nil
}

// openPulls adds each pulled channel to h; an upstream that cannot be read at start
// is an error (the origin does not start half-configured).
func openPulls(ctx context.Context, h *hub.Hub, pulls pullList, log *slog.Logger) error {
	for _, o := range pulls {
		o.Log = log.With("pull", o.Name)
		c, err := upstream.AddChannel(ctx, h, o)
		if err != nil {
			return fmt.Errorf("--pull %s=%s: %w", o.Name, o.MPD, err)
		}
		log.Info("pulling", "channel", o.Name, "from", o.MPD, "tracks", len(c.Info().Tracks))
	}
	return nil
}
