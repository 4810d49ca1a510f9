package hub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streambed/streambed/internal/media"
)

// Clock returns the current time; tests pin it.
type Clock func() time.Time

// Channel is a live stream held as a store that sources feed: per track an init
// segment and a window of segments, each made of chunks that become visible to every
// reader the moment they are appended. A segment is available once its source ends it
// (availability is by presence, not by clock arithmetic), and the timeline is what was
// stored: each segment's real start time and duration, so segments of varying length
// (an encoder's) and fixed length (a looped file's) are the same to readers.
//
// Memory is bounded by the DVR window: segments that left it are dropped. Each chunk
// is stored once and shared by reference with every reader.
type Channel struct {
	name      string
	info      atomic.Pointer[media.Stream] // replaced, never changed, when a track is added
	timeline  media.Timeline
	anchor    atomic.Pointer[time.Time] // the timeline's AvailabilityStart; SetAvailabilityStart moves it
	delay     time.Duration             // MPD@suggestedPresentationDelay
	minBuffer time.Duration             // MPD@minBufferTime; 0: the renderer's default
	chunk     time.Duration             // nominal chunk duration; 0: observe it (see ChunkDuration)
	od        OnDemand                  // nil: only what sources append
	now       Clock
	archive   *archive // nil: no archive

	mu      sync.Mutex
	periods []media.Period // live periods after the first, oldest first
	tracks  map[string]*liveTrack
	subs    map[*Subscription]struct{}
	changed chan struct{} // closed and replaced whenever a segment completes
	ended   bool

	following atomic.Int64 // Follow calls in progress
}

// liveTrack is one track's init and window, oldest segment first.
type liveTrack struct {
	track    *media.Track
	init     []byte
	segs     []*entry
	excluded string // why the track is kept out of the description; "": it is in
	// chunkDur is the longest chunk of the track's newest segment that a source
	// completed (ChunkDuration for channels that do not configure one).
	chunkDur time.Duration
	// grew is closed when a chunk of the track is stored, one of its segments
	// completes or the channel ends, for readers that follow the track's edge (Follow,
	// Edge); made only when a reader takes it (grewLocked), so a track nobody follows
	// allocates nothing per chunk, and a reader wakes only for its own track.
	grew chan struct{}
}

// entry is one stored segment. Its chunk list only grows, and only under the
// channel's lock; a reader of a segment in progress gets a copy of the slice header,
// so it sees the chunks that were there and never a torn one.
type entry struct {
	seg      media.Segment
	complete bool
	at       time.Time // when it completed: a reader's clock must be past it
	told     int       // chunks announced to subscribers
}

// OnDemand is a source that can make any segment of a channel at any time, the same
// bytes every time, on a fixed schedule: a looped asset. The channel asks it for a
// segment that a reader's clock says is due but that is not stored: a request with a
// pinned clock (`?nowMS=`), or one a few microseconds ahead of the source's pacing.
// Two origins with the same source thus serve the same URL with the same bytes.
type OnDemand interface {
	// Window is the schedule's complete segments at now: first..last of the DVR
	// window; ok is false before the first one completes.
	Window(now time.Time) (first, last uint64, ok bool)
	// AvailableAt is when segment n completes.
	AvailableAt(n uint64) time.Time
	// Number is the segment of a track that starts at media time start.
	Number(trackID string, start uint64) (uint64, bool)
	// Segment makes segment n of a track.
	Segment(trackID string, n uint64) (*media.Segment, error)
}

// ChannelConfig configures NewChannel.
type ChannelConfig struct {
	Info  *media.Stream     // name, tracks, nominal segment duration (Live is set for you)
	Inits map[string][]byte // track ID → init segment; may come later by SetInit
	// Timeline anchors media time 0 to wall-clock time and sets the nominal segment
	// duration and the DVR window.
	Timeline media.Timeline
	// PresentationDelay is MPD@suggestedPresentationDelay; 0: two segment durations.
	PresentationDelay time.Duration
	// MinBufferTime is MPD@minBufferTime; 0: one segment duration.
	MinBufferTime time.Duration
	// ChunkDuration is the longest chunk the source makes (a looped asset cut into
	// chunks), which low-latency manifests announce; 0: observed from the chunks
	// sources append (an encoder's), see Channel.ChunkDuration.
	ChunkDuration time.Duration
	// OnDemand, when set, makes segments a reader's clock asks for (a looped asset).
	OnDemand OnDemand
	Clock    Clock // nil: time.Now
	// ArchiveDir, when set, receives every segment that completes (see archive for
	// the layout), so the recording outlives the DVR window; a channel that sources
	// append to comes back from it after a restart with its DVR window.
	ArchiveDir string
	// ArchiveGroup groups the archive in folders of this much media time, and
	// ArchiveLength removes groups older than this behind the newest segment.
	ArchiveGroup, ArchiveLength time.Duration
}

