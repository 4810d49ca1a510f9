package cmaf

import (
	"encoding/binary"
	"fmt"

	"github.com/streambed/streambed/internal/media"
)

// ChunkScanner finds the CMAF chunks (moof+mdat pairs) of a media segment while its
// bytes arrive — the growing body of a low-latency chunked response — so a player can
// use each chunk as soon as it is complete. It keeps only the bytes of the chunk in
// progress. The bytes are outside input: a malformed box ends the scan with an error
// (wrapping media.ErrInvalidMedia) and never panics.
type ChunkScanner struct {
	// MaxChunk caps the bytes of one chunk held while it arrives (0: 16 MiB); a
	// larger one ends the scan, since a segment that is one huge fragment has no
	// chunks to gain from.
	MaxChunk int
	// Defaults are the track's trex sample defaults (from its init segment), for
	// fragments whose trun and tfhd leave a sample's duration out.
	Defaults TrackDefaults

	buf     []byte // from the first byte not yet scanned (or the moof in progress)
	moofAt  int    // offset in buf of a moof waiting for its mdat; -1: none
	scanned int    // bytes of buf already split into boxes
	err     error
}

// NewChunkScanner returns a scanner at the start of a segment.
func NewChunkScanner() *ChunkScanner { return &ChunkScanner{moofAt: -1} }

// Write takes the next bytes of the segment and returns the fragments they complete.
// After an error, Write returns that error again and nothing else.
func (s *ChunkScanner) Write(p []byte) ([]Fragment, error) {
	if s.err != nil {
		return nil, s.err
	}
	limit := s.MaxChunk
	if limit <= 0 {
		limit = 16 << 20
	}
	s.buf = append(s.buf, p...)
	var out []Fragment
	for {
		size, typ, ok, err := boxHeader(s.buf[s.scanned:])
		if err != nil {
			s.err = err
			return out, err
		}
		if !ok || s.scanned+size > len(s.buf) {
			if len(s.buf) > limit || ok && s.scanned+size-max(s.moofAt, 0) > limit {
				s.err = fmt.Errorf("a chunk larger than %d bytes: %w", limit, media.ErrInvalidMedia)
				s.buf = nil
				return out, s.err
			}
			return out, nil
		}
		at := s.scanned
		s.scanned += size
		switch typ {
		case "moof":
			if s.moofAt >= 0 {
				s.err = fmt.Errorf("moof follows a moof without mdat: %w", media.ErrInvalidMedia)
				return out, s.err
			}
			s.moofAt = at
			continue
		case "mdat":
			if s.moofAt < 0 {
				s.err = fmt.Errorf("mdat without moof: %w", media.ErrInvalidMedia)
				return out, s.err
			}
			p, err := ParseSegment(s.buf[s.moofAt:s.scanned], s.Defaults)
			if err != nil {
				s.err = err
				return out, err
			}
			out = append(out, p.Fragments...)
			s.moofAt = -1
		case "styp", "sidx", "prft", "emsg", "free", "skip", "uuid":
			if s.moofAt >= 0 {
				s.err = fmt.Errorf("%q between moof and mdat: %w", printable(typ), media.ErrInvalidMedia)
				return out, s.err
			}
		default:
			s.err = fmt.Errorf("unexpected %q box in a media segment: %w", printable(typ), media.ErrInvalidMedia)
			return out, s.err
		}
		// Nothing before here is needed any more.
		s.buf = append(s.buf[:0], s.buf[s.scanned:]...)
		s.scanned = 0
	}
}

// boxHeader reads the size and type of the box at the start of b; ok is false while
// the header is incomplete. Size 0 (to the end of the file) cannot be told while the
// file grows and is refused.
func boxHeader(b []byte) (size int, typ string, ok bool, err error) {
	if len(b) < 8 {
		return 0, "", false, nil
	}
	n := uint64(binary.BigEndian.Uint32(b))
	typ = string(b[4:8])
	hdr := uint64(8)
	if n == 1 {
		if len(b) < 16 {
			return 0, "", false, nil
		}
		n, hdr = binary.BigEndian.Uint64(b[8:]), 16
	}
	if n < hdr || n > 1<<40 {
		return 0, "", false, fmt.Errorf("box %q has size %d: %w", printable(typ), n, media.ErrInvalidMedia)
	}
	return int(n), typ, true, nil
}
