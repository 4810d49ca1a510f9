// Package pushclient is an HTTP/2 client that accepts server push, the client end of
// internal/transport/h2push. It speaks HTTP/2 itself on golang.org/x/net/http2.Framer
// and hpack, since Go's own client refuses pushes, over TLS (h2, ALPN) and cleartext
// (h2c, prior knowledge), one connection per origin. Pushed responses land in a
// per-connection cache; a request for a URL that was promised claims the push
// (complete or still arriving) instead of going on the wire. Pushes can be reset with
// RST_STREAM(CANCEL) (Client.Cancel), and the bytes of pushes never claimed are
// counted (Stats.UnclaimedBytes).
package pushclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/streambed/streambed/internal/netutil"
)

// Options configure a Client.
type Options struct {
	// Insecure skips verification of the server certificate (self-signed lab origins).
	Insecure bool
	// TLSConfig is cloned when set (Insecure still applies; ALPN is always h2).
	TLSConfig *tls.Config
	// DialContext dials TCP (nil: net.Dialer).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// DisablePush sends SETTINGS_ENABLE_PUSH=0: the server must not push.
	DisablePush bool
	// MaxPushes is SETTINGS_MAX_CONCURRENT_STREAMS: how many pushed streams may be
	// open at once (default 1000; the server stops promising beyond it).
	MaxPushes uint32
	// Window is the receive window of each stream and, ×4, of the connection
	// (default 4 MiB): large enough that flow control never holds a push back.
	Window uint32
	// MaxBodyBytes caps a response body kept in memory (default 256 MiB).
	MaxBodyBytes int64
	UserAgent    string
	// OnPush is offered (from the connection's reader, so it must not block) every
	// promised response that is complete and not claimed yet. To take it, the hook
	// calls Client.Give before handing it on (a request may claim it meanwhile, and
	// Give settles that race) and Ungive if the handover then fails; it returns
	// whether it took it. Pushes not taken stay in the cache for a request to claim.
	OnPush func(*Stream) bool
	// OnData is called (from the connection's reader, so it must not block) with the
	// payload of every DATA frame of a stream as it arrives — requests and pushes — and
	// end set on the last; data is valid only during the call. A player uses it to
	// take CMAF chunks of a segment still arriving.
	OnData func(s *Stream, data []byte, end bool)
	// Query is added to the query of every request sent (not to the URLs pushes are
	// claimed by): "push=k5" keeps a session's strategy on every connection.
	Query string
	// AcceptPush is asked when a PUSH_PROMISE arrives; false cancels it at once.
	AcceptPush func(url string) bool
	Log        *slog.Logger
}

// Client is an HTTP/2 client that accepts server push, over TLS (h2, ALPN) and
// cleartext (h2c, prior knowledge), one connection per origin. It is safe for
// concurrent use.
type Client struct {
	opts Options

	mu    sync.Mutex
	conns map[string]*Conn // "scheme://authority" → connection

	wire netutil.Counter // every connection's bytes
	st   clientStats
}

type clientStats struct {
	requests, promised, claimed, claimedInFlight, delivered, cancelled atomic.Int64
	pushedBytes, wastedBytes                                           atomic.Int64
}

// Stats count what a client did. UnclaimedBytes is the bandwidth push wasted:
// bytes of pushed responses that were neither claimed by a request nor delivered to
// the player (including what arrived of cancelled ones); h2push.Fetcher adds the
// delivered ones the player superseded.
type Stats struct {
	Requests        int64 `json:"requests"`          // HEADERS the client sent
	Promised        int64 `json:"promised"`          // PUSH_PROMISEs received
	Claimed         int64 `json:"claimed"`           // pushes a request claimed instead of going on the wire
	ClaimedInFlight int64 `json:"claimed_in_flight"` // … of which were still arriving
	Delivered       int64 `json:"delivered"`         // pushes handed over unasked (OnPush)
	Cancelled       int64 `json:"cancelled"`         // pushes reset with RST_STREAM(CANCEL)
	PushedBytes     int64 `json:"pushed_bytes"`      // body bytes received on pushed streams
	UnclaimedBytes  int64 `json:"unclaimed_bytes"`
	WireRead        int64 `json:"wire_read"`
	WireWritten     int64 `json:"wire_written"`
}

