package fdsp

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// NACK asks the server to send some of a substream's UDP packets again (our
// repair of the UDP path, not the FDSP study's design: there a lost UDP packet is
// never recovered). Its items have RFC 4585's generic NACK meaning: PID is a lost
// packet's sequence number and bit i of BLP (least significant first) says that
// PID+i+1 is lost too. It travels on the session's TCP connection (FrameNACK), so
// it is bound to the session by the connection itself; SSRC must still be the
// session's, as RFC 4585's media source field.
type NACK struct {
	SSRC      uint32
	Substream uint32
	Items     []NACKItem
}

// NACKItem is one RFC 4585 generic NACK field.
type NACKItem struct {
	PID uint16
	BLP uint16
}

// MaxNACKItems bounds a NACK frame: 64 items name up to 1 088 packets, more than
// one substream's worth of losses the repair budget would ever resend at once.
const MaxNACKItems = 64

// Marshal encodes the NACK: u32 SSRC, u32 substream, u8 count, count × (u16 PID,
// u16 BLP).
func (n NACK) Marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, n.SSRC)
	b = binary.BigEndian.AppendUint32(b, n.Substream)
	b = append(b, byte(len(n.Items)))
	for _, it := range n.Items {
		b = binary.BigEndian.AppendUint16(b, it.PID)
		b = binary.BigEndian.AppendUint16(b, it.BLP)
	}
	return b
}

// ParseNACK decodes a NACK (outside bytes): 1 to MaxNACKItems items, nothing after.
func ParseNACK(p []byte) (NACK, error) {
	r := &reader{b: p}
	n := NACK{SSRC: r.u32(), Substream: r.u32()}
	count := int(r.u8())
	if r.err == nil && (count == 0 || count > MaxNACKItems) {
		return n, fmt.Errorf("%w: NACK with %d items", ErrFormat, count)
	}
	for i := 0; i < count && r.err == nil; i++ {
		n.Items = append(n.Items, NACKItem{PID: r.u16(), BLP: r.u16()})
	}
	return n, r.done()
}

// Seqs lists the sequence numbers the NACK names, each once, in order. Sequence
// numbers restart with each substream and a substream has at most 65 535
// packets, so PID+i+1 past 65 535 names nothing and is left out (no wrap).
func (n NACK) Seqs() []uint16 {
	out := make([]uint16, 0, len(n.Items))
	for _, it := range n.Items {
		out = append(out, it.PID)
		for i := 0; i < 16; i++ {
			if it.BLP&(1<<i) != 0 && int(it.PID)+i+1 <= 0xffff {
				out = append(out, it.PID+uint16(i)+1)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// nackItems packs sorted, distinct sequence numbers into RFC 4585 items.
func nackItems(seqs []uint16) []NACKItem {
	var out []NACKItem
	for _, s := range seqs {
		if k := len(out) - 1; k >= 0 && int(s) > int(out[k].PID) && int(s)-int(out[k].PID) <= 16 {
			out[k].BLP |= 1 << (int(s) - int(out[k].PID) - 1)
			continue
		}
		out = append(out, NACKItem{PID: s})
	}
	return out
}

// resendPT is the RTP payload type of a packet sent again on a NACK: the same
// bytes with payload type 97 instead of 96, so the client can tell a repair
// from a late original (RFC 4588 would use a separate stream; the packets here
// already carry everything needed to place them).
const resendPT = 97
