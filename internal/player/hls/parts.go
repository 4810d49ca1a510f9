package hls

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/player"
)

// Low-latency HLS, played as hls.js 1.7 plays it in low-latency mode:
//
//   - the parts listed (EXT-X-PART) replace their segments in the player's index, so
//     the player requests the part that holds its position and then each part in turn
//     (hls.js's "LL-Part loading"); segments older than the parts listed are whole;
//   - a part is requested once a playlist lists it, never from the preload hint
//     (hls.js parses EXT-X-PRELOAD-HINT but does not load it);
//   - every reload after the first asks the origin to hold it until the next part is
//     listed: _HLS_msn=(segment of the newest part)&_HLS_part=(its index + 1), or the
//     next segment's part 0 after a segment's last part (base-playlist-controller.ts),
//     and reloads run back to back (player.Manifest.BlockingReload);
//   - the target is PART-HOLD-BACK, with hls.js's start position and catch-up
//     (player.CatchUpHLSJS, target_hlsjs.go).
//
// As hls.js, a reload fetches the media playlists of what the player plays (at once,
// each held on its own) and follows rendition reports to the others (reports.go); the
// multivariant playlist only the first time. Delta updates (_HLS_skip) are not asked for. As in hls.js, playback that
// starts or switches rendition in the middle of a segment loads from its last
// independent part (INDEPENDENT=YES: the segment's first, for video) on
// (player.Segment.Dependent), so the media before the position comes too.

// Part is one EXT-X-PART of a media playlist.
type Part struct {
	Sequence    uint64 // media sequence number of its segment
	Index       int    // within its segment, from 0
	URI         string // absolute
	Duration    time.Duration
	Independent bool // INDEPENDENT=YES: starts with a keyframe
}

// maxParts bounds the parts kept from one playlist (a hostile one lists millions).
const maxParts = 1 << 14

// blockingReloadGap is the pause between the end of a blocking reload and the next:
// the origin holds the next one, so none is needed, but an origin that answers at
// once must not be asked in a tight loop.
const blockingReloadGap = 10 * time.Millisecond

// parsePart reads an EXT-X-PART's attributes; ok is false for a part without a URI or
// duration, or with a byte range (not supported), which the player then skips.
func parsePart(base *url.URL, a map[string]string, seq uint64, index int) (Part, bool) {
	d, ok := tagDuration(a["DURATION"], true)
	if !ok || a["URI"] == "" || a["BYTERANGE"] != "" {
		return Part{}, false
	}
	u, err := base.Parse(a["URI"])
	if err != nil {
		return Part{}, false
	}
	return Part{Sequence: seq, Index: index, URI: u.String(), Duration: d, Independent: a["INDEPENDENT"] == "YES"}, true
}

// allParts is every part listed, oldest first.
func (mp *MediaPlaylist) allParts() []Part {
	var out []Part
	for _, s := range mp.Segments {
		out = append(out, s.Parts...)
	}
	return append(out, mp.Tail...)
}

// lastPart is the newest part listed and whether there is one.
func (mp *MediaPlaylist) lastPart() (Part, bool) {
	if n := len(mp.Tail); n > 0 {
		return mp.Tail[n-1], true
	}
	if n := len(mp.Segments); n > 0 {
		if ps := mp.Segments[n-1].Parts; len(ps) > 0 {
			return ps[len(ps)-1], true
		}
	}
	return Part{}, false
}

// nextDirectives is the query of the blocking reload after mp (hls.js's rule), or ""
// when mp cannot be reloaded that way.
func nextDirectives(mp *MediaPlaylist) string {
	if !mp.CanBlockReload || mp.EndList || len(mp.Segments) == 0 {
		return ""
	}
	end := mp.Segments[len(mp.Segments)-1].Sequence
	msn, part := end+1, -1
	if last, ok := mp.lastPart(); ok {
		if last.Sequence == end {
			part = 0 // the segment's last part: the next segment's first
		} else {
			msn, part = last.Sequence, last.Index+1
		}
	}
	q := "_HLS_msn=" + strconv.FormatUint(msn, 10)
	if part >= 0 {
		q += "&_HLS_part=" + strconv.Itoa(part)
	}
	return q
}

// masterBody is the playlist at u: the multivariant playlist is read once.
func (l *loader) masterBody(ctx context.Context, fetch player.FetcherFunc, u string) ([]byte, error) {
	l.mu.Lock()
	b := l.master
	l.mu.Unlock()
	if b != nil {
		return b, nil
	}
	return get(ctx, fetch, l.reloadURL(u))
}

// keepMaster keeps a multivariant playlist for the next loads.
func (l *loader) keepMaster(b []byte) {
	l.mu.Lock()
	l.master = b
	l.mu.Unlock()
}

// blocking says whether the next load of media playlist u is a blocking reload.
func (l *loader) blocking(u string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.directives[u] != ""
}

// reloadURL is u with the delivery directives of its next reload, if any.
func (l *loader) reloadURL(u string) string {
	l.mu.Lock()
	q := l.directives[u]
	l.mu.Unlock()
	if q == "" {
		return u
	}
	if strings.Contains(u, "?") {
		return u + "&" + q
	}
	return u + "?" + q
}

// noteReload remembers what the next reload of media playlist u asks for.
func (l *loader) noteReload(u string, mp *MediaPlaylist) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.directives == nil {
		l.directives = map[string]string{}
	}
	if l.last == nil {
		l.last = map[string]*MediaPlaylist{}
	}
	l.last[u] = mp
	if q := nextDirectives(mp); q != "" {
		l.directives[u] = q
	} else {
		delete(l.directives, u)
	}
}