// New returns a client.
func New(o Options) *Client {
	if o.MaxPushes == 0 {
		o.MaxPushes = 1000
	}
	if o.Window == 0 {
		o.Window = 4 << 20
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 256 << 20
	}
	if o.UserAgent == "" {
		o.UserAgent = "streambed-h2push"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Client{opts: o, conns: map[string]*Conn{}}
}

// Stats returns the client's counters. Unclaimed bytes include the pushes still
// waiting in the caches, so call it at the end of a session.
func (c *Client) Stats() Stats {
	var pending int64
	c.mu.Lock()
	for _, cc := range c.conns {
		pending += cc.unclaimedBytes()
	}
	c.mu.Unlock()
	st := Stats{
		Requests: c.st.requests.Load(), Promised: c.st.promised.Load(), Claimed: c.st.claimed.Load(),
		ClaimedInFlight: c.st.claimedInFlight.Load(), Delivered: c.st.delivered.Load(), Cancelled: c.st.cancelled.Load(),
		PushedBytes: c.st.pushedBytes.Load(), UnclaimedBytes: c.st.wastedBytes.Load() + pending,
	}
	st.WireRead, st.WireWritten = c.wire.Bytes()
	return st
}

// WireBytes returns the bytes read and written on all connections (TCP payload).
func (c *Client) WireBytes() (read, written int64) { return c.wire.Bytes() }

// Close closes every connection. Pushes still unclaimed count as unclaimed bytes.
func (c *Client) Close() error {
	c.mu.Lock()
	conns := c.conns
	c.conns = map[string]*Conn{}
	c.mu.Unlock()
	for _, cc := range conns {
		c.st.wastedBytes.Add(cc.unclaimedBytes())
		cc.close(errors.New("client closed"))
	}
	return nil
}

// Get requests u, or claims a push of u. The returned stream is complete.
func (c *Client) Get(ctx context.Context, u string) (*Stream, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	if pu.Scheme != "http" && pu.Scheme != "https" {
		return nil, fmt.Errorf("%s: want an http or https URL", u)
	}
	for attempt := 0; ; attempt++ {
		cc, err := c.conn(ctx, pu)
		if err != nil {
			return nil, err
		}
		s, err := cc.get(ctx, pu)
		if err != nil && attempt == 0 && errors.Is(err, errRetry) && ctx.Err() == nil {
			continue // the connection went away before our stream started: once more on a new one
		}
		return s, err
	}
}

// Cancel resets the promised stream of u on its connection if it is unclaimed.
func (c *Client) Cancel(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	c.mu.Lock()
	cc := c.conns[pu.Scheme+"://"+pu.Host]
	c.mu.Unlock()
	if cc == nil {
		return false
	}
	return cc.cancelPush(CanonURL(pu))
}

// Pending lists the unclaimed promised streams of all connections.
func (c *Client) Pending() []*Stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Stream
	for _, cc := range c.conns {
		cc.mu.Lock()
		for _, s := range cc.pushes {
			out = append(out, s)
		}
		cc.mu.Unlock()
	}
	return out
}

// conn returns the live connection to u's origin, dialing one if needed.
func (c *Client) conn(ctx context.Context, u *url.URL) (*Conn, error) {
	key := u.Scheme + "://" + u.Host
	c.mu.Lock()
	cc := c.conns[key]
	if cc != nil && cc.usable() {
		c.mu.Unlock()
		return cc, nil
	}
	if cc != nil {
		c.st.wastedBytes.Add(cc.unclaimedBytes())
		delete(c.conns, key)
	}
	c.mu.Unlock()
	cc, err := c.dial(ctx, u)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.conns[key]; old != nil && old.usable() {
		cc.close(errors.New("lost a dial race"))
		return old, nil
	}
	c.conns[key] = cc
	return cc, nil
}

