package ingest

import (
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/streambed/streambed/internal/media"
)

// The one-request-per-segment form with SegmentTemplate-derived paths (DASH-IF Live
// Media Ingest 1.1): the encoder names its files with the SegmentTemplates of the MPD
// it sends, so the origin reads that MPD and maps each request's path back to its
// Representation. Only the names are read: a segment's place in the timeline still
// comes from its own decode time.

// Limits on an encoder's MPD beyond its size (maxMPDBytes): a ladder has a few
// rungs, and a template is a short path.
const (
	maxMPDBytes          = 1 << 20
	maxRepresentations   = 256
	maxTemplateBytes     = 1024
	maxTemplateDigits    = 20 // a uint64 in decimal
	representationIDName = "RepresentationID"
)

// errBadMPD is an MPD the origin cannot read templates from: 400 with the reason.
var errBadMPD = fmt.Errorf("encoder MPD: %w", media.ErrBadRequest)

// templateMatcher maps request paths (relative to /ingest/{channel}/) to the
// Representation ids of an encoder's MPD. It is immutable once made.
type templateMatcher struct {
	routes []templateRoute
}

// templateRoute is one of a Representation's templates as an anchored pattern.
type templateRoute struct {
	rep      string // the Representation's id: the track it names
	template string // as resolved against the MPD's URL and BaseURLs, for messages
	re       *regexp.Regexp
}

// mpdXML is the part of an MPD that names segment files.
type mpdXML struct {
	XMLName xml.Name `xml:"MPD"`
	BaseURL []string `xml:"BaseURL"`
	Periods []struct {
		BaseURL         []string            `xml:"BaseURL"`
		SegmentTemplate *segmentTemplateXML `xml:"SegmentTemplate"`
		AdaptationSets  []struct {
			BaseURL         []string            `xml:"BaseURL"`
			SegmentTemplate *segmentTemplateXML `xml:"SegmentTemplate"`
			Representations []struct {
				ID              string              `xml:"id,attr"`
				Bandwidth       string              `xml:"bandwidth,attr"`
				BaseURL         []string            `xml:"BaseURL"`
				SegmentTemplate *segmentTemplateXML `xml:"SegmentTemplate"`
			} `xml:"Representation"`
		} `xml:"AdaptationSet"`
	} `xml:"Period"`
}

type segmentTemplateXML struct {
	Initialization string `xml:"initialization,attr"`
	Media          string `xml:"media,attr"`
}

// inherit returns the template in effect at a level: its own attributes, else
// those of the level above (a Representation's over its AdaptationSet's over its
// Period's).
func inherit(above segmentTemplateXML, here *segmentTemplateXML) segmentTemplateXML {
	if here == nil {
		return above
	}
	if here.Initialization != "" {
		above.Initialization = here.Initialization
	}
	if here.Media != "" {
		above.Media = here.Media
	}
	return above
}

// parseMPDTemplates reads the SegmentTemplates (@initialization, @media) of an
// encoder's MPD, PUT to /ingest/{channel}/{mpdPath}, into a matcher. Templates and
// BaseURLs resolve against the MPD's own URL; an absolute one must point under
// /ingest/{channel}/. An MPD without templates gives a matcher that maps nothing.
func parseMPDTemplates(channel, mpdPath string, data []byte) (*templateMatcher, error) {
	if len(data) > maxMPDBytes {
		return nil, fmt.Errorf("%w: over %d bytes", errBadMPD, maxMPDBytes)
	}
	var doc mpdXML
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: not an MPD: %v", errBadMPD, err)
	}
	dir := mpdPath[:strings.LastIndexByte(mpdPath, '/')+1]
	dir, err := withBaseURL(channel, dir, doc.BaseURL)
	if err != nil {
		return nil, err
	}
	m := &templateMatcher{}
	reps := 0
	for _, p := range doc.Periods {
		pdir, err := withBaseURL(channel, dir, p.BaseURL)
		if err != nil {
			return nil, err
		}
		ptmpl := inherit(segmentTemplateXML{}, p.SegmentTemplate)
		for _, as := range p.AdaptationSets {
			adir, err := withBaseURL(channel, pdir, as.BaseURL)
			if err != nil {
				return nil, err
			}
			atmpl := inherit(ptmpl, as.SegmentTemplate)
			for _, rep := range as.Representations {
				if reps++; reps > maxRepresentations {
					return nil, fmt.Errorf("%w: over %d Representations", errBadMPD, maxRepresentations)
				}
				if rep.ID == "" {
					return nil, fmt.Errorf("%w: a Representation without an id", errBadMPD)
				}
				rdir, err := withBaseURL(channel, adir, rep.BaseURL)
				if err != nil {
					return nil, err
				}
				tmpl := inherit(atmpl, rep.SegmentTemplate)
				for _, t := range []string{tmpl.Initialization, tmpl.Media} {
					if t == "" {
						continue
					}
					r, err := newTemplateRoute(channel, rdir, t, rep.ID, rep.Bandwidth)
					if err != nil {
						return nil, fmt.Errorf("%w: Representation %q: %w", errBadMPD, rep.ID, err)
					}
					m.routes = append(m.routes, r)
				}
			}
		}
	}
	return m, nil
}

