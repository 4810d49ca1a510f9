package cmaf

import (
	"encoding/binary"
	"fmt"

	"github.com/streambed/streambed/internal/media"
)

// box locates one ISO BMFF box inside a byte slice. All offsets are absolute
// positions in the slice the box was read from.
type box struct {
	typ   string
	start int // first byte of the header
	body  int // first byte after the header (size, type and any largesize)
	end   int // one past the last byte
}

// readBox reads the box header at off in b, bounded by limit (exclusive). It checks
// that the whole box lies inside [off, limit) and never reads past it.
func readBox(b []byte, off, limit int) (box, error) {
	if limit > len(b) {
		limit = len(b)
	}
	if off < 0 || limit-off < 8 {
		return box{}, fmt.Errorf("truncated box header at byte %d: %w", off, media.ErrInvalidMedia)
	}
	size := uint64(binary.BigEndian.Uint32(b[off:]))
	typ := string(b[off+4 : off+8])
	hdr := 8
	switch size {
	case 0: // extends to the end of the enclosing space
		size = uint64(limit - off)
	case 1:
		if limit-off < 16 {
			return box{}, fmt.Errorf("truncated largesize header of %q at byte %d: %w", printable(typ), off, media.ErrInvalidMedia)
		}
		size = binary.BigEndian.Uint64(b[off+8:])
		hdr = 16
	}
	if size < uint64(hdr) || size > uint64(limit-off) {
		return box{}, fmt.Errorf("box %q at byte %d has size %d, %d bytes available: %w",
			printable(typ), off, size, limit-off, media.ErrInvalidMedia)
	}
	return box{typ: typ, start: off, body: off + hdr, end: off + int(size)}, nil
}

// children returns the boxes directly inside the container c.
func children(b []byte, c box) ([]box, error) {
	var out []box
	for off := c.body; off < c.end; {
		ch, err := readBox(b, off, c.end)
		if err != nil {
			return nil, fmt.Errorf("inside %q: %w", c.typ, err)
		}
		out = append(out, ch)
		off = ch.end
	}
	return out, nil
}

// fullBoxHeader returns the version and flags of a full box and checks that its body
// holds at least need bytes after them.
func fullBoxHeader(b []byte, x box, need int) (version uint8, flags uint32, err error) {
	if x.end-x.body < 4+need {
		return 0, 0, fmt.Errorf("%q box too short (%d bytes): %w", x.typ, x.end-x.start, media.ErrInvalidMedia)
	}
	vf := binary.BigEndian.Uint32(b[x.body:])
	return uint8(vf >> 24), vf & 0xffffff, nil
}

// printable keeps box types readable in error messages even for garbage input.
func printable(t string) string {
	r := []byte(t)
	for i, c := range r {
		if c < 0x20 || c > 0x7e {
			r[i] = '?'
		}
	}
	return string(r)
}

func appendBoxHeader(dst []byte, typ string, size int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	return append(dst, typ...)
}

func appendFullBoxHeader(dst []byte, typ string, size int, version uint8, flags uint32) []byte {
	dst = appendBoxHeader(dst, typ, size)
	return binary.BigEndian.AppendUint32(dst, uint32(version)<<24|flags&0xffffff)
}
