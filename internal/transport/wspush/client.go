package wspush

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/streambed/streambed/internal/media"
)

// DialOptions configure Dial.
type DialOptions struct {
	Start Start // Type is set for you
	// HTTPClient performs the opening handshake (nil: http.DefaultClient). Give it a
	// transport with its own DialContext to count bytes or dial from a namespace.
	HTTPClient *http.Client
	// ReadLimit caps one message (default 64 MiB: a whole VOD segment is one message).
	ReadLimit int64
}

// Client is the receiving end of a push session.
type Client struct {
	conn  *websocket.Conn
	Ready Ready
	// Stats counts what arrived, as the server framed it.
	Stats ClientStats
}

// ClientStats counts received messages. FrameBytes are the RFC 6455 frame headers
// the server sent, derived from the message sizes (the server sends each message as
// one unmasked frame).
type ClientStats struct {
	Messages, Chunks, Inits                          int64
	PayloadBytes, HeaderBytes, FrameBytes, TextBytes int64
	Switches, Skips, Lost                            int
}

// CloseError is how a session ended, as the server said.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string { return fmt.Sprintf("closed %d: %s", e.Code, e.Reason) }

// Dial opens a session at url (ws://HOST/ws/{channel} or ws://HOST/ws/vod/{asset}),
// sends the start message and reads the ready answer. A 404 before the upgrade
// wraps media.ErrNotFound.
func Dial(ctx context.Context, url string, o DialOptions) (*Client, error) {
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient: o.HTTPClient, CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("wspush %s: %w", url, media.ErrNotFound)
		}
		if resp != nil && resp.Body != nil { // the library keeps the first KiB of a refusal's body: say why
			if why, _ := io.ReadAll(io.LimitReader(resp.Body, 256)); len(bytes.TrimSpace(why)) > 0 {
				return nil, fmt.Errorf("wspush %s: %w (the answer said %q)", url, err, bytes.TrimSpace(why))
			}
		}
		return nil, fmt.Errorf("wspush %s: %w", url, err)
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = 64 << 20
	}
	conn.SetReadLimit(o.ReadLimit)
	c := &Client{conn: conn}
	o.Start.Type = "start"
	b, err := json.Marshal(o.Start)
	if err != nil {
		conn.CloseNow()
		return nil, err
	}
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("wspush %s: start: %w", url, closeErr(err))
	}
	typ, msg, err := conn.Read(ctx)
	if err != nil {
		conn.CloseNow()
		return nil, fmt.Errorf("wspush %s: %w", url, closeErr(err))
	}
	c.count(typ, msg)
	if typ != websocket.MessageText {
		conn.CloseNow()
		return nil, fmt.Errorf("wspush %s: the first message is binary, want ready", url)
	}
	if err := json.Unmarshal(msg, &c.Ready); err != nil || c.Ready.Type != "ready" {
		conn.CloseNow()
		return nil, fmt.Errorf("wspush %s: the first message is not ready: %.80s", url, msg)
	}
	for i, t := range c.Ready.Tracks {
		if t.Index != i {
			conn.CloseNow()
			return nil, fmt.Errorf("wspush %s: ready lists track %q at %d with index %d", url, t.ID, i, t.Index)
		}
	}
	return c, nil
}

// closeErr turns the library's close status into a CloseError.
func closeErr(err error) error {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return &CloseError{Code: int(ce.Code), Reason: ce.Reason}
	}
	return err
}

// Message is one message from the server.
type Message struct {
	At    time.Time
	Frame *Frame // binary: media
	Type  string // text: switch, skip, adapt, end, ...
	Text  []byte
}

