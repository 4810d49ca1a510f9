package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/Eyevinn/mp4ff/mp4"

	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/media"
)

// ErrNoHeader is media without a CMAF header before it, or a header that is not a
// valid one (an unparsable moov): HTTP 412, as DASH-IF Live Media Ingest says.
var ErrNoHeader = errors.New("no valid CMAF header")

// Header is a track's CMAF header (init segment) as its encoder sent it.
type Header struct {
	Bytes []byte     // ftyp and moov; other boxes between them are dropped
	Init  *cmaf.Init // what the moov says: codec, timescale, size, sample rate, trex defaults
	// Bitrate is the sample entry's btrt box: its maximum bitrate, else its average
	// (bit/s); 0 when the encoder wrote none.
	Bitrate int
}

// Chunk is one CMAF chunk as its encoder sent it.
type Chunk struct {
	// Data is the chunk's bytes: the styp, prft and emsg boxes that came before its
	// moof (so a segment stays valid CMAF), then the moof and its mdat.
	Data     []byte
	Fragment cmaf.Fragment // tfdt, samples, durations, sync flags
	Styp     bool          // it begins with a styp: the encoder starts a segment here
	Last     bool          // that styp has the brand lmsg: the encoder's last segment
	Prft     *Prft         // its producer reference time, when it has one
}

// Prft is a producer reference time box: the wall-clock time at which the encoder
// produced (or captured) the sample at MediaTime.
type Prft struct {
	TrackID   uint32
	Wallclock time.Time
	MediaTime uint64 // track timescale
	Flags     uint32 // what the time refers to (0: encoder output, 24: capture, …)
}

// Parser splits an ingest body into CMAF headers and chunks as their bytes arrive.
type Parser struct {
	br     *BoxReader
	lim    Limits
	header *Header
	last   bool
}

// NewParser reads an ingest body from r within lim. header is the track's CMAF header
// from an earlier request, or nil: then the body must start with one.
func NewParser(r io.Reader, lim Limits, header *Header) *Parser {
	return &Parser{br: NewBoxReader(r, lim), lim: lim, header: header}
}

// LastSeen reports whether a styp with the brand lmsg arrived: the encoder said its
// stream ends.
func (p *Parser) LastSeen() bool { return p.last }

// Offset is how many bytes of the body have been read.
func (p *Parser) Offset() int64 { return p.br.Offset() }

// Next returns the body's next part, a CMAF header or a CMAF chunk, once its last
// byte has arrived; io.EOF at a clean end. Errors: ErrNoHeader (media first, or an
// unparsable header), ErrTooLarge (over the limits), media.ErrInvalidMedia
// (malformed boxes, or a body that ends inside a box: then also io.ErrUnexpectedEOF),
// or the body's own read error.
func (p *Parser) Next() (*Header, *Chunk, error) {
	var (
		prefix []byte // styp, prft, emsg boxes before a moof
		ch     Chunk
	)
	for {
		h, err := p.br.Next()
		if err != nil {
			return nil, nil, err // io.EOF: boxes before a moof that never came are dropped
		}
		switch h.Type {
		case "ftyp":
			if len(prefix) > 0 {
				return nil, nil, fmt.Errorf("ftyp at byte %d after the start of a chunk: %w", p.br.Offset()-int64(h.Len), media.ErrInvalidMedia)
			}
			hdr, err := p.readHeader(h)
			if err != nil {
				return nil, nil, err
			}
			p.header = hdr
			return hdr, nil, nil
		case "moov":
			return nil, nil, fmt.Errorf("a moov without an ftyp before it: %w", ErrNoHeader)
		case "styp", "prft", "emsg":
			if p.header == nil {
				return nil, nil, fmt.Errorf("media (a %q box) before the CMAF header (ftyp+moov): %w", h.Type, ErrNoHeader)
			}
			if h.Type == "styp" && len(prefix) > 0 {
				return nil, nil, fmt.Errorf("styp at byte %d after other boxes of its chunk: %w", p.br.Offset()-int64(h.Len), media.ErrInvalidMedia)
			}
			if int64(len(prefix))+h.Size > p.lim.maxBox() {
				return nil, nil, fmt.Errorf("the boxes before a moof are over the %d-byte limit: %w", p.lim.maxBox(), ErrTooLarge)
			}
			at := len(prefix)
			if prefix, err = p.br.Append(prefix, h); err != nil {
				return nil, nil, err
			}
			box := prefix[at+h.Len:]
			switch h.Type {
			case "styp":
				ch.Styp = true
				if ch.Last, err = hasBrand(box, "lmsg"); err != nil {
					return nil, nil, err
				}
				p.last = p.last || ch.Last
			case "prft":
				if ch.Prft, err = parsePrft(box); err != nil {
					return nil, nil, err
				}
			}
		case "moof":
			if p.header == nil {
				return nil, nil, fmt.Errorf("media (a moof) before the CMAF header (ftyp+moov): %w", ErrNoHeader)
			}
			if ch.Data, err = p.readFragment(prefix, h); err != nil {
				return nil, nil, err
			}
			if ch.Fragment, err = p.parseFragment(ch.Data); err != nil {
				return nil, nil, err
			}
			return nil, &ch, nil
		case "mdat":
			return nil, nil, fmt.Errorf("mdat at byte %d without a moof before it: %w", p.br.Offset()-int64(h.Len), media.ErrInvalidMedia)
		default: // sidx, free, mfra, …: nothing a reader of the channel needs
			if err := p.br.Skip(h); err != nil {
				return nil, nil, err
			}
		}
	}
}

