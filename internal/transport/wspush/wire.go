package wspush

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The wire format (docs/protocols/wspush.md is the reference).
//
// Text messages are JSON objects with a "type". Binary messages carry media: a header
// of a few bytes, then the bytes of one init segment or one CMAF chunk, untouched.
//
//	byte 0   kind (bits 0–3) and flags (bits 4–7)
//	byte 1   track index into the "tracks" of the ready message
//	uvarint  sequence: for an init and for a chunk that starts a segment, the segment
//	         number minus the ready message's "base"; for any other chunk, its index
//	         in the segment (1, 2, ...)
//	rest     payload

// Kind is what a binary message carries.
type Kind uint8

const (
	KindInit  Kind = 1 // an init segment (CMAF header); applies from segment Sequence
	KindChunk Kind = 2 // one CMAF chunk (moof+mdat)
)

// Flags of a binary message.
const (
	FlagSegmentStart = 0x10 // the chunk starts a segment (a keyframe for video)
	FlagSegmentEnd   = 0x20 // the chunk completes its segment
	flagsKnown       = FlagSegmentStart | FlagSegmentEnd
)

// MaxHeaderLen bounds the binary header: 2 bytes and a uvarint of up to 64 bits.
const MaxHeaderLen = 2 + binary.MaxVarintLen64

// Frame is one parsed binary message.
type Frame struct {
	Kind     Kind
	Start    bool   // FlagSegmentStart
	End      bool   // FlagSegmentEnd
	Track    uint8  // index into Ready.Tracks
	Sequence uint64 // see the package comment
	Payload  []byte // aliases the message
}

// AppendHeader appends the header of a binary message to b.
func AppendHeader(b []byte, k Kind, start, end bool, track uint8, seq uint64) []byte {
	first := byte(k)
	if start {
		first |= FlagSegmentStart
	}
	if end {
		first |= FlagSegmentEnd
	}
	b = append(b, first, track)
	return binary.AppendUvarint(b, seq)
}

// HeaderLen is the length of the header AppendHeader writes for seq.
func HeaderLen(seq uint64) int {
	n := 3
	for seq >= 0x80 {
		seq >>= 7
		n++
	}
	return n
}

// ErrFrame marks a malformed binary message.
var ErrFrame = errors.New("wspush: malformed binary message")

// ParseFrame parses a binary message. The payload aliases msg.
func ParseFrame(msg []byte) (Frame, error) {
	if len(msg) < 3 {
		return Frame{}, fmt.Errorf("%w: %d bytes, want at least 3", ErrFrame, len(msg))
	}
	k := Kind(msg[0] & 0x0f)
	if k != KindInit && k != KindChunk {
		return Frame{}, fmt.Errorf("%w: unknown kind %d", ErrFrame, k)
	}
	if msg[0]&0xf0&^flagsKnown != 0 {
		return Frame{}, fmt.Errorf("%w: unknown flags %#x", ErrFrame, msg[0]&0xf0)
	}
	seq, n := binary.Uvarint(msg[2:])
	if n <= 0 {
		return Frame{}, fmt.Errorf("%w: bad sequence varint", ErrFrame)
	}
	f := Frame{
		Kind: k, Start: msg[0]&FlagSegmentStart != 0, End: msg[0]&FlagSegmentEnd != 0,
		Track: msg[1], Sequence: seq, Payload: msg[2+n:],
	}
	if k == KindInit && (f.Start || f.End) {
		return Frame{}, fmt.Errorf("%w: segment flags on an init", ErrFrame)
	}
	return f, nil
}

// WSFrameHeaderLen is the RFC 6455 frame header a server adds to an unmasked message
// of n payload bytes sent as one frame (clients add 4 bytes of mask key).
func WSFrameHeaderLen(n int) int {
	switch {
	case n <= 125:
		return 2
	case n <= 65535:
		return 4
	}
	return 10
}

// Close codes the server uses (RFC 6455 section 7.4, and one private code).
const (
	CloseNormal       = 1000 // a VOD asset was sent to its end
	CloseGoingAway    = 1001 // the origin is shutting down
	ClosePolicy       = 1008 // bad, oversized or missing start message; unplayable request
	CloseInternal     = 1011 // the server failed
	CloseTooSlow      = 4008 // the reader cannot keep up even after skipping
	CloseReasonMaxLen = 123  // a close frame's reason fits in 125 bytes with the code
)

// Limits on what a client sends.
const (
	MaxStartLen  = 4096 // bytes of a start or status message
	maxCodecs    = 16
	maxCodecLen  = 64
	maxTracks    = 32 // a relay may name a whole ladder
	maxPolicyLen = 32
)

