package wspush

import (
	"encoding/binary"
	"net"
	"sync"
)

// sockGuard serialises writes to one socket: the WebSocket library writes through
// it (its buffered writer flushes into Write), and a fan-out viewer's frames are
// written while holding mu, so frames from both never interleave.
type sockGuard struct {
	mu sync.Mutex
	c  net.Conn
}

func (g *sockGuard) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.c.Write(b)
}

// maxFrameHead bounds what precedes a message's bytes on the wire: the RFC 6455
// header of an unmasked server frame and this protocol's binary header.
const maxFrameHead = 10 + MaxHeaderLen

// appendWSHeader appends the RFC 6455 header of one unfragmented, unmasked server
// message of n payload bytes.
func appendWSHeader(b []byte, text bool, n int) []byte {
	op := byte(0x82) // FIN, binary
	if text {
		op = 0x81
	}
	switch {
	case n <= 125:
		return append(b, op, byte(n))
	case n <= 65535:
		return append(b, op, 126, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint64(append(b, op, 127), uint64(n))
}

// head builds the bytes of it's frame before body into buf.
func (it *item) head(buf *[maxFrameHead]byte) []byte {
	if it.text != nil {
		return appendWSHeader(buf[:0], true, len(it.text))
	}
	b := appendWSHeader(buf[:0], false, HeaderLen(it.seq)+len(it.data))
	return AppendHeader(b, it.kind, it.start, it.end, it.track, it.seq)
}

// body is the message's own bytes: the JSON text, or the shared init or chunk.
func (it *item) body() []byte {
	if it.text != nil {
		return it.text
	}
	return it.data
}

// frameLen is the length of it's whole frame on the wire.
func (it *item) frameLen() int {
	if it.text != nil {
		return WSFrameHeaderLen(len(it.text)) + len(it.text)
	}
	n := HeaderLen(it.seq) + len(it.data)
	return WSFrameHeaderLen(n) + n
}

// tally counts written messages for /metrics, added in one go (a batch, a drain).
type tally struct {
	messages, chunks, payload, overhead int64
}

func (t *tally) addTo(c *counters) {
	if t.messages == 0 {
		return
	}
	c.messages.Add(t.messages)
	c.chunks.Add(t.chunks)
	c.payloadBytes.Add(t.payload)
	c.overhead.Add(t.overhead)
	*t = tally{}
}

// countWritten counts a message written by the fan-out (the caller holds the
// session's guard, which orders these counts with finish).
func (s *session) countWritten(it *item, t *tally) {
	s.st.Messages++
	t.messages++
	if it.text != nil {
		fh := int64(WSFrameHeaderLen(len(it.text)))
		s.st.TextBytes += int64(len(it.text))
		s.st.FrameBytes += fh
		t.overhead += int64(len(it.text)) + fh
		return
	}
	hl := int64(HeaderLen(it.seq))
	fh := int64(WSFrameHeaderLen(int(hl) + len(it.data)))
	s.st.HeaderBytes += hl
	s.st.FrameBytes += fh
	s.st.PayloadBytes += int64(len(it.data))
	t.payload += int64(len(it.data))
	t.overhead += hl + fh
	if it.kind == KindChunk {
		s.st.Chunks++
		t.chunks++
	}
}
