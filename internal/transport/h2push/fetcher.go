package h2push

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/player"
	"github.com/streambed/streambed/internal/player/dash"
	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/transport/h2push/pushclient"
)

// FetcherOptions configure a Fetcher.
type FetcherOptions struct {
	Client pushclient.Options
	// Strategy is sent as ?push=STRATEGY with every request, so the origin uses it for
	// the session (and again on a new connection); "" leaves the choice to the origin.
	Strategy string
	// Ahead is how far ahead of real-time playback complete pushes are handed to the
	// player unasked (default 20 s); later ones wait in the cache. The player keeps at
	// most 64 deliveries, so a transport must not flood it.
	Ahead time.Duration
	// StatsFile, when set, gets one JSON line of pushclient.Stats when the fetcher closes
	// (the lab reads pushes and unclaimed bytes from it).
	StatsFile string
	Name      string // for the stats line
}

// Fetcher is the player's transport over pushclient.Client: player.Fetcher, player.Receiver,
// player.WireCounter and player.Protocoler.
//
// Before each media request it cancels the pushes the player will not use (other
// renditions of the same kind from that segment on, and segments behind it), then
// claims a push of the URL if one was promised (complete or still arriving) and only
// otherwise sends a request. Complete pushes are also delivered unasked, paced to
// playback. A claimed push comes back with Response.Pushed set.
type Fetcher struct {
	chunks chunkScans // chunk reports for the player (chunks.go)
	c      *pushclient.Client
	opts   FetcherOptions
	dl     chan player.Delivery
	stop   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	kinds    map[string]media.Kind // representation ID → kind, from the MPD
	segDur   time.Duration
	paceAt   time.Time             // when the first media segment arrived
	paceBase map[media.Kind]uint64 // its number, per kind
	held     []*pushclient.Stream
	used     []useEntry       // media segments the player got, in order
	inits    map[string]int64 // pushed init segments by representation: their bytes
	wasted   int64
	// Claims answered by Fetch from pushes: the player counted them as requests.
	claims, claimsMedia, claimsRegiven int
	regivenBytes, regivenMediaBytes    int64 // bodies the player got twice: delivered, then claimed
}

type useEntry struct {
	track  string
	number uint64
	url    string
	bytes  int64
	pushed bool
}

var (
	_ player.Fetcher     = (*Fetcher)(nil)
	_ player.Receiver    = (*Fetcher)(nil)
	_ player.WireCounter = (*Fetcher)(nil)
	_ player.Protocoler  = (*Fetcher)(nil)
)

// NewFetcher builds a player transport.
func NewFetcher(o FetcherOptions) (*Fetcher, error) {
	if o.Strategy != "" {
		st, err := ParseStrategy(o.Strategy)
		if err != nil {
			return nil, err
		}
		o.Strategy = st.String()
		o.Client.Query = "push=" + o.Strategy
	}
	if o.Ahead <= 0 {
		o.Ahead = 20 * time.Second
	}
	f := &Fetcher{opts: o, dl: make(chan player.Delivery, 48), stop: make(chan struct{}),
		kinds: map[string]media.Kind{}, paceBase: map[media.Kind]uint64{}, inits: map[string]int64{}}
	o.Client.OnPush = f.onPush
	o.Client.OnData = f.onData
	f.c = pushclient.New(o.Client)
	f.wg.Add(1)
	go f.pacer()
	return f, nil
}

// Client is the underlying HTTP/2 client.
func (f *Fetcher) Client() *pushclient.Client { return f.c }

// Deliveries implements player.Receiver.
func (f *Fetcher) Deliveries() <-chan player.Delivery { return f.dl }

// WireBytes implements player.WireCounter.
func (f *Fetcher) WireBytes() (read, written int64) { return f.c.WireBytes() }

// Protocol implements player.Protocoler.
func (f *Fetcher) Protocol() string { return "HTTP/2.0" }

// Stats are the client's counters, with delivered pushes the player superseded
// (another rendition of the same segment used later) counted as unclaimed.
func (f *Fetcher) Stats() pushclient.Stats {
	st := f.c.Stats()
	f.mu.Lock()
	defer f.mu.Unlock()
	st.UnclaimedBytes += f.wasted + f.supersededLocked()
	return st
}

// supersededLocked is the bytes of pushes the player got but did not play: segments
// of which it used another rendition (per segment number and kind, the last one
// handed over or fetched is the one played), and init segments of renditions it
// played nothing of.
func (f *Fetcher) supersededLocked() int64 {
	type key struct {
		kind   media.Kind
		number uint64
	}
	last := map[key]useEntry{}
	for _, e := range f.used {
		last[key{f.kinds[e.track], e.number}] = e
	}
	var n int64
	played := map[string]bool{}
	for _, e := range last {
		played[e.track] = true
	}
	seen := map[string]bool{}
	for _, e := range f.used {
		if l := last[key{f.kinds[e.track], e.number}]; e.pushed && e.url != l.url && !seen[e.url] {
			seen[e.url] = true
			n += e.bytes
		}
	}
	for track, b := range f.inits {
		if !played[track] {
			n += b
		}
	}
	return n
}

