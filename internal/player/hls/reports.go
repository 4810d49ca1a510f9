package hls

import (
	"net/url"
	"slices"
	"strconv"
)

// Reloading what plays. hls.js in low-latency mode reloads the media playlist of the
// level it loads and of its audio track, not of every level; when it switches level it
// asks the new level's playlist for the part that the last playlist's rendition report
// (EXT-X-RENDITION-REPORT) gave as that rendition's newest
// (base-playlist-controller.ts, switchParams). Once reloads block, the loader does the
// same: it fetches the playlists of the representations the player plays
// (player.Playing) and keeps the last playlist of each other one as its stand-in —
// whose segment list then stops growing, so the manifest's listed edge comes from the
// fresh playlists only — and sets a stand-in's next reload from the newest report of
// it: _HLS_msn=LAST-MSN&_HLS_part=LAST-PART, a part the origin has, answered at once.

// RenditionReport is one EXT-X-RENDITION-REPORT of a media playlist.
type RenditionReport struct {
	URI      string // the rendition's media playlist, absolute
	LastMSN  uint64
	LastPart int // -1: LAST-PART not given
}

// maxReports bounds the reports kept from one playlist (a hostile one lists millions).
const maxReports = 256

// parseReport reads an EXT-X-RENDITION-REPORT's attributes; ok is false without a URI
// or a LAST-MSN (the player then ignores it).
func parseReport(base *url.URL, a map[string]string) (RenditionReport, bool) {
	msn, err := strconv.ParseUint(a["LAST-MSN"], 10, 64)
	if err != nil || a["URI"] == "" {
		return RenditionReport{}, false
	}
	u, err := base.Parse(a["URI"])
	if err != nil {
		return RenditionReport{}, false
	}
	r := RenditionReport{URI: u.String(), LastMSN: msn, LastPart: -1}
	if p, err := strconv.Atoi(a["LAST-PART"]); err == nil && p >= 0 {
		r.LastPart = p
	}
	return r, true
}

// reloadSet splits the media playlists of a low-latency reload into those to fetch
// and those whose last playlist stands in: all are fetched until the player says
// what it plays, or when it plays none of the variants.
func reloadSet(variants []Variant, audio *Rendition, playing []string) (fetch, standIn []string) {
	plays := func(id string) bool { return slices.Contains(playing, id) }
	video := false
	for _, v := range variants {
		video = video || plays(v.ID)
	}
	for _, v := range variants {
		if !video || plays(v.ID) {
			fetch = append(fetch, v.URI)
		} else {
			standIn = append(standIn, v.URI)
		}
	}
	if audio != nil {
		fetch = append(fetch, audio.URI) // hls.js always reloads its audio track's
	}
	// A playlist both fetched and a stand-in (a variant sharing another's) is fetched.
	standIn = slices.DeleteFunc(standIn, func(u string) bool { return slices.Contains(fetch, u) })
	return fetch, standIn
}

// followReports sets the next reload of each stand-in playlist from the newest report
// of it among the fresh playlists fetched.
func (l *loader) followReports(fetched []string, playlists map[string]*MediaPlaylist, standIn map[string]bool) {
	newest := map[string]RenditionReport{}
	for _, u := range fetched {
		mp := playlists[u]
		if mp == nil {
			continue
		}
		for _, r := range mp.Reports {
			old, seen := newest[r.URI]
			if standIn[r.URI] && (!seen || r.LastMSN > old.LastMSN || r.LastMSN == old.LastMSN && r.LastPart > old.LastPart) {
				newest[r.URI] = r
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for u, r := range newest {
		q := "_HLS_msn=" + strconv.FormatUint(r.LastMSN, 10)
		if r.LastPart >= 0 {
			q += "&_HLS_part=" + strconv.Itoa(r.LastPart)
		}
		if l.directives == nil {
			l.directives = map[string]string{}
		}
		l.directives[u] = q
	}
}

// lastPlaylist is the playlist at u as it was last fetched, or nil.
func (l *loader) lastPlaylist(u string) *MediaPlaylist {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last[u]
}
