package fdsp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The TCP path (docs/protocols/fdsp.md is the reference) is a sequence of frames:
//
//	u8   type
//	u32  payload length (big-endian, at most MaxFrame)
//	...  payload
//
// Integers are big-endian; strings are a u16 length and UTF-8 bytes.

// FrameType says what a TCP frame carries.
type FrameType uint8

const (
	FrameHello       FrameType = 1  // client → server: open or resume a session
	FrameSession     FrameType = 2  // server → client: the session's token, SSRC, UDP port
	FrameBound       FrameType = 3  // server → client: the UDP peer is bound
	FrameSubstream   FrameType = 4  // server → client: a substream begins (its TCP part follows)
	FrameAU          FrameType = 5  // server → client: one access unit's map and critical bytes
	FrameAudio       FrameType = 6  // server → client: one audio frame
	FrameSubstreamOK FrameType = 7  // server → client: the substream's TCP part is complete
	FrameEnd         FrameType = 8  // server → client: the stream ended (reason)
	FrameReport      FrameType = 9  // client → server: PLR and TCP lateness of a substream
	FrameError       FrameType = 10 // server → client: the session was refused or failed
	FrameAudioConfig FrameType = 11 // server → client: the audio's AAC AudioSpecificConfig (audio.go)
	FrameTCPReport   FrameType = 12 // client → server: how long a substream's TCP part took and its slack
	FrameNACK        FrameType = 13 // client → server: send these UDP packets again (nack.go; Hello.Repair)
)

// MaxFrame bounds a frame's payload: one access unit's critical part fits with room.
const MaxFrame = 16 << 20

// ErrFormat wraps every error about malformed frames and datagrams (outside bytes).
var ErrFormat = errors.New("fdsp: malformed")

// Mode says which path carries what.
type Mode uint8

const (
	ModeFDSP Mode = 0 // critical part on TCP, the rest on UDP
	ModeTCP  Mode = 1 // every media byte on TCP (baseline)
	ModeUDP  Mode = 2 // every media byte on UDP (baseline); the map and audio stay on TCP
)

func (m Mode) String() string {
	switch m {
	case ModeFDSP:
		return "fdsp"
	case ModeTCP:
		return "fdsp-tcp"
	case ModeUDP:
		return "fdsp-udp"
	}
	return fmt.Sprintf("mode%d", uint8(m))
}

// BPAuto in Hello.BP asks the server to move BP on the fly from the client's reports.
const BPAuto = 255

// TokenLen is the size of a session token.
const TokenLen = 16

// Token names a session; it binds the UDP peer to the TCP handshake and lets a
// client resume after its TCP connection dropped.
type Token [TokenLen]byte

const helloMagic = 0x46445350 // "FDSP"

// Hello opens a session (zero Token) or resumes one at substream Resume.
type Hello struct {
	Mode   Mode
	BP     uint8 // 0..100 or BPAuto
	Token  Token
	Resume uint32
	Stream string // "vod/NAME" or "live/NAME"
	Track  string // video track ID; empty: the highest rung
	// Repair says the client will NACK lost UDP packets (flags bit 0; our fix,
	// not the study's design): adaptive BP then starts at bpStartRepair.
	Repair bool
}

const helloRepair = 1 // Hello flags bit 0

// Session is the server's answer to a Hello.
type Session struct {
	Token       Token
	SSRC        uint32
	UDPPort     uint16
	SubstreamMS uint32
}

// Substream starts one substream's TCP part.
type Substream struct {
	Index      uint32
	BP         uint8  // BP in force for this substream
	AUs        uint32 // access units that follow
	UDPPackets uint32 // RTP packets the substream's UDP part has
	FirstDTS   uint64 // 90 kHz
	Duration   uint32 // 90 kHz
	Params     [][]byte
}

// NALPart is one NAL unit of an access unit: its size and the critical prefix.
type NALPart struct {
	Size     uint32
	Critical []byte // the first len(Critical) bytes; the rest comes over UDP
}

// AU is one access unit's map: where its bytes are, and the critical ones.
type AU struct {
	DTS        uint64 // 90 kHz
	CTO        int32  // PTS − DTS, 90 kHz
	Duration   uint32 // 90 kHz
	FirstSeq   uint16 // RTP sequence number of its first UDP packet
	UDPPackets uint16
	NALs       []NALPart
}

// Audio is one audio frame.
type Audio struct {
	PTS  uint64 // 90 kHz
	Data []byte
}

// Report is the client's measure of one substream, the input of adaptive BP.
type Report struct {
	Substream uint32
	Lost      uint32 // UDP packets lost or late
	Expected  uint32 // UDP packets of the substream
	LateMS    uint32 // how long after its deadline the substream's TCP part completed
	// Repaired is how many of the substream's UDP packets were missing and came
	// in time on a resend (NACK): Lost + Repaired is what the path lost. Sent
	// only by a client that repairs (an optional fifth u32).
	Repaired uint32
}