// Next reads the next message. At the end of a session it returns a *CloseError
// (1000 after a VOD asset's end message).
func (c *Client) Next(ctx context.Context) (Message, error) {
	typ, msg, err := c.conn.Read(ctx)
	if err != nil {
		return Message{}, closeErr(err)
	}
	m := Message{At: time.Now()}
	c.count(typ, msg)
	if typ == websocket.MessageText {
		m.Text = msg
		m.Type, err = MessageType(msg)
		if err != nil {
			return m, fmt.Errorf("wspush: bad text message: %w", err)
		}
		switch m.Type {
		case "switch":
			c.Stats.Switches++
		case "skip":
			var s Skip
			if json.Unmarshal(msg, &s) == nil {
				c.Stats.Skips++
				c.Stats.Lost += s.Lost
			}
		}
		return m, nil
	}
	f, err := ParseFrame(msg)
	if err != nil {
		return m, err
	}
	if int(f.Track) >= len(c.Ready.Tracks) {
		return m, fmt.Errorf("%w: track index %d, ready lists %d", ErrFrame, f.Track, len(c.Ready.Tracks))
	}
	c.Stats.HeaderBytes += int64(len(msg) - len(f.Payload))
	c.Stats.PayloadBytes += int64(len(f.Payload))
	if f.Kind == KindChunk {
		c.Stats.Chunks++
	} else {
		c.Stats.Inits++
	}
	m.Frame = &f
	return m, nil
}

func (c *Client) count(typ websocket.MessageType, msg []byte) {
	c.Stats.Messages++
	c.Stats.FrameBytes += int64(WSFrameHeaderLen(len(msg)))
	if typ == websocket.MessageText {
		c.Stats.TextBytes += int64(len(msg))
	}
}

// SendStatus reports the client's buffer and latency to the server.
func (c *Client) SendStatus(ctx context.Context, s Status) error {
	s.Type = "status"
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, websocket.MessageText, b)
}

// Close ends the session normally.
func (c *Client) Close() error { return c.conn.Close(websocket.StatusNormalClosure, "") }

// CloseNow drops the connection without a close handshake.
func (c *Client) CloseNow() error { return c.conn.CloseNow() }

// Segment is a pushed segment put back together from its chunks.
type Segment struct {
	Track       TrackInfo
	Number      uint64
	Data        []byte
	Chunks      int
	Overhead    int64     // this protocol's headers and the frame headers of its chunks
	First, Last time.Time // arrival of the first and the last chunk
}

// Assembler puts chunks back together into segments, per track. A segment whose
// start was not seen (the session skipped) is dropped.
type Assembler struct {
	ready *Ready
	parts map[uint8]*Segment
}

// NewAssembler returns an assembler for the session r describes.
func NewAssembler(r *Ready) *Assembler { return &Assembler{ready: r, parts: map[uint8]*Segment{}} }

// Add takes one media frame. It returns the segment the frame completes, if any, or
// for an init frame, the init (as a Segment with Chunks 0). A segment that a start
// completes (see AddAll) is dropped: use AddAll where segments may end that way.
func (a *Assembler) Add(f *Frame, at time.Time) (*Segment, error) {
	done, err := a.AddAll(f, at)
	if err != nil || len(done) == 0 {
		return nil, err
	}
	return done[len(done)-1], nil
}

// AddAll takes one media frame and returns the segments it completes: the one its
// end flag completes, and before it the track's previous segment when the frame
// starts a new one (a source that learns a segment's end only when the next begins,
// an encoder's, sends no end flag: the next start completes it, as the wire format
// says). For an init frame it returns the init (as a Segment with Chunks 0).
func (a *Assembler) AddAll(f *Frame, at time.Time) ([]*Segment, error) {
	if int(f.Track) >= len(a.ready.Tracks) {
		return nil, fmt.Errorf("%w: track index %d", ErrFrame, f.Track)
	}
	over := int64(HeaderLen(f.Sequence) + WSFrameHeaderLen(HeaderLen(f.Sequence)+len(f.Payload)))
	tr := a.ready.Tracks[f.Track]
	if f.Kind == KindInit {
		return []*Segment{{Track: tr, Number: a.ready.Base + f.Sequence, Data: f.Payload, Overhead: over, First: at, Last: at}}, nil
	}
	var done []*Segment
	p := a.parts[f.Track]
	if f.Start {
		if p != nil && p.Chunks > 0 {
			done = append(done, p) // completed by this start
		}
		p = &Segment{Track: tr, Number: a.ready.Base + f.Sequence, First: at}
		a.parts[f.Track] = p
	} else if p == nil || uint64(p.Chunks) != f.Sequence {
		delete(a.parts, f.Track) // a gap: the rest of this segment is lost
		return nil, nil
	}
	p.Data = append(p.Data, f.Payload...)
	p.Chunks++
	p.Overhead += over
	p.Last = at
	if f.End {
		delete(a.parts, f.Track)
		done = append(done, p)
	}
	return done, nil
}
