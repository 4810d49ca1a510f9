package wspush

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// writeLoop writes queued messages until the session ends.
func (s *session) writeLoop(ctx context.Context) error {
	for {
		it, ok := s.q.pop()
		if !ok {
			if s.finishing.Load() {
				return nil
			}
			select {
			case <-s.q.wake:
				continue
			case <-ctx.Done():
				return ctx.Err()
			case <-s.closed:
				return errClosed
			}
		}
		err := s.write(ctx, &it)
		s.q.written()
		if err != nil {
			return err
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// write writes one message. It passes the library a context without a Done channel
// (which would cost a timer registration per message): a stuck write ends by the
// connection's write deadline, and the session's end closes the connection.
func (s *session) write(_ context.Context, it *item) error {
	ctx := context.Background()
	if s.net != nil {
		// Refreshed at most once a second: a message that cannot leave within
		// WriteTimeout ends the session (a vanished client).
		if now := time.Now(); s.deadline.Sub(now) < s.opts.WriteTimeout-time.Second {
			s.deadline = now.Add(s.opts.WriteTimeout)
			_ = s.net.SetWriteDeadline(s.deadline)
		}
	}
	s.st.Messages++
	ctr := &s.h.ctr
	ctr.messages.Add(1)
	if it.text != nil {
		s.st.TextBytes += int64(len(it.text))
		s.st.FrameBytes += int64(WSFrameHeaderLen(len(it.text)))
		ctr.overhead.Add(int64(len(it.text) + WSFrameHeaderLen(len(it.text))))
		return s.conn.Write(ctx, websocket.MessageText, it.text)
	}
	bp := bufPool.Get().(*[]byte)
	b := AppendHeader((*bp)[:0], it.kind, it.start, it.end, it.track, it.seq)
	hdr := len(b)
	b = append(b, it.data...)
	err := s.conn.Write(ctx, websocket.MessageBinary, b)
	if cap(b) <= 4<<20 {
		*bp = b[:0]
		bufPool.Put(bp)
	}
	s.st.HeaderBytes += int64(hdr)
	s.st.FrameBytes += int64(WSFrameHeaderLen(len(b)))
	s.st.PayloadBytes += int64(len(it.data))
	ctr.payloadBytes.Add(int64(len(it.data)))
	ctr.overhead.Add(int64(hdr + WSFrameHeaderLen(len(b))))
	if it.kind == KindChunk {
		s.st.Chunks++
		ctr.chunks.Add(1)
	}
	return err
}

// readLoop reads what the client sends after start: status reports only. Anything
// else closes the session with 1008. It returns when the connection ends.
func (s *session) readLoop(ctx context.Context, cancel context.CancelFunc) {
	defer cancel()
	for {
		typ, r, err := s.conn.Reader(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			s.closeWith(ClosePolicy, "binary message from the client")
			return
		}
		b, err := io.ReadAll(io.LimitReader(r, MaxStartLen+1))
		if err != nil {
			return
		}
		st, err := ParseStatus(b)
		if err != nil {
			s.closeWith(ClosePolicy, err.Error())
			return
		}
		s.status.Store(&st)
	}
}
