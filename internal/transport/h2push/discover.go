package h2push

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"

	"golang.org/x/net/html"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// PageTarget is the rule key of the player page.
const PageTarget = "page:/"

// Pushable is a resource the admin page offers for a target.
type Pushable struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`            // page-asset, manifest, init, segment
	Track string `json:"track,omitempty"` // init and segments
	From  string `json:"from"`            // where it was discovered: html, mpd
}

// PageAssets lists the same-origin subresources an HTML page at pagePath links, as
// the origin discovers them for the page's push rules (see pageAssets); a client that
// loads a page like a browser fetches the same list.
func PageAssets(r io.Reader, pagePath string) ([]string, error) { return pageAssets(r, pagePath) }

// pageAssets lists the same-origin subresources an HTML page links: link[href],
// script[src], img[src], source[src], video[src], audio[src] (not a[href], which is
// navigation). Paths are resolved against the page's path; queries are kept.
func pageAssets(r io.Reader, pagePath string) ([]string, error) {
	base, _ := url.Parse(pagePath)
	z := html.NewTokenizer(r)
	seen := map[string]bool{}
	var out []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return out, nil
			}
			return out, z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			var want string
			switch string(name) {
			case "link":
				want = "href"
			case "script", "img", "source", "video", "audio":
				want = "src"
			default:
				continue
			}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if string(k) != want {
					continue
				}
				u, err := url.Parse(strings.TrimSpace(string(v)))
				if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.Path == "" {
					continue // another origin, data:, or empty
				}
				abs := base.ResolveReference(u)
				p := abs.EscapedPath()
				if abs.RawQuery != "" {
					p += "?" + abs.RawQuery
				}
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
}

// pageInfo is the player page's HTML, parsed once.
type pageInfo struct {
	fsys   fs.FS    // the page's files (web/dist), nil when there is no page
	assets []string // what index.html links, existing files only
}

func newPageInfo(fsys fs.FS) *pageInfo {
	p := &pageInfo{fsys: fsys}
	if fsys == nil {
		return p
	}
	b, err := fs.ReadFile(fsys, "index.html")
	if err != nil {
		return p
	}
	list, _ := pageAssets(bytes.NewReader(b), "/")
	for _, a := range list {
		if p.hasFile(a) {
			p.assets = append(p.assets, a)
		}
	}
	return p
}

// hasFile says whether a page-relative URL path (query allowed) names a file of the page.
func (p *pageInfo) hasFile(urlPath string) bool {
	if p == nil || p.fsys == nil {
		return false
	}
	name, _, _ := strings.Cut(urlPath, "?")
	name = strings.TrimPrefix(name, "/")
	if name == "" || !fs.ValidPath(name) {
		return false
	}
	st, err := fs.Stat(p.fsys, name)
	return err == nil && !st.IsDir()
}

// streamManifests lists a stream's manifests.
func streamManifests(live bool, name string) []Pushable {
	out := make([]Pushable, 0, 3)
	for _, f := range []string{layout.MPD, layout.MPDTimeline, layout.Master} {
		out = append(out, Pushable{Path: layout.Manifest(live, name, f), Kind: "manifest", From: "mpd"})
	}
	return out
}

// discoverAsset lists what can be pushed for an asset: the manifests, then per track
// its init segment and every media segment, named as its $Number$ MPD names them.
func discoverAsset(a *hub.Asset) []Pushable {
	name := a.Info().Name
	out := streamManifests(false, name)
	for _, t := range a.Info().Tracks {
		out = append(out, Pushable{Path: layout.TrackFile(false, name, t.ID, layout.Init), Kind: "init", Track: t.ID, From: "mpd"})
		for _, s := range t.Segments {
			out = append(out, Pushable{Path: layout.Segment(false, name, t.ID, s.Number), Kind: "segment", Track: t.ID, From: "mpd"})
		}
	}
	return out
}

// discoverChannel lists what can be pushed for a live channel: its manifests and
// init segments (live segments come and go, strategies push those).
func discoverChannel(c *hub.Channel) []Pushable {
	name := c.Info().Name
	out := streamManifests(true, name)
	for _, t := range c.Info().Tracks {
		out = append(out, Pushable{Path: layout.TrackFile(true, name, t.ID, layout.Init), Kind: "init", Track: t.ID, From: "mpd"})
	}
	return out
}

// Discover lists the resources that can be pushed for a rule target: the page's
// linked assets (and, for a stream given as ?stream=, see the stream's own list), or
// an asset's or channel's resources from its MPD.
func (p *Pusher) Discover(target string) ([]Pushable, error) {
	if target == PageTarget {
		var out []Pushable
		for _, a := range p.page.assets {
			out = append(out, Pushable{Path: a, Kind: "page-asset", From: "html"})
		}
		return out, nil
	}
	res, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	if res.Live {
		c, err := p.hub.Channel(res.Stream)
		if err != nil {
			return nil, err
		}
		return discoverChannel(c), nil
	}
	a, err := p.hub.Asset(res.Stream)
	if err != nil {
		return nil, err
	}
	return discoverAsset(a), nil
}

// parseTarget reads a stream rule key, "vod/NAME" or "live/NAME".
func parseTarget(target string) (layout.Resource, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok || (kind != "vod" && kind != "live") || !media.ValidName(name) {
		return layout.Resource{}, fmt.Errorf("target %q: want %s, vod/ASSET or live/CHANNEL: %w", target, PageTarget, media.ErrBadRequest)
	}
	return layout.Resource{Live: kind == "live", Stream: name}, nil
}

// cleanPath reports whether p is an absolute, clean URL path (no .., no //).
func cleanPath(p string) bool {
	return strings.HasPrefix(p, "/") && path.Clean(p) == p && !strings.Contains(p, "\\")
}
