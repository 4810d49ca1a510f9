// Package httppull is HTTP pull — DASH and HLS over HTTP/1.1 and HTTP/2 — from the
// player's side: a player.Fetcher over HTTP/1.1, HTTP/2 over TLS and h2c (HTTP/2 over
// cleartext TCP, prior knowledge). The origin's side is internal/server.
//
// Overhead is measured where it happens: every connection is wrapped in a byte
// counter below TLS, so WireBytes is what crossed the sockets (TCP payload: TLS
// records, HTTP framing and bodies; not TCP/IP headers). Per request:
//
//   - HTTP/1.1 carries one exchange at a time on a connection, so the bytes the
//     connection moved between handing it to the request and the end of the body are
//     exactly that exchange: request line and headers, status line and headers,
//     chunked framing (and TLS record overhead over https). Response.OverheadExact.
//   - HTTP/2 multiplexes streams and control frames on one connection, so per-request
//     overhead is an estimate: HPACK-encoded header blocks (a persistent encoder per
//     direction, as a real connection keeps one dynamic table) plus 9 bytes per frame:
//     one HEADERS frame each way and one DATA frame per 16 KiB of body. It leaves out
//     SETTINGS, WINDOW_UPDATE, PING and TLS; the session totals from the socket
//     counters include them.
package httppull

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/streambed/streambed/internal/media"
	"github.com/streambed/streambed/internal/netutil"
	"github.com/streambed/streambed/internal/player"
)

// Protocol selects how the client speaks HTTP.
type Protocol string

const (
	HTTP1 Protocol = "http1" // HTTP/1.1, over TCP or TLS (ALPN http/1.1 only)
	H2    Protocol = "h2"    // HTTP/2 over TLS (ALPN h2 only); https URLs
	H2C   Protocol = "h2c"   // HTTP/2 over cleartext TCP with prior knowledge; http URLs
)

// ParseProtocol accepts http1, h2 and h2c.
func ParseProtocol(s string) (Protocol, error) {
	switch p := Protocol(s); p {
	case HTTP1, H2, H2C:
		return p, nil
	}
	return "", fmt.Errorf("transport %q: want http1, h2 or h2c", s)
}

// ClientOptions configure a Client.
type ClientOptions struct {
	Protocol Protocol
	// Insecure skips verification of the server certificate (self-signed lab origins).
	Insecure bool
	// TLSConfig is cloned when set (Insecure still applies).
	TLSConfig *tls.Config
	// DialContext dials TCP (nil: net.Dialer). The client wraps what it returns.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxBodyBytes caps bodies kept in memory (manifests, clocks); 0 means 64 MiB.
	MaxBodyBytes int64
	UserAgent    string
}

// Client is a player.Fetcher, player.WireCounter and player.Protocoler over net/http.
// It is safe for concurrent use.
type Client struct {
	opts ClientOptions
	tr   *http.Transport
	hc   *http.Client

	wire  netutil.Counter // every connection's bytes
	proto atomic.Value    // string: the last negotiated protocol

	sink   atomic.Pointer[func(player.Chunk)] // chunk reports (chunks.go); nil: none
	tracks sync.Map                           // track ID → cmaf.Init, from init segments (chunks.go)

	mu      sync.Mutex // guards the HPACK estimators
	reqEnc  *hpack.Encoder
	respEnc *hpack.Encoder
	encBuf  bytes.Buffer
}

var (
	_ player.Fetcher     = (*Client)(nil)
	_ player.WireCounter = (*Client)(nil)
	_ player.Protocoler  = (*Client)(nil)
)