// withBaseURL returns the directory that an element's BaseURL (the first one, if
// several are given) makes of dir, the one in effect above it.
func withBaseURL(channel, dir string, baseURLs []string) (string, error) {
	if len(baseURLs) == 0 || strings.TrimSpace(baseURLs[0]) == "" {
		return dir, nil
	}
	p, err := resolveRef(channel, dir, strings.TrimSpace(baseURLs[0]))
	if err != nil {
		return "", fmt.Errorf("%w: BaseURL: %w", errBadMPD, err)
	}
	return p[:strings.LastIndexByte(p, '/')+1], nil
}

// resolveRef resolves ref (a BaseURL or a template) against dir, both relative to
// /ingest/{channel}/, as a URL reference resolves (RFC 3986), and returns the result
// relative to /ingest/{channel}/ too.
func resolveRef(channel, dir, ref string) (string, error) {
	if strings.ContainsAny(ref, "?#") {
		return "", fmt.Errorf("%q: a query or fragment is not understood", ref)
	}
	if scheme, rest, ok := strings.Cut(ref, "://"); ok && !strings.Contains(scheme, "/") {
		if s := strings.ToLower(scheme); s != "http" && s != "https" {
			return "", fmt.Errorf("%q: only http and https URLs are understood", ref)
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			ref = rest[i:]
		} else {
			ref = "/"
		}
	}
	if strings.HasPrefix(ref, "/") {
		prefix := "/ingest/" + channel + "/"
		rel, ok := strings.CutPrefix(ref, prefix)
		if !ok {
			return "", fmt.Errorf("%q is not under %s, where this channel's segments arrive", ref, prefix)
		}
		dir, ref = "", rel
	}
	parts := strings.Split(dir+ref, "/")
	out := make([]string, 0, len(parts))
	for i, s := range parts {
		last := i == len(parts)-1
		switch s {
		case ".":
		case "..":
			if len(out) == 0 {
				return "", fmt.Errorf("%q climbs above /ingest/%s/", ref, channel)
			}
			out = out[:len(out)-1]
		default:
			out = append(out, s)
			continue
		}
		if last { // "a/." and "a/.." name folders
			out = append(out, "")
		}
	}
	return strings.Join(out, "/"), nil
}

// newTemplateRoute resolves a template of Representation rep against dir and turns
// it into an anchored pattern: $RepresentationID$ and $Bandwidth$ become literals,
// $Number$, $Time$ and $SubNumber$ (with or without %0Nd) runs of digits, $$ a "$".
func newTemplateRoute(channel, dir, template, rep, bandwidth string) (templateRoute, error) {
	if len(template) > maxTemplateBytes {
		return templateRoute{}, fmt.Errorf("template over %d bytes", maxTemplateBytes)
	}
	path, err := resolveRef(channel, dir, template)
	if err != nil {
		return templateRoute{}, fmt.Errorf("template: %w", err)
	}
	pattern, err := templatePattern(path, rep, bandwidth)
	if err != nil {
		return templateRoute{}, fmt.Errorf("template %q: %w", template, err)
	}
	re, err := regexp.Compile("^" + pattern + "$")
	if err != nil {
		return templateRoute{}, fmt.Errorf("template %q: %w", template, err)
	}
	return templateRoute{rep: rep, template: path, re: re}, nil
}

