package fdsp

// Sink receives the media a client plays, in playout order, for a container
// writer (play --output-format ts). Times are 90 kHz.
type Sink interface {
	WriteVideo(v VideoFrame) error
	// WriteAudio gets one raw AAC frame (as in the CMAF sample), written
	// interleaved with the video by presentation time.
	WriteAudio(pts uint64, frame []byte) error
}

// VideoFrame is one played access unit: what arrived by its deadline, as Annex-B
// (the parameter sets before a substream's first access unit).
type VideoFrame struct {
	PTS, DTS uint64
	Key      bool // holds an IDR slice
	AnnexB   []byte
}

// Bounds on what a client keeps of the audio (outside bytes must not make it hold
// unbounded state): a substream's audio and the AudioSpecificConfig.
const (
	maxSubstreamAudio = 8 << 20
	maxAudioConfig    = 64
)

// keepAudio stores a substream's audio frame for the sink, within the bound.
// c.mu is held.
func (c *client) keepAudio(s *rxSub, p []byte) {
	if c.opts.NewSink == nil || s == nil {
		return
	}
	a, err := ParseAudio(p)
	if err != nil || s.audioBytes+len(a.Data) > maxSubstreamAudio {
		c.stats.Rejected++
		return
	}
	s.audioBytes += len(a.Data)
	s.audio = append(s.audio, a)
}

// writeAudio writes the substream's audio frames presented up to pts (all of them
// with pts = ^0), in order; *next is the first not yet written.
func writeAudio(sink Sink, s *rxSub, next *int, pts uint64) error {
	for ; *next < len(s.audio) && s.audio[*next].PTS <= pts; *next++ {
		if err := sink.WriteAudio(s.audio[*next].PTS, s.audio[*next].Data); err != nil {
			return err
		}
	}
	return nil
}
