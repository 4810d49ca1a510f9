package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/streambed/streambed/internal/media"
)

// ErrTooLarge is a box or a request over its configured limit: HTTP 413.
var ErrTooLarge = errors.New("too large")

// Defaults of Limits.
const (
	DefaultMaxBox = 64 << 20 // a 4 s GOP at 100 Mbit/s fits
	// readStep bounds what one read allocates ahead of the bytes that arrived, so a
	// header that claims a huge box costs memory only as its bytes come.
	readStep = 1 << 20
)

// Limits bound what one ingest request can make the origin hold.
type Limits struct {
	// MaxBox is the largest top-level box (an mdat, usually), and also bounds a CMAF
	// header and a chunk with the boxes before its moof. 0: DefaultMaxBox.
	MaxBox int64 `yaml:"max_box_bytes"`
	// MaxRequest bounds the bytes of one request. 0: no limit, since a long-running
	// POST lasts as long as its encoder runs.
	MaxRequest int64 `yaml:"max_request_bytes"`
}

func (l Limits) maxBox() int64 {
	if l.MaxBox > 0 {
		return l.MaxBox
	}
	return DefaultMaxBox
}

// BoxHeader is the header of one top-level ISO BMFF box.
type BoxHeader struct {
	Type string
	Size int64 // the whole box, header included
	Len  int   // the header's length: 8, or 16 with a 64-bit size
	raw  [16]byte
}

// BoxReader reads ISO BMFF boxes one at a time from a stream, holding at most one
// box: a request body is never buffered whole.
type BoxReader struct {
	r    io.Reader
	lim  Limits
	read int64 // bytes consumed so far
}

// NewBoxReader reads boxes from r within lim.
func NewBoxReader(r io.Reader, lim Limits) *BoxReader { return &BoxReader{r: r, lim: lim} }

// Offset is how many bytes have been consumed.
func (b *BoxReader) Offset() int64 { return b.read }

// Next reads the next box header: io.EOF at a clean end between boxes. A box of an
// unknown top-level type is malformed (media.ErrInvalidMedia); one above the limits
// is ErrTooLarge. Read or skip its body before calling Next again.
func (b *BoxReader) Next() (BoxHeader, error) {
	var h BoxHeader
	n, err := io.ReadFull(b.r, h.raw[:8])
	b.read += int64(n)
	switch {
	case err == io.EOF:
		return h, io.EOF
	case err != nil && n == 0:
		// Nothing of a next box read: whatever ended the body (a read error, a
		// stopped request), no box was cut.
		return h, fmt.Errorf("%w at byte %d: %w", errBetweenBoxes, b.read, err)
	case err != nil:
		return h, b.truncated("box header", err)
	}
	h.Type, h.Len = string(h.raw[4:8]), 8
	size := uint64(binary.BigEndian.Uint32(h.raw[:4]))
	if !topLevel[h.Type] {
		return h, fmt.Errorf("unexpected box %q at byte %d (not a CMAF header or chunk): %w", h.Type, b.read-8, media.ErrInvalidMedia)
	}
	switch size {
	case 0:
		return h, fmt.Errorf("box %q at byte %d extends to the end of the stream, which a live stream has not: %w", h.Type, b.read-8, media.ErrInvalidMedia)
	case 1:
		n, err := io.ReadFull(b.r, h.raw[8:16])
		b.read += int64(n)
		if err != nil {
			return h, b.truncated("64-bit box size", err)
		}
		size, h.Len = binary.BigEndian.Uint64(h.raw[8:16]), 16
	}
	if size < uint64(h.Len) {
		return h, fmt.Errorf("box %q at byte %d has size %d, less than its header: %w", h.Type, b.read-int64(h.Len), size, media.ErrInvalidMedia)
	}
	if max := b.lim.maxBox(); size > uint64(max) {
		return h, fmt.Errorf("box %q of %d bytes is over the %d-byte limit: %w", h.Type, size, max, ErrTooLarge)
	}
	h.Size = int64(size)
	if m := b.lim.MaxRequest; m > 0 && b.read-int64(h.Len)+h.Size > m {
		return h, fmt.Errorf("box %q ends past the request's %d-byte limit: %w", h.Type, m, ErrTooLarge)
	}
	return h, nil
}

// Append appends the whole box of h (header and body) to dst.
func (b *BoxReader) Append(dst []byte, h BoxHeader) ([]byte, error) {
	dst = append(dst, h.raw[:h.Len]...)
	for need := h.Size - int64(h.Len); need > 0; {
		step := int(min(need, readStep))
		dst = slices.Grow(dst, step)
		n, err := io.ReadFull(b.r, dst[len(dst):len(dst)+step])
		b.read += int64(n)
		dst = dst[:len(dst)+n]
		if err != nil {
			return dst, b.truncated(fmt.Sprintf("box %q", h.Type), err)
		}
		need -= int64(n)
	}
	return dst, nil
}

// Skip discards the body of h.
func (b *BoxReader) Skip(h BoxHeader) error {
	need := h.Size - int64(h.Len)
	n, err := io.CopyN(io.Discard, b.r, need)
	b.read += n
	if err != nil {
		return b.truncated(fmt.Sprintf("box %q", h.Type), err)
	}
	return nil
}

// errBetweenBoxes marks a body that stopped where one box ended and before the next
// began: every box that arrived is whole.
var errBetweenBoxes = errors.New("the body stopped between boxes")

// truncated reports a stream that ended, or failed, inside a box. A body that ends
// early (the client went away) wraps io.ErrUnexpectedEOF; other read errors are kept.
func (b *BoxReader) truncated(what string, err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("the body ends inside a %s at byte %d: %w (%w)", what, b.read, io.ErrUnexpectedEOF, media.ErrInvalidMedia)
	}
	return fmt.Errorf("reading a %s at byte %d: %w", what, b.read, err)
}

// topLevel lists the box types a CMAF ingest stream may hold at its top level.
var topLevel = map[string]bool{
	"ftyp": true, "moov": true, // the CMAF header
	"styp": true, "prft": true, "emsg": true, "moof": true, "mdat": true, // chunks
	"sidx": true, "ssix": true, "free": true, "skip": true, "uuid": true, "mfra": true, "meta": true, "pdin": true, // ignored
}
