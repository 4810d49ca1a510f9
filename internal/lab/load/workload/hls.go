package workload

import (
	"sync"
	"time"

	"github.com/streambed/streambed/internal/player/hls"
)

// hlsTrack is one media playlist a worker follows.
type hlsTrack struct {
	kind Kind
	uri  string
	pl   *hls.MediaPlaylist
	init bool // its EXT-X-MAP was fetched
}

// segment returns the segment with media sequence seq, if listed.
func (t *hlsTrack) segment(seq uint64) (hls.MediaSegment, bool) {
	if t.pl == nil || len(t.pl.Segments) == 0 {
		return hls.MediaSegment{}, false
	}
	first := t.pl.Segments[0].Sequence
	if seq < first || seq-first >= uint64(len(t.pl.Segments)) {
		return hls.MediaSegment{}, false
	}
	return t.pl.Segments[seq-first], true
}

func (t *hlsTrack) last() (uint64, bool) {
	if t.pl == nil || len(t.pl.Segments) == 0 {
		return 0, false
	}
	return t.pl.Segments[len(t.pl.Segments)-1].Sequence, true
}

// hlsBehind is how many segments behind the newest a worker may fall before it jumps
// to the newest (hls.js's live sync default is three target durations).
const hlsBehind = 3

// runHLS is a live HLS player's requests: the multivariant playlist once, then the
// media playlists of the top variant and its audio rendition, reloaded every target
// duration (half of it after a reload that brought nothing new, RFC 8216 6.3.4),
// and every new segment of both.
func (w *worker) runHLS() error {
	var mv *hls.Multivariant
	for {
		body, _, _, err := w.get(KindManifest, w.o.URL, true)
		if err == nil {
			if mv, err = hls.ParseMultivariant(body, w.o.URL); err == nil {
				break
			}
			w.rec.Problem("invalid manifest")
		}
		if !w.wait(time.Now().Add(backoff)) {
			return errNoMPD
		}
	}
	tracks := []*hlsTrack{{kind: KindVideo, uri: w.o.URL}}
	if mv != nil {
		v := mv.Variants[len(mv.Variants)-1]
		for _, c := range mv.Variants {
			if c.ID == w.o.Video {
				v = c
			}
		}
		tracks[0].uri = v.URI
		a := mv.DefaultAudio(v.Audio)
		for i := range mv.Audio {
			if mv.Audio[i].ID == w.o.Audio && mv.Audio[i].URI != "" {
				a = &mv.Audio[i]
			}
		}
		if a != nil {
			tracks = append(tracks, &hlsTrack{kind: KindAudio, uri: a.URI})
		}
	}
	var (
		loaded  time.Time
		target  = time.Second
		next    uint64
		started bool
		fresh   bool // the last reload listed a new segment
	)
	reload := func() {
		loaded = time.Now()
		fresh = false
		for _, t := range tracks {
			body, _, _, err := w.get(KindManifest, t.uri, true)
			if err != nil {
				continue
			}
			pl, err := hls.ParseMedia(body, t.uri)
			if err != nil {
				w.rec.Problem("invalid manifest")
				continue
			}
			if old, ok := t.last(); !ok || (len(pl.Segments) > 0 && pl.Segments[len(pl.Segments)-1].Sequence > old) {
				fresh = true
			}
			t.pl = pl
			target = max(target, pl.TargetDuration)
		}
	}
	reload()
	for !w.stopped() {
		v := tracks[0]
		if last, ok := v.last(); ok && (!started || next < v.pl.Segments[0].Sequence || last > next+hlsBehind) {
			if started {
				w.rec.Count(func(ss *Sessions) { ss.Jumps++ })
			}
			// Start at the newest; a worker that fell behind jumps back to it.
			next, started = last, true
		}
		if vs, ok := v.segment(next); ok && started {
			var wg sync.WaitGroup
			w.fetchHLS(&wg, v, vs.URI)
			if len(tracks) > 1 {
				if as, ok := tracks[1].segment(next); ok {
					w.fetchHLS(&wg, tracks[1], as.URI)
				}
			}
			wg.Wait()
			next++
			continue
		}
		wait := target
		if !fresh {
			wait = target / 2
		}
		if !w.wait(loaded.Add(wait)) {
			break
		}
		reload()
	}
	return nil
}

// fetchHLS fetches a segment (after its track's EXT-X-MAP, once) in its own goroutine.
func (w *worker) fetchHLS(wg *sync.WaitGroup, t *hlsTrack, uri string) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !t.init && t.pl.Map != "" {
			if _, _, _, err := w.get(KindInit, t.pl.Map, false); err == nil {
				t.init = true
			}
		}
		w.get(t.kind, uri, false) //nolint:errcheck // recorded
	}()
}