func (c *Client) dial(ctx context.Context, u *url.URL) (*Conn, error) {
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dial := c.opts.DialContext
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	raw, err := dial(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", host, err)
	}
	var nc net.Conn = netutil.NewCountingConn(raw, &c.wire)
	if u.Scheme == "https" {
		conf := &tls.Config{}
		if c.opts.TLSConfig != nil {
			conf = c.opts.TLSConfig.Clone()
		}
		conf.NextProtos = []string{"h2"}
		if conf.ServerName == "" {
			conf.ServerName = u.Hostname()
		}
		if c.opts.Insecure {
			conf.InsecureSkipVerify = true
		}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", host, err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			raw.Close()
			return nil, fmt.Errorf("%s does not speak HTTP/2 over TLS (ALPN %q)", host, p)
		}
		nc = tc
	}
	cc := newConn(c, nc, u.Scheme, u.Host)
	if err := cc.start(); err != nil {
		nc.Close()
		return nil, err
	}
	return cc, nil
}

// Stream is one HTTP/2 stream: a request of ours or a push of the server's.
type Stream struct {
	ID     uint32
	URL    string
	Pushed bool

	Promised  time.Time // PUSH_PROMISE received (pushes)
	Start     time.Time // request sent; for a push, its response HEADERS received
	FirstByte time.Time // first DATA (or the response HEADERS of an empty body)
	End       time.Time

	Status int
	Header http.Header
	Body   []byte // complete once Done is closed
	// HeaderBytes and Frames are the HPACK blocks and frame count on the wire, for the
	// player's per-response overhead.
	HeaderBytes int64
	Frames      int64
	// Regiven says a request claimed a push that OnPush had already taken.
	Regiven bool

	// Bursts of DATA (frames under BurstGap apart): their bytes and time, for the
	// receiving time of a body the origin sent as it made it (see Busy).
	lastData              time.Time
	burstBytes, burstTime int64 // bytes, nanoseconds

	done    chan struct{}
	err     error
	buf     bytes.Buffer
	n       atomic.Int64 // DATA payload received (read by Len from any goroutine)
	claimed bool         // by a request
	given   bool         // delivered through OnPush
	reset   bool         // we sent RST_STREAM
	ended   bool
}

// Done is closed when the stream is complete or failed.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Err is why the stream failed (after Done).
func (s *Stream) Err() error { return s.err }

// Len is the body bytes received so far.
func (s *Stream) Len() int64 { return s.n.Load() }

// BurstGap is the longest pause between two DATA frames of one burst: a longer one is
// the origin making the next chunk of a low-latency response, not the network.
const BurstGap = 15 * time.Millisecond

// minBurstBytes: less in bursts measures nothing (each chunk in one frame).
const minBurstBytes = 8 << 10

// Busy is the time the body took at the rate of its bursts of DATA frames — its
// receiving time without the origin's pauses between chunks — or 0 when the bursts
// held too little to say (after Done).
func (s *Stream) Busy() time.Duration {
	if s.burstBytes < minBurstBytes || s.burstTime < int64(time.Millisecond) || len(s.Body) == 0 {
		return 0
	}
	return time.Duration(float64(s.burstTime) * float64(len(s.Body)) / float64(s.burstBytes))
}

// errRetry marks a request that never started on a dying connection.
var errRetry = errors.New("connection closed before the request started")

// Conn is one HTTP/2 connection.
type Conn struct {
	c         *Client
	nc        net.Conn
	scheme    string
	authority string
	fr        *http2.Framer

	wmu  sync.Mutex // guards writes, the HPACK encoder and stream ID allocation
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	hdec *hpack.Decoder // reader goroutine only

	mu          sync.Mutex
	streams     map[uint32]*Stream
	pushes      map[string]*Stream // unclaimed promised streams by URL
	nextID      uint32
	maxFrame    uint32
	goaway      bool
	lastID      uint32 // from GOAWAY
	err         error
	closed      chan struct{}
	connUnacked uint32
	unacked     map[uint32]uint32
	resetPushes map[uint32]bool // pushes we reset: what still arrives on them is waste
}