// AddToReport corrects the player's counts: a request answered from a push never
// went on the wire, so it counts as pushed, not as a request; and a push the player
// claimed while its delivery was still queued for it counts once, bytes included.
func (f *Fetcher) AddToReport(rep *qoe.Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rep.Requests -= f.claims
	rep.MediaRequests -= f.claimsMedia
	rep.Pushed += f.claims - f.claimsRegiven
	rep.PayloadBytes -= f.regivenBytes
	rep.MediaBytes -= f.regivenMediaBytes
	if rep.WireBytes > 0 {
		rep.OverheadBytes = max(rep.WireBytes-rep.PayloadBytes, 0)
	}
	if rep.LinkUtilisation != nil && rep.LinkRateKbps != nil && rep.SessionS > 0 {
		u := math.Round(float64(rep.MediaBytes)*8/rep.SessionS/(*rep.LinkRateKbps*1000)*1000) / 1000
		rep.LinkUtilisation = &u
	}
}

// Close stops deliveries, closes the connections and writes the stats line.
func (f *Fetcher) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.stop)
	f.mu.Unlock()
	f.wg.Wait()
	err := f.c.Close()
	st := f.Stats()
	f.mu.Lock()
	close(f.dl)
	f.mu.Unlock()
	if f.opts.StatsFile != "" {
		line, _ := json.Marshal(struct {
			Name     string `json:"transport"`
			Strategy string `json:"strategy"`
			At       string `json:"at"`
			pushclient.Stats
		}{f.opts.Name, f.opts.Strategy, time.Now().UTC().Format(time.RFC3339Nano), st})
		if fh, ferr := os.OpenFile(f.opts.StatsFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); ferr == nil {
			_, _ = fh.Write(append(line, '\n'))
			fh.Close()
		}
	}
	return err
}

// Fetch implements player.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", req.URL, err, media.ErrBadRequest)
	}
	if req.Kind == player.RequestMedia {
		f.cancelUnwanted(req)
	}
	s, err := f.c.Get(ctx, pushclient.CanonURL(u))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	if s.Status != http.StatusOK {
		return nil, statusError(req.URL, s.Status)
	}
	if s.Pushed {
		f.mu.Lock()
		f.claims++
		if req.Kind == player.RequestMedia {
			f.claimsMedia++
		}
		if s.Regiven {
			f.claimsRegiven++
			f.regivenBytes += int64(len(s.Body))
			if req.Kind == player.RequestMedia || req.Kind == player.RequestInit {
				f.regivenMediaBytes += int64(len(s.Body))
			}
		}
		f.mu.Unlock()
	}
	resp := toResponse(s)
	if req.Chunks {
		resp.Busy = s.Busy() // a low-latency response that came as it was made
	}
	if req.KeepBody {
		resp.Body = s.Body
	}
	if req.Kind == player.RequestManifest {
		f.learn(req.URL, s.Body)
	}
	switch {
	case req.Kind == player.RequestMedia:
		f.note(req.TrackID, req.Number, s, false)
	case req.Kind == player.RequestInit && s.Pushed:
		f.mu.Lock()
		f.inits[req.TrackID] = s.Len()
		f.mu.Unlock()
	}
	return resp, nil
}

func toResponse(s *pushclient.Stream) *player.Response {
	frames := s.Frames
	if !s.Pushed {
		frames++ // our HEADERS
	}
	return &player.Response{
		Body: s.Body, PayloadBytes: int64(len(s.Body)), OverheadBytes: s.HeaderBytes + 9*frames,
		Start: s.Start, FirstByte: s.FirstByte, End: s.End, Protocol: "HTTP/2.0", Pushed: s.Pushed,
	}
}

func statusError(u string, status int) error {
	if kind := media.KindOfStatus(status); kind != nil {
		return fmt.Errorf("GET %s: HTTP %d: %w", u, status, kind)
	}
	return fmt.Errorf("GET %s: HTTP %d", u, status)
}

// learn reads the representations' kinds and the segment duration from an MPD.
func (f *Fetcher) learn(u string, body []byte) {
	if len(body) == 0 || !strings.Contains(string(body[:min(len(body), 512)]), "<MPD") {
		return
	}
	m, err := dash.Parse(body, u, time.Now())
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, set := range m.Sets {
		for _, r := range set.Representations {
			f.kinds[r.ID] = set.Kind
			if f.segDur == 0 && r.Index != nil {
				f.segDur = r.Index.NominalDuration()
			}
		}
	}
}