// TCPReport is the client's measure of one substream's TCP part, sent as soon as
// the part is complete (SubstreamOK), not after the play-out as Report is: the
// input adaptive BP predicts the next substream's TCP time from.
type TCPReport struct {
	Substream uint32 `json:"substream"`
	// TCPms is how long the part took to arrive: from its Substream frame to its
	// SubstreamOK frame.
	TCPms uint32 `json:"tcp_ms"`
	// SlackMS is how early the part was complete before its first access unit was
	// due (negative: how late); meaningful only when SlackKnown. The start-up
	// substream, which starts the playout clock, has none.
	SlackMS    int32 `json:"slack_ms"`
	SlackKnown bool  `json:"slack_known"`
}

const tcpReportSlackKnown = 1 // TCPReport flags bit 0

// Marshal encodes the TCPReport.
func (m TCPReport) Marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, m.Substream)
	b = binary.BigEndian.AppendUint32(b, m.TCPms)
	b = binary.BigEndian.AppendUint32(b, uint32(m.SlackMS))
	var flags byte
	if m.SlackKnown {
		flags |= tcpReportSlackKnown
	}
	return append(b, flags)
}

// ParseTCPReport decodes a TCPReport (outside bytes); flag bits it does not know
// are an error, so a later meaning cannot be misread.
func ParseTCPReport(p []byte) (TCPReport, error) {
	r := &reader{b: p}
	m := TCPReport{Substream: r.u32(), TCPms: r.u32(), SlackMS: int32(r.u32())}
	flags := r.u8()
	if err := r.done(); err != nil {
		return m, err
	}
	if flags&^tcpReportSlackKnown != 0 {
		return m, fmt.Errorf("%w: TCP report flags %#x", ErrFormat, flags)
	}
	m.SlackKnown = flags&tcpReportSlackKnown != 0
	if !m.SlackKnown && m.SlackMS != 0 {
		return m, fmt.Errorf("%w: TCP report slack %d ms without its flag", ErrFormat, m.SlackMS)
	}
	return m, nil
}

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, t FrameType, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("fdsp: frame of %d bytes exceeds %d", len(payload), MaxFrame)
	}
	var h [5]byte
	h[0] = byte(t)
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// ReadFrame reads one frame; the payload is freshly allocated.
func ReadFrame(r *bufio.Reader) (FrameType, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes", ErrFormat, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return FrameType(h[0]), b, nil
}

// reader decodes a payload, remembering the first error (outside bytes).
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: payload too short", ErrFormat)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) str() string { return string(r.take(int(r.u16()))) }

// done fails on trailing bytes.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(r.b))
	}
	return r.err
}

func appendStr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// Marshal encodes the Hello.
func (h Hello) Marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, helloMagic)
	var flags byte
	if h.Repair {
		flags |= helloRepair
	}
	b = append(b, 1, byte(h.Mode), h.BP, flags)
	b = append(b, h.Token[:]...)
	b = binary.BigEndian.AppendUint32(b, h.Resume)
	b = appendStr(b, h.Stream)
	return appendStr(b, h.Track)
}

// ParseHello decodes a Hello (outside bytes).
func ParseHello(p []byte) (Hello, error) {
	r := &reader{b: p}
	var h Hello
	if r.u32() != helloMagic || r.u8() != 1 {
		return h, fmt.Errorf("%w: not an FDSP version 1 hello", ErrFormat)
	}
	h.Mode, h.BP = Mode(r.u8()), r.u8()
	h.Repair = r.u8()&helloRepair != 0 // other bits: reserved, ignored as before
	copy(h.Token[:], r.take(TokenLen))
	h.Resume = r.u32()
	h.Stream, h.Track = r.str(), r.str()
	if err := r.done(); err != nil {
		return h, err
	}
	if h.Mode > ModeUDP {
		return h, fmt.Errorf("%w: mode %d", ErrFormat, h.Mode)
	}
	if h.BP > 100 && h.BP != BPAuto {
		return h, fmt.Errorf("%w: BP %d", ErrFormat, h.BP)
	}
	return h, nil
}

// Marshal encodes the Session.
func (s Session) Marshal() []byte {
	b := append([]byte(nil), s.Token[:]...)
	b = binary.BigEndian.AppendUint32(b, s.SSRC)
	b = binary.BigEndian.AppendUint16(b, s.UDPPort)
	return binary.BigEndian.AppendUint32(b, s.SubstreamMS)
}