func newConn(c *Client, nc net.Conn, scheme, authority string) *Conn {
	cc := &Conn{
		c: c, nc: nc, scheme: scheme, authority: authority,
		bw:      bufio.NewWriterSize(nc, 32<<10),
		streams: map[uint32]*Stream{}, pushes: map[string]*Stream{}, unacked: map[uint32]uint32{}, resetPushes: map[uint32]bool{},
		nextID: 1, maxFrame: 16384, closed: make(chan struct{}),
	}
	cc.fr = http2.NewFramer(cc.bw, bufio.NewReaderSize(nc, 64<<10))
	cc.fr.SetMaxReadFrameSize(1 << 20)
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	cc.hdec = hpack.NewDecoder(4096, nil)
	cc.hdec.SetMaxStringLength(64 << 10)
	return cc
}

// start writes the preface and SETTINGS and starts the reader.
func (cc *Conn) start() error {
	o := cc.c.opts
	push := uint32(1)
	if o.DisablePush {
		push = 0
	}
	cc.wmu.Lock()
	_, err := cc.bw.WriteString(http2.ClientPreface)
	if err == nil {
		err = cc.fr.WriteSettings(
			http2.Setting{ID: http2.SettingEnablePush, Val: push},
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: o.MaxPushes},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: o.Window},
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 20},
		)
	}
	if err == nil && 4*uint64(o.Window) > 65535 {
		// The connection window starts at 65 535 (RFC 9113 §6.9.2); a small stream
		// window leaves it there.
		err = cc.fr.WriteWindowUpdate(0, uint32(min(4*uint64(o.Window), 1<<31-1)-65535))
	}
	if err == nil {
		err = cc.bw.Flush()
	}
	cc.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("HTTP/2 preface: %w", err)
	}
	go cc.readLoop()
	return nil
}

func (cc *Conn) usable() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.err == nil && !cc.goaway && cc.nextID < 1<<31-2
}

// CanonURL is the cache key of a URL: scheme, host and request URI.
func CanonURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.RequestURI()
}

// get claims a push of u or sends a request for it, and waits for the response.
func (cc *Conn) get(ctx context.Context, u *url.URL) (*Stream, error) {
	key := CanonURL(u)
	cc.mu.Lock()
	if s := cc.pushes[key]; s != nil {
		delete(cc.pushes, key)
		s.claimed = true
		s.Regiven = s.given
		inFlight := !s.ended
		cc.mu.Unlock()
		cc.c.st.claimed.Add(1)
		if inFlight {
			cc.c.st.claimedInFlight.Add(1)
		}
		return cc.wait(ctx, s)
	}
	cc.mu.Unlock()

	s := &Stream{URL: key, done: make(chan struct{})}
	cc.wmu.Lock()
	cc.mu.Lock()
	if cc.err != nil || cc.goaway {
		cc.mu.Unlock()
		cc.wmu.Unlock()
		return nil, errRetry
	}
	s.ID = cc.nextID
	cc.nextID += 2
	cc.streams[s.ID] = s
	maxFrame := cc.maxFrame
	cc.mu.Unlock()
	cc.hbuf.Reset()
	path := u.RequestURI()
	if q := cc.c.opts.Query; q != "" {
		if u.RawQuery == "" {
			path += "?" + q
		} else {
			path += "&" + q
		}
	}
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: u.Scheme},
		{Name: ":authority", Value: u.Host}, {Name: ":path", Value: path},
		{Name: "user-agent", Value: cc.c.opts.UserAgent},
	} {
		_ = cc.henc.WriteField(f)
	}
	block := cc.hbuf.Bytes()
	s.HeaderBytes += int64(len(block))
	s.Start = time.Now()
	err := writeHeaderBlock(cc.fr, s.ID, block, maxFrame)
	if err == nil {
		err = cc.bw.Flush()
	}
	cc.wmu.Unlock()
	if err != nil {
		cc.close(err)
		return nil, fmt.Errorf("GET %s: %w", key, err)
	}
	cc.c.st.requests.Add(1)
	return cc.wait(ctx, s)
}

func writeHeaderBlock(fr *http2.Framer, id uint32, block []byte, maxFrame uint32) error {
	first := block
	if uint32(len(first)) > maxFrame {
		first = block[:maxFrame]
	}
	rest := block[len(first):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: true, EndHeaders: len(rest) == 0}); err != nil {
		return err
	}
	for len(rest) > 0 {
		chunk := rest
		if uint32(len(chunk)) > maxFrame {
			chunk = rest[:maxFrame]
		}
		rest = rest[len(chunk):]
		if err := fr.WriteContinuation(id, len(rest) == 0, chunk); err != nil {
			return err
		}
	}
	return nil
}

