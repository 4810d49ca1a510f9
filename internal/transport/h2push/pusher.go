package h2push

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/streambed/streambed/internal/httperr"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/layout"
	"github.com/streambed/streambed/internal/media"
)

// HeaderPush marks a promised request (it travels in the PUSH_PROMISE), so the
// middleware knows to schedule it rather than push from it. Its value is the
// strategy that promised it.
const HeaderPush = "X-Streambed-Push"

// Config is the `h2push:` section of the server configuration.
type Config struct {
	// Default is the strategy of every stream without a rule (default: none).
	Default Strategy `yaml:"default" json:"default"`
	// Rules is the push rules file the admin page writes (default:
	// DATA_DIR/h2push/rules.json).
	Rules string `yaml:"rules" json:"rules"`
	// AdminToken protects /admin/push and its API (Authorization: Bearer TOKEN, or
	// ?token= for the page). Empty: the admin page answers 401 to everyone.
	AdminToken string `yaml:"admin_token" json:"-"`
	// NoEarlyHints turns off 103 Early Hints on the player page.
	NoEarlyHints bool `yaml:"no_early_hints" json:"no_early_hints"`
	// MaxActive is how many promised responses a connection sends at once (default 1:
	// one after the other, earliest media time first).
	MaxActive int `yaml:"max_active" json:"max_active"`
}

// Options configure New.
type Options struct {
	Hub    *hub.Hub
	Config Config
	// RulesPath is the rules file (overrides Config.Rules); "" keeps rules in memory.
	RulesPath string
	// PageFS holds the player page (index.html and what it links); nil: no page.
	PageFS fs.FS
	Log    *slog.Logger
}

// Stats count what the server side did since it started.
type Stats struct {
	Promised  int64 `json:"promised"`   // PUSH_PROMISEs sent
	Refused   int64 `json:"refused"`    // pushes not sent: the client disabled push
	Limited   int64 `json:"limited"`    // pushes not sent: the client's stream limit
	Completed int64 `json:"completed"`  // promised responses sent in full
	Cancelled int64 `json:"cancelled"`  // promised responses the client reset (or left)
	Bytes     int64 `json:"bytes"`      // body bytes of promised responses
	Links     int64 `json:"link_hints"` // Link: rel=preload headers written instead
	Hints     int64 `json:"early_hints"`
}

type stats struct {
	promised, refused, limited, completed, cancelled, bytes, links, hints atomic.Int64
}

// Pusher is the server side: a middleware for the origin's pull routes.
type Pusher struct {
	hub      *hub.Hub
	cfg      Config
	log      *slog.Logger
	page     *pageInfo
	rules    ruleStore
	conns    conns
	sessions sessions
	st       stats
}

// New builds the server side and loads the rules file. Rules that no longer hold
// (an asset was removed) are dropped with a warning rather than stopping the origin.
func New(o Options) (*Pusher, error) {
	if o.Hub == nil {
		return nil, errors.New("h2push: no hub")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Config.Default.Mode == "" {
		o.Config.Default = Strategy{Mode: None}
	}
	p := &Pusher{hub: o.Hub, cfg: o.Config, log: o.Log, page: newPageInfo(o.PageFS)}
	p.conns.maxActive = max(o.Config.MaxActive, 1)
	p.rules.path = o.RulesPath
	rs, err := p.rules.load()
	if err != nil {
		return nil, err
	}
	for target, r := range rs.Targets {
		one := &Rules{Version: 1, Targets: map[string]*Rule{target: r}}
		if err := p.validate(one); err != nil {
			p.log.Warn("push rule dropped", "target", target, "err", err)
			delete(rs.Targets, target)
		}
	}
	p.rules.cur.Store(rs)
	return p, nil
}

// Stats returns the counters.
func (p *Pusher) Stats() Stats {
	return Stats{
		Promised: p.st.promised.Load(), Refused: p.st.refused.Load(), Limited: p.st.limited.Load(),
		Completed: p.st.completed.Load(), Cancelled: p.st.cancelled.Load(), Bytes: p.st.bytes.Load(),
		Links: p.st.links.Load(), Hints: p.st.hints.Load(),
	}
}

// Rules returns the rules in force.
func (p *Pusher) Rules() *Rules { return p.rules.get() }

// SaveRules validates rs, writes it to the rules file and puts it in force.
func (p *Pusher) SaveRules(rs *Rules) error { return p.rules.save(rs, p.validate) }

// Wrap is the middleware: it pushes what the strategy says before answering.
func (p *Pusher) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isWebSocketUpgrade(r) {
			// A WebSocket push viewer's handshake: nothing is pushed from it, and
			// planning cost every viewer's set-up a few per cent.
			next.ServeHTTP(w, r)
			return
		}
		if r.ProtoMajor == 2 && r.Header.Get(HeaderPush) != "" {
			p.servePushed(w, r, next)
			return
		}
		p.serve(w, r, next)
	})
}