// readHeader reads a CMAF header from its ftyp h to its moov.
func (p *Parser) readHeader(ftyp BoxHeader) (*Header, error) {
	b, err := p.br.Append(nil, ftyp)
	if err != nil {
		return nil, err
	}
	for {
		h, err := p.br.Next()
		switch {
		case err == io.EOF:
			return nil, fmt.Errorf("the body ends before the moov of its CMAF header: %w", ErrNoHeader)
		case err != nil:
			return nil, err
		}
		switch h.Type {
		case "moov":
			if int64(len(b))+h.Size > p.lim.maxBox() {
				return nil, fmt.Errorf("the CMAF header is over the %d-byte limit: %w", p.lim.maxBox(), ErrTooLarge)
			}
			if b, err = p.br.Append(b, h); err != nil {
				return nil, err
			}
			return parseHeader(b)
		case "ftyp", "styp", "prft", "emsg", "moof", "mdat":
			return nil, fmt.Errorf("a %q box where the moov of the CMAF header belongs: %w", h.Type, ErrNoHeader)
		default:
			if err := p.br.Skip(h); err != nil {
				return nil, err
			}
		}
	}
}

// parseHeader checks a CMAF header (ftyp+moov) and reads its track and btrt.
func parseHeader(b []byte) (*Header, error) {
	in, err := cmaf.ParseInit(b)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrNoHeader)
	}
	return &Header{Bytes: b, Init: in, Bitrate: btrtBitrate(b)}, nil
}

// btrtBitrate is the bitrate in the sample entry's btrt box, or 0. ParseInit has
// checked the header already; a panic in the decoder still only means "no btrt".
func btrtBitrate(b []byte) (rate int) {
	defer func() {
		if recover() != nil {
			rate = 0
		}
	}()
	f, err := mp4.DecodeFile(bytes.NewReader(b))
	if err != nil || f.Moov == nil || len(f.Moov.Traks) != 1 {
		return 0
	}
	stsd := f.Moov.Traks[0].Mdia.Minf.Stbl.Stsd
	var bt *mp4.BtrtBox
	switch {
	case stsd.AvcX != nil:
		bt = stsd.AvcX.Btrt
	case stsd.Mp4a != nil:
		bt = stsd.Mp4a.Btrt
	}
	if bt == nil {
		return 0
	}
	return int(max(bt.MaxBitrate, bt.AvgBitrate))
}

// readFragment reads a moof h and the mdat that must follow it, after prefix, into
// one slice: the chunk's bytes.
func (p *Parser) readFragment(prefix []byte, moof BoxHeader) ([]byte, error) {
	b, err := p.br.Append(prefix, moof)
	if err != nil {
		return nil, err
	}
	h, err := p.br.Next()
	switch {
	case err == io.EOF:
		return nil, fmt.Errorf("the body ends after a moof, before its mdat: %w (%w)", io.ErrUnexpectedEOF, media.ErrInvalidMedia)
	case err != nil:
		return nil, err
	case h.Type != "mdat":
		return nil, fmt.Errorf("a %q box where the mdat of a moof belongs: %w", h.Type, media.ErrInvalidMedia)
	}
	return p.br.Append(b, h)
}

// parseFragment checks one chunk: a single fragment of the header's track.
func (p *Parser) parseFragment(b []byte) (cmaf.Fragment, error) {
	seg, err := cmaf.ParseSegment(b, p.header.Init.Defaults)
	if err != nil {
		return cmaf.Fragment{}, err
	}
	f := seg.Fragments[0]
	if f.TrackID != p.header.Init.TrackID {
		return f, fmt.Errorf("a fragment of track ID %d in a stream whose header has track ID %d: %w", f.TrackID, p.header.Init.TrackID, media.ErrInvalidMedia)
	}
	return f, nil
}

// hasBrand reports whether a styp body (major brand, minor version, compatible
// brands) names brand.
func hasBrand(body []byte, brand string) (bool, error) {
	if len(body) < 8 || len(body)%4 != 0 {
		return false, fmt.Errorf("styp of %d bytes: %w", len(body), media.ErrInvalidMedia)
	}
	if string(body[:4]) == brand {
		return true, nil
	}
	for i := 8; i+4 <= len(body); i += 4 {
		if string(body[i:i+4]) == brand {
			return true, nil
		}
	}
	return false, nil
}

// ntpEpoch is NTP's time 0.
var ntpEpoch = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// parsePrft reads a prft body: version and flags, reference track, NTP time, media
// time (32 bits in version 0, 64 in version 1).
func parsePrft(body []byte) (*Prft, error) {
	if len(body) < 20 {
		return nil, fmt.Errorf("prft of %d bytes: %w", len(body), media.ErrInvalidMedia)
	}
	vf := binary.BigEndian.Uint32(body)
	p := &Prft{TrackID: binary.BigEndian.Uint32(body[4:]), Flags: vf & 0xffffff}
	ntp := binary.BigEndian.Uint64(body[8:])
	secs, frac := ntp>>32, ntp&0xffffffff
	p.Wallclock = ntpEpoch.Add(time.Duration(secs)*time.Second + time.Duration(frac*uint64(time.Second)>>32))
	switch version := vf >> 24; {
	case version == 0 && len(body) >= 20:
		p.MediaTime = uint64(binary.BigEndian.Uint32(body[16:]))
	case version == 1 && len(body) >= 24:
		p.MediaTime = binary.BigEndian.Uint64(body[16:])
	default:
		return nil, fmt.Errorf("prft version %d of %d bytes: %w", version, len(body), media.ErrInvalidMedia)
	}
	return p, nil
}
