package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
)

var (
	errChannelStopped = errors.New("the channel was stopped")
	errRequestEnded   = errors.New("the request ended (client gone or server shutting down)")
)

// trackState is what an ingest channel keeps of one track across requests. The
// requests feeding it change it one at a time, under feed (stats under the
// channel's lock).
type trackState struct {
	// feed serialises the track's requests: redundant encoders posting the same
	// track at once merge into one timeline (the first arrival of each chunk wins),
	// and an encoder that reconnects before its old connection is seen to die
	// simply continues.
	feed     sync.Mutex
	sessions int // requests feeding it now (under the channel's lock)

	id     string
	kind   media.Kind
	header *Header // the newest CMAF header: a later request may send media only
	// headerSet is closed when the track's first header is stored (under feed), for a
	// media-only request that came while another request was still sending it.
	headerSet chan struct{}
	track     *media.Track // as last given to AddTrack
	estimated bool         // its bandwidth is measured, the encoder wrote no btrt
	cut       cutter
	seg       struct{ bytes, ticks uint64 } // the open segment so far, for the estimate
	stats     TrackStatus
	// offset shifts the encoder's media time to continue the channel's timeline after
	// its clock restarted (restart_on_encoder_reconnect); seq numbers shifted chunks.
	offset time.Duration
	seq    uint32
	period uint32 // the live period its chunks go to since its encoder's clock restarted
}

// session is one request feeding a track.
type session struct {
	done      chan struct{} // closed when the request has let go of the track
	stopReads func()

	mu  sync.Mutex
	why error // why it was stopped, if it was
}

func (s *session) stop(why error) {
	s.mu.Lock()
	if s.why == nil {
		s.why = why
	}
	s.mu.Unlock()
	s.stopReads()
}

func (s *session) reason() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.why
}

// claim adds the request to those feeding track id.
func (ch *channel) claim(id string, kind media.Kind, stopReads func()) (*trackState, *session, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ts := ch.tracks[id]
	if ts == nil {
		ts = &trackState{id: id, kind: kind, cut: cutter{tl: ch.tl}, headerSet: make(chan struct{})}
		ch.tracks[id] = ts
	}
	switch {
	case ts.kind == "":
		ts.kind = kind // "" too: a segment file's track learns its kind from its header
	case kind != "" && ts.kind != kind:
		return nil, nil, fmt.Errorf("track %q of channel %q is %s, not %s: %w", id, ch.name, ts.kind, kind, media.ErrBadRequest)
	}
	ts.sessions++
	ts.stats.Ended = false
	return ts, &session{done: make(chan struct{}), stopReads: stopReads}, nil
}

// release takes the request off the track.
func (ch *channel) release(ts *trackState, s *session) {
	ch.mu.Lock()
	ts.sessions--
	ch.mu.Unlock()
	close(s.done)
}

// others says whether requests other than the caller's feed ts.
func (ch *channel) others(ts *trackState) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ts.sessions > 1
}