// isWebSocketUpgrade says whether r opens a WebSocket (HTTP/1.1 Upgrade: websocket).
func isWebSocketUpgrade(r *http.Request) bool {
	return r.ProtoMajor == 1 && httpguts.HeaderValuesContainsToken(r.Header["Upgrade"], "websocket")
}

// plan is what one request pushes.
type plan struct {
	strategy Strategy
	chosen   bool // by ?push= or by the session: an explicit none also drops rule pushes
	view     *StreamView
	trigger  layout.Resource
	pushes   []Push
	hints    []string // Link values for 103 Early Hints (the page)
}

func (p *Pusher) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	h2 := r.ProtoMajor == 2
	trigger := layout.ParseFor(w, r.URL.Path) // the origin's writer carries it parsed
	var key connKey
	if h2 {
		key = keyOf(r)
		cs := p.conns.get(key)
		defer p.conns.put(key, cs)
		if !p.inProgress(trigger) {
			defer cs.hold()() // the client's requests go before promised responses (live.go)
		}
	}
	if r.Method != http.MethodGet || (!h2 && p.pushesNothingOverH1(r, trigger)) {
		next.ServeHTTP(w, r) // the latter: no plan to make (and none allocated)
		return
	}
	pl, err := p.plan(r, trigger, key, h2)
	if err != nil {
		httperr.Write(w, httperr.WithStatus(http.StatusBadRequest, err))
		return
	}
	if len(pl.hints) > 0 && !p.cfg.NoEarlyHints {
		sendEarlyHints(w, pl.hints)
		p.st.hints.Add(1)
	}
	pushes := pl.pushes
	if h2 && len(pushes) > 0 {
		pushes = p.promise(w, r, key, pl)
	}
	if len(pushes) > 0 {
		p.linkHeaders(w, pushes)
	}
	next.ServeHTTP(w, r)
}