// Start is the client's first message.
type Start struct {
	Type string `json:"type"` // "start"
	// At is where to start: live (the default, at the latest keyframe) or a position in
	// seconds on the stream's media timeline (VOD: from the start of the asset; live:
	// seconds since the channel's availability start, inside the DVR window). A
	// negative number means that many seconds behind the live edge.
	At At `json:"at"`
	// MaxBitrate caps the video rungs the server may choose (bit/s; 0: no cap).
	MaxBitrate int64 `json:"maxBitrate,omitempty"`
	// Codecs lists the codec strings the client can play ("avc1.64001f", "mp4a.40.2");
	// a track is kept when its codec starts with one of them ("avc1" keeps every
	// H.264 profile). Empty: any.
	Codecs []string `json:"codecs,omitempty"`
	// Policy names the adaptation policy: buffer, tcp or fixed ("" : the channel's).
	Policy string `json:"policy,omitempty"`
	// Tracks names the tracks to start with (one per kind); with policy fixed they
	// are kept for the whole session.
	Tracks []string `json:"tracks,omitempty"`
	// Stats asks for an "adapt" message at every segment boundary.
	Stats bool `json:"stats,omitempty"`
	// Relay asks for every track at once (a relay edge that serves viewers of its
	// own): every video rung after Codecs and MaxBitrate and every audio track, or
	// only those Tracks names (any number per kind), each from its own init and
	// segment starts, with no adaptation. Live channels only.
	Relay bool `json:"relay,omitempty"`
}

// At is the start position: live (the zero value), or a position in seconds.
type At struct {
	Position bool // Seconds was given; false: "live"
	Seconds  float64
}

// AtSeconds is the position s.
func AtSeconds(s float64) At { return At{Position: true, Seconds: s} }

// UnmarshalJSON accepts "live", null or a finite number.
func (a *At) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null", string(b) == `"live"`:
		*a = At{}
		return nil
	case len(b) > 0 && b[0] == '"':
		return fmt.Errorf(`"at" is a string other than "live"`)
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Errorf(`"at" must be "live" or a number of seconds`)
	}
	*a = AtSeconds(v)
	return nil
}

// MarshalJSON writes "live" or the number.
func (a At) MarshalJSON() ([]byte, error) {
	if !a.Position {
		return []byte(`"live"`), nil
	}
	return strconv.AppendFloat(nil, a.Seconds, 'f', -1, 64), nil
}

// ErrStart marks a bad start (or status) message: the server closes with 1008.
var ErrStart = errors.New("bad start message")

// ParseStart parses and checks a start message. Every error wraps ErrStart and reads
// well as a close reason.
func ParseStart(msg []byte) (Start, error) {
	if len(msg) > MaxStartLen {
		return Start{}, fmt.Errorf("%w: %d bytes, limit %d", ErrStart, len(msg), MaxStartLen)
	}
	if !utf8.Valid(msg) {
		return Start{}, fmt.Errorf("%w: not UTF-8", ErrStart)
	}
	var s Start
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Start{}, fmt.Errorf("%w: %s", ErrStart, shortJSONError(err))
	}
	if dec.More() {
		return Start{}, fmt.Errorf("%w: trailing data after the JSON object", ErrStart)
	}
	if s.Type != "start" {
		return Start{}, fmt.Errorf(`%w: type %q, want "start"`, ErrStart, clip(s.Type, 20))
	}
	if s.MaxBitrate < 0 {
		return Start{}, fmt.Errorf("%w: negative maxBitrate", ErrStart)
	}
	if len(s.Codecs) > maxCodecs {
		return Start{}, fmt.Errorf("%w: %d codecs, limit %d", ErrStart, len(s.Codecs), maxCodecs)
	}
	for _, c := range s.Codecs {
		if c == "" || len(c) > maxCodecLen || strings.ContainsAny(c, " ,\t\r\n") {
			return Start{}, fmt.Errorf("%w: codec %q is not a codec string", ErrStart, clip(c, 20))
		}
	}
	if len(s.Tracks) > maxTracks {
		return Start{}, fmt.Errorf("%w: %d tracks, limit %d", ErrStart, len(s.Tracks), maxTracks)
	}
	for _, t := range s.Tracks {
		if !validName(t) {
			return Start{}, fmt.Errorf("%w: track %q is not a track name", ErrStart, clip(t, 20))
		}
	}
	if len(s.Policy) > maxPolicyLen {
		return Start{}, fmt.Errorf("%w: policy name too long", ErrStart)
	}
	return s, nil
}

