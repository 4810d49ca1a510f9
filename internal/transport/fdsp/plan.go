package fdsp

import (
	"github.com/streambed/streambed/internal/avc"
)

// plannedAU is one access unit ready to send: its map and critical bytes for TCP,
// its datagrams for UDP.
type plannedAU struct {
	au        AU
	datagrams [][]byte
}

// plan splits a substream between the paths. Every NAL byte goes exactly one way:
// the critical prefix (all of it under ModeTCP, none under ModeUDP, avc's split at
// bp under ModeFDSP) into the AU map, the rest into RTP packets numbered from 0.
func plan(ss *substream, ps *avc.ParameterSets, mode Mode, bp int, ssrc uint32) (Substream, []plannedAU) {
	switch mode { // the BP in effect: the baselines carry all or none of the I-frames on TCP
	case ModeTCP:
		bp = 100
	case ModeUDP:
		bp = 0
	}
	hdr := Substream{Index: ss.index, BP: uint8(bp), AUs: uint32(len(ss.aus)), FirstDTS: ss.firstDTS, Duration: ss.dur, Params: ss.params}
	out := make([]plannedAU, len(ss.aus))
	var seq uint16
	for i, a := range ss.aus {
		p := &out[i]
		p.au = AU{DTS: a.dts, CTO: int32(int64(a.pts) - int64(a.dts)), Duration: a.dur, FirstSeq: seq}
		for j, nal := range a.nals {
			k := len(nal)
			switch mode {
			case ModeUDP:
				k = 0
			case ModeFDSP:
				if s, err := ps.Split(nal, bp); err == nil {
					k = s
				} // a slice the parameter sets cannot read stays whole on TCP
			}
			p.au.NALs = append(p.au.NALs, NALPart{Size: uint32(len(nal)), Critical: nal[:k]})
			for off := k; off < len(nal); {
				n := min(MaxPayload, len(nal)-off)
				f := Fragment{Seq: seq, Timestamp: uint32(a.pts), SSRC: ssrc, Substream: ss.index, NAL: uint16(j)}
				p.datagrams = append(p.datagrams, AppendRTP(make([]byte, 0, maxDatagramLen), f, nal, off, n))
				seq++
				off += n
			}
		}
		if n := len(p.datagrams); n > 0 {
			p.datagrams[n-1][1] |= 0x80 // marker: the access unit's last packet
		}
		p.au.UDPPackets = uint16(len(p.datagrams))
		hdr.UDPPackets += uint32(len(p.datagrams))
	}
	return hdr, out
}

// tcpBytes is what substream ss's TCP part would be at bp in mode, frames
// included (Substream, AU maps, audio, SubstreamOK), without planning it: the
// byte count adaptive BP predicts the part's time from.
func tcpBytes(ss *substream, ps *avc.ParameterSets, mode Mode, bp int) int {
	n := 5 + 26 + 5 + 4 // Substream's fixed fields, SubstreamOK
	for _, p := range ss.params {
		n += 2 + len(p)
	}
	for _, a := range ss.aus {
		n += 5 + 22 // AU frame, its fixed fields
		for _, nal := range a.nals {
			k := len(nal)
			switch mode {
			case ModeUDP:
				k = 0
			case ModeFDSP:
				if s, err := ps.Split(nal, bp); err == nil {
					k = s
				}
			}
			n += 8 + k
		}
	}
	for _, a := range ss.audio {
		n += 5 + 8 + len(a.Data)
	}
	return n
}