// plan works out the strategy and the push set of a request, whose path parsed is
// trigger.
func (p *Pusher) plan(r *http.Request, trigger layout.Resource, key connKey, h2 bool) (*plan, error) {
	pl := &plan{trigger: trigger}
	if pl.trigger.Kind == layout.KindOther || pl.trigger.Kind == layout.KindPlaylist || pl.trigger.Kind == layout.KindPart {
		return pl, nil // nothing pushes from these, and ?push= is not theirs to judge
	}
	q := r.URL.Query()
	var chosen *Strategy
	if v, ok := q["push"]; ok && len(v) > 0 {
		st, err := ParseStrategy(v[0])
		if err != nil {
			return nil, err
		}
		chosen = &st
	}
	// The stream the request is about: the page's comes from its deep link.
	stream := pl.trigger
	byTime := false
	switch pl.trigger.Kind {
	case layout.KindPage:
		stream = p.pageStream(q)
		byTime = q.Get("mpd") == "timeline"
	case layout.KindManifest:
		byTime = pl.trigger.File == "manifest-timeline.mpd"
	case layout.KindSegment:
		byTime = pl.trigger.ByTime
	}
	if h2 {
		p.sessions.with(key, chosen != nil || pl.trigger.Kind == layout.KindManifest, func(s *session) {
			if s == nil {
				return
			}
			if chosen != nil {
				s.strategy = chosen
			}
			switch pl.trigger.Kind {
			case layout.KindManifest, layout.KindPage:
				s.byTime = byTime
			case layout.KindInit:
				byTime = s.byTime
			}
			if s.strategy != nil {
				chosen = s.strategy
			}
		})
	}
	rules := p.rules.get()
	pl.strategy = p.cfg.Default
	if chosen != nil {
		pl.strategy, pl.chosen = *chosen, true
	} else if rule := rules.ruleFor(stream.StreamKey()); rule != nil && rule.Strategy != nil {
		pl.strategy = *rule.Strategy
	}
	if stream.Stream != "" {
		v, err := p.view(stream, byTime)
		if err == nil {
			pl.view = v
		}
	}
	if pl.view != nil && pl.trigger.Kind == layout.KindSegment {
		if n, ok := p.segmentNumber(pl.trigger); ok {
			pl.trigger.Number = n
		} else {
			return pl, nil // not a segment the origin has: it will answer 404
		}
	}
	pl.pushes = PushSet(pl.strategy, pl.view, pl.trigger)
	explicit := !(pl.chosen && pl.strategy.Mode == None)
	switch pl.trigger.Kind {
	case layout.KindPage:
		var pre []Push
		if pl.strategy.Mode == Init || pl.strategy.Mode == InitFirst || pl.strategy.Mode == All {
			for _, a := range p.page.assets {
				pre = append(pre, Push{Path: a, Kind: layout.KindOther, Prio: -1})
			}
		}
		if explicit {
			if rule := rules.ruleFor(PageTarget); rule != nil {
				pre = append(pre, rulePushes(rule)...)
			}
		}
		pl.pushes = dedupe(append(pre, pl.pushes...))
		pl.hints = p.pageHints(q, pl.view)
	case layout.KindManifest:
		if explicit {
			if rule := rules.ruleFor(stream.StreamKey()); rule != nil {
				pl.pushes = dedupe(append(rulePushes(rule), pl.pushes...))
			}
		}
	}
	return pl, nil
}

// pushesNothingOverH1 says whether an HTTP/1.x GET of a segment or init segment can
// be answered without a plan: it names no strategy (no query), the default pushes
// nothing and no rule gives its stream a strategy, so its Link headers would be
// empty. The plan's query parsing and stream view cost every plain segment GET about
// a microsecond, a fifth of the lean path's own time per request.
func (p *Pusher) pushesNothingOverH1(r *http.Request, trigger layout.Resource) bool {
	if trigger.Kind != layout.KindSegment && trigger.Kind != layout.KindInit {
		return false
	}
	if r.URL.RawQuery != "" || (p.cfg.Default.Mode != None && p.cfg.Default.Mode != "") {
		return false
	}
	rule := p.rules.get().ruleFor(trigger.StreamKey())
	return rule == nil || rule.Strategy == nil
}

func rulePushes(r *Rule) []Push {
	out := make([]Push, 0, len(r.Push))
	for _, path := range r.Push {
		res := layout.Parse(strings.SplitN(path, "?", 2)[0])
		out = append(out, Push{Path: path, Kind: res.Kind, Track: res.Track, Number: res.Number, Prio: -1})
	}
	return out
}

func dedupe(ps []Push) []Push {
	seen := make(map[string]bool, len(ps))
	out := ps[:0]
	for _, x := range ps {
		if !seen[x.Path] {
			seen[x.Path] = true
			out = append(out, x)
		}
	}
	return out
}

