// Package hls renders HTTP Live Streaming playlists (RFC 8216, version 7) for CMAF
// (fragmented MP4) segments from a manifest.Presentation: one multivariant playlist
// and one media playlist per track, with the audio tracks as EXT-X-MEDIA renditions.
//
// URIs in the multivariant playlist are relative to it (the manifest folder, like the
// MPD's); URIs in a media playlist are relative to the media playlist's own folder, as
// RFC 8216 resolves them: a playlist at "v720/playlist.m3u8" names "init.mp4" and
// "1.m4s", not "v720/1.m4s".
package hls

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/manifest"
	"github.com/streambed/streambed/internal/media"
)

// Version is the EXT-X-VERSION written: 7 covers EXT-X-MAP in media playlists that
// are not I-frame only (needs 6) and fMP4 segments.
const Version = 7

const audioGroup = "audio"

// RenderMultivariant writes the multivariant (master) playlist of p to w: one
// EXT-X-STREAM-INF per video track, each with the audio group, or one per audio track
// for an audio-only stream. Nothing is written when p is rejected.
func RenderMultivariant(w io.Writer, p *manifest.Presentation) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	videos, audios := p.Stream.TracksOf(media.Video), p.Stream.TracksOf(media.Audio)
	var b bytes.Buffer
	b.WriteString("#EXTM3U\n")
	fmt.Fprintf(&b, "#EXT-X-VERSION:%d\n", Version)
	b.WriteString("#EXT-X-INDEPENDENT-SEGMENTS\n")

	if len(videos) == 0 {
		// Audio only: each audio track is a variant of its own.
		for _, a := range audios {
			if err := streamInf(&b, p, a, nil); err != nil {
				return err
			}
		}
		_, err := w.Write(b.Bytes())
		return err
	}

	if len(audios) > 0 {
		b.WriteByte('\n')
		for i, a := range audios {
			uri, err := p.PlaylistURI(a.ID)
			if err != nil {
				return fmt.Errorf("hls: %w", err)
			}
			attrs := []string{"TYPE=AUDIO", "GROUP-ID=" + quote(audioGroup), "NAME=" + quote(a.ID)}
			if a.Language != "" {
				attrs = append(attrs, "LANGUAGE="+quote(a.Language))
			}
			def := "NO"
			if i == 0 {
				def = "YES"
			}
			attrs = append(attrs, "DEFAULT="+def, "AUTOSELECT=YES")
			if a.Channels > 0 {
				attrs = append(attrs, "CHANNELS="+quote(strconv.Itoa(a.Channels)))
			}
			attrs = append(attrs, "URI="+quote(uri))
			if err := checkQuoted(a.ID, a.Language, uri); err != nil {
				return err
			}
			fmt.Fprintf(&b, "#EXT-X-MEDIA:%s\n", strings.Join(attrs, ","))
		}
	}
	for _, v := range videos {
		if err := streamInf(&b, p, v, audios); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// streamInf writes the EXT-X-STREAM-INF of variant t and its URI. BANDWIDTH is the
// peak of t plus the largest audio rendition, as RFC 8216 4.3.4.2 requires of a
// variant with an audio group; CODECS lists every codec of the group.
func streamInf(b *bytes.Buffer, p *manifest.Presentation, t *media.Track, audios []*media.Track) error {
	uri, err := p.PlaylistURI(t.ID)
	if err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	bw, maxAudio := t.Bandwidth, 0
	codecs := []string{t.Codec}
	for _, a := range audios {
		maxAudio = max(maxAudio, a.Bandwidth)
		if !slices.Contains(codecs, a.Codec) {
			codecs = append(codecs, a.Codec)
		}
	}
	bw += maxAudio
	codecList := strings.Join(codecs, ",")
	if err := checkQuoted(codecList, uri); err != nil {
		return err
	}
	attrs := []string{"BANDWIDTH=" + strconv.Itoa(bw)}
	if avg, ok := averageBandwidth(p, t); ok && !p.Live {
		maxAvg, all := 0, true
		for _, a := range audios {
			aa, ok := averageBandwidth(p, a)
			all = all && ok
			maxAvg = max(maxAvg, aa)
		}
		if all {
			attrs = append(attrs, "AVERAGE-BANDWIDTH="+strconv.Itoa(avg+maxAvg))
		}
	}
	attrs = append(attrs, "CODECS="+quote(codecList))
	if t.Kind == media.Video {
		if t.Width > 0 && t.Height > 0 {
			attrs = append(attrs, fmt.Sprintf("RESOLUTION=%dx%d", t.Width, t.Height))
		}
		fr, err := manifest.ParseFrameRate(t.FrameRate)
		if err != nil {
			return fmt.Errorf("hls: track %q: %w", t.ID, err)
		}
		if !fr.IsZero() {
			attrs = append(attrs, "FRAME-RATE="+fr.HLS())
		}
	}
	if len(audios) > 0 {
		attrs = append(attrs, "AUDIO="+quote(audioGroup))
	}
	fmt.Fprintf(b, "\n#EXT-X-STREAM-INF:%s\n%s\n", strings.Join(attrs, ","), uri)
	return nil
}

// averageBandwidth is the mean bit rate of t's listed segments, when every size is known.
func averageBandwidth(p *manifest.Presentation, t *media.Track) (int, bool) {
	segs := p.Segments[t.ID]
	if len(segs) == 0 {
		return 0, false
	}
	var total int64
	for _, s := range segs {
		if s.Size <= 0 {
			return 0, false
		}
		total += s.Size
	}
	secs := t.Seconds(segs[len(segs)-1].End() - segs[0].Start)
	if secs <= 0 {
		return 0, false
	}
	return int(float64(total*8)/secs + 0.5), true
}

// RenderMedia writes the media playlist of track trackID to w. On demand it is the
// whole track with EXT-X-PLAYLIST-TYPE:VOD and EXT-X-ENDLIST; live it is the window in
// p.Segments, with EXT-X-MEDIA-SEQUENCE the number of its first segment and an
// EXT-X-PROGRAM-DATE-TIME on every segment.
//
// EXT-X-TARGETDURATION is the nominal segment duration rounded up, raised to any
// segment's duration rounded to the nearest integer (the RFC 8216 4.3.3.1 rule). Audio
// segments run a few ms over the nominal duration (2.005 s for 2 s of AAC), and a plain
// ceiling would make a live audio playlist's target flip between 2 and 3 as the window
// slides, which 6.2.1 forbids.
//
// A segment that starts a new live period (SegmentRef.Period, an encoder that
// restarted) follows an EXT-X-DISCONTINUITY, and EXT-X-DISCONTINUITY-SEQUENCE is the
// first listed segment's period: periods are numbered from 0, one per discontinuity,
// so the count stays right as the window slides. Mere gaps in media time are not
// marked: fMP4 timestamps stay monotonic across a gap, and live players place
// segments by their program dates.
//
// Errors wrap media.ErrNotFound for an unknown track, media.ErrNotYet for a live
// window without segments and media.ErrInvalidMedia for a malformed presentation.
func RenderMedia(w io.Writer, p *manifest.Presentation, trackID string) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	t, err := p.Stream.Track(trackID)
	if err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	segs := p.Segments[t.ID]
	if len(segs) == 0 {
		kind := media.ErrInvalidMedia
		if p.Live {
			kind = media.ErrNotYet
		}
		return fmt.Errorf("hls: stream %q track %q: no segments to list: %w", p.Stream.Name, t.ID, kind)
	}
	playlist, err := p.PlaylistURI(t.ID)
	if err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	vals := manifest.TemplateValues{RepresentationID: t.ID, Bandwidth: t.Bandwidth}
	initURI, err := uriFrom(playlist, p.InitTemplate, vals)
	if err != nil {
		return fmt.Errorf("hls: track %q: %w", t.ID, err)
	}

	target := targetDuration(t, segs, p.SegmentDuration())
	ll, err := newLowLatencyPlaylist(p, t, playlist, segs, target)
	if err != nil {
		return fmt.Errorf("hls: track %q: %w", t.ID, err)
	}
	var b bytes.Buffer
	b.WriteString("#EXTM3U\n")
	fmt.Fprintf(&b, "#EXT-X-VERSION:%d\n", ll.version())
	fmt.Fprintf(&b, "#EXT-X-TARGETDURATION:%d\n", target)
	ll.writeHeader(&b)
	fmt.Fprintf(&b, "#EXT-X-MEDIA-SEQUENCE:%d\n", segs[0].Number)
	if segs[0].Period > 0 {
		fmt.Fprintf(&b, "#EXT-X-DISCONTINUITY-SEQUENCE:%d\n", segs[0].Period)
	}
	if !p.Live {
		b.WriteString("#EXT-X-PLAYLIST-TYPE:VOD\n")
	}
	b.WriteString("#EXT-X-INDEPENDENT-SEGMENTS\n")
	fmt.Fprintf(&b, "#EXT-X-MAP:URI=%s\n", quote(initURI))
	skip := ll.skipped()
	if skip > 0 {
		fmt.Fprintf(&b, "#EXT-X-SKIP:SKIPPED-SEGMENTS=%d\n", skip)
	}
	for i, s := range segs[skip:] {
		i += skip
		vals.Number, vals.Time = s.Number, s.Start
		if i > 0 && s.Period != segs[i-1].Period {
			b.WriteString("#EXT-X-DISCONTINUITY\n")
		}
		uri, err := uriFrom(playlist, p.MediaTemplate, vals)
		if err != nil {
			return fmt.Errorf("hls: track %q: %w", t.ID, err)
		}
		if p.Live {
			pdt := p.Timeline.AvailabilityStart.Add(t.Duration(s.Start))
			fmt.Fprintf(&b, "#EXT-X-PROGRAM-DATE-TIME:%s\n", formatDateTime(pdt))
		}
		ll.writeParts(&b, s.Number, uri)
		fmt.Fprintf(&b, "#EXTINF:%s,\n%s\n", formatSeconds(s.Duration, t.Timescale), uri)
		ll.wrote(uri)
	}
	if err := ll.writeTail(&b); err != nil {
		return fmt.Errorf("hls: track %q: %w", t.ID, err)
	}
	if !p.Live {
		b.WriteString("#EXT-X-ENDLIST\n")
	}
	_, err = w.Write(b.Bytes())
	return err
}