// wait waits for a stream's end; when ctx ends first the stream is reset.
func (cc *Conn) wait(ctx context.Context, s *Stream) (*Stream, error) {
	select {
	case <-s.done:
		if s.err != nil {
			return nil, s.err
		}
		return s, nil
	case <-ctx.Done():
		cc.rst(s, http2.ErrCodeCancel)
		return nil, ctx.Err()
	}
}

// rst resets a stream of ours or a push.
func (cc *Conn) rst(s *Stream, code http2.ErrCode) {
	cc.mu.Lock()
	if s.ended || s.reset {
		cc.mu.Unlock()
		return
	}
	s.reset = true
	if s.Pushed {
		if len(cc.resetPushes) > 10000 {
			clear(cc.resetPushes)
		}
		cc.resetPushes[s.ID] = true
	}
	cc.mu.Unlock()
	cc.wmu.Lock()
	// The reset is best effort: if the write fails the connection is broken, and its
	// reader fails every stream on it anyway.
	if err := cc.fr.WriteRSTStream(s.ID, code); err == nil {
		_ = cc.bw.Flush()
	}
	cc.wmu.Unlock()
	cc.finish(s, fmt.Errorf("%s: stream reset (%v)", s.URL, code))
}

// cancelPush resets the unclaimed push of key.
func (cc *Conn) cancelPush(key string) bool {
	cc.mu.Lock()
	s := cc.pushes[key]
	if s == nil || s.ended {
		cc.mu.Unlock()
		return false
	}
	delete(cc.pushes, key)
	cc.mu.Unlock()
	cc.c.st.cancelled.Add(1)
	cc.c.st.wastedBytes.Add(s.Len())
	cc.rst(s, http2.ErrCodeCancel)
	return true
}

// unclaimedBytes is what the pushes still in the cache cost.
func (cc *Conn) unclaimedBytes() int64 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var n int64
	for _, s := range cc.pushes {
		if !s.given {
			n += s.n.Load()
		}
	}
	return n
}

// finish ends a stream (idempotent).
func (cc *Conn) finish(s *Stream, err error) {
	cc.mu.Lock()
	select {
	case <-s.done:
		cc.mu.Unlock()
		return
	default:
	}
	s.ended = true
	s.err = err
	s.End = time.Now()
	if err == nil {
		s.Body = s.buf.Bytes()
	}
	delete(cc.streams, s.ID)
	delete(cc.unacked, s.ID)
	close(s.done)
	offer := s.Pushed && err == nil && !s.claimed && !s.given && cc.c.opts.OnPush != nil
	cc.mu.Unlock()
	if offer {
		cc.c.opts.OnPush(s)
	}
}

// give marks a complete push as handed over unasked. It stays in the cache, so a
// request for it later (the player lost it) still claims it instead of going on the
// wire. It returns false when a request claimed it first.
func (cc *Conn) give(s *Stream) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if s.claimed || s.given || s.err != nil {
		return false
	}
	s.given = true
	cc.c.st.delivered.Add(1)
	return true
}

// Ungive undoes Give when the handover failed.
func (c *Client) Ungive(s *Stream) {
	if cc := c.connOf(s); cc != nil {
		cc.mu.Lock()
		if s.given {
			s.given = false
			c.st.delivered.Add(-1)
		}
		cc.mu.Unlock()
	}
}

func (c *Client) connOf(s *Stream) *Conn {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[u.Scheme+"://"+u.Host]
}

// Give marks a complete push as handed over by the OnPush hook (now or later); false
// when a request claimed it meanwhile (or it failed).
func (c *Client) Give(s *Stream) bool {
	if cc := c.connOf(s); cc != nil {
		return cc.give(s)
	}
	return false
}

// close fails the connection and every open stream.
func (cc *Conn) close(err error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	cc.err = err
	open := make([]*Stream, 0, len(cc.streams))
	for _, s := range cc.streams {
		open = append(open, s)
	}
	close(cc.closed)
	cc.mu.Unlock()
	cc.nc.Close()
	for _, s := range open {
		cc.finish(s, fmt.Errorf("%s: connection closed: %w", s.URL, err))
	}
}

