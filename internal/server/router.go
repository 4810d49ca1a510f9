package server

import (
	"net/http"
	"strings"
)

// trackRouter sends GETs of /vod/{stream}/{track}/{file} and
// /live/{stream}/{track}/{file} (segments, init segments, track playlists: nearly
// every request a player makes) straight to their handlers, and everything else
// through the ServeMux. ServeMux finds the same handler, but matching a pattern
// with wildcards costs about half a microsecond and three allocations per request,
// a tenth of the lean path's own time.
//
// The mux is the authority: a route another part registered (Server.Handle) that
// ServeMux would prefer for such a path — a pattern of the same four segments
// with a literal file name (ParS's index.json) or any host-specific pattern —
// sends that file name, or every request, back through the mux. ServeMux refuses
// at registration any other pattern that would overlap these routes and win.
type trackRouter struct {
	mux       *http.ServeMux
	vod, live func(w http.ResponseWriter, r *http.Request, stream, track, file string)

	// Set while routes are registered, before serving; read-only after.
	shadowed map[string]bool // file names another pattern of four segments claims
	muxOnly  bool            // a registered pattern may win any of these paths
}

// note records a pattern registered beside the origin's own routes.
func (t *trackRouter) note(pattern string) {
	method, rest, ok := strings.Cut(pattern, " ")
	if !ok {
		rest = method // no method: the pattern is [HOST]/PATH
	}
	rest = strings.TrimLeft(rest, " \t")
	if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "%") {
		t.muxOnly = true // a host-specific pattern wins over host-less ones; escaped literals are rare
		return
	}
	segs := strings.Split(rest[1:], "/")
	if len(segs) != 4 {
		return // ServeMux: fewer, more or trailing-slash segments never beat ours
	}
	first, file := segs[0], segs[3]
	if file == "" || (first != "vod" && first != "live" && !isWildcard(first)) {
		return // a trailing slash matches a subtree, which ours, more specific, beat
	}
	if isWildcard(file) || strings.ContainsAny(file, "%{}") {
		t.muxOnly = true // rare and odd: let the mux judge every request
		return
	}
	if t.shadowed == nil {
		t.shadowed = map[string]bool{}
	}
	t.shadowed[file] = true
}

func isWildcard(seg string) bool { return strings.HasPrefix(seg, "{") }

func (t *trackRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !t.muxOnly && r.Method == http.MethodGet && r.URL.RawPath == "" {
		if kind, stream, track, file, ok := trackPath(r.URL.Path); ok && !t.shadowed[file] {
			if kind == "vod" {
				t.vod(w, r, stream, track, file)
			} else {
				t.live(w, r, stream, track, file)
			}
			return
		}
	}
	t.mux.ServeHTTP(w, r)
}

// trackPath splits /KIND/STREAM/TRACK/FILE (KIND vod or live) into its parts, when
// it has exactly these four segments, none empty, "." or ".." (a path ServeMux
// would clean and redirect is left to it).
func trackPath(p string) (kind, stream, track, file string, ok bool) {
	switch {
	case strings.HasPrefix(p, "/vod/"):
		kind, p = "vod", p[len("/vod/"):]
	case strings.HasPrefix(p, "/live/"):
		kind, p = "live", p[len("/live/"):]
	default:
		return "", "", "", "", false
	}
	stream, p, ok1 := strings.Cut(p, "/")
	track, file, ok2 := strings.Cut(p, "/")
	if !ok1 || !ok2 || strings.IndexByte(file, '/') >= 0 {
		return "", "", "", "", false
	}
	for _, seg := range [3]string{stream, track, file} {
		if seg == "" || seg == "." || seg == ".." {
			return "", "", "", "", false
		}
	}
	return kind, stream, track, file, true
}
