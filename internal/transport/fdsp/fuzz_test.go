package fdsp

import (
	"bufio"
	"bytes"
	"testing"
)

func seedDatagrams() [][]byte {
	nal := bytes.Repeat([]byte{0x41, 0x9a, 0x20, 0x47}, 700) // 2800 bytes, a P slice
	f := Fragment{Seq: 7, Timestamp: 3600, SSRC: 0xfeed, Substream: 2, NAL: 1}
	return [][]byte{
		AppendRTP(nil, f, nal[:100], 0, 100),       // single NAL unit
		AppendRTP(nil, f, nal, 0, MaxPayload),      // FU-A start
		AppendRTP(nil, f, nal, 1300, MaxPayload),   // FU-A middle
		AppendRTP(nil, f, nal, 2400, 400),          // FU-A end
		AppendBind(nil, Token{1, 2, 3}),            // bind
		{0x90, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, // header only
	}
}

// FuzzDatagram: no datagram makes the parsers panic, and a parsed fragment lies
// inside the NAL unit it names.
func FuzzDatagram(f *testing.F) {
	for _, d := range seedDatagrams() {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if fr, err := ParseRTP(d); err == nil {
			if uint64(fr.Offset)+uint64(len(fr.Data)) > uint64(fr.Size) || len(fr.Data) == 0 {
				t.Fatalf("fragment %d+%d of %d", fr.Offset, len(fr.Data), fr.Size)
			}
		}
		_, _ = ParseBind(d)
	})
}

func seedFrames() []byte {
	var b bytes.Buffer
	_ = WriteFrame(&b, FrameHello, Hello{Mode: ModeFDSP, BP: 50, Stream: "vod/demo"}.Marshal())
	_ = WriteFrame(&b, FrameSession, Session{SSRC: 9, UDPPort: 9711, SubstreamMS: 10000}.Marshal())
	_ = WriteFrame(&b, FrameSubstream, Substream{Index: 1, BP: 25, AUs: 1, UDPPackets: 3, Params: [][]byte{{0x67, 1}, {0x68, 2}}}.Marshal())
	_ = WriteFrame(&b, FrameAU, AU{DTS: 3600, CTO: 3600, Duration: 3600, UDPPackets: 3, NALs: []NALPart{{Size: 9, Critical: []byte{0x65, 1, 2}}}}.Marshal())
	_ = WriteFrame(&b, FrameAudio, Audio{PTS: 1, Data: []byte{1, 2}}.Marshal())
	_ = WriteFrame(&b, FrameSubstreamOK, u32Payload(1))
	_ = WriteFrame(&b, FrameReport, Report{Substream: 1, Lost: 1, Expected: 3, LateMS: 4}.Marshal())
	_ = WriteFrame(&b, FrameTCPReport, TCPReport{Substream: 2, TCPms: 1800, SlackMS: -250, SlackKnown: true}.Marshal())
	_ = WriteFrame(&b, FrameTCPReport, TCPReport{TCPms: 900}.Marshal()) // the start-up: no slack
	return b.Bytes()
}

// FuzzFrames: a TCP byte stream of any content is read frame by frame and every
// payload parsed without a panic; what parses re-encodes to the same bytes.
func FuzzFrames(f *testing.F) {
	f.Add(seedFrames())
	f.Add([]byte{5, 0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for {
			typ, p, err := ReadFrame(r)
			if err != nil {
				return
			}
			var again []byte
			switch typ {
			case FrameHello:
				if h, err := ParseHello(p); err == nil {
					again = h.Marshal()
				}
			case FrameSession:
				if s, err := ParseSession(p); err == nil {
					again = s.Marshal()
				}
			case FrameSubstream:
				if s, err := ParseSubstream(p); err == nil {
					again = s.Marshal()
				}
			case FrameAU:
				if a, err := ParseAU(p); err == nil {
					again = a.Marshal()
				}
			case FrameAudio:
				if a, err := ParseAudio(p); err == nil {
					again = a.Marshal()
				}
			case FrameReport:
				if m, err := ParseReport(p); err == nil {
					again = m.Marshal()
				}
			case FrameTCPReport:
				if m, err := ParseTCPReport(p); err == nil {
					again = m.Marshal()
				}
			}
			if again != nil && !bytes.Equal(again, p) && typ != FrameHello {
				t.Fatalf("frame %d: %x re-encodes as %x", typ, p, again)
			}
		}
	})
}