// ParseSession decodes a Session.
func ParseSession(p []byte) (Session, error) {
	r := &reader{b: p}
	var s Session
	copy(s.Token[:], r.take(TokenLen))
	s.SSRC, s.UDPPort, s.SubstreamMS = r.u32(), r.u16(), r.u32()
	return s, r.done()
}

// Marshal encodes the Substream.
func (s Substream) Marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, s.Index)
	b = append(b, s.BP)
	b = binary.BigEndian.AppendUint32(b, s.AUs)
	b = binary.BigEndian.AppendUint32(b, s.UDPPackets)
	b = binary.BigEndian.AppendUint64(b, s.FirstDTS)
	b = binary.BigEndian.AppendUint32(b, s.Duration)
	b = append(b, byte(len(s.Params)))
	for _, p := range s.Params {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

// ParseSubstream decodes a Substream.
func ParseSubstream(p []byte) (Substream, error) {
	r := &reader{b: p}
	var s Substream
	s.Index, s.BP, s.AUs, s.UDPPackets = r.u32(), r.u8(), r.u32(), r.u32()
	s.FirstDTS, s.Duration = r.u64(), r.u32()
	n := int(r.u8())
	for i := 0; i < n && r.err == nil; i++ {
		s.Params = append(s.Params, r.take(int(r.u16())))
	}
	return s, r.done()
}

// Marshal encodes the AU.
func (a AU) Marshal() []byte {
	b := binary.BigEndian.AppendUint64(nil, a.DTS)
	b = binary.BigEndian.AppendUint32(b, uint32(a.CTO))
	b = binary.BigEndian.AppendUint32(b, a.Duration)
	b = binary.BigEndian.AppendUint16(b, a.FirstSeq)
	b = binary.BigEndian.AppendUint16(b, a.UDPPackets)
	b = binary.BigEndian.AppendUint16(b, uint16(len(a.NALs)))
	for _, n := range a.NALs {
		b = binary.BigEndian.AppendUint32(b, n.Size)
		b = binary.BigEndian.AppendUint32(b, uint32(len(n.Critical)))
		b = append(b, n.Critical...)
	}
	return b
}

// ParseAU decodes an AU; a critical part longer than its NAL unit is an error.
func ParseAU(p []byte) (AU, error) {
	r := &reader{b: p}
	var a AU
	a.DTS, a.CTO, a.Duration = r.u64(), int32(r.u32()), r.u32()
	a.FirstSeq, a.UDPPackets = r.u16(), r.u16()
	n := int(r.u16())
	for i := 0; i < n && r.err == nil; i++ {
		size, crit := r.u32(), r.u32()
		if crit > size {
			return a, fmt.Errorf("%w: critical part %d of a %d-byte NAL unit", ErrFormat, crit, size)
		}
		if size > MaxFrame {
			return a, fmt.Errorf("%w: NAL unit of %d bytes", ErrFormat, size)
		}
		a.NALs = append(a.NALs, NALPart{Size: size, Critical: r.take(int(crit))})
	}
	return a, r.done()
}

// Marshal encodes the Audio.
func (a Audio) Marshal() []byte {
	return append(binary.BigEndian.AppendUint64(nil, a.PTS), a.Data...)
}

// ParseAudio decodes an Audio.
func ParseAudio(p []byte) (Audio, error) {
	r := &reader{b: p}
	a := Audio{PTS: r.u64()}
	a.Data = r.b
	return a, r.err
}

// Marshal encodes the Report.
func (m Report) Marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, m.Substream)
	b = binary.BigEndian.AppendUint32(b, m.Lost)
	b = binary.BigEndian.AppendUint32(b, m.Expected)
	b = binary.BigEndian.AppendUint32(b, m.LateMS)
	if m.Repaired > 0 {
		b = binary.BigEndian.AppendUint32(b, m.Repaired)
	}
	return b
}

// ParseReport decodes a Report.
func ParseReport(p []byte) (Report, error) {
	r := &reader{b: p}
	m := Report{Substream: r.u32(), Lost: r.u32(), Expected: r.u32(), LateMS: r.u32()}
	if len(r.b) > 0 {
		if m.Repaired = r.u32(); m.Repaired == 0 && r.err == nil {
			return m, fmt.Errorf("%w: a Report's repaired count is left out when 0", ErrFormat)
		}
	}
	if err := r.done(); err != nil {
		return m, err
	}
	if uint64(m.Lost)+uint64(m.Repaired) > uint64(m.Expected) {
		return m, fmt.Errorf("%w: %d lost and %d repaired of %d packets", ErrFormat, m.Lost, m.Repaired, m.Expected)
	}
	return m, nil
}

// u32Payload encodes a substream index (FrameSubstreamOK).
func u32Payload(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// parseU32 decodes a substream index.
func parseU32(p []byte) (uint32, error) {
	r := &reader{b: p}
	v := r.u32()
	return v, r.done()
}
