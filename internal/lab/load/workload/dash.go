package workload

import (
	"errors"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/abr"
	"github.com/streambed/streambed/internal/player/dash"
)

// dashSession is the state of one DASH worker: the MPD it has, the two
// representations it fetches and the position of the next segment on the MPD
// timeline (positions carry across reloads and across Periods).
type dashSession struct {
	*worker
	mpd     *player.Manifest
	loaded  time.Time // when the MPD was last requested
	video   *player.Representation
	audio   *player.Representation
	inits   map[string]bool // init URLs fetched
	pos     time.Duration
	rule    abr.Rule
	est     abr.Estimator
	current int        // abr: index of the video rung in use, -1 before the first
	mu      sync.Mutex // guards inits between a segment's two parallel fetches
	shifted bool       // counted as a time-shifted session
}

var errNoMPD = errors.New("no MPD could be loaded")

func (w *worker) runDASH() error {
	s := &dashSession{worker: w, inits: map[string]bool{}, current: -1}
	if w.o.Mode == ModeABR {
		s.rule, _ = abr.Parse(w.o.ABR)
	}
	// The first MPD: a session that never gets one has failed.
	for !s.load() {
		if !w.wait(time.Now().Add(backoff)) {
			return errNoMPD
		}
	}
	for !w.stopped() {
		now := time.Now()
		if every := s.reloadEvery(); every > 0 && !now.Before(s.loaded.Add(every)) {
			s.reload()
			continue
		}
		if s.lead() == nil {
			s.retry()
			continue
		}
		if s.pos < 0 { // start at the newest available segment, or behind it
			last, ok := s.lead().Index.Last(now)
			if !ok {
				s.waitForSegment(now)
				continue
			}
			s.pos = s.startAt(last, now)
		}
		seg, ok := s.lead().Index.Next(s.pos)
		if !ok {
			// Out of listed segments (a SegmentTimeline at the live edge, or the end of
			// a Period): reload when the next one should be out, not before.
			s.waitForSegment(now)
			continue
		}
		if !seg.AvailableAt.IsZero() && now.Before(seg.AvailableAt) {
			until := seg.AvailableAt
			if every := s.reloadEvery(); every > 0 && s.loaded.Add(every).Before(until) {
				until = s.loaded.Add(every)
			}
			w.wait(until)
			continue
		}
		if s.tooFarBehind(seg, now) {
			s.pos = -1 // a player that fell far behind the live edge jumps back to it
			s.rec.Count(func(ss *Sessions) { ss.Jumps++ })
			continue
		}
		s.fetchSegment(seg)
		s.pos = seg.End()
	}
	return nil
}

// startAt is where a session starts: the newest segment, or for a time-shifted
// session the segment its offset behind that, kept inside the DVR window (a
// channel younger than the offset starts at its oldest segment still listed).
func (s *dashSession) startAt(last player.Segment, now time.Time) time.Duration {
	if s.shift <= 0 {
		return last.Start
	}
	pos := last.Start - s.shift
	if tsb := s.mpd.TimeShiftBufferDepth; tsb > 0 {
		// The oldest segment wholly inside the window: starts at or after now − tsb.
		d := s.lead().Index.NominalDuration()
		pos = max(pos, now.Sub(s.mpd.AvailabilityStart)-tsb+d)
	}
	if first, ok := s.lead().Index.First(); ok {
		pos = max(pos, first.Start)
	}
	pos = min(pos, last.Start)
	if !s.shifted && pos < last.Start {
		s.shifted = true
		s.rec.Count(func(ss *Sessions) { ss.TimeShifted++ })
	}
	return pos
}

// lead is the representation whose segments pace the worker: the video, or the
// audio of an audio-only MPD.
func (s *dashSession) lead() *player.Representation {
	if s.video != nil {
		return s.video
	}
	return s.audio
}

// reloadEvery is the MPD reload interval: --manifest-every, else minimumUpdatePeriod.
func (s *dashSession) reloadEvery() time.Duration {
	if s.o.ManifestEvery > 0 {
		return s.o.ManifestEvery
	}
	if s.mpd == nil {
		return 0
	}
	return s.mpd.MinimumUpdatePeriod
}

