package mpegts

// writePSI writes the PAT and the PMT, one packet each.
func (w *Writer) writePSI() {
	w.psi = true
	pat := []byte{0x00, 0, 0, 0, 1, 0xC1, 0, 0, // table 0, length later, TS id 1, version 0, current
		0, 1, 0xE0 | pidPMT>>8, pidPMT & 0xFF} // program 1 → PMT PID
	w.section(pidPAT, pat)
	pmt := []byte{0x02, 0, 0, 0, 1, 0xC1, 0, 0, // table 2, program 1
		0xE0 | PIDVideo>>8, PIDVideo & 0xFF, // PCR PID: the video
		0xF0, 0} // no program descriptors
	pmt = append(pmt, streamTypeH264, 0xE0|PIDVideo>>8, PIDVideo&0xFF, 0xF0, 0)
	if w.audio != nil {
		pmt = append(pmt, streamTypeADTS, 0xE0|PIDAudio>>8, PIDAudio&0xFF, 0xF0, 0)
	}
	w.section(pidPMT, pmt)
}

// section completes a PSI section (its length and CRC) and writes it in one
// packet with a pointer field, padded with 0xFF.
func (w *Writer) section(pid uint16, s []byte) {
	n := len(s) - 3 + 4 // after the length field, CRC included
	s[1], s[2] = 0xB0|byte(n>>8), byte(n)
	crc := crc32MPEG(s)
	s = append(s, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	w.header(pid, true, false)
	w.buf = append(w.buf, 0) // pointer field
	w.buf = append(w.buf, s...)
	for i := 4 + 1 + len(s); i < packetSize; i++ {
		w.buf = append(w.buf, 0xFF)
	}
}

// crc32MPEG is CRC-32/MPEG-2: polynomial 0x04C11DB7, not reflected, initial all
// ones, no final xor.
func crc32MPEG(b []byte) uint32 {
	crc := uint32(0xFFFFFFFF)
	for _, x := range b {
		crc ^= uint32(x) << 24
		for i := 0; i < 8; i++ {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04C11DB7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
