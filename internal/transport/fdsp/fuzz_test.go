package fdsp

import (
	"bufio"
	"bytes"
	"testing"
	"time"
)

func seedDatagrams() [][]byte {
	nal := bytes.Repeat([]byte{0x41, 0x9a, 0x20, 0x47}, 700) // 2800 bytes, a P slice
	f := Fragment{Seq: 7, Timestamp: 3600, SSRC: 0xfeed, Substream: 2, NAL: 1}
	return [][]byte{
		AppendRTP(nil, f, nal[:100], 0, 100),         // single NAL unit
		AppendRTP(nil, f, nal, 0, MaxPayload),        // FU-A start
		AppendRTP(nil, f, nal, 1300, MaxPayload),     // FU-A middle
		AppendRTP(nil, f, nal, 2400, 400),            // FU-A end
		resent(AppendRTP(nil, f, nal[:100], 0, 100)), // a resend (payload type 97)
		AppendBind(nil, Token{1, 2, 3}),              // bind
		{0x90, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},   // header only
	}
}

func resent(d []byte) []byte { d[1] = d[1]&0x80 | resendPT; return d }

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
	_ = WriteFrame(&b, FrameReport, Report{Substream: 2, Lost: 1, Expected: 9, Repaired: 3}.Marshal())
	_ = WriteFrame(&b, FrameNACK, NACK{SSRC: 9, Substream: 2, Items: []NACKItem{{PID: 4, BLP: 0x8001}}}.Marshal())
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
			case FrameNACK:
				if m, err := ParseNACK(p); err == nil {
					again = m.Marshal()
				}
			}
			if again != nil && !bytes.Equal(again, p) && typ != FrameHello {
				t.Fatalf("frame %d: %x re-encodes as %x", typ, p, again)
			}
		}
	})
}

// FuzzNACK: no NACK payload makes the parser or the server's resender panic;
// the resender sends only packets of the session's substreams it has sent, each
// at most once per NACK, within its budget.
func FuzzNACK(f *testing.F) {
	f.Add(NACK{SSRC: 7, Substream: 0, Items: []NACKItem{{PID: 1, BLP: 0xffff}, {PID: 1}}}.Marshal())
	f.Add(NACK{SSRC: 7, Substream: 1, Items: []NACKItem{{PID: 65535, BLP: 0xffff}}}.Marshal())
	f.Add([]byte{0, 0, 0, 7, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		n, err := ParseNACK(p)
		if err != nil {
			return
		}
		if len(n.Items) == 0 || len(n.Items) > MaxNACKItems {
			t.Fatalf("parsed %d items", len(n.Items))
		}
		r := newResender()
		r.begin(testJob(0, 40, 100, time.Second))
		r.sentUpTo(0, 30)
		out := r.take(n, 7)
		if len(out) > 30 {
			t.Fatalf("%d resends of 30 packets sent", len(out))
		}
		seen := map[uint16]bool{}
		for _, d := range out {
			fr, err := ParseRTP(d)
			if err != nil || !fr.Resent || fr.Seq >= 30 || seen[fr.Seq] || n.SSRC != 7 || n.Substream != 0 {
				t.Fatalf("resend %+v %v for %+v", fr, err, n)
			}
			seen[fr.Seq] = true
		}
	})
}