// receive stores what p reads until the body ends. Whatever ends it, the chunks that
// arrived whole stay and the open segment ends.
func (ch *channel) receive(ts *trackState, p *Parser, log *slog.Logger) error {
	defer func() {
		ts.feed.Lock()
		if !ch.others(ts) { // another encoder may still be sending the open segment
			ch.endOpen(ts)
		}
		ts.feed.Unlock()
	}()
	for {
		hdr, c, err := p.Next()
		if err != nil {
			if err == io.EOF && p.LastSeen() {
				ch.mu.Lock()
				ts.stats.Ended = true
				ch.mu.Unlock()
				log.Info("the encoder ended the track (lmsg)")
				return nil
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
		ts.feed.Lock()
		if hdr != nil {
			err = ch.setHeader(ts, hdr)
		} else {
			err = ch.store(ts, c)
		}
		ts.feed.Unlock()
		if err != nil {
			return err
		}
	}
}

// setHeader describes the track by its CMAF header and stores the header.
func (ch *channel) setHeader(ts *trackState, h *Header) error {
	ti := h.Init.Info
	ch.mu.Lock()
	if ts.kind == "" {
		ts.kind = ti.Kind
	}
	kind := ts.kind
	ch.mu.Unlock()
	if ti.Kind != kind {
		return fmt.Errorf("the URL names a %s track but its CMAF header is %s: %w", kind, ti.Kind, ErrNoHeader)
	}
	t := &media.Track{ID: ts.id, Kind: ti.Kind, Codec: ti.Codec, Bandwidth: h.Bitrate, Width: ti.Width, Height: ti.Height,
		FrameRate: ti.FrameRate, SampleRate: ti.SampleRate, Channels: ti.Channels, Timescale: ti.Timescale}
	if ti.Language != "und" {
		t.Language = ti.Language
	}
	if prev := ts.track; prev != nil && prev.Timescale == t.Timescale {
		t.FrameRate = orElse(t.FrameRate, prev.FrameRate)
		if t.Bandwidth == 0 {
			t.Bandwidth = prev.Bandwidth // measured before: a start
		}
	}
	if err := ch.hc.AddTrack(t); err != nil {
		return fmt.Errorf("%v: %w", err, ErrNoHeader)
	}
	if err := ch.hc.SetInit(ts.id, h.Bytes); err != nil {
		return fmt.Errorf("%v: %w", err, ErrNoHeader)
	}
	if ts.header == nil {
		close(ts.headerSet)
	}
	ts.header, ts.track, ts.estimated, ts.cut.track = h, t, h.Bitrate == 0, t
	return nil
}

// awaitHeader is the track's CMAF header for a request that is about to read: when
// there is none yet but another request is feeding the track (an encoder that PUTs
// its init segment and its first media segment at once, as FFmpeg's dash muxer may),
// it waits for that one's header, at most wait; nil if none came.
func (ch *channel) awaitHeader(ctx context.Context, ts *trackState, wait time.Duration) *Header {
	ts.feed.Lock()
	h := ts.header
	ts.feed.Unlock()
	if h != nil || !ch.others(ts) {
		return h
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ts.headerSet:
	case <-t.C:
	case <-ctx.Done():
	}
	ts.feed.Lock()
	defer ts.feed.Unlock()
	return ts.header
}

// orElse returns a, or b when a is empty.
func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// maxRewindSegments is how far, in nominal segments, before a track's stored end media may restart and still be
// taken for a resend (dropped): further back, the encoder restarted its clock.
const maxRewindSegments = 3

// store appends chunk c to the hub where the segment rules put it.
func (ch *channel) store(ts *trackState, c *Chunk) error {
	f := &c.Fragment
	if len(f.Samples) == 0 || f.Duration() == 0 {
		ch.count(ts, c, false)
		return nil
	}
	rewind := uint64(maxRewindSegments*ch.tl.d/time.Millisecond) * uint64(ts.track.Timescale) / 1000
	if ts.offset != 0 {
		var err error
		if c, err = ch.shift(ts, c); err != nil {
			return err
		}
		f = &c.Fragment
	}
	if ts.cut.started && f.BaseMediaDecodeTime+rewind < ts.cut.end || !ts.cut.started && ch.restarted(ts, f.BaseMediaDecodeTime, rewind) {
		raw := ts.track.Duration(f.BaseMediaDecodeTime) - ts.offsetDuration()
		unshifted := &Chunk{Data: c.Data, Fragment: rawFragment(c.Fragment, ts), Styp: c.Styp, Last: c.Last, Prft: c.Prft}
		r, first := ch.restartOffset(ts.track, raw)
		ts.offset, ts.period = r.offset, r.period
		if first {
			how := "the channel continues its timeline (restart_on_encoder_reconnect)"
			if !ch.restartOnReconnect {
				how = "a new period begins (a DASH Period, an HLS discontinuity)"
				ch.hc.StartPeriod(r.period, raw+r.offset)
			}
			ch.log.Info("the encoder restarted its clock: "+how, "channel", ch.name, "track", ts.id,
				"encoder_time", raw, "channel_time", raw+r.offset, "period", r.period)
		}
		var err error
		if c, err = ch.shift(ts, unshifted); err != nil {
			return err
		}
		f = &c.Fragment
	}
	hadSegment, prevEnd := ts.cut.started && ts.cut.open, ts.cut.end
	n, how := ts.cut.place(c)
	if how == appendChunk && f.BaseMediaDecodeTime > ts.cut.end {
		// A gap inside a segment (a fragment the encoder lost or skipped): what came
		// before is a segment of its own, and what follows waits for the next
		// boundary, rather than the whole track being refused.
		ch.log.Warn("a gap in an ingested track: its segment ends there, and the track resumes at its next boundary",
			"channel", ch.name, "track", ts.id, "from", ts.track.Duration(ts.cut.end), "to", ts.track.Duration(f.BaseMediaDecodeTime))
		ch.endOpen(ts)
		how = dropChunk
	}
	if how == dropChunk {
		ch.count(ts, c, false)
		return nil
	}
	ch.anchor(ts.track, f)
	if how == startSegment && hadSegment {
		ch.settle(ts.track, prevEnd) // this chunk completes the track's previous segment
	}
	if how == startSegment {
		ch.measure(ts)
		ts.seg.bytes, ts.seg.ticks = 0, 0
	}
	if ts.track.Kind == media.Video && ts.track.FrameRate == "" {
		if fr := frameRate(ts.track.Timescale, f.Samples); fr != "" {
			t := *ts.track
			t.FrameRate = fr
			ch.describe(ts, &t)
		}
	}
	ts.seg.bytes += uint64(len(c.Data))
	ts.seg.ticks += f.Duration()
	if ts.estimated && ts.track.Bandwidth == 0 {
		ch.measure(ts) // the first chunk: a start
	}
	err := ch.hc.AppendChunk(ts.id, n, &media.Chunk{Data: c.Data, Start: f.BaseMediaDecodeTime, Duration: f.Duration(), Keyframe: f.Keyframe(), Period: ts.period}, false)
	if err != nil {
		return err
	}
	ts.cut.stored(c)
	ch.count(ts, c, true)
	if ts.cut.misaligned != "" {
		ch.exclude(ts.cut.misaligned, ts.cut.why)
		ts.cut.misaligned = ""
	}
	ch.mu.Lock()
	ch.maxEnd = max(ch.maxEnd, ts.track.Duration(f.BaseMediaDecodeTime+f.Duration()))
	ch.mu.Unlock()
	return nil
}

// exclude keeps a rung whose segment boundaries disagree with the reference rung's
// out of the channel's manifests and switching sets (its media is still stored and
// archived), and reports it once: in the log and the track's status.
func (ch *channel) exclude(trackID, why string) {
	ch.mu.Lock()
	ts := ch.tracks[trackID]
	already := ts == nil || ts.stats.Misaligned != ""
	if ts != nil && !already {
		ts.stats.Misaligned = why
	}
	ch.mu.Unlock()
	if already {
		return
	}
	ch.hc.ExcludeTrack(trackID, why)
	ch.log.Warn("a rung's segment boundaries disagree with the others': kept out of the manifests", "channel", ch.name, "track", trackID, "why", why)
}

// ---- an encoder that restarts its clock (restart_on_encoder_reconnect) ----

// behind says whether media at t of track tr starts more than a few segments before
// what the channel has stored: a track's first chunk (after an origin restart, or
// from a restarted encoder) from a clock that began again.
func (ch *channel) behind(tr *media.Track, t uint64) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.maxEnd > 0 && tr.Duration(t)+maxRewindSegments*ch.tl.d < ch.maxEnd
}

// restarted says whether a track's first chunk in this process, at media time t,
// comes from a clock that began again: with
// restart_on_encoder_reconnect, when it is behind what the channel stored of any track
// (the encoder's other tracks may have restarted first); without it, when it is behind
// what the channel stored of this track (after an origin restart, from the archive),
// so that a rung that merely joins late is not taken for a restart.
func (ch *channel) restarted(ts *trackState, t, rewind uint64) bool {
	if ch.restartOnReconnect {
		return ch.behind(ts.track, t)
	}
	w, err := ch.hc.Window(ch.now())
	if err != nil {
		return false
	}
	refs := w[ts.id]
	return len(refs) > 0 && t+rewind < refs[len(refs)-1].End()
}

// restartOffset is the restart of the encoder's clock at raw: the shift that puts
// media at raw on the first segment boundary after everything stored, and the
// period it goes to. The channel's tracks restart together (one encoder), so the
// first to arrive decides (first is true for it) and the others, starting within a
// few segments of the same raw time, take the same shift and period: they stay
// aligned.
//
// Either way the media is shifted onto the channel's timeline, so every transport
// reads one continuous timeline. With restart_on_encoder_reconnect that is all: the
// stream simply goes on. Without it the restart is also a new period, which the
// manifests announce (a DASH Period, an HLS EXT-X-DISCONTINUITY), so players reset
// their decoders there, as they must for a new encoder session.
func (ch *channel) restartOffset(tr *media.Track, raw time.Duration) (r clockRestart, first bool) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if r := ch.restart; r != nil && (raw-r.raw).Abs() < maxRewindSegments*ch.tl.d {
		return *r, false
	}
	next := (ch.maxEnd + ch.tl.d - 1) / ch.tl.d * ch.tl.d
	if !ch.restartOnReconnect {
		ch.period++
	}
	ch.restart = &clockRestart{raw: raw, offset: next - raw, period: ch.period}
	return *ch.restart, true
}