// NewClient builds a client for one protocol.
func NewClient(o ClientOptions) (*Client, error) {
	if o.Protocol == "" {
		o.Protocol = HTTP1
	}
	if _, err := ParseProtocol(string(o.Protocol)); err != nil {
		return nil, err
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 64 << 20
	}
	if o.UserAgent == "" {
		o.UserAgent = "streambed-player"
	}
	c := &Client{opts: o}
	dial := o.DialContext
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	tlsConf := &tls.Config{}
	if o.TLSConfig != nil {
		tlsConf = o.TLSConfig.Clone()
	}
	if o.Insecure {
		tlsConf.InsecureSkipVerify = true
	}
	protos := new(http.Protocols)
	switch o.Protocol {
	case HTTP1:
		protos.SetHTTP1(true)
	case H2:
		protos.SetHTTP2(true)
	case H2C:
		protos.SetUnencryptedHTTP2(true)
	}
	c.tr = &http.Transport{
		DialContext:         netutil.CountingDialer(dial, &c.wire),
		TLSClientConfig:     tlsConf,
		Protocols:           protos,
		ForceAttemptHTTP2:   o.Protocol == H2,
		DisableCompression:  true, // media is compressed already; and payload bytes must be the resource's
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	c.hc = &http.Client{Transport: c.tr}
	c.reqEnc = hpack.NewEncoder(&c.encBuf)
	c.respEnc = hpack.NewEncoder(&c.encBuf)
	return c, nil
}

// Protocol returns the protocol of the last response ("HTTP/1.1", "HTTP/2.0").
func (c *Client) Protocol() string {
	s, _ := c.proto.Load().(string)
	return s
}

// WireBytes returns the bytes read and written on all connections so far.
func (c *Client) WireBytes() (read, written int64) { return c.wire.Bytes() }

// Close closes idle connections.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// Fetch GETs req.URL.
func (c *Client) Fetch(ctx context.Context, req player.SegmentRequest) (*player.Response, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", req.URL, err, media.ErrBadRequest)
	}
	switch {
	case c.opts.Protocol == H2 && u.Scheme != "https":
		return nil, fmt.Errorf("%s: transport h2 needs an https URL (use h2c for cleartext HTTP/2)", req.URL)
	case c.opts.Protocol == H2C && u.Scheme != "http":
		return nil, fmt.Errorf("%s: transport h2c needs an http URL (use h2 over TLS)", req.URL)
	}
	var (
		cc        *netutil.CountingConn
		r0, w0    int64
		firstByte time.Time
	)
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			cc = netutil.FindCountingConn(info.Conn)
			if cc != nil {
				r0, w0 = cc.Bytes()
			}
		},
		GotFirstResponseByte: func() { firstByte = time.Now() },
	}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, req.URL, nil)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("User-Agent", c.opts.UserAgent)
	start := time.Now()
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	c.proto.Store(resp.Proto)
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, statusError(req.URL, resp)
	}
	out := &player.Response{Start: start, FirstByte: firstByte, Protocol: resp.Proto}
	if req.KeepBody {
		out.Body, err = io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBodyBytes+1))
		out.PayloadBytes = int64(len(out.Body))
		if err == nil && out.PayloadBytes > c.opts.MaxBodyBytes {
			err = fmt.Errorf("body larger than %d bytes", c.opts.MaxBodyBytes)
		}
	} else if sink := c.sink.Load(); sink != nil && req.Kind == player.RequestMedia && req.Chunks {
		out.PayloadBytes, out.Busy, err = c.readChunks(resp.Body, req, *sink)
	} else if sink != nil && req.Kind == player.RequestInit && req.TrackID != "" {
		out.PayloadBytes, err = c.readInit(resp.Body, req.TrackID)
	} else {
		out.PayloadBytes, err = io.Copy(io.Discard, resp.Body)
	}
	out.End = time.Now()
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading body: %w", req.URL, err)
	}
	if out.FirstByte.IsZero() {
		out.FirstByte = out.End
	}
	if resp.ProtoMajor == 1 && cc != nil {
		r1, w1 := cc.Bytes()
		wire := r1 - r0 + w1 - w0
		out.OverheadBytes, out.OverheadExact = max(wire-out.PayloadBytes, 0), true
	} else {
		out.OverheadBytes = c.h2Overhead(hreq, resp, out.PayloadBytes)
	}
	return out, nil
}

// Do sends an HTTP request over the client's counting connections (for transports
// built on this one, such as ParS's range requests). The caller closes the body.
func (c *Client) Do(req *http.Request) (*http.Response, error) { return c.hc.Do(req) }

// StatusError maps a response's HTTP status to the media error kinds the player
// understands, as Fetch does.
func StatusError(url string, resp *http.Response) error { return statusError(url, resp) }

// statusError maps an HTTP status to the media error kinds the player understands.
func statusError(u string, resp *http.Response) error {
	if kind := media.KindOfStatus(resp.StatusCode); kind != nil {
		return fmt.Errorf("GET %s: %s: %w", u, resp.Status, kind)
	}
	return fmt.Errorf("GET %s: %s", u, resp.Status)
}

// h2FrameHeader is the fixed size of an HTTP/2 frame header; h2MaxFrame the default
// SETTINGS_MAX_FRAME_SIZE, which Go's server uses for DATA frames.
const (
	h2FrameHeader = 9
	h2MaxFrame    = 16384
)

// h2Overhead estimates the HTTP/2 bytes of one exchange besides its body.
func (c *Client) h2Overhead(hreq *http.Request, resp *http.Response, payload int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.encBuf.Reset()
	path := hreq.URL.RequestURI()
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: hreq.Method}, {Name: ":scheme", Value: hreq.URL.Scheme},
		{Name: ":authority", Value: hreq.URL.Host}, {Name: ":path", Value: path},
	} {
		c.reqEnc.WriteField(f)
	}
	writeHeader(c.reqEnc, hreq.Header)
	reqBlock := int64(c.encBuf.Len())
	c.encBuf.Reset()
	c.respEnc.WriteField(hpack.HeaderField{Name: ":status", Value: fmt.Sprint(resp.StatusCode)})
	writeHeader(c.respEnc, resp.Header)
	respBlock := int64(c.encBuf.Len())
	c.encBuf.Reset()
	dataFrames := (payload + h2MaxFrame - 1) / h2MaxFrame
	if dataFrames == 0 {
		dataFrames = 1 // END_STREAM on an empty DATA frame (or HEADERS: the same 9 bytes, near enough)
	}
	return reqBlock + respBlock + 2*h2FrameHeader + dataFrames*h2FrameHeader
}

func writeHeader(enc *hpack.Encoder, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			enc.WriteField(hpack.HeaderField{Name: strings.ToLower(k), Value: v})
		}
	}
}