// NewChannel returns an empty live channel. Sources feed it (SetInit, AppendChunk,
// EndSegment); the hub's registry runs them (Hub.AddChannel).
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	if cfg.Info == nil || !media.ValidName(cfg.Info.Name) {
		return nil, fmt.Errorf("channel: a name of 1–64 of [A-Za-z0-9._-] is required: %w", media.ErrBadRequest)
	}
	if cfg.Timeline.SegmentDuration <= 0 {
		return nil, fmt.Errorf("channel %q: the nominal segment duration must be positive: %w", cfg.Info.Name, media.ErrBadRequest)
	}
	if cfg.Timeline.TimeShiftBufferDepth < 0 || cfg.PresentationDelay < 0 || cfg.MinBufferTime < 0 || cfg.ChunkDuration < 0 {
		return nil, fmt.Errorf("channel %q: negative DVR window or delay: %w", cfg.Info.Name, media.ErrBadRequest)
	}
	info := *cfg.Info
	info.Live = true
	now := cfg.Clock
	if now == nil {
		now = time.Now
	}
	c := &Channel{
		name: info.Name, timeline: cfg.Timeline, delay: cfg.PresentationDelay, minBuffer: cfg.MinBufferTime, chunk: cfg.ChunkDuration,
		od: cfg.OnDemand, now: now,
		tracks: map[string]*liveTrack{}, subs: map[*Subscription]struct{}{}, changed: make(chan struct{}),
	}
	if c.delay == 0 {
		c.delay = 2 * cfg.Timeline.SegmentDuration
	}
	for _, t := range info.Tracks {
		c.tracks[t.ID] = &liveTrack{track: t, init: cfg.Inits[t.ID]}
	}
	c.info.Store(&info)
	c.anchor.Store(&cfg.Timeline.AvailabilityStart)
	if cfg.ArchiveDir != "" {
		a, err := newArchive(ArchiveConfig{Dir: cfg.ArchiveDir, Group: cfg.ArchiveGroup, Length: cfg.ArchiveLength}, cfg.Inits, now)
		if err != nil {
			return nil, fmt.Errorf("channel %q: %w", info.Name, err)
		}
		c.archive = a
		if cfg.OnDemand == nil {
			if err := c.restoreFromArchive(cfg.ArchiveDir); err != nil {
				return nil, fmt.Errorf("channel %q: restoring from its archive: %w", info.Name, err)
			}
		}
	}
	return c, nil
}

// Info describes the channel: its tracks as they are now (an encoder adds its tracks
// as it connects). The value is never changed; AddTrack replaces it.
func (c *Channel) Info() *media.Stream { return c.info.Load() }

// AddTrack adds a track, or replaces the description of one with the same ID (an
// encoder that reconnects may bring a new codec string or bandwidth). Tracks are kept
// in stream order: video rungs by ascending bandwidth, then audio.
func (c *Channel) AddTrack(t *media.Track) error {
	if err := c.addTrack(t); err != nil {
		return err
	}
	c.archiveTracks()
	return nil
}