// clockRestart is a restart of the encoder's clock.
type clockRestart struct {
	raw    time.Duration // media time at which the encoder's clock began again
	offset time.Duration // added to the encoder's media time from then on
	period uint32        // the live period its media goes to
}

// offsetDuration is the track's shift as a duration.
func (ts *trackState) offsetDuration() time.Duration {
	return time.Duration(float64(ts.offsetTicks()) / float64(ts.track.Timescale) * float64(time.Second))
}

// offsetTicks is the track's shift in its timescale (one rounding for all its chunks,
// so they stay contiguous).
func (ts *trackState) offsetTicks() int64 {
	return int64(ts.offset.Seconds()*float64(ts.track.Timescale) + 0.5)
}

// rawFragment is f with the track's current shift taken off again.
func rawFragment(f cmaf.Fragment, ts *trackState) cmaf.Fragment {
	f.BaseMediaDecodeTime = uint64(int64(f.BaseMediaDecodeTime) - ts.offsetTicks())
	return f
}

// shift returns c moved by the track's offset: its decode time and its bytes
// (cmaf.Retime, which also drops prft, no longer true).
func (ch *channel) shift(ts *trackState, c *Chunk) (*Chunk, error) {
	t := int64(c.Fragment.BaseMediaDecodeTime) + ts.offsetTicks()
	if t < 0 {
		return nil, fmt.Errorf("media time %v shifted below zero: %w", ts.track.Duration(c.Fragment.BaseMediaDecodeTime), media.ErrInvalidMedia)
	}
	ts.seq++
	data, err := cmaf.Retime(c.Data, uint64(t), ts.seq)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, media.ErrInvalidMedia)
	}
	f := c.Fragment
	f.BaseMediaDecodeTime = uint64(t)
	return &Chunk{Data: data, Fragment: f, Styp: c.Styp, Last: c.Last}, nil
}