// templatePattern is the regular expression (unanchored) of the paths template
// names for Representation rep.
func templatePattern(template, rep, bandwidth string) (string, error) {
	var b strings.Builder
	for rest := template; rest != ""; {
		lit, after, found := strings.Cut(rest, "$")
		b.WriteString(regexp.QuoteMeta(lit))
		if !found {
			break
		}
		ident, tail, closed := strings.Cut(after, "$")
		if !closed {
			return "", errors.New("a $ without its closing $")
		}
		rest = tail
		if ident == "" { // $$
			b.WriteString(regexp.QuoteMeta("$"))
			continue
		}
		name, format, hasFormat := strings.Cut(ident, "%")
		width := 0
		if hasFormat {
			w, err := formatWidth(format)
			if err != nil {
				return "", fmt.Errorf("$%s$: %w", ident, err)
			}
			width = w
		}
		switch name {
		case representationIDName:
			if hasFormat {
				return "", fmt.Errorf("$%s$: $RepresentationID$ takes no format tag", ident)
			}
			b.WriteString(regexp.QuoteMeta(rep))
		case "Bandwidth":
			bw, err := strconv.ParseUint(bandwidth, 10, 64)
			if err != nil {
				return "", fmt.Errorf("$Bandwidth$ in the template, but Representation@bandwidth is %q", bandwidth)
			}
			b.WriteString(fmt.Sprintf("%0*d", width, bw))
		case "Number", "Time", "SubNumber":
			fmt.Fprintf(&b, "[0-9]{%d,%d}", max(width, 1), maxTemplateDigits)
		default:
			return "", fmt.Errorf("$%s$: unknown identifier (want RepresentationID, Number, Time, Bandwidth, SubNumber or $$)", ident)
		}
	}
	return b.String(), nil
}

// formatWidth reads a template's format tag "0Nd" (after its %): N.
func formatWidth(format string) (int, error) {
	digits, ok := strings.CutSuffix(format, "d")
	if ok {
		digits, ok = strings.CutPrefix(digits, "0")
	}
	w, err := strconv.Atoi(digits)
	if !ok || err != nil || w < 1 || w > maxTemplateDigits || digits[0] == '+' {
		return 0, fmt.Errorf("format tag %%%s: want %%0Nd with N from 1 to %d", format, maxTemplateDigits)
	}
	return w, nil
}

// match returns the Representation id whose template names path, or ok false when
// none does. A path that two Representations' templates name, or a Representation
// id that cannot be a track name, is an error.
func (m *templateMatcher) match(path string) (rep string, ok bool, err error) {
	var by *templateRoute
	for i := range m.routes {
		r := &m.routes[i]
		if !r.re.MatchString(path) {
			continue
		}
		if by != nil && by.rep != r.rep {
			return "", false, fmt.Errorf("ingest path %q fits the templates of Representations %q (%s) and %q (%s) of the encoder's MPD: %w",
				path, by.rep, by.template, r.rep, r.template, media.ErrBadRequest)
		}
		by = r
	}
	if by == nil {
		return "", false, nil
	}
	if !media.ValidName(by.rep) {
		return "", false, fmt.Errorf("ingest path %q fits template %s, but Representation id %q cannot name a track (use 1–64 of [A-Za-z0-9._-]): %w",
			path, by.template, by.rep, media.ErrBadRequest)
	}
	return by.rep, true, nil
}

// key sums up the matcher's templates, to tell an MPD that changes them from one
// that repeats them.
func (m *templateMatcher) key() string {
	var b strings.Builder
	for _, r := range m.routes {
		b.WriteString(r.rep + "\x00" + r.template + "\x00")
	}
	return b.String()
}