func (c *Channel) addTrack(t *media.Track) error {
	if t == nil || !media.ValidName(t.ID) || t.Timescale == 0 || (t.Kind != media.Video && t.Kind != media.Audio) {
		return fmt.Errorf("channel %q: a track needs a URL-safe ID, a kind and a timescale: %w", c.name, media.ErrInvalidMedia)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if lt, ok := c.tracks[t.ID]; ok {
		if lt.track.Timescale != t.Timescale || lt.track.Kind != t.Kind {
			return fmt.Errorf("channel %q track %q: kind or timescale changed (%s %d → %s %d); a new track needs a new name: %w",
				c.name, t.ID, lt.track.Kind, lt.track.Timescale, t.Kind, t.Timescale, media.ErrInvalidMedia)
		}
		lt.track = t
	} else {
		c.tracks[t.ID] = &liveTrack{track: t}
	}
	c.describeLocked()
	return nil
}

// ExcludeTrack keeps a track out of the channel's description (so out of every
// manifest, switching set and push ladder) while its media is still stored and
// archived: a rung whose segment boundaries disagree with the others' (why says
// how). IncludeTrack takes it back.
func (c *Channel) ExcludeTrack(trackID, why string) {
	c.mu.Lock()
	if lt, ok := c.tracks[trackID]; ok {
		lt.excluded = why
		c.describeLocked()
	}
	c.mu.Unlock()
}

// Excluded lists the tracks kept out of the description, with why.
func (c *Channel) Excluded() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for id, lt := range c.tracks {
		if lt.excluded != "" {
			out[id] = lt.excluded
		}
	}
	return out
}

// describeLocked rebuilds the channel's description from its tracks.
func (c *Channel) describeLocked() {
	info := *c.info.Load()
	info.Tracks = make([]*media.Track, 0, len(c.tracks))
	for _, lt := range c.tracks {
		if lt.excluded == "" {
			info.Tracks = append(info.Tracks, lt.track)
		}
	}
	sort.SliceStable(info.Tracks, func(i, j int) bool {
		a, b := info.Tracks[i], info.Tracks[j]
		if a.Kind != b.Kind {
			return a.Kind == media.Video
		}
		if a.Bandwidth != b.Bandwidth {
			return a.Bandwidth < b.Bandwidth
		}
		return a.ID < b.ID
	})
	c.info.Store(&info)
}

// StartPeriod records that live period index starts at media time start (since the
// availability start): a source whose encoder restarted on a channel that marks
// such restarts, and whose segments from then on carry the index (Chunk.Period).
// Manifests announce it (a DASH Period, an HLS discontinuity). Periods that no stored
// segment belongs to any more are forgotten, but the newest is always kept.
func (c *Channel) StartPeriod(index uint32, start time.Duration) {
	c.mu.Lock()
	if n := len(c.periods); n > 0 && c.periods[n-1].Index >= index {
		c.mu.Unlock()
		return
	}
	c.periods = append(c.periods, media.Period{Index: index, Start: start})
	oldest := index
	for _, lt := range c.tracks {
		if len(lt.segs) > 0 {
			oldest = min(oldest, lt.segs[0].seg.Period)
		}
	}
	i := 0
	for i < len(c.periods)-1 && c.periods[i].Index < oldest {
		i++
	}
	c.periods = append([]media.Period(nil), c.periods[i:]...)
	c.mu.Unlock()
	c.archiveTracks()
}

// Periods lists the live periods after the first, oldest first.
func (c *Channel) Periods() []media.Period {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]media.Period(nil), c.periods...)
}

// Live is true: a channel grows and keeps a window.
func (c *Channel) Live() bool { return true }

// Timeline is the channel's anchor, nominal segment duration and DVR window.
func (c *Channel) Timeline() media.Timeline {
	tl := c.timeline
	tl.AvailabilityStart = *c.anchor.Load()
	return tl
}

// SetAvailabilityStart anchors media time 0 to wall-clock time t. It is for a source
// that learns the anchor only when media arrives (an encoder's ingest knows it from
// its first chunk's media time and arrival); call it before appending that chunk, as
// manifests place stored segments by it.
func (c *Channel) SetAvailabilityStart(t time.Time) {
	c.anchor.Store(&t)
	c.archiveTracks()
}