// targetDuration applies the RFC 8216 rule: every EXTINF rounded to the nearest integer
// is at most the target; the nominal duration, rounded up, keeps it stable.
func targetDuration(t *media.Track, segs []media.SegmentRef, nominal time.Duration) uint64 {
	target := uint64((nominal + time.Second - 1) / time.Second)
	ts := uint64(t.Timescale)
	for _, s := range segs {
		target = max(target, (2*s.Duration+ts)/(2*ts)) // round half up
	}
	return max(target, 1)
}

// formatSeconds writes ticks/timescale in seconds with 3 to 6 decimals: 2.000, 2.005333.
// Six decimals keep the sum of a long playlist's EXTINFs within microseconds.
func formatSeconds(ticks uint64, timescale uint32) string {
	ts := uint64(timescale)
	whole := ticks / ts
	micros := ((ticks%ts)*1_000_000 + ts/2) / ts // rounded to the microsecond
	if micros == 1_000_000 {
		whole, micros = whole+1, 0
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", micros), "0")
	for len(frac) < 3 {
		frac += "0"
	}
	return fmt.Sprintf("%d.%s", whole, frac)
}

// formatDateTime writes an EXT-X-PROGRAM-DATE-TIME: ISO 8601 UTC, to the millisecond,
// rounded.
func formatDateTime(t time.Time) string {
	return t.UTC().Round(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
}

// uriFrom expands tmpl (relative to the manifest folder) and makes it relative to the
// media playlist at playlist (also relative to the manifest folder).
func uriFrom(playlist, tmpl string, v manifest.TemplateValues) (string, error) {
	target, err := manifest.ExpandTemplate(tmpl, v)
	if err != nil {
		return "", err
	}
	if err := checkQuoted(target); err != nil {
		return "", err
	}
	return relativeTo(path.Dir(playlist), target)
}

// relativeTo rewrites target, a path relative to the manifest folder, relative to dir
// (also relative to the manifest folder). Absolute URLs and root-relative paths pass
// unchanged; a relative target under an absolute playlist cannot be resolved.
func relativeTo(dir, target string) (string, error) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "/") {
		return target, nil
	}
	if strings.Contains(dir, "://") || strings.HasPrefix(dir, "/") {
		return "", fmt.Errorf("media playlist folder %q is absolute but segment URI %q is relative to the manifest: %w", dir, target, media.ErrInvalidMedia)
	}
	dir = path.Clean(dir)
	if dir == "." {
		return target, nil
	}
	from := strings.Split(dir, "/")
	to := strings.Split(target, "/")
	i := 0
	for i < len(from) && i < len(to)-1 && from[i] == to[i] {
		i++
	}
	parts := make([]string, 0, len(from)-i+len(to)-i)
	for range from[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, to[i:]...)
	return strings.Join(parts, "/"), nil
}

func quote(s string) string { return `"` + s + `"` }

// checkQuoted rejects values that cannot be an HLS quoted-string.
func checkQuoted(vals ...string) error {
	for _, v := range vals {
		if strings.ContainsAny(v, "\"\r\n") {
			return fmt.Errorf("hls: %q cannot be a quoted-string: %w", v, media.ErrInvalidMedia)
		}
	}
	return nil
}