// pageStream is the stream of the page's deep link /?stream=NAME&live=0|1: the asset
// unless live=1 (or there is no such asset).
func (p *Pusher) pageStream(q map[string][]string) layout.Resource {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	name := get("stream")
	if !media.ValidName(name) {
		return layout.Resource{}
	}
	live := get("live") == "1"
	if !live {
		if _, err := p.hub.Asset(name); err != nil {
			live = true
		}
	}
	return layout.Resource{Stream: name, Live: live}
}

// view describes the stream of res for PushSet.
func (p *Pusher) view(res layout.Resource, byTime bool) (*StreamView, error) {
	st, err := p.hub.Stream(res.Stream, res.Live)
	if err != nil {
		return nil, err
	}
	v := &StreamView{Base: res.Base(), Info: st.Info(), Live: st.Live(), ByTime: byTime}
	if c, ok := st.(*hub.Channel); ok {
		tl := c.Timeline()
		v.Latest, v.HasLatest = c.Latest(c.Now())
		v.SegmentDuration, v.DVRWindow = tl.SegmentDuration, tl.TimeShiftBufferDepth
	}
	return v, nil
}

// nowOf is the clock a stream is read at: a channel's own (tests pin it).
func nowOf(st hub.Stream) time.Time {
	if c, ok := st.(*hub.Channel); ok {
		return c.Now()
	}
	return time.Now()
}

// segmentNumber resolves the number of a segment request (also one named by time).
func (p *Pusher) segmentNumber(res layout.Resource) (uint64, bool) {
	if !res.ByTime {
		return res.Number, true
	}
	st, err := p.hub.Stream(res.Stream, res.Live)
	if err != nil {
		return 0, false
	}
	ref, err := st.RefAt(res.Track, res.Time, nowOf(st))
	if err != nil {
		return 0, false
	}
	return ref.Number, true
}

// promiseWave is how many PUSH_PROMISEs are in flight at once. Go's HTTP/2 server
// flushes its write queue whenever it runs empty, so promises made one after another
// each left in their own TCP segment: the 21 of the study's standard page used up the
// initial congestion window and delayed the page itself by one round trip
// (docs/results/h2push.md). With several Push calls waiting, the server writes their
// frames together. (Push on one ResponseWriter from several goroutines: net/http's
// HTTP/2 Push only reads the stream and hands a message to the connection's serve
// loop.) Waves keep the earliest resources first when the client's stream limit
// refuses the rest.
const promiseWave = 32

// promise sends the PUSH_PROMISEs of pl not yet sent on this connection. It returns
// what it could not push (the client refuses push, or its stream limit is reached),
// for Link headers instead.
func (p *Pusher) promise(w http.ResponseWriter, r *http.Request, key connKey, pl *plan) []Push {
	pusher, ok := w.(http.Pusher)
	if !ok {
		return pl.pushes
	}
	var todo []Push
	p.sessions.with(key, true, func(s *session) {
		for _, x := range pl.pushes {
			if !s.pushed[x.Path] && len(s.pushed) < maxPushedPerConn {
				s.pushed[x.Path] = true
				todo = append(todo, x)
			}
		}
	})
	for start := 0; start < len(todo); start += promiseWave {
		wave := todo[start:min(start+promiseWave, len(todo))]
		// Each promise holds the connection state until its request arrives, and its
		// number orders promised responses of equal priority (so the order in which
		// the promises themselves go out does not matter).
		states := make([]*connState, len(wave))
		seqs := make([]uint64, len(wave))
		for i := range wave {
			states[i] = p.conns.get(key)
			seqs[i] = states[i].promiseSeq()
		}
		errs := make([]error, len(wave))
		var wg sync.WaitGroup
		for i, x := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				opts := &http.PushOptions{Header: http.Header{HeaderPush: {pl.strategy.String() + ";seq=" + strconv.FormatUint(seqs[i], 10)}}}
				errs[i] = pusher.Push(x.Path, opts)
			}()
		}
		wg.Wait()
		var failed []Push
		var firstErr error
		for i, err := range errs {
			if err == nil {
				p.st.promised.Add(1)
				continue
			}
			states[i].arrive(seqs[i])
			p.conns.put(key, states[i])
			failed = append(failed, wave[i])
			if firstErr == nil {
				firstErr = err
			}
		}
		if len(failed) == 0 {
			continue
		}
		rest := append(failed, todo[start+len(wave):]...)
		p.unmark(key, rest)
		switch {
		case errors.Is(firstErr, http.ErrNotSupported):
			p.st.refused.Add(int64(len(rest)))
			return rest // the client said SETTINGS_ENABLE_PUSH=0
		case strings.Contains(firstErr.Error(), "SETTINGS_MAX_CONCURRENT_STREAMS"):
			p.st.limited.Add(int64(len(rest)))
			p.log.Debug("push limit reached", "path", r.URL.Path, "left", len(rest))
		default:
			p.log.Debug("push failed", "path", failed[0].Path, "err", firstErr)
		}
		return nil
	}
	return nil
}

