package mpegts

import (
	"errors"
	"fmt"
	"io"
)

// PIDs and stream types of the one program this writer makes.
const (
	pidPAT   = 0x0000
	pidPMT   = 0x1000
	PIDVideo = 0x0100
	PIDAudio = 0x0101

	streamTypeH264 = 0x1B
	streamTypeADTS = 0x0F
	packetSize     = 188
	clock33        = 1 << 33 // PTS and DTS wrap at 33 bits
)

// AudioConfig is what an ADTS header needs from the AAC AudioSpecificConfig.
type AudioConfig struct {
	ObjectType      int // 2: AAC-LC
	SampleRateIndex int // 0..12 (ISO/IEC 14496-3 table 1.16)
	Channels        int // 1..7
}

// ParseAudioSpecificConfig reads the fields an ADTS header needs from an
// AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1). Explicit sample rates (index
// 15) and the escape object type have no ADTS form and are refused.
func ParseAudioSpecificConfig(b []byte) (AudioConfig, error) {
	if len(b) < 2 {
		return AudioConfig{}, errors.New("mpegts: AudioSpecificConfig shorter than 2 bytes")
	}
	c := AudioConfig{
		ObjectType:      int(b[0] >> 3),
		SampleRateIndex: int(b[0]&7)<<1 | int(b[1]>>7),
		Channels:        int(b[1]>>3) & 0xF,
	}
	if c.ObjectType < 1 || c.ObjectType > 4 {
		return AudioConfig{}, fmt.Errorf("mpegts: AAC object type %d has no ADTS form", c.ObjectType)
	}
	if c.SampleRateIndex > 12 {
		return AudioConfig{}, fmt.Errorf("mpegts: AAC sample rate index %d has no ADTS form", c.SampleRateIndex)
	}
	if c.Channels < 1 || c.Channels > 7 {
		return AudioConfig{}, fmt.Errorf("mpegts: AAC channel configuration %d has no ADTS form", c.Channels)
	}
	return c, nil
}

// Writer writes one program: H.264 video and, if configured, AAC audio. Times
// are 90 kHz ticks. It is not safe for concurrent use.
type Writer struct {
	w     io.Writer
	audio *AudioConfig
	cc    map[uint16]byte // continuity counter per PID
	psi   bool            // PAT and PMT written at least once
	buf   []byte
}

// NewWriter writes to w; audio nil makes a video-only program.
func NewWriter(w io.Writer, audio *AudioConfig) *Writer {
	return &Writer{w: w, audio: audio, cc: map[uint16]byte{}}
}

// WriteVideo writes one access unit in Annex-B form (start codes included).
// The PAT and PMT go before every keyframe, so a reader can join there.
func (w *Writer) WriteVideo(pts, dts int64, au []byte, key bool) error {
	if key || !w.psi {
		w.writePSI()
	}
	aud := []byte{0, 0, 0, 1, 9, 0xF0} // access unit delimiter: H.264 in TS wants one per AU
	if hasAUD(au) {
		aud = nil
	}
	pes := pesHeader(0xE0, pts, dts, true)
	pes = append(pes, aud...)
	pes = append(pes, au...)
	w.packetize(PIDVideo, pes, key, dts)
	return w.flush()
}

// WriteAudio writes one raw AAC frame (as in an MP4 sample), adding its ADTS
// header. Without an audio configuration it is an error.
func (w *Writer) WriteAudio(pts int64, frame []byte) error {
	if w.audio == nil {
		return errors.New("mpegts: audio frame for a video-only program")
	}
	n := len(frame) + 7
	if n > 0x1FFF {
		return fmt.Errorf("mpegts: AAC frame of %d bytes is too long for ADTS", len(frame))
	}
	if !w.psi {
		w.writePSI()
	}
	c := w.audio
	adts := []byte{
		0xFF, 0xF1, // sync word, MPEG-4, layer 0, no CRC
		byte((c.ObjectType-1)<<6 | c.SampleRateIndex<<2 | c.Channels>>2),
		byte((c.Channels&3)<<6 | n>>11),
		byte(n >> 3),
		byte((n&7)<<5 | 0x1F), // buffer fullness 0x7FF: variable rate
		0xFC,                  // one raw data block
	}
	pes := pesHeader(0xC0, pts, -1, false)
	pes = append(pes, adts...)
	pes = append(pes, frame...)
	setPESLength(pes)
	w.packetize(PIDAudio, pes, false, -1)
	return w.flush()
}

