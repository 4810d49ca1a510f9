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
type pullList []ChannelConfig

func (p *pullList) String() string {
	var s []string
	for _, c := range *p {
		s = append(s, c.Name+"="+c.Pull)
	}
	return strings.Join(s, " ")
}

func (p *pullList) Set(v string) error {
	name, raw, ok := strings.Cut(v, "=")
	if !ok || !media.ValidName(name) {
		return fmt.Errorf("%q: want NAME=MPD_URL, NAME of [A-Za-z0-9._-]", v)
	}
	if err := checkPullURL(raw); err != nil {
		return err
	}
	*p = append(*p, ChannelConfig{Name: name, Pull: raw})
	return nil
}

// checkPullURL says what is wrong with an upstream MPD URL.
func checkPullURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: the upstream MPD must be an http(s) URL, e.g. http://origin:8080/live/demo/manifest.mpd", raw)
	}
	return nil
}

// addPull adds a pulled channel to h; an upstream that cannot be read at start is an
// error (the origin does not start half-configured).
func addPull(ctx context.Context, h *hub.Hub, cc ChannelConfig, log *slog.Logger) error {
	c, err := upstream.AddChannel(ctx, h, upstream.Options{Name: cc.Name, MPD: cc.Pull, DVRWindow: cc.DVRWindow, Log: log.With("pull", cc.Name)})
	if err != nil {
		return fmt.Errorf("channel %q pulled from %s: %w", cc.Name, cc.Pull, err)
	}
	log.Info("pulling", "channel", cc.Name, "from", cc.Pull, "tracks", len(c.Info().Tracks))
	return nil
}