func (p *Pusher) unmark(key connKey, ps []Push) {
	p.sessions.with(key, false, func(s *session) {
		if s != nil {
			for _, x := range ps {
				delete(s.pushed, x.Path)
			}
		}
	})
}

// maxLinks bounds the Link headers of one response; linksPerLine links share a header
// line (RFC 8288 allows a comma-separated list): h2o's HTTP/1 upstream parser takes
// at most 100 header lines, and "all" names a couple of hundred resources.
const (
	maxLinks     = 256
	linksPerLine = 24
)

// linkHeaders names what would have been pushed as Link: rel=preload, for a proxy in
// front (h2o pushes those) or a client that cannot take pushes.
func (p *Pusher) linkHeaders(w http.ResponseWriter, ps []Push) {
	h := w.Header()
	var line []string
	for i, x := range ps {
		if i == maxLinks {
			break
		}
		line = append(line, preload(x.Path, x.Kind))
		if len(line) == linksPerLine {
			h.Add("Link", strings.Join(line, ", "))
			line = line[:0]
		}
		p.st.links.Add(1)
	}
	if len(line) > 0 {
		h.Add("Link", strings.Join(line, ", "))
	}
}

func preload(path string, k layout.Kind) string {
	as := "fetch"
	switch {
	case strings.HasSuffix(strings.SplitN(path, "?", 2)[0], ".js"):
		as = "script"
	case strings.HasSuffix(strings.SplitN(path, "?", 2)[0], ".css"):
		as = "style"
	}
	if as == "fetch" {
		return "<" + path + ">; rel=preload; as=fetch; crossorigin"
	}
	_ = k
	return "<" + path + ">; rel=preload; as=" + as
}

// pageHints are the player page's Early Hints: its script and style, and for a deep
// link to a stream, the stream's manifest and init segments.
func (p *Pusher) pageHints(q map[string][]string, v *StreamView) []string {
	var out []string
	for _, a := range p.page.assets {
		out = append(out, preload(a, layout.KindOther))
	}
	if v == nil || (len(q["player"]) > 0 && q["player"][0] == "wspush") {
		return out // WebSocket push brings the inits itself and reads no manifest
	}
	file := "manifest.mpd"
	switch {
	case len(q["player"]) > 0 && q["player"][0] == "hlsjs":
		file = "master.m3u8"
	case v.ByTime:
		file = "manifest-timeline.mpd"
	}
	out = append(out, preload(v.Base+file, layout.KindManifest))
	for _, t := range v.Info.Tracks {
		out = append(out, preload(v.Base+t.ID+"/init.mp4", layout.KindInit))
	}
	return out
}