// waitForSegment waits until the segment after pos should be available, at least a
// quarter segment after the last MPD request, then reloads the MPD.
func (s *dashSession) waitForSegment(now time.Time) {
	d := time.Second
	if r := s.lead(); r != nil {
		d = max(r.Index.NominalDuration(), 100*time.Millisecond)
	}
	at := s.loaded.Add(d / 4)
	if s.mpd != nil && s.pos >= 0 {
		at = latest(at, s.mpd.AvailabilityStart.Add(s.pos+d))
	}
	if every := s.reloadEvery(); every > 0 && s.loaded.Add(every).Before(at) {
		at = s.loaded.Add(every) // the regular reload comes first
	}
	if at.After(now) && !s.wait(at) {
		return
	}
	s.reload()
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (s *dashSession) retry() {
	if s.wait(s.loaded.Add(backoff)) {
		s.reload()
	}
}

func (s *dashSession) reload() { s.load() }

// load requests and parses the MPD and picks the representations; false if it failed.
func (s *dashSession) load() bool {
	s.loaded = time.Now()
	body, _, _, err := s.get(KindManifest, s.o.URL, true)
	if err != nil {
		return false
	}
	m, err := dash.Parse(body, s.o.URL, time.Now())
	if err == nil {
		err = m.Validate()
	}
	if err != nil || !m.Live {
		s.rec.Problem("invalid manifest")
		return false
	}
	first := s.mpd == nil
	s.mpd = m
	s.audio = pickAudio(m, s.o.Audio)
	s.video = s.pickVideo(m)
	if first {
		s.pos = -1
	}
	return s.lead() != nil
}

// pickAudio is the track named, else the 128 kbit/s audio track, else the highest.
func pickAudio(m *player.Manifest, id string) *player.Representation {
	if id != "" {
		if _, r := m.Representation(id); r != nil {
			return r
		}
	}
	set := m.Set(media.Audio)
	if set == nil {
		return nil
	}
	// "128k" as declared: the nearest within 15% (a128 of our ladder declares its
	// measured peak, 133 kbit/s).
	var best *player.Representation
	for _, r := range set.Representations {
		if d := abs(r.Bandwidth - 128000); d <= 19200 && (best == nil || d < abs(best.Bandwidth-128000)) {
			best = r
		}
	}
	if best != nil {
		return best
	}
	return set.Representations[len(set.Representations)-1]
}

// pickVideo is the track named, else the top rung; in abr mode the rung in use (the
// rule chooses per segment).
func (s *dashSession) pickVideo(m *player.Manifest) *player.Representation {
	if s.o.Video != "" {
		if _, r := m.Representation(s.o.Video); r != nil {
			return r
		}
	}
	set := m.Set(media.Video)
	if set == nil {
		return nil
	}
	rs := set.Representations
	if s.rule != nil {
		if s.current >= 0 && s.current < len(rs) {
			return rs[s.current]
		}
		return rs[0]
	}
	return rs[len(rs)-1]
}

// chooseVideo applies the ABR rule before a segment.
func (s *dashSession) chooseVideo() {
	set := s.mpd.Set(media.Video)
	if s.rule == nil || set == nil || s.video == nil {
		return
	}
	st := abr.State{Current: s.current, Throughput: s.est.Estimate(), Live: true,
		SegmentDuration: s.video.Index.NominalDuration()}
	for _, r := range set.Representations {
		st.Renditions = append(st.Renditions, abr.Rendition{ID: r.ID, Bandwidth: r.Bandwidth})
	}
	// A live player plays the presentation delay behind the edge: what it has fetched
	// beyond that playhead is its buffer.
	delay := s.mpd.SuggestedPresentationDelay
	if delay <= 0 {
		delay = 3 * st.SegmentDuration
	}
	st.BufferTarget = delay
	playhead := time.Since(s.mpd.AvailabilityStart) - delay
	st.Buffer = max(0, s.pos-playhead)
	i := s.rule.Choose(st)
	if i < 0 || i >= len(set.Representations) {
		i = 0
	}
	if s.current >= 0 && i != s.current {
		s.rec.Count(func(ss *Sessions) { ss.Switches++ })
	}
	s.current = i
	s.video = set.Representations[i]
}

// fetchSegment fetches the audio and video of the segment at seg (the video's), each
// after its init segment when that is new, audio and video in parallel.
func (s *dashSession) fetchSegment(seg player.Segment) {
	s.chooseVideo()
	if s.rule != nil && s.video != nil {
		if vs, ok := s.video.Index.Next(s.pos); ok {
			seg = vs
		}
	}
	var wg sync.WaitGroup
	fetch := func(r *player.Representation, k Kind, u string) {
		defer wg.Done()
		if r.InitURL != "" && !s.initFetched(r.InitURL) {
			if _, _, _, err := s.get(KindInit, r.InitURL, false); err == nil {
				s.markInit(r.InitURL)
			}
		}
		_, n, d, err := s.get(k, u, false)
		if err == nil && k == KindVideo && s.rule != nil {
			s.estAdd(n, d)
		}
	}
	if s.video != nil {
		wg.Add(1)
		go fetch(s.video, KindVideo, seg.URL)
	}
	if s.audio != nil {
		if as, ok := s.audio.Index.Next(s.pos); ok {
			wg.Add(1)
			go fetch(s.audio, KindAudio, as.URL)
		}
	}
	wg.Wait()
}

func (s *dashSession) initFetched(u string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inits[u]
}

func (s *dashSession) markInit(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inits[u] = true
}

func (s *dashSession) estAdd(n int64, d time.Duration) { s.est.Add(n, d) }

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// tooFarBehind reports whether seg has been out for longer than the player's live
// delay (suggestedPresentationDelay, else three segments): a worker that fell that
// far behind (a stalled load host) jumps to the newest segment, as live players do,
// rather than fetching the backlog in a burst.
func (s *dashSession) tooFarBehind(seg player.Segment, now time.Time) bool {
	if seg.AvailableAt.IsZero() {
		return false
	}
	delay := s.mpd.SuggestedPresentationDelay
	if delay <= 0 {
		delay = 3 * s.lead().Index.NominalDuration()
	}
	return now.Sub(seg.AvailableAt) > delay+s.shift // a time-shifted session is behind by choice
}