// count adds c to the track's statistics.
func (ch *channel) count(ts *trackState, c *Chunk, stored bool) {
	now := ch.now()
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !stored {
		ts.stats.Dropped++
		return
	}
	ts.stats.Chunks++
	ts.stats.Bytes += int64(len(c.Data))
	ts.stats.LastChunk = now
	if c.Prft != nil {
		ts.stats.Latency = now.Sub(c.Prft.Wallclock)
	}
}

// anchor sets the channel's availability start from its first chunk: media time 0
// is when the encoder produced it, taken as this chunk's arrival less its end time
// (an encoder sends a chunk once its last sample is encoded). Rounded up to the
// millisecond an MPD can say, so segments are never announced before they arrive.
func (ch *channel) anchor(t *media.Track, f *cmaf.Fragment) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.anchored {
		return
	}
	at := ch.now().Add(-t.Duration(f.BaseMediaDecodeTime + f.Duration()))
	if r := at.Truncate(time.Millisecond); !r.Equal(at) {
		at = r.Add(time.Millisecond)
	}
	ch.hc.SetAvailabilityStart(at)
	ch.anchored = true
}

// settle moves the availability start later, when needed, so that a segment is
// announced no earlier than it completes. An encoder's segment completes only when
// its next one begins (or its styp says so): an encoder that sends one chunk per
// segment (FFmpeg's frag_keyframe) completes segment n about a segment after n's
// media has ended, and a $Number$ manifest, which announces segment n at the
// availability start plus its end time, must say so. Each track's first completed
// segment may move it; after that the start stays put, as players expect.
func (ch *channel) settle(t *media.Track, end uint64) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.settled[t.ID] {
		return
	}
	ch.settled[t.ID] = true
	at := ch.now().Add(-t.Duration(end))
	if r := at.Truncate(time.Millisecond); !r.Equal(at) {
		at = r.Add(time.Millisecond)
	}
	if at.After(ch.hc.Timeline().AvailabilityStart) {
		ch.hc.SetAvailabilityStart(at)
	}
}

