package player

import (
	"context"
	"fmt"
	"time"
)

// The transport seam.
//
// The player core never imports a transport. A transport implements Fetcher (the
// player asks, the transport answers) and, when it can also deliver media nobody asked
// for — HTTP/2 server push, WebSocket push — Receiver as well:
//
//   - Pull (httppull over HTTP/1.1, h2, h2c; ParS): Fetcher only.
//   - Pull plus push (HTTP/2 push): Fetcher for manifests and requests, Receiver for
//     promised streams. The player matches a delivery to the segment it would have
//     requested by URL, or by track and number, and then does not request it.
//   - Push only (WebSocket): Fetcher for the manifest (or any other way to obtain it)
//     and Receiver for media; set Config.PushWait so the player waits for a delivery
//     instead of requesting each segment. A delivery may be of another rendition than
//     the one the ABR rule chose (server-side ABR): the player accepts any rendition of
//     the same adaptation set for the same segment number.
//   - A transport that can count the bytes that crossed its sockets implements
//     WireCounter; the QoE report then measures overhead instead of estimating it.

// RequestKind says what a request is for.
type RequestKind int

const (
	RequestMedia    RequestKind = iota // a media segment
	RequestInit                        // an init segment (CMAF header)
	RequestManifest                    // an MPD or an HLS playlist
	RequestTime                        // a UTCTiming clock source
)

func (k RequestKind) String() string {
	switch k {
	case RequestMedia:
		return "media"
	case RequestInit:
		return "init"
	case RequestManifest:
		return "manifest"
	case RequestTime:
		return "time"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// SegmentRequest is one thing the player wants. URL is absolute; the other fields say
// what it is, so a transport that does not speak URLs (a push session, a test double)
// can serve it by track and number.
type SegmentRequest struct {
	Kind    RequestKind
	URL     string
	TrackID string // init and media
	Number  uint64 // media: $Number$ (HLS: media sequence number)
	Time    uint64 // media: $Time$, in the track timescale
	// KeepBody asks for the body in Response.Body. The player needs the bytes of
	// manifests and clocks only; for media a transport may count the bytes and drop them.
	KeepBody bool
	// Chunks asks a ChunkReporter to report the CMAF chunks of this media segment as
	// they arrive (a low-latency live session); other transports ignore it.
	Chunks bool
}

// Response is what a transport answers, or delivers unasked.
type Response struct {
	Body []byte // only when the request asked KeepBody (may be set anyway)
	// PayloadBytes is the size of the body (the resource), even when Body is nil.
	PayloadBytes int64
	// OverheadBytes is what the exchange cost on top of the payload: request line and
	// headers, status line and headers, chunked framing, HTTP/2 frame headers, TLS
	// records. OverheadExact says whether it was counted on the socket (HTTP/1.1) or
	// estimated (HTTP/2, where streams share a connection).
	OverheadBytes int64
	OverheadExact bool
	// Start is when the request was issued, FirstByte when the first byte of the
	// response arrived, End when the last byte did. Transports use their own clock
	// (wall clock for network transports); only differences between them are used.
	Start, FirstByte, End time.Time
	Protocol              string // "HTTP/1.1", "HTTP/2.0", ...
	Pushed                bool   // delivered without a request
	// Busy is, for a body that arrived as the origin made it (a low-latency chunked
	// response), the time spent receiving it without the waits for the next chunk to
	// be made, scaled to the whole body; 0 when not measured (Duration applies). The
	// throughput estimate uses it, so a chunked download reads the network, not the
	// rate the media is made at (as dash.js measures low-latency downloads by chunk).
	Busy time.Duration
}

// Duration is the download time, request to last byte.
func (r *Response) Duration() time.Duration { return r.End.Sub(r.Start) }

// Fetcher is the pull side of a transport. Fetch returns the response or an error;
// errors should wrap the media error kinds (media.ErrNotFound, media.ErrNotYet,
// media.ErrGone, media.ErrUnavailable) so the player can tell "not yet" and "too old"
// from a broken link. Fetch must honour ctx. A Fetcher must be safe for concurrent use:
// the player has up to one request in flight per adaptation set it plays (video and
// audio at once, as dash.js does) and a manifest reload beside them; with
// Config.Sequential, one request at a time.
type Fetcher interface {
	Fetch(ctx context.Context, req SegmentRequest) (*Response, error)
}

// FetcherFunc adapts a function to Fetcher.
type FetcherFunc func(ctx context.Context, req SegmentRequest) (*Response, error)

// Fetch calls f.
func (f FetcherFunc) Fetch(ctx context.Context, req SegmentRequest) (*Response, error) {
	return f(ctx, req)
}

// Delivery is a segment a transport delivered without a request.
type Delivery struct {
	// Request describes the delivered resource as if the player had asked for it:
	// Kind, URL and/or TrackID and Number. The player matches on URL first, then on
	// (TrackID, Number).
	Request  SegmentRequest
	Response *Response
}

// Receiver is implemented by transports that deliver segments the player did not
// request. The player reads Deliveries whenever it waits (for a request to complete,
// for a segment to become available, for PushWait) and before each request, so a
// delivery that arrives first saves the request. A transport closes the channel when it
// will deliver no more. Deliveries must be buffered or the transport must not block
// forever on a slow player (drop, or close the session): the player reads the channel
// only from its own loop.
type Receiver interface {
	Deliveries() <-chan Delivery
}

// WireCounter is implemented by transports that count the bytes crossing their sockets
// (after TLS, before TCP/IP headers). The QoE report then states overhead as wire bytes
// minus payload bytes, which includes connection set-up, TLS and control frames.
type WireCounter interface {
	WireBytes() (read, written int64)
}

// Protocoler is implemented by transports that can name the protocol they spoke.
type Protocoler interface {
	Protocol() string
}