// ChunkDuration is the longest chunk of the channel's segments: as configured (a
// looped asset cut into chunks), else as observed, the longest chunk of each track's
// newest segment that its source completed (an encoder's), the longest of the
// described tracks. 0 before any segment completed. A chunk as long as the segment
// means segments are made whole, and then no reader gains by following one in
// progress.
func (c *Channel) ChunkDuration() time.Duration {
	if c.chunk > 0 {
		return c.chunk
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for _, t := range c.Info().Tracks {
		if lt := c.tracks[t.ID]; lt != nil {
			d = max(d, lt.chunkDur)
		}
	}
	return d
}

// PresentationDelay is how far behind the live edge players are told to play.
func (c *Channel) PresentationDelay() time.Duration { return c.delay }

// MinBufferTime is MPD@minBufferTime; 0: one segment duration.
func (c *Channel) MinBufferTime() time.Duration { return c.minBuffer }

// Now is the channel's clock.
func (c *Channel) Now() time.Time { return c.now() }

func (c *Channel) track(trackID string) (*liveTrack, error) {
	c.mu.Lock()
	lt, ok := c.tracks[trackID]
	c.mu.Unlock()
	if ok {
		return lt, nil
	}
	return nil, fmt.Errorf("channel %q has no track %q: %w", c.name, trackID, media.ErrNotFound)
}

// ---- the source's side ----

// SetInit sets (or replaces, after an encoder restart) a track's init segment.
func (c *Channel) SetInit(trackID string, init []byte) error {
	lt, err := c.track(trackID)
	if err != nil {
		return err
	}
	if len(init) == 0 {
		return fmt.Errorf("channel %q track %q: empty init segment: %w", c.name, trackID, media.ErrInvalidMedia)
	}
	c.mu.Lock()
	lt.init = init
	c.mu.Unlock()
	if c.archive != nil {
		c.archive.saveInit(trackID, init)
	}
	return nil
}

// AppendChunk adds chunk ch to segment n of a track, which starts with it when n is
// new (and the track's previous segment, if still open, ends there); end completes
// the segment. The chunk is visible to readers and handed to subscribers at once.
//
// A chunk whose media time is already stored is a duplicate (a second encoder, or a
// segment a reader had made on demand): the stored copy stays and subscribers hear of
// each position once. A chunk for a segment older than the track's newest, or one
// that does not start where the segment's last chunk ended, is refused.
func (c *Channel) AppendChunk(trackID string, n uint64, ch *media.Chunk, end bool) error {
	lt, err := c.track(trackID)
	if err != nil {
		return err
	}
	if ch == nil || len(ch.Data) == 0 {
		return fmt.Errorf("channel %q track %q segment %d: empty chunk: %w", c.name, trackID, n, media.ErrInvalidMedia)
	}
	if c.archive != nil && c.od == nil && c.archive.refusing() {
		// Media that cannot be archived is refused rather than taken and lost: the
		// encoder hears of it (507) and can go to another origin.
		return fmt.Errorf("channel %q: %w: free space in %s", c.name, ErrDiskFull, c.archive.dir)
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return fmt.Errorf("channel %q has ended: %w", c.name, media.ErrGone)
	}
	var events []Event
	var done []*entry
	e := lt.find(n)
	switch {
	case e == nil:
		if k := len(lt.segs); k > 0 && lt.segs[k-1].seg.Number > n {
			c.mu.Unlock()
			if c.od != nil {
				return nil // a paced source fell behind what readers made on demand: nothing to add
			}
			return fmt.Errorf("channel %q track %q: segment %d arrived after %d: %w", c.name, trackID, n, lt.segs[k-1].seg.Number, media.ErrInvalidMedia)
		}
		if k := len(lt.segs); k > 0 && !lt.segs[k-1].complete {
			prev := lt.segs[k-1]
			c.completeLocked(lt, prev)
			lt.observeLocked(prev)
			done = append(done, prev)
			events = append(events, Event{Track: trackID, Number: prev.seg.Number, Index: len(prev.seg.Chunks), Last: true})
		}
		period := ch.Period
		if k := len(lt.segs); k > 0 {
			period = max(period, lt.segs[k-1].seg.Period)
		}
		e = &entry{seg: media.Segment{SegmentRef: media.SegmentRef{Number: n, Start: ch.Start, Period: period}}}
		lt.segs = append(lt.segs, e)
	case ch.Start < e.seg.End():
		// A duplicate: announce the stored chunk at its position if nobody has heard of it.
		i := sort.Search(len(e.seg.Chunks), func(i int) bool { return e.seg.Chunks[i].Start >= ch.Start })
		if (i == len(e.seg.Chunks) || e.seg.Chunks[i].Start != ch.Start) && e.complete && ch.Start >= e.seg.Start {
			// Inside a complete segment chunked otherwise (restored from the archive
			// as one chunk, or a redundant encoder's): already stored, dropped.
			c.mu.Unlock()
			return nil
		}
		if i == len(e.seg.Chunks) || e.seg.Chunks[i].Start != ch.Start {
			c.mu.Unlock()
			return fmt.Errorf("channel %q track %q segment %d: chunk at %d overlaps the stored ones: %w", c.name, trackID, n, ch.Start, media.ErrInvalidMedia)
		}
		if i == e.told {
			e.told++
			events = append(events, Event{Track: trackID, Number: n, Index: i, Last: e.complete && i == len(e.seg.Chunks)-1, Chunk: e.seg.Chunks[i]})
		}
		c.mu.Unlock()
		c.deliverAll(events)
		return nil
	case e.complete:
		c.mu.Unlock()
		return fmt.Errorf("channel %q track %q segment %d is complete; a chunk at %d comes too late: %w", c.name, trackID, n, ch.Start, media.ErrInvalidMedia)
	case ch.Start != e.seg.End():
		c.mu.Unlock()
		return fmt.Errorf("channel %q track %q segment %d: chunk at %d leaves a gap after %d: %w", c.name, trackID, n, ch.Start, e.seg.End(), media.ErrInvalidMedia)
	}
	e.seg.Chunks = append(e.seg.Chunks, ch)
	e.seg.Duration += ch.Duration
	e.seg.Size += int64(len(ch.Data))
	if end {
		c.completeLocked(lt, e)
		lt.observeLocked(e)
		done = append(done, e)
	}
	// Wake the track's readers only now that the segment's completion time is set:
	// a reader woken earlier reads its clock before it can take the lock, and with
	// that clock the completion would still lie ahead (it then slept on for good —
	// a blocked LL-HLS reload timed out that way under load).
	lt.signalLocked()
	if e.told == len(e.seg.Chunks)-1 {
		e.told++
		events = append(events, Event{Track: trackID, Number: n, Index: len(e.seg.Chunks) - 1, Last: end, Chunk: ch})
	}
	c.pruneLocked(lt)
	c.mu.Unlock()
	c.deliverAll(events)
	c.archiveAll(trackID, done)
	return nil
}

// EndSegment completes segment n of a track whose last chunk was appended without
// knowing it was the last (an encoder says so only by starting the next one, or by
// closing its stream). Subscribers get an Event with Last set and no chunk.
func (c *Channel) EndSegment(trackID string, n uint64) error {
	lt, err := c.track(trackID)
	if err != nil {
		return err
	}
	c.mu.Lock()
	e := lt.find(n)
	if e == nil || e.complete || len(e.seg.Chunks) == 0 {
		c.mu.Unlock()
		return nil
	}
	c.completeLocked(lt, e)
	lt.observeLocked(e)
	ev := Event{Track: trackID, Number: n, Index: len(e.seg.Chunks), Last: true}
	c.pruneLocked(lt)
	c.mu.Unlock()
	c.deliverAll([]Event{ev})
	c.archiveAll(trackID, []*entry{e})
	return nil
}

// Publish stores a whole segment at once (its chunks, then its end).
func (c *Channel) Publish(trackID string, s *media.Segment) error {
	for i, ch := range s.Chunks {
		if err := c.AppendChunk(trackID, s.Number, ch, i == len(s.Chunks)-1); err != nil {
			return err
		}
	}
	return nil
}

// EndStream ends the channel: open segments complete, subscriptions close, and
// nothing more is accepted. What is stored stays readable.
func (c *Channel) EndStream() {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	for _, lt := range c.tracks {
		lt.signalLocked()
		if k := len(lt.segs); k > 0 && !lt.segs[k-1].complete && len(lt.segs[k-1].seg.Chunks) > 0 {
			c.completeLocked(lt, lt.segs[k-1])
		}
	}
	subs := make([]*Subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.Stop()
	}
}

// Ended says whether EndStream was called.
func (c *Channel) Ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}