// headerBlock collects a header block across CONTINUATION frames.
type headerBlock struct {
	stream  uint32 // the stream the frames arrive on
	promise uint32 // PUSH_PROMISE: the promised stream
	end     bool   // HEADERS had END_STREAM
	buf     []byte
}

func (cc *Conn) readLoop() {
	var hb *headerBlock
	for {
		f, err := cc.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			cc.close(err)
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			err = cc.onSettings(f)
		case *http2.HeadersFrame:
			hb = &headerBlock{stream: f.StreamID, end: f.StreamEnded(), buf: append([]byte(nil), f.HeaderBlockFragment()...)}
			if f.HeadersEnded() {
				err = cc.onHeaderBlock(hb)
				hb = nil
			}
		case *http2.PushPromiseFrame:
			hb = &headerBlock{stream: f.StreamID, promise: f.PromiseID, buf: append([]byte(nil), f.HeaderBlockFragment()...)}
			if f.HeadersEnded() {
				err = cc.onHeaderBlock(hb)
				hb = nil
			}
		case *http2.ContinuationFrame:
			if hb == nil || hb.stream != f.StreamID {
				err = errors.New("unexpected CONTINUATION")
				break
			}
			hb.buf = append(hb.buf, f.HeaderBlockFragment()...)
			if f.HeadersEnded() {
				err = cc.onHeaderBlock(hb)
				hb = nil
			}
		case *http2.DataFrame:
			err = cc.onData(f)
		case *http2.RSTStreamFrame:
			cc.mu.Lock()
			s := cc.streams[f.StreamID]
			cc.mu.Unlock()
			if s != nil {
				cc.finish(s, fmt.Errorf("%s: server reset the stream (%v)", s.URL, f.ErrCode))
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				cc.wmu.Lock()
				err = cc.fr.WritePing(true, f.Data)
				if err == nil {
					err = cc.bw.Flush()
				}
				cc.wmu.Unlock()
			}
		case *http2.GoAwayFrame:
			cc.onGoAway(f)
		}
		if err != nil {
			cc.close(err)
			return
		}
	}
}

func (cc *Conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	_ = f.ForeachSetting(func(s http2.Setting) error {
		if s.ID == http2.SettingMaxFrameSize {
			cc.mu.Lock()
			cc.maxFrame = s.Val
			cc.mu.Unlock()
		}
		return nil
	})
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	if err := cc.fr.WriteSettingsAck(); err != nil {
		return err
	}
	return cc.bw.Flush()
}

func (cc *Conn) onGoAway(f *http2.GoAwayFrame) {
	cc.mu.Lock()
	cc.goaway = true
	cc.lastID = f.LastStreamID
	var dead []*Stream
	for id, s := range cc.streams {
		if id%2 == 1 && id > f.LastStreamID {
			dead = append(dead, s)
		}
	}
	cc.mu.Unlock()
	for _, s := range dead {
		cc.finish(s, fmt.Errorf("%s: %w (GOAWAY)", s.URL, errRetry))
	}
}

func (cc *Conn) onHeaderBlock(hb *headerBlock) error {
	fields, err := cc.hdec.DecodeFull(hb.buf)
	if err != nil {
		return fmt.Errorf("HPACK: %w", err)
	}
	if hb.promise != 0 {
		return cc.onPromise(hb, fields)
	}
	cc.mu.Lock()
	s := cc.streams[hb.stream]
	cc.mu.Unlock()
	if s == nil {
		return nil // a stream we reset or gave up on
	}
	s.HeaderBytes += int64(len(hb.buf))
	s.Frames++
	status := 0
	h := http.Header{}
	for _, f := range fields {
		if f.Name == ":status" {
			status, _ = strconv.Atoi(f.Value)
			continue
		}
		if !strings.HasPrefix(f.Name, ":") {
			h.Add(f.Name, f.Value)
		}
	}
	switch {
	case s.Status != 0:
		// trailers
	case status >= 100 && status < 200:
		return nil // 103 Early Hints and friends: the final response follows
	default:
		now := time.Now()
		cc.mu.Lock()
		s.Status, s.Header = status, h
		if s.Pushed {
			s.Start = now
		}
		cc.mu.Unlock()
	}
	if hb.end {
		if s.FirstByte.IsZero() {
			s.FirstByte = time.Now()
		}
		cc.finish(s, nil)
	}
	return nil
}

