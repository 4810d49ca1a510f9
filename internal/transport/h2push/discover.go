package h2push

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/manifest/dash"
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

// mpdTemplates is the part of an MPD that names resources.
type mpdTemplates struct {
	Periods []struct {
		Sets []struct {
			Template *struct {
				Init  string  `xml:"initialization,attr"`
				Media string  `xml:"media,attr"`
				Start *uint64 `xml:"startNumber,attr"`
			} `xml:"SegmentTemplate"`
			Reps []struct {
				ID string `xml:"id,attr"`
			} `xml:"Representation"`
		} `xml:"AdaptationSet"`
	} `xml:"Period"`
}

// discoverAsset lists what can be pushed for an asset, from its MPD: the manifests,
// then per representation its init segment and every media segment, named by the
// MPD's SegmentTemplate ($Number$ addressing).
func discoverAsset(a *hub.Asset, base string) ([]Pushable, error) {
	var buf bytes.Buffer
	if err := dash.Render(&buf, manifest.AssetPresentation(a.Descriptor(), manifest.Number)); err != nil {
		return nil, err
	}
	var m mpdTemplates
	if err := xml.Unmarshal(buf.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("asset MPD: %w", err)
	}
	out := []Pushable{
		{Path: base + "manifest.mpd", Kind: "manifest", From: "mpd"},
		{Path: base + "manifest-timeline.mpd", Kind: "manifest", From: "mpd"},
		{Path: base + "master.m3u8", Kind: "manifest", From: "mpd"},
	}
	for _, per := range m.Periods {
		for _, set := range per.Sets {
			if set.Template == nil {
				continue
			}
			for _, rep := range set.Reps {
				t, err := a.Info().Track(rep.ID)
				if err != nil {
					continue
				}
				out = append(out, Pushable{Path: base + expand(set.Template.Init, rep.ID, 0), Kind: "init", Track: rep.ID, From: "mpd"})
				for _, s := range t.Segments {
					out = append(out, Pushable{Path: base + expand(set.Template.Media, rep.ID, s.Number), Kind: "segment", Track: rep.ID, From: "mpd"})
				}
			}
		}
	}
	return out, nil
}

// discoverChannel lists what can be pushed for a live channel: its manifests and
// init segments (live segments come and go, strategies push those).
func discoverChannel(c *hub.Channel, base string) []Pushable {
	out := []Pushable{
		{Path: base + "manifest.mpd", Kind: "manifest", From: "mpd"},
		{Path: base + "manifest-timeline.mpd", Kind: "manifest", From: "mpd"},
		{Path: base + "master.m3u8", Kind: "manifest", From: "mpd"},
	}
	for _, t := range c.Info().Tracks {
		out = append(out, Pushable{Path: base + t.ID + "/init.mp4", Kind: "init", Track: t.ID, From: "mpd"})
	}
	return out
}

// expand substitutes $RepresentationID$ and $Number$ (with an optional %0Nd width).
func expand(tmpl, id string, n uint64) string {
	s := strings.ReplaceAll(tmpl, "$RepresentationID$", id)
	for {
		i := strings.Index(s, "$Number")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i+1:], "$")
		if j < 0 {
			return s
		}
		spec := s[i+len("$Number") : i+1+j]
		num := strconv.FormatUint(n, 10)
		if w, ok := strings.CutPrefix(spec, "%0"); ok {
			if width, err := strconv.Atoi(strings.TrimSuffix(w, "d")); err == nil && len(num) < width {
				num = strings.Repeat("0", width-len(num)) + num
			}
		}
		s = s[:i] + num + s[i+2+j:]
	}
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
		return discoverChannel(c, res.Base()), nil
	}
	a, err := p.hub.Asset(res.Stream)
	if err != nil {
		return nil, err
	}
	return discoverAsset(a, res.Base())
}

// parseTarget reads a stream rule key, "vod/NAME" or "live/NAME".
func parseTarget(target string) (Resource, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok || (kind != "vod" && kind != "live") || !media.ValidName(name) {
		return Resource{}, fmt.Errorf("target %q: want %s, vod/ASSET or live/CHANNEL: %w", target, PageTarget, media.ErrBadRequest)
	}
	return Resource{Live: kind == "live", Stream: name}, nil
}

// cleanPath reports whether p is an absolute, clean URL path (no .., no //).
func cleanPath(p string) bool {
	return strings.HasPrefix(p, "/") && path.Clean(p) == p && !strings.Contains(p, "\\")
}
