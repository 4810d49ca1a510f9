package publish

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// ClipRequest is the body of POST /api/channels/{name}/clips: a window of the
// channel's archive to make into an on-demand asset.
type ClipRequest struct {
	Name  string `json:"name"`  // the asset's name: /vod/{name}/…
	Start string `json:"start"` // RFC 3339, or seconds since the Unix epoch
	End   string `json:"end"`
}

// ClipJSON is the asset a clip made.
type ClipJSON struct {
	Name      string  `json:"name"`
	DASH      string  `json:"dash"`
	HLS       string  `json:"hls"`
	DurationS float64 `json:"duration_s"`
	Tracks    int     `json:"tracks"`
}

// parseWhen reads an RFC 3339 time or seconds since the Unix epoch.
func parseWhen(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e11 {
		return time.Unix(0, int64(f*1e9)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: write it as RFC 3339 (2026-11-24T05:00:00Z) or seconds since the Unix epoch: %w", s, media.ErrBadRequest)
	}
	return t, nil
}

// Clip cuts [start, end) of an archived channel into the on-demand asset name, kept
// in the assets folder (so it is served again after a restart) and served at once.
func (p *Points) Clip(channel string, req ClipRequest) (*hub.Asset, error) {
	pt, err := p.Get(channel)
	if err != nil {
		return nil, err
	}
	if !pt.Options.Archiving {
		return nil, fmt.Errorf("channel %q keeps no archive (archiving: false): nothing to cut: %w", channel, ErrConflict)
	}
	if !media.ValidName(req.Name) {
		return nil, fmt.Errorf("clip name %q: use 1–64 of [A-Za-z0-9._-]: %w", req.Name, media.ErrBadRequest)
	}
	if _, err := p.hub.Asset(req.Name); err == nil {
		return nil, fmt.Errorf("an asset %q exists already: choose another name: %w", req.Name, ErrExists)
	}
	from, err := parseWhen(req.Start)
	if err != nil {
		return nil, err
	}
	to, err := parseWhen(req.End)
	if err != nil {
		return nil, err
	}
	dir := p.archiveDir(pt)
	if _, err := hub.CutArchive(dir, from, to, filepath.Join(p.AssetsDir, req.Name)); err != nil {
		return nil, err
	}
	a, err := hub.OpenAsset(filepath.Join(p.AssetsDir, req.Name))
	if err != nil {
		return nil, err
	}
	p.hub.AddAsset(a)
	p.log.Info("clip made from the archive", "channel", channel, "asset", req.Name, "from", from, "to", to)
	return a, nil
}

func (p *Points) serveClip(w http.ResponseWriter, r *http.Request) {
	var req ClipRequest
	if err := decodeBody(r, &req); err != nil {
		httperr.Write(w, err)
		return
	}
	a, err := p.Clip(r.PathValue("name"), req)
	if err != nil {
		httperr.Write(w, apiError(err))
		return
	}
	base := baseURL(r)
	info := a.Info()
	writeJSON(w, http.StatusCreated, ClipJSON{
		Name: info.Name, DASH: base + "/vod/" + info.Name + "/manifest-timeline.mpd", HLS: base + "/vod/" + info.Name + "/master.m3u8",
		DurationS: info.Duration.Seconds(), Tracks: len(info.Tracks),
	})
}
