package main

import "time"

// tsReceiver follows an MPEG transport stream as it arrives in datagrams (outside
// bytes: what srt-live-transmit hands on) and records when each video access
// unit began to arrive and how many TS packets the continuity counters say are
// missing. It never trusts a length it reads beyond the packet it is in.
type tsReceiver struct {
	pmtPID   int // -1 until the PAT names it
	videoPID int // -1 until the PMT names an H.264 stream
	cc       map[uint16]byte
	// Datagrams and Packets arrived; Malformed TS packets (no sync byte, short).
	Datagrams, Packets, Malformed int
	// CCGaps counts TS packets missing by the continuity counters (a gap of 16 or
	// more looks smaller: a lower bound).
	CCGaps int
	AUs    []auArrival
	last   time.Time
}

// auArrival is one video access unit: its DTS (90 kHz) and when its first and
// (once the next began, or the stream ended) last bytes arrived.
type auArrival struct {
	DTS   uint64
	Start time.Time
	Ready time.Time
}

func newTSReceiver() *tsReceiver {
	return &tsReceiver{pmtPID: -1, videoPID: -1, cc: map[uint16]byte{}}
}

// datagram takes one datagram of whole TS packets that arrived at at.
func (r *tsReceiver) datagram(b []byte, at time.Time) {
	if allNull(b) {
		return // the harness's flush after the stream (nullFlush), not the stream
	}
	r.Datagrams++
	r.last = at
	for len(b) > 0 {
		if len(b) < 188 || b[0] != 0x47 {
			r.Malformed++
			return
		}
		r.packet(b[:188], at)
		b = b[188:]
	}
}

func (r *tsReceiver) packet(p []byte, at time.Time) {
	r.Packets++
	pid := uint16(p[1]&0x1F)<<8 | uint16(p[2])
	pusi := p[1]&0x40 != 0
	afc := p[3] >> 4 & 3
	if pid == 0x1FFF {
		return // null packets carry no counter
	}
	cc := p[3] & 0xF
	if afc&1 != 0 { // the counter steps only with a payload
		if prev, ok := r.cc[pid]; ok && cc != prev {
			r.CCGaps += int((cc - prev - 1) & 0xF)
		}
		r.cc[pid] = cc
	}
	payload := p[4:]
	if afc&2 != 0 {
		if len(payload) < 1 || int(payload[0]) >= len(payload) {
			r.Malformed++
			return
		}
		payload = payload[1+int(payload[0]):]
	}
	if afc&1 == 0 || !pusi {
		return
	}
	switch {
	case pid == 0:
		if s := section(payload); len(s) >= 12 {
			r.pmtPID = int(s[10]&0x1F)<<8 | int(s[11])
		}
	case int(pid) == r.pmtPID:
		r.parsePMT(section(payload))
	case int(pid) == r.videoPID:
		if dts, ok := pesDTS(payload); ok {
			r.addAU(dts, at)
		}
	}
}

// section is the PSI section after the pointer field (nil if it does not fit).
func section(p []byte) []byte {
	if len(p) < 1 || 1+int(p[0]) > len(p) {
		return nil
	}
	return p[1+int(p[0]):]
}

// parsePMT finds the first H.264 elementary stream.
func (r *tsReceiver) parsePMT(s []byte) {
	if len(s) < 12 || s[0] != 2 {
		return
	}
	end := min(len(s), 3+(int(s[1]&0xF)<<8|int(s[2]))) - 4 // the CRC
	i := 12 + (int(s[10]&0xF)<<8 | int(s[11]))
	for i+5 <= end {
		typ, pid, n := s[i], int(s[i+1]&0x1F)<<8|int(s[i+2]), int(s[i+3]&0xF)<<8|int(s[i+4])
		if typ == 0x1B {
			r.videoPID = pid
			return
		}
		i += 5 + n
	}
}

// pesDTS reads a PES header's DTS (its PTS when there is no DTS).
func pesDTS(p []byte) (uint64, bool) {
	if len(p) < 14 || p[0] != 0 || p[1] != 0 || p[2] != 1 || p[7]&0x80 == 0 {
		return 0, false
	}
	t := p[9:14]
	if p[7]&0x40 != 0 {
		if len(p) < 19 {
			return 0, false
		}
		t = p[14:19]
	}
	return uint64(t[0]>>1&7)<<30 | uint64(t[1])<<22 | uint64(t[2]>>1)<<15 | uint64(t[3])<<7 | uint64(t[4]>>1), true
}

func (r *tsReceiver) addAU(dts uint64, at time.Time) {
	if n := len(r.AUs); n > 0 {
		r.AUs[n-1].Ready = at // the previous one is complete when the next begins
	}
	r.AUs = append(r.AUs, auArrival{DTS: dts, Start: at})
}

// finish marks the last access unit complete at the last datagram.
func (r *tsReceiver) finish() {
	if n := len(r.AUs); n > 0 && r.AUs[n-1].Ready.IsZero() {
		r.AUs[n-1].Ready = r.last
	}
}

// allNull says whether a datagram is whole null TS packets (PID 0x1FFF) only.
func allNull(b []byte) bool {
	if len(b) == 0 || len(b)%188 != 0 {
		return false
	}
	for off := 0; off < len(b); off += 188 {
		if b[off] != 0x47 || b[off+1]&0x1f != 0x1f || b[off+2] != 0xff {
			return false
		}
	}
	return true
}