// completeLocked marks e, a segment of lt, complete at the source's schedule time (a
// looped channel's, so every origin reports the same) or now, and wakes readers
// waiting for it.
func (c *Channel) completeLocked(lt *liveTrack, e *entry) {
	e.complete = true
	if c.od != nil {
		e.at = c.od.AvailableAt(e.seg.Number)
	} else {
		e.at = c.now()
	}
	close(c.changed)
	c.changed = make(chan struct{})
	lt.signalLocked()
}

// grewLocked is the channel the track's next growth closes, for a reader to wait on.
func (lt *liveTrack) grewLocked() <-chan struct{} {
	if lt.grew == nil {
		lt.grew = make(chan struct{})
	}
	return lt.grew
}

// signalLocked wakes the readers following the track (Follow, Edge).
func (lt *liveTrack) signalLocked() {
	if lt.grew != nil {
		close(lt.grew)
		lt.grew = nil
	}
}

// observeLocked notes the longest chunk of a segment its source completed: the chunk
// duration of a channel that does not configure one. A segment stored in one piece
// (restored from the archive, or an encoder's per-segment upload) counts too, so such
// a channel is not announced as low latency.
func (lt *liveTrack) observeLocked(e *entry) {
	var longest uint64
	for _, ch := range e.seg.Chunks {
		longest = max(longest, ch.Duration)
	}
	lt.chunkDur = lt.track.Duration(longest)
}