// Status is an optional client report, at any time after start.
type Status struct {
	Type    string  `json:"type"`              // "status"
	Buffer  float64 `json:"buffer"`            // seconds buffered ahead of the playhead
	Latency float64 `json:"latency,omitempty"` // seconds behind the live edge
}

// ParseStatus parses a status message (errors wrap ErrStart: they close with 1008).
func ParseStatus(msg []byte) (Status, error) {
	if len(msg) > MaxStartLen {
		return Status{}, fmt.Errorf("%w: %d bytes, limit %d", ErrStart, len(msg), MaxStartLen)
	}
	var s Status
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Status{}, fmt.Errorf("%w: status: %s", ErrStart, shortJSONError(err))
	}
	if s.Type != "status" {
		return Status{}, fmt.Errorf(`%w: type %q after start, want "status"`, ErrStart, clip(s.Type, 20))
	}
	if s.Buffer < 0 || math.IsNaN(s.Buffer) || math.IsInf(s.Buffer, 0) || math.IsNaN(s.Latency) || math.IsInf(s.Latency, 0) {
		return Status{}, fmt.Errorf("%w: status with a bad number", ErrStart)
	}
	return s, nil
}

// TrackInfo describes one track in the ready message.
type TrackInfo struct {
	Index     int    `json:"index"` // the track byte of binary messages
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Codec     string `json:"codec"`
	MimeType  string `json:"mime"`
	Bandwidth int    `json:"bandwidth"`
	Width     int    `json:"width,omitempty"`
	Height    int    `json:"height,omitempty"`
	Timescale uint32 `json:"timescale"`
}

// Ready is the server's answer to start.
type Ready struct {
	Type              string      `json:"type"` // "ready"
	Stream            string      `json:"stream"`
	Live              bool        `json:"live"`
	SegmentDuration   float64     `json:"segmentDuration"`             // seconds
	AvailabilityStart string      `json:"availabilityStart,omitempty"` // live: RFC 3339, media time 0
	Duration          float64     `json:"duration,omitempty"`          // VOD: seconds
	Tracks            []TrackInfo `json:"tracks"`                      // every track the session may send
	Base              uint64      `json:"base"`                        // segment number of sequence 0
	Start             float64     `json:"start"`                       // position of the first segment, seconds
	Policy            string      `json:"policy"`
	Video             string      `json:"video,omitempty"` // the tracks chosen first
	Audio             string      `json:"audio,omitempty"`
}

// Switch announces a change of track; the new init follows it.
type Switch struct {
	Type    string `json:"type"` // "switch"
	Kind    string `json:"kind"`
	From    string `json:"from"`
	To      string `json:"to"`
	Segment uint64 `json:"segment"` // first segment in the new track (absolute number)
	Reason  string `json:"reason"`
}

// Skip reports media the server dropped for a slow reader.
type Skip struct {
	Type    string `json:"type"`    // "skip"
	Segment uint64 `json:"segment"` // the segment sending resumes at (absolute number)
	Lost    int    `json:"lost"`    // chunks dropped since the last skip message
	Reason  string `json:"reason"`
}

// Adapt is the policy's view at one segment boundary (sent when Start.Stats is set).
type Adapt struct {
	Type         string  `json:"type"` // "adapt"
	Segment      uint64  `json:"segment"`
	Track        string  `json:"track"`
	Reason       string  `json:"reason"`
	Backlog      int64   `json:"backlog"`                // bytes queued in the server, not yet written
	NotSent      int64   `json:"notSent,omitempty"`      // bytes in the kernel not yet sent
	RTT          float64 `json:"rtt,omitempty"`          // ms
	MinRTT       float64 `json:"minRtt,omitempty"`       // ms
	DeliveryRate float64 `json:"deliveryRate,omitempty"` // bit/s
	AppLimited   bool    `json:"appLimited,omitempty"`
	Estimate     float64 `json:"estimate,omitempty"` // bit/s, the policy's capacity estimate
}

// End says a VOD asset was sent completely; the server then closes with 1000.
type End struct {
	Type string `json:"type"` // "end"
}

// MessageType reads the "type" of a text message without decoding the rest.
func MessageType(msg []byte) (string, error) {
	var t struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg, &t); err != nil {
		return "", err
	}
	return t.Type, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// shortJSONError keeps decoder errors short enough for a close reason.
func shortJSONError(err error) string {
	return clip(strings.TrimPrefix(err.Error(), "json: "), 80)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