// measure raises a track's bandwidth without btrt to the rate of its open segment
// when that is higher: the declared bandwidth is a peak.
func (ch *channel) measure(ts *trackState) {
	if !ts.estimated || ts.seg.ticks == 0 {
		return
	}
	rate := float64(ts.seg.bytes) * 8 / ts.track.Seconds(ts.seg.ticks)
	bw := (int(rate) + 999) / 1000 * 1000
	if bw > ts.track.Bandwidth {
		t := *ts.track
		t.Bandwidth = bw
		ch.describe(ts, &t)
	}
}

// describe replaces the track's description (AddTrack keeps its segments).
func (ch *channel) describe(ts *trackState, t *media.Track) {
	if err := ch.hc.AddTrack(t); err == nil {
		ts.track, ts.cut.track = t, t
	}
}

// endOpen ends the track's open segment: its encoder went away, or ended it.
func (ch *channel) endOpen(ts *trackState) {
	if !ts.cut.open {
		return
	}
	ch.measure(ts)
	_ = ch.hc.EndSegment(ts.id, ts.cut.n)
	ts.cut.open = false
}

// frameRate is the frame rate of a fragment's most common sample duration: "25",
// "30000/1001"; "" when the samples have none.
func frameRate(timescale uint32, samples []cmaf.Sample) string {
	counts := map[uint32]int{}
	best := uint32(0)
	for _, s := range samples {
		if s.Duration == 0 {
			continue
		}
		counts[s.Duration]++
		if best == 0 || counts[s.Duration] > counts[best] || counts[s.Duration] == counts[best] && s.Duration < best {
			best = s.Duration
		}
	}
	if best == 0 {
		return ""
	}
	n, d := uint64(timescale), uint64(best)
	for a, b := n, d; ; {
		if b == 0 {
			n, d = n/a, d/a
			break
		}
		a, b = b, a%b
	}
	if d == 1 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, d)
}