// pruneLocked drops complete segments that left the DVR window by the real clock,
// keeping one more for readers that were just behind it.
func (c *Channel) pruneLocked(lt *liveTrack) {
	cut := c.now().Add(-c.timeline.TimeShiftBufferDepth - c.timeline.SegmentDuration)
	k := 0
	for k < len(lt.segs)-1 && lt.segs[k].complete && lt.segs[k].at.Before(cut) {
		k++
	}
	if k > 0 {
		clear(lt.segs[:k])
		lt.segs = lt.segs[k:]
	}
}

func (c *Channel) deliverAll(events []Event) {
	for _, ev := range events {
		c.deliver(ev)
	}
}

func (c *Channel) archiveAll(trackID string, done []*entry) {
	if c.archive == nil || len(done) == 0 {
		return
	}
	lt, err := c.track(trackID)
	if err != nil {
		return
	}
	c.mu.Lock()
	ts := lt.track.Timescale
	c.mu.Unlock()
	for _, e := range done {
		c.archive.offer(trackID, ts, &e.seg)
	}
}

// ---- the readers' side ----

// find returns the entry of segment n, or nil.
func (lt *liveTrack) find(n uint64) *entry {
	i := sort.Search(len(lt.segs), func(i int) bool { return lt.segs[i].seg.Number >= n })
	if i < len(lt.segs) && lt.segs[i].seg.Number == n {
		return lt.segs[i]
	}
	return nil
}

