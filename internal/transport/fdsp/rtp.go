package fdsp

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The UDP path carries RTP (RFC 3550) with RFC 6184 H.264 payloads: a NAL unit that
// fits whole in one packet and starts there is a single NAL unit packet; any other
// run of a NAL unit's bytes is an FU-A fragment (type 28), S set when it starts at
// the NAL unit's first byte, E when it ends at its last. The timestamp is the access
// unit's presentation time at 90 kHz (the same number the TCP map carries), the
// marker bit is set on an access unit's last packet, the SSRC is the session's and
// sequence numbers restart at 0 with each substream.
//
// Each packet carries an RFC 8285 one-byte header extension (ID 1, 14 bytes) that
// places its bytes without the TCP map: substream u32, NAL index in the access unit
// u16, byte offset in the NAL unit u32, NAL unit size u32.

const (
	rtpVersion     = 2
	payloadType    = 96 // dynamic: H.264 (a=rtpmap:96 H264/90000)
	rtpHeaderLen   = 12
	extLen         = 4 + 16 // 0xBEDE, length 4 words, one 14-byte element, padding
	fuA            = 28
	bindMagic      = 0x46445342 // "FDSB"
	bindLen        = 4 + TokenLen
	MaxPayload     = 1200 // NAL bytes per packet, below any path MTU seen in the lab
	maxDatagramLen = rtpHeaderLen + extLen + 2 + MaxPayload
)

// Fragment is one RTP packet's NAL bytes and where they go.
type Fragment struct {
	Seq       uint16
	Timestamp uint32 // 90 kHz PTS
	SSRC      uint32
	Marker    bool
	Resent    bool // payload type resendPT: sent again on a NACK
	Substream uint32
	NAL       uint16 // index in the access unit
	Offset    uint32 // of Data[0] in the NAL unit
	Size      uint32 // of the whole NAL unit
	Data      []byte
}

// AppendRTP appends the RTP packet that carries nal[off:off+n] to b. off+n must not
// exceed len(nal) and n must not exceed MaxPayload.
func AppendRTP(b []byte, f Fragment, nal []byte, off, n int) []byte {
	b = append(b, rtpVersion<<6|0x10, payloadType) // X=1
	if f.Marker {
		b[len(b)-1] |= 0x80
	}
	b = binary.BigEndian.AppendUint16(b, f.Seq)
	b = binary.BigEndian.AppendUint32(b, f.Timestamp)
	b = binary.BigEndian.AppendUint32(b, f.SSRC)
	b = append(b, 0xBE, 0xDE, 0, 4, 1<<4|13)
	b = binary.BigEndian.AppendUint32(b, f.Substream)
	b = binary.BigEndian.AppendUint16(b, f.NAL)
	dataOff := off
	if off == 0 && n < len(nal) {
		dataOff = 1 // an FU-A that starts the NAL unit: its header byte travels in the FU header
	}
	b = binary.BigEndian.AppendUint32(b, uint32(dataOff))
	b = binary.BigEndian.AppendUint32(b, uint32(len(nal)))
	b = append(b, 0)
	if off == 0 && n == len(nal) {
		return append(b, nal...) // single NAL unit packet
	}
	hdr := nal[0]
	ind := hdr&0xe0 | fuA
	fu := hdr & 0x1f
	if off == 0 {
		fu |= 0x80
		off, n = 1, n-1
	}
	if off+n == len(nal) {
		fu |= 0x40
	}
	b = append(b, ind, fu)
	return append(b, nal[off:off+n]...)
}

// ParseRTP decodes one datagram of the UDP path (outside bytes). Data aliases p
// except for an FU-A start, whose NAL header byte is rebuilt.
func ParseRTP(p []byte) (Fragment, error) {
	var f Fragment
	if len(p) < rtpHeaderLen+extLen+1 {
		return f, fmt.Errorf("%w: datagram of %d bytes", ErrFormat, len(p))
	}
	if pt := p[1] & 0x7f; p[0] != rtpVersion<<6|0x10 || (pt != payloadType && pt != resendPT) {
		return f, fmt.Errorf("%w: not an FDSP RTP packet (%02x %02x)", ErrFormat, p[0], p[1])
	}
	f.Marker = p[1]&0x80 != 0
	f.Resent = p[1]&0x7f == resendPT
	f.Seq = binary.BigEndian.Uint16(p[2:])
	f.Timestamp = binary.BigEndian.Uint32(p[4:])
	f.SSRC = binary.BigEndian.Uint32(p[8:])
	x := p[rtpHeaderLen:]
	if x[0] != 0xBE || x[1] != 0xDE || binary.BigEndian.Uint16(x[2:]) != 4 || x[4] != 1<<4|13 {
		return f, fmt.Errorf("%w: header extension", ErrFormat)
	}
	f.Substream = binary.BigEndian.Uint32(x[5:])
	f.NAL = binary.BigEndian.Uint16(x[9:])
	f.Offset = binary.BigEndian.Uint32(x[11:])
	f.Size = binary.BigEndian.Uint32(x[15:])
	pl := p[rtpHeaderLen+extLen:]
	if pl[0]&0x80 != 0 {
		return f, fmt.Errorf("%w: forbidden_zero_bit", ErrFormat)
	}
	switch t := pl[0] & 0x1f; {
	case t >= 1 && t <= 23:
		if f.Offset != 0 || uint32(len(pl)) != f.Size {
			return f, fmt.Errorf("%w: single NAL unit packet of %d bytes, extension says %d at %d", ErrFormat, len(pl), f.Size, f.Offset)
		}
		f.Data = pl
	case t == fuA:
		if len(pl) < 3 {
			return f, fmt.Errorf("%w: empty FU-A", ErrFormat)
		}
		fu := pl[1]
		data := pl[2:]
		if fu&0x80 != 0 { // S: rebuild the NAL header
			if f.Offset != 1 {
				return f, fmt.Errorf("%w: FU-A start at offset %d", ErrFormat, f.Offset)
			}
			f.Data = append([]byte{pl[0]&0xe0 | fu&0x1f}, data...)
			f.Offset = 0
		} else {
			if f.Offset == 0 {
				return f, fmt.Errorf("%w: FU-A continuation at offset 0", ErrFormat)
			}
			f.Data = data
		}
		end := uint64(f.Offset) + uint64(len(f.Data))
		if end > uint64(f.Size) || (fu&0x40 != 0) != (end == uint64(f.Size)) {
			return f, fmt.Errorf("%w: FU-A bytes %d..%d of a %d-byte NAL unit", ErrFormat, f.Offset, end, f.Size)
		}
	default:
		return f, fmt.Errorf("%w: RTP payload type %d not used by FDSP", ErrFormat, t)
	}
	if f.Size > MaxFrame {
		return f, fmt.Errorf("%w: NAL unit of %d bytes", ErrFormat, f.Size)
	}
	return f, nil
}

// AppendBind appends the client's bind datagram: the magic and the session token.
func AppendBind(b []byte, t Token) []byte {
	return append(binary.BigEndian.AppendUint32(b, bindMagic), t[:]...)
}

// ParseBind decodes a bind datagram (outside bytes).
func ParseBind(p []byte) (Token, error) {
	var t Token
	if len(p) != bindLen || binary.BigEndian.Uint32(p) != bindMagic {
		return t, fmt.Errorf("%w: not a bind datagram", ErrFormat)
	}
	copy(t[:], p[4:])
	if bytes.Equal(t[:], make([]byte, TokenLen)) {
		return t, fmt.Errorf("%w: zero token", ErrFormat)
	}
	return t, nil
}