// fetchAll loads the media playlists at uris at once (each blocking reload is held on
// its own by the origin) into playlists.
func (l *loader) fetchAll(ctx context.Context, fetch player.FetcherFunc, uris []string, playlists map[string]*MediaPlaylist) error {
	type got struct {
		mp  *MediaPlaylist
		err error
	}
	res := make([]got, len(uris))
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for i, u := range uris {
		if _, ok := playlists[u]; ok || seen[u] {
			continue // a variant and a rendition may share a playlist
		}
		seen[u] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := get(ctx, fetch, l.reloadURL(u))
			if err == nil {
				res[i].mp, err = ParseMedia(b, u)
			}
			res[i].err = err
		}()
	}
	wg.Wait()
	for i, u := range uris {
		if res[i].err != nil {
			return res[i].err
		}
		if res[i].mp != nil {
			playlists[u] = res[i].mp
			l.noteReload(u, res[i].mp)
		}
	}
	return nil
}

// lowLatency makes a live manifest low-latency HLS when every media playlist lists
// parts and has PART-HOLD-BACK: the parts replace their segments in each index,
// PART-HOLD-BACK is the target with hls.js's rule, and reloads block when the
// playlists allow it.
func lowLatency(m *player.Manifest, playlists map[string]*MediaPlaylist, source map[*player.Representation]string, standIn map[string]bool) {
	var hold, part time.Duration
	blocking := true
	for _, mp := range playlists {
		if _, ok := mp.lastPart(); !ok || mp.PartTarget <= 0 || mp.PartHoldBack <= 0 {
			return
		}
		hold, part = max(hold, mp.PartHoldBack), max(part, mp.PartTarget)
		blocking = blocking && mp.CanBlockReload
	}
	lists := map[*player.Representation][]player.Segment{}
	edge := time.Duration(-1)
	for r, pu := range source {
		list, ok := withParts(r.Index.List, playlists[pu], m.AvailabilityStart)
		switch {
		case !ok && standIn[pu]:
			continue // an old playlist standing in: its segments, until it is reloaded
		case !ok:
			return
		}
		lists[r] = list
		if standIn[pu] {
			continue // behind the edge by the time it has stood in
		}
		if e := list[len(list)-1].End(); edge < 0 || e < edge {
			edge = e
		}
	}
	for r, list := range lists {
		r.Index.List = list
	}
	m.ServiceDescription = &player.ServiceDescription{TargetLatency: hold, Source: "part-hold-back", CatchUp: player.CatchUpHLSJS}
	m.PartTarget, m.ListedEdge, m.BlockingReload = part, edge, blocking
	if blocking {
		m.MinimumUpdatePeriod = blockingReloadGap
	} // else every target duration, as hls.js reloads a playlist that cannot block
}

// withParts is list (the segments of mp, in order, on the manifest's timeline) with
// every segment whose parts are all listed replaced by them, and the parts of the
// segment in progress after it. ok is false when the parts do not fit the timeline.
func withParts(list []player.Segment, mp *MediaPlaylist, avail time.Time) ([]player.Segment, bool) {
	if len(list) != len(mp.Segments) || len(list) == 0 {
		return nil, false
	}
	// A playlist that marks no part INDEPENDENT has every part taken as independent
	// (hls.js's independentAttrOmitted).
	marked := false
	for _, p := range mp.allParts() {
		marked = marked || p.Independent
	}
	out := make([]player.Segment, 0, len(list)+len(mp.Tail))
	for i, seg := range list {
		ps := mp.Segments[i].Parts
		if !fromFirst(ps) || !whole(ps, seg.Duration) {
			out = append(out, seg)
			continue
		}
		out = appendParts(out, ps, seg.Start, seg.End(), marked)
	}
	if len(mp.Tail) > 0 {
		if !fromFirst(mp.Tail) {
			return nil, false
		}
		start := list[len(list)-1].End()
		if !mp.TailDate.IsZero() {
			start = mp.TailDate.Sub(avail)
		}
		if d := start - list[len(list)-1].End(); d < -time.Millisecond || d > time.Millisecond {
			return nil, false // a gap or overlap: not a timeline to extend
		}
		out = appendParts(out, mp.Tail, start, 0, marked)
	}
	return out, true
}

// fromFirst says whether ps are a segment's parts from its first, in order.
func fromFirst(ps []Part) bool {
	for i, p := range ps {
		if p.Index != i {
			return false
		}
	}
	return len(ps) > 0
}

// whole says whether parts ps make a segment of duration d (to their rounding).
func whole(ps []Part, d time.Duration) bool {
	var sum time.Duration
	for _, p := range ps {
		sum += p.Duration
	}
	return (sum - d).Abs() <= partSlack
}

// partSlack absorbs the rounding of part durations (milliseconds in the playlist).
const partSlack = 50 * time.Millisecond

// appendParts adds ps, which start at start, as segments; end (if not 0) is where the
// last one ends, so that rounded part durations leave no gap before the next segment.
func appendParts(out []player.Segment, ps []Part, start, end time.Duration, marked bool) []player.Segment {
	pos := start
	for i, p := range ps {
		d := p.Duration
		if i == len(ps)-1 && end > pos {
			d = end - pos
		}
		out = append(out, player.Segment{Number: p.Sequence, URL: p.URI, Start: pos, Duration: d, Time: uint64(pos / time.Millisecond),
			Dependent: marked && !p.Independent})
		pos += d
	}
	return out
}
