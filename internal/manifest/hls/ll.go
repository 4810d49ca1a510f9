package hls

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/media"
)

// LowLatencyVersion is the EXT-X-VERSION of an LL-HLS media playlist: a delta update's
// EXT-X-SKIP needs 9 (RFC 8216bis 4.4.5.2), and the version must not change between
// a playlist and its delta updates.
const LowLatencyVersion = 9

// skipUntilTargets is CAN-SKIP-UNTIL in target durations: the spec's minimum.
const skipUntilTargets = 6

// llPlaylist writes the LL-HLS lines of one media playlist (RFC 8216bis, Apple's
// "Enabling Low-Latency HLS"). A nil *llPlaylist writes nothing, so a playlist that is
// not low latency keeps its bytes.
type llPlaylist struct {
	p          *manifest.Presentation
	t          *media.Track
	playlist   string
	segs       []media.SegmentRef
	edge       *manifest.Edge
	partTarget time.Duration
	skipUntil  time.Duration // 0: delta updates not offered
	lastURI    string        // the last segment written: parts are named beside it
}

// newLowLatencyPlaylist is the LL-HLS part of track t's playlist, nil when p is not
// low latency or has no edge for t.
func newLowLatencyPlaylist(p *manifest.Presentation, t *media.Track, playlist string, segs []media.SegmentRef, target uint64) (*llPlaylist, error) {
	if !p.Live || p.LowLatency == nil || p.Edges[t.ID] == nil {
		return nil, nil
	}
	if p.LowLatency.PartTarget <= 0 {
		return nil, fmt.Errorf("low-latency presentation without a part target: %w", media.ErrInvalidMedia)
	}
	l := &llPlaylist{p: p, t: t, playlist: playlist, segs: segs, edge: p.Edges[t.ID], partTarget: p.LowLatency.PartTarget}
	// Delta updates only where there is something to skip: a DVR window longer than
	// the six target durations a delta playlist must still list.
	if skip := skipUntilTargets * time.Duration(target) * time.Second; p.EffectiveTimeShiftBufferDepth() > skip {
		l.skipUntil = skip
	}
	return l, nil
}

func (l *llPlaylist) version() int {
	if l == nil {
		return Version
	}
	return LowLatencyVersion
}

// writeHeader writes EXT-X-SERVER-CONTROL and EXT-X-PART-INF. PART-HOLD-BACK is the
// channel's (manifest.LowLatency.HLSPartHoldBack): three part targets, the spec's
// recommendation, unless the origin is configured for more.
func (l *llPlaylist) writeHeader(b *bytes.Buffer) {
	if l == nil {
		return
	}
	attrs := []string{"CAN-BLOCK-RELOAD=YES"}
	if l.skipUntil > 0 {
		attrs = append(attrs, "CAN-SKIP-UNTIL="+seconds(l.skipUntil))
	}
	attrs = append(attrs, "PART-HOLD-BACK="+seconds(l.p.LowLatency.HLSPartHoldBack()))
	fmt.Fprintf(b, "#EXT-X-SERVER-CONTROL:%s\n", strings.Join(attrs, ","))
	fmt.Fprintf(b, "#EXT-X-PART-INF:PART-TARGET=%s\n", seconds(l.partTarget))
}

// skipped is how many of the oldest segments a delta update replaces with
// EXT-X-SKIP: those that start more than CAN-SKIP-UNTIL before the playlist's end.
func (l *llPlaylist) skipped() int {
	if l == nil || !l.p.Skip || l.skipUntil == 0 {
		return 0
	}
	end := l.segs[len(l.segs)-1].End()
	k := 0
	for k < len(l.segs)-1 && l.t.Duration(end-l.segs[k].Start) > l.skipUntil {
		k++
	}
	return k
}

// writeParts writes the EXT-X-PART lines of segment n, whose URI is segURI.
func (l *llPlaylist) writeParts(b *bytes.Buffer, n uint64, segURI string) {
	if l == nil {
		return
	}
	for _, pt := range l.edge.Parts {
		if pt.Number != n {
			continue
		}
		fmt.Fprintf(b, "#EXT-X-PART:DURATION=%s,URI=%s", formatSeconds(pt.Duration, l.t.Timescale), quote(partURI(segURI, pt.Number, pt.Index)))
		if pt.Independent {
			b.WriteString(",INDEPENDENT=YES")
		}
		b.WriteByte('\n')
	}
}

// wrote notes the URI of the segment just written: parts are named beside it.
func (l *llPlaylist) wrote(segURI string) {
	if l != nil {
		l.lastURI = segURI
	}
}

// writeTail writes the segment in progress (its complete parts), the hint of the next
// part and a rendition report for every other track.
func (l *llPlaylist) writeTail(b *bytes.Buffer) error {
	if l == nil {
		return nil
	}
	last := l.segs[len(l.segs)-1]
	next := last.Number + 1
	for i, pt := range l.edge.Parts {
		if pt.Number != next {
			continue
		}
		if i == 0 || l.edge.Parts[i-1].Number != next {
			if l.edge.Period != last.Period {
				b.WriteString("#EXT-X-DISCONTINUITY\n")
			}
			fmt.Fprintf(b, "#EXT-X-PROGRAM-DATE-TIME:%s\n", formatDateTime(l.p.Timeline.WallTime(l.t, pt.Start)))
		}
		l.writeParts(b, next, l.lastURI)
		break
	}
	fmt.Fprintf(b, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=%s\n", quote(partURI(l.lastURI, l.edge.Hint.Number, l.edge.Hint.Index)))
	for _, u := range l.p.Stream.Tracks {
		if u.ID == l.t.ID {
			continue
		}
		msn, part, ok := lastPosition(l.p.Segments[u.ID], l.p.Edges[u.ID])
		if !ok {
			continue
		}
		other, err := l.p.PlaylistURI(u.ID)
		if err != nil {
			return err
		}
		uri, err := relativeTo(path.Dir(l.playlist), other)
		if err != nil {
			return err
		}
		if err := checkQuoted(uri); err != nil {
			return err
		}
		fmt.Fprintf(b, "#EXT-X-RENDITION-REPORT:URI=%s,LAST-MSN=%d", quote(uri), msn)
		if part >= 0 {
			fmt.Fprintf(b, ",LAST-PART=%d", part)
		}
		b.WriteByte('\n')
	}
	return nil
}

// lastPosition is a rendition's last segment and, when it lists parts, the last part
// of that segment (-1 when none): its newest part, or its newest segment.
func lastPosition(segs []media.SegmentRef, e *manifest.Edge) (msn uint64, part int, ok bool) {
	if e != nil && len(e.Parts) > 0 {
		pt := e.Parts[len(e.Parts)-1]
		return pt.Number, pt.Index, true
	}
	if len(segs) > 0 {
		return segs[len(segs)-1].Number, -1, true
	}
	return 0, 0, false
}

// partURI names a part beside its segment's URI (same folder, or same URL prefix).
func partURI(segURI string, n uint64, index int) string {
	name := manifest.PartName(n, index)
	if i := strings.LastIndexByte(segURI, '/'); i >= 0 {
		return segURI[:i+1] + name
	}
	return name
}

// seconds writes a duration as decimal seconds with 3 to 6 decimals.
func seconds(d time.Duration) string { return formatSeconds(uint64(d/time.Microsecond), 1_000_000) }