// note records which rendition of a segment number the player got.
func (f *Fetcher) note(track string, number uint64, s *pushclient.Stream, delivered bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noteLocked(track, number, s, delivered)
}

func (f *Fetcher) noteLocked(track string, number uint64, s *pushclient.Stream, delivered bool) {
	if k, ok := f.kinds[track]; ok {
		f.startPaceLocked(k, number)
	}
	if len(f.used) < 1<<20 {
		f.used = append(f.used, useEntry{track: track, number: number, url: s.URL, bytes: s.Len(), pushed: s.Pushed || delivered})
	}
}

// startPaceLocked starts the playback clock that paces deliveries at the first media
// segment seen (fetched or pushed), per kind at its number.
func (f *Fetcher) startPaceLocked(k media.Kind, number uint64) {
	if f.paceAt.IsZero() {
		f.paceAt = time.Now()
	}
	if _, ok := f.paceBase[k]; !ok {
		f.paceBase[k] = number
	}
}

// cancelUnwanted resets the in-flight pushes the player will not use once it asks for
// req: other renditions of the same kind from req's segment on (it switched), and
// segments of that kind before req's (it moved past them).
func (f *Fetcher) cancelUnwanted(req player.SegmentRequest) {
	f.mu.Lock()
	kind, ok := f.kinds[req.TrackID]
	kinds := f.kinds
	f.mu.Unlock()
	if !ok {
		return
	}
	for _, s := range f.c.Pending() {
		res := pushedResource(s.URL)
		if res.Kind != layout.KindSegment || res.ByTime {
			continue
		}
		f.mu.Lock()
		k, known := kinds[res.Track]
		f.mu.Unlock()
		if !known || k != kind {
			continue
		}
		if (res.Track != req.TrackID && res.Number >= req.Number) || res.Number < req.Number {
			f.c.Cancel(s.URL)
		}
	}
}

func pushedResource(u string) layout.Resource {
	pu, err := url.Parse(u)
	if err != nil {
		return layout.Resource{}
	}
	return layout.Parse(pu.Path)
}

// onPush is the client's hook for a complete unclaimed push: deliver it now if it is
// within the pacing window, else hold it for the pacer.
func (f *Fetcher) onPush(s *pushclient.Stream) bool {
	if s.Status != http.StatusOK {
		return false
	}
	res := pushedResource(s.URL)
	if res.Kind != layout.KindInit && res.Kind != layout.KindSegment {
		return false // manifests and page assets wait to be claimed
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if res.Kind == layout.KindSegment && !f.dueLocked(res) {
		f.held = append(f.held, s)
		return false
	}
	// Give before delivering: a request claiming it at the same moment then sees it
	// as given (Regiven) and the push is counted once, not twice.
	if !f.c.Give(s) {
		return false
	}
	if !f.deliverLocked(s, res) {
		f.c.Ungive(s)
		return false
	}
	return true
}

// dueLocked says whether a pushed segment is within Ahead of real-time playback.
func (f *Fetcher) dueLocked(res layout.Resource) bool {
	k, ok := f.kinds[res.Track]
	if !ok || f.segDur <= 0 || res.ByTime {
		return true // nothing to pace by
	}
	f.startPaceLocked(k, res.Number)
	limit := f.paceBase[k] + uint64((time.Since(f.paceAt)+f.opts.Ahead)/f.segDur)
	return res.Number <= limit
}

// deliverLocked hands s to the player (non-blocking); false leaves it in the cache.
func (f *Fetcher) deliverLocked(s *pushclient.Stream, res layout.Resource) bool {
	kind := player.RequestMedia
	if res.Kind == layout.KindInit {
		kind = player.RequestInit
	}
	// TrackID and Number stay empty: the player matches by URL, so a push of a
	// rendition it did not choose is not taken for the one it did.
	d := player.Delivery{Request: player.SegmentRequest{Kind: kind, URL: s.URL}, Response: toResponse(s)}
	select {
	case f.dl <- d:
	default:
		return false
	}
	if res.Kind == layout.KindSegment {
		f.noteLocked(res.Track, res.Number, s, true)
	} else {
		f.inits[res.Track] = s.Len()
	}
	return true
}

// pacer releases held pushes as playback advances.
func (f *Fetcher) pacer() {
	defer f.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		keep := f.held[:0]
		var due []*pushclient.Stream
		for _, s := range f.held {
			if f.dueLocked(pushedResource(s.URL)) {
				due = append(due, s)
			} else {
				keep = append(keep, s)
			}
		}
		f.held = keep
		for _, s := range due {
			// Give first: a request may have claimed it since it was held.
			if !f.c.Give(s) {
				continue
			}
			if !f.deliverLocked(s, pushedResource(s.URL)) {
				f.c.Ungive(s)
				f.held = append(f.held, s) // the player is behind: try again later
			}
		}
		f.mu.Unlock()
	}
}