func hasAUD(au []byte) bool {
	for i := 0; i+3 < len(au) && i < 8; i++ {
		if au[i] == 0 && au[i+1] == 0 && au[i+2] == 1 {
			return au[i+3]&0x1F == 9
		}
	}
	return false
}

func (w *Writer) flush() error {
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// pesHeader starts a PES packet; dts < 0 writes the PTS only. The length is left
// 0 (unbounded, allowed for video) until setPESLength.
func pesHeader(streamID byte, pts, dts int64, withDTS bool) []byte {
	h := []byte{0, 0, 1, streamID, 0, 0, 0x80}
	if withDTS && dts >= 0 && dts != pts {
		h = append(h, 0xC0, 10)
		h = appendTimestamp(h, 3, pts)
		h = appendTimestamp(h, 1, dts)
		return h
	}
	h = append(h, 0x80, 5)
	return appendTimestamp(h, 2, pts)
}

// setPESLength fills PES_packet_length when it fits (audio always does).
func setPESLength(pes []byte) {
	if n := len(pes) - 6; n <= 0xFFFF {
		pes[4], pes[5] = byte(n>>8), byte(n)
	}
}

func appendTimestamp(b []byte, prefix byte, t int64) []byte {
	t = ((t % clock33) + clock33) % clock33
	return append(b,
		prefix<<4|byte(t>>29)&0x0E|1,
		byte(t>>22),
		byte(t>>14)|1,
		byte(t>>7),
		byte(t<<1)|1,
	)
}

// packetize cuts a PES packet into TS packets; the first carries the PCR (when
// pcr >= 0) and the random access indicator (when key).
func (w *Writer) packetize(pid uint16, pes []byte, key bool, pcr int64) {
	first := true
	for len(pes) > 0 {
		var af []byte // adaptation field after its length byte
		if first && (pcr >= 0 || key) {
			flags := byte(0)
			if key {
				flags |= 0x40
			}
			af = append(af, flags)
			if pcr >= 0 {
				af[0] |= 0x10
				base := ((pcr % clock33) + clock33) % clock33
				af = append(af, byte(base>>25), byte(base>>17), byte(base>>9), byte(base>>1), byte(base<<7)|0x7E, 0)
			}
		}
		room := packetSize - 4
		if af != nil {
			room -= 1 + len(af)
		}
		n := min(room, len(pes))
		if n < room { // stuff the last packet through the adaptation field
			pad := room - n
			if af == nil {
				pad-- // the length byte itself
				if pad >= 1 {
					af = append(af, 0) // flags
					pad--
				}
			}
			for ; pad > 0; pad-- {
				af = append(af, 0xFF)
			}
			if af == nil {
				af = []byte{}
			}
		}
		w.header(pid, first, af != nil)
		if af != nil {
			w.buf = append(w.buf, byte(len(af)))
			w.buf = append(w.buf, af...)
		}
		w.buf = append(w.buf, pes[:n]...)
		pes = pes[n:]
		first = false
	}
}

func (w *Writer) header(pid uint16, start, adaptation bool) {
	b1 := byte(pid>>8) & 0x1F
	if start {
		b1 |= 0x40
	}
	ctl := byte(0x10)
	if adaptation {
		ctl = 0x30
	}
	cc := w.cc[pid]
	w.cc[pid] = (cc + 1) & 0xF
	w.buf = append(w.buf, 0x47, b1, byte(pid), ctl|cc)
}