// Init returns a track's init segment: ErrNotYet before a source set it.
func (c *Channel) Init(trackID string) ([]byte, error) {
	lt, err := c.track(trackID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if lt.init == nil {
		return nil, fmt.Errorf("channel %q track %q has no init segment yet (no encoder connected?): %w", c.name, trackID, media.ErrNotYet)
	}
	return lt.init, nil
}

// windowLocked lists the complete segments of lt available at now, oldest first:
// those that completed by now and whose completion lies within the DVR window, and
// always the newest.
func (c *Channel) windowLocked(lt *liveTrack, now time.Time) []*entry {
	hi := len(lt.segs)
	for hi > 0 && (!lt.segs[hi-1].complete || lt.segs[hi-1].at.After(now)) {
		hi--
	}
	if hi == 0 {
		return nil
	}
	cut := now.Add(-c.timeline.TimeShiftBufferDepth)
	lo := hi - 1
	for lo > 0 && lt.segs[lo-1].complete && lt.segs[lo-1].at.After(cut) {
		lo--
	}
	return lt.segs[lo:hi]
}

// Segment returns segment n of a track, complete and available at now (pass c.Now()
// unless a request pins the clock): ErrNotYet before, ErrGone once it left the DVR
// window.
func (c *Channel) Segment(trackID string, n uint64, now time.Time) (*media.Segment, error) {
	lt, err := c.track(trackID)
	if err != nil {
		return nil, err
	}
	if c.od != nil {
		return c.onDemand(lt, n, now)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.windowLocked(lt, now)
	switch {
	case len(w) == 0 || n > w[len(w)-1].seg.Number:
		return nil, fmt.Errorf("channel %q track %q segment %d is not available yet: %w", c.name, trackID, n, media.ErrNotYet)
	case n < w[0].seg.Number:
		return nil, fmt.Errorf("channel %q track %q segment %d left the %s DVR window: %w", c.name, trackID, n, c.timeline.TimeShiftBufferDepth, media.ErrGone)
	}
	i := sort.Search(len(w), func(i int) bool { return w[i].seg.Number >= n })
	if w[i].seg.Number != n {
		return nil, fmt.Errorf("channel %q track %q has no segment %d (the encoder skipped it): %w", c.name, trackID, n, media.ErrNotFound)
	}
	return &w[i].seg, nil
}

// onDemand answers by the on-demand source's schedule, from the store when the
// segment is there and made (and kept, when due by the real clock) when not.
func (c *Channel) onDemand(lt *liveTrack, n uint64, now time.Time) (*media.Segment, error) {
	first, last, ok := c.od.Window(now)
	switch {
	case !ok || n > last:
		return nil, fmt.Errorf("channel %q segment %d is available at %s: %w", c.name, n, c.od.AvailableAt(n).UTC().Format(time.RFC3339Nano), media.ErrNotYet)
	case n < first:
		return nil, fmt.Errorf("channel %q segment %d left the %s DVR window: %w", c.name, n, c.timeline.TimeShiftBufferDepth, media.ErrGone)
	}
	c.mu.Lock()
	if e := lt.find(n); e != nil && e.complete {
		c.mu.Unlock()
		return &e.seg, nil
	}
	c.mu.Unlock()
	s, err := c.od.Segment(lt.track.ID, n)
	if err != nil {
		return nil, fmt.Errorf("channel %q track %q segment %d: %w", c.name, lt.track.ID, n, err)
	}
	return c.keepMade(lt, s), nil
}

// keepMade stores a segment made on demand when the real clock says it is due and
// within the window (a pinned clock in a test cannot grow memory), and returns the
// stored copy: when two readers make the same segment, both share one.
func (c *Channel) keepMade(lt *liveTrack, s *media.Segment) *media.Segment {
	realNow := c.now()
	first, last, ok := c.od.Window(realNow)
	if !ok || s.Number < first || s.Number > last {
		return s
	}
	c.mu.Lock()
	if e := lt.find(s.Number); e != nil {
		if e.complete {
			c.mu.Unlock()
			return &e.seg
		}
		// A paced source is part-way through it: complete it with the made chunks
		// (the same bytes), announcing nothing — the source will.
		e.seg = media.Segment{SegmentRef: s.SegmentRef, Chunks: s.Chunks}
		c.completeLocked(lt, e)
		c.mu.Unlock()
		c.archiveAll(lt.track.ID, []*entry{e})
		return &e.seg
	}
	i := sort.Search(len(lt.segs), func(i int) bool { return lt.segs[i].seg.Number >= s.Number })
	e := &entry{seg: *s}
	lt.segs = append(lt.segs, nil)
	copy(lt.segs[i+1:], lt.segs[i:])
	lt.segs[i] = e
	c.completeLocked(lt, e)
	c.pruneLocked(lt)
	c.mu.Unlock()
	c.archiveAll(lt.track.ID, []*entry{e})
	return &e.seg
}

// SegmentAt returns the segment of a track that starts at media time start ($Time$).
func (c *Channel) SegmentAt(trackID string, start uint64, now time.Time) (*media.Segment, error) {
	if _, err := c.track(trackID); err != nil {
		return nil, err
	}
	n, ok := c.NumberAt(trackID, start)
	if !ok {
		return nil, fmt.Errorf("channel %q track %q has no segment at time %d: %w", c.name, trackID, start, media.ErrNotFound)
	}
	s, err := c.Segment(trackID, n, now)
	if err != nil {
		return nil, err
	}
	if s.Start != start {
		return nil, fmt.Errorf("channel %q track %q has no segment at time %d: %w", c.name, trackID, start, media.ErrNotFound)
	}
	return s, nil
}

// Partial returns segment n of a track as stored now, complete or still in progress
// (its chunks so far), for readers that follow the live edge chunk by chunk.
// ErrNotYet when nothing of it is stored.
func (c *Channel) Partial(trackID string, n uint64) (seg *media.Segment, complete bool, err error) {
	lt, err := c.track(trackID)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := lt.find(n)
	if e == nil || len(e.seg.Chunks) == 0 {
		return nil, false, fmt.Errorf("channel %q track %q segment %d is not here yet: %w", c.name, trackID, n, media.ErrNotYet)
	}
	if e.complete {
		return &e.seg, true, nil
	}
	s := e.seg // a copy of the slice header: the chunks so far
	return &s, false, nil
}

// Window lists each track's segments available at now, oldest first, for manifests.
// Start times and durations are the stored segments' own.
func (c *Channel) Window(now time.Time) (map[string][]media.SegmentRef, error) {
	out := map[string][]media.SegmentRef{}
	if c.od != nil {
		first, last, ok := c.od.Window(now)
		if !ok {
			return out, nil
		}
		for _, t := range c.Info().Tracks {
			refs := make([]media.SegmentRef, 0, last-first+1)
			for n := first; n <= last; n++ {
				s, err := c.Segment(t.ID, n, now)
				if err != nil {
					return nil, err
				}
				refs = append(refs, s.SegmentRef)
			}
			out[t.ID] = refs
		}
		return out, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.Info().Tracks {
		w := c.windowLocked(c.tracks[t.ID], now)
		refs := make([]media.SegmentRef, len(w))
		for i, e := range w {
			refs[i] = e.seg.SegmentRef
		}
		out[t.ID] = refs
	}
	return out, nil
}

// Latest returns the newest segment number complete in every track at now; ok is
// false before there is one.
func (c *Channel) Latest(now time.Time) (n uint64, ok bool) {
	if c.od != nil {
		_, last, ok := c.od.Window(now)
		return last, ok
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tracks := c.Info().Tracks
	for i, t := range tracks {
		w := c.windowLocked(c.tracks[t.ID], now)
		if len(w) == 0 {
			return 0, false
		}
		if l := w[len(w)-1].seg.Number; i == 0 || l < n {
			n = l
		}
	}
	return n, len(tracks) > 0
}

// Newest is the number of the newest segment of a track that its source has begun,
// complete or in progress; ok is false when none is stored. A reader that joins
// before any segment completed (an encoder's or a relay's first) starts there.
func (c *Channel) Newest(trackID string) (n uint64, ok bool) {
	lt, err := c.track(trackID)
	if err != nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := len(lt.segs); k > 0 {
		return lt.segs[k-1].seg.Number, true
	}
	return 0, false
}

// AvailableAt is when segment n of a track completed (zero when it is not stored):
// a looped channel's schedule time, an ingested one's arrival.
func (c *Channel) AvailableAt(trackID string, n uint64) time.Time {
	if c.od != nil {
		return c.od.AvailableAt(n)
	}
	lt, err := c.track(trackID)
	if err != nil {
		return time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := lt.find(n); e != nil && e.complete {
		return e.at
	}
	return time.Time{}
}

// Await waits until segment n of a track is available and returns it, or until it
// can never be (ErrGone, ErrNotFound, the channel ended) or ctx ends.
func (c *Channel) Await(ctx context.Context, trackID string, n uint64) (*media.Segment, error) {
	for {
		c.mu.Lock()
		changed, ended := c.changed, c.ended
		c.mu.Unlock()
		s, err := c.Segment(trackID, n, c.now())
		if err == nil || !isNotYet(err) {
			return s, err
		}
		if ended {
			return nil, fmt.Errorf("channel %q ended before segment %d: %w", c.name, n, media.ErrNotFound)
		}
		var due <-chan time.Time
		var timer *time.Timer
		if c.od != nil {
			// No paced source may be running: wake when the schedule says so.
			timer = time.NewTimer(max(c.od.AvailableAt(n).Sub(c.now()), time.Millisecond))
			due = timer.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func isNotYet(err error) bool { return errors.Is(err, media.ErrNotYet) }