// sendEarlyHints writes 103 Early Hints with Link headers, which stay on the final
// response too. It writes to the innermost ResponseWriter, so wrappers that note the
// status of the response (the origin's metrics) see the final status, not 103.
func sendEarlyHints(w http.ResponseWriter, links []string) {
	h := w.Header()
	for _, l := range links {
		h.Add("Link", l)
	}
	inner := w
	for {
		u, ok := inner.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		inner = u.Unwrap()
	}
	inner.WriteHeader(http.StatusEarlyHints)
}

// servePushed answers a promised request when its turn comes: live segments when
// they are available, then one response at a time per connection, earliest media
// first, pausing while the client's own requests are answered.
func (p *Pusher) servePushed(w http.ResponseWriter, r *http.Request, next http.Handler) {
	ctx := r.Context()
	key := keyOf(r)
	cs := p.conns.get(key)
	defer p.conns.put(key, cs)
	_, seqText, _ := strings.Cut(r.Header.Get(HeaderPush), ";seq=")
	seq, _ := strconv.ParseUint(seqText, 10, 64)
	if cs.arrive(seq) {
		p.conns.put(key, cs) // the reference its promise took
	} else {
		seq = 0
	}
	res := layout.Parse(strings.SplitN(r.URL.Path, "?", 2)[0])
	prio := p.pushPriority(res)
	fail := func() {
		p.st.cancelled.Add(1)
		p.unmark(key, []Push{{Path: r.URL.RequestURI()}})
	}
	inProgress, err := p.awaitLive(ctx, res)
	if err != nil {
		fail()
		return
	}
	if !inProgress { // a segment in progress goes at the source's pace, without a turn (live.go)
		release, err := cs.acquire(ctx, prio, seq)
		if err != nil {
			fail()
			return
		}
		defer release()
	}
	pw := &pushWriter{ResponseWriter: w, ctx: ctx, cs: cs}
	defer func() {
		// A segment in progress that cannot be finished, or whose push the client
		// reset, is aborted by the pull handler (http.ErrAbortHandler): counted, then
		// passed on to net/http.
		if v := recover(); v != nil {
			fail()
			panic(v)
		}
	}()
	next.ServeHTTP(pw, r)
	// Flush before the turn ends: net/http sends what is still buffered only after
	// the handler returns, and the next promised response must not overtake it.
	// (Flush returns once the frames are written; END_STREAM follows on its own.)
	if pw.err == nil && ctx.Err() == nil {
		_ = http.NewResponseController(pw).Flush()
	}
	if pw.err != nil || ctx.Err() != nil {
		fail()
		return
	}
	p.st.completed.Add(1)
	p.st.bytes.Add(pw.n)
}

// pushPriority orders promised responses: a segment by its media time in seconds
// (a live segment not yet there by its number times the nominal duration, which is
// its start on a looped channel), everything else first.
func (p *Pusher) pushPriority(res layout.Resource) float64 {
	if res.Kind != layout.KindSegment {
		return -1
	}
	st, err := p.hub.Stream(res.Stream, res.Live)
	if err != nil {
		return 0
	}
	t, err := st.Info().Track(res.Track)
	if err != nil {
		return 0
	}
	if res.ByTime {
		return float64(res.Time) / float64(t.Timescale)
	}
	if ref, err := st.Ref(res.Track, res.Number, nowOf(st)); err == nil {
		return float64(ref.Start) / float64(t.Timescale)
	}
	return float64(res.Number) * st.Info().SegmentDuration.Seconds()
}

// pushWriter is the ResponseWriter of a promised response: it pauses between writes
// while the client's own requests are answered and counts the body bytes.
type pushWriter struct {
	http.ResponseWriter
	ctx context.Context
	cs  *connState
	n   int64
	err error
}

func (w *pushWriter) Write(b []byte) (int, error) {
	if err := w.cs.yield(w.ctx); err != nil {
		w.err = err
		return 0, err
	}
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (w *pushWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