func (cc *Conn) onPromise(hb *headerBlock, fields []hpack.HeaderField) error {
	if cc.c.opts.DisablePush {
		return errors.New("PUSH_PROMISE although push is disabled")
	}
	var scheme, authority, path string
	for _, f := range fields {
		switch f.Name {
		case ":scheme":
			scheme = f.Value
		case ":authority":
			authority = f.Value
		case ":path":
			path = f.Value
		}
	}
	key := scheme + "://" + authority + path
	s := &Stream{ID: hb.promise, URL: key, Pushed: true, Promised: time.Now(), done: make(chan struct{}), HeaderBytes: int64(len(hb.buf)), Frames: 1}
	cc.c.st.promised.Add(1)
	cc.mu.Lock()
	dup := cc.pushes[key] != nil
	cc.streams[s.ID] = s
	if !dup {
		cc.pushes[key] = s
	}
	cc.mu.Unlock()
	accept := cc.c.opts.AcceptPush == nil || cc.c.opts.AcceptPush(key)
	if dup || !accept {
		cc.c.st.cancelled.Add(1)
		if !dup {
			cc.mu.Lock()
			delete(cc.pushes, key)
			cc.mu.Unlock()
		}
		cc.rst(s, http2.ErrCodeCancel)
	}
	return nil
}

func (cc *Conn) onData(f *http2.DataFrame) error {
	data := f.Data()
	n := f.Header().Length // padding counts against flow control
	cc.mu.Lock()
	s := cc.streams[f.StreamID]
	var connInc, streamInc uint32
	cc.connUnacked += n
	if cc.connUnacked >= cc.c.opts.Window {
		connInc, cc.connUnacked = cc.connUnacked, 0
	}
	if s != nil && !f.StreamEnded() {
		cc.unacked[s.ID] += n
		if cc.unacked[s.ID] >= cc.c.opts.Window/2 {
			streamInc = cc.unacked[s.ID]
			cc.unacked[s.ID] = 0
		}
	}
	var overflow bool
	if s != nil {
		now := time.Now()
		if s.FirstByte.IsZero() {
			s.FirstByte = now
		}
		if gap := now.Sub(s.lastData); !s.lastData.IsZero() && gap < BurstGap && len(data) > 0 {
			s.burstBytes += int64(len(data))
			s.burstTime += int64(gap)
		}
		s.lastData = now
		s.n.Add(int64(len(data)))
		s.Frames++
		if int64(s.buf.Len()+len(data)) > cc.c.opts.MaxBodyBytes {
			overflow = true
		} else {
			s.buf.Write(data)
		}
		if s.Pushed {
			cc.c.st.pushedBytes.Add(int64(len(data)))
		}
	} else if cc.resetPushes[f.StreamID] {
		// In flight when we cancelled the push: paid for, never used.
		cc.c.st.pushedBytes.Add(int64(len(data)))
		cc.c.st.wastedBytes.Add(int64(len(data)))
	}
	cc.mu.Unlock()
	if connInc > 0 || streamInc > 0 {
		cc.wmu.Lock()
		var err error
		if connInc > 0 {
			err = cc.fr.WriteWindowUpdate(0, connInc)
		}
		if err == nil && streamInc > 0 {
			err = cc.fr.WriteWindowUpdate(f.StreamID, streamInc)
		}
		if err == nil {
			err = cc.bw.Flush()
		}
		cc.wmu.Unlock()
		if err != nil {
			return err
		}
	}
	if s == nil {
		return nil
	}
	if overflow {
		cc.rst(s, http2.ErrCodeCancel)
		return nil
	}
	if h := cc.c.opts.OnData; h != nil {
		h(s, data, f.StreamEnded())
	}
	if f.StreamEnded() {
		cc.finish(s, nil)
	}
	return nil
}
