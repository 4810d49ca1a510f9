package fdsp

// assemble rebuilds an access unit's NAL units from its map (the critical prefix
// of each) and the UDP fragments that arrived, keyed by sequence number, in any
// order and with duplicates already folded. A NAL unit is kept up to its first
// missing byte: a decoder conceals a slice cut short, never one with a gap. got
// counts the access unit's packets that arrived; whole says every byte did. The
// claimed NAL sizes are not trusted for allocation: only bytes that arrived are
// stored.
func assemble(a AU, frags map[uint16]Fragment) (nals [][]byte, got int, whole bool) {
	nals = make([][]byte, len(a.NALs))
	for j, n := range a.NALs {
		nals[j] = append([]byte(nil), n.Critical...)
	}
	for i := 0; i < int(a.UDPPackets); i++ {
		f, ok := frags[a.FirstSeq+uint16(i)]
		if !ok || f.Timestamp != uint32(int64(a.DTS)+int64(a.CTO)) {
			continue
		}
		got++
		j := int(f.NAL)
		if j >= len(nals) || f.Size != a.NALs[j].Size || int(f.Offset) != len(nals[j]) {
			continue // a gap before it (or not this access unit's): the NAL unit ends at the gap
		}
		nals[j] = append(nals[j], f.Data...)
	}
	whole = got == int(a.UDPPackets)
	for j, n := range a.NALs {
		if len(nals[j]) != int(n.Size) {
			whole = false
		}
	}
	return nals, got, whole
}

// udpPackets is how many RTP packets an access unit makes when all of it goes over
// UDP (pure UDP's count): the one denominator of PLR in every mode, so PLRs compare
// as shares of the same stream.
func udpPackets(a AU) int {
	n := 0
	for _, p := range a.NALs {
		n += (int(p.Size) + MaxPayload - 1) / MaxPayload
	}
	return n
}
