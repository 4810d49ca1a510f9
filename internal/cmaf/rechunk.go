package cmaf

import (
	"fmt"

	"github.com/streambed/streambed/internal/media"
)

// Rechunk splits a media segment into CMAF chunks of up to samplesPerChunk samples,
// each its own moof+mdat, for low-latency delivery (samplesPerChunk 1 gives one frame
// per chunk). The first chunk keeps the segment's styp. Chunk k of a fragment carries
// the fragment's sequence number plus k; callers that need numbering across segments
// renumber with Retime. Chunks never span fragments of the input.
//
// The segment must carry its sample durations and sizes in trun or tfhd (Streambed's
// and FFmpeg's segments do); trex defaults from an init segment are not consulted.
func Rechunk(seg []byte, samplesPerChunk int) ([]media.Chunk, error) {
	if samplesPerChunk < 1 {
		return nil, fmt.Errorf("rechunk: %d samples per chunk: %w", samplesPerChunk, media.ErrBadRequest)
	}
	p, err := ParseSegment(seg, TrackDefaults{})
	if err != nil {
		return nil, fmt.Errorf("rechunk: %w", err)
	}
	var chunks []media.Chunk
	for _, f := range p.Fragments {
		t := f.BaseMediaDecodeTime
		seq := f.SequenceNumber
		for i := 0; i < len(f.Samples); i += samplesPerChunk {
			ss := f.Samples[i:min(i+samplesPerChunk, len(f.Samples))]
			var data []byte
			if len(chunks) == 0 && p.Styp != nil {
				data = append(data, p.Styp...)
			}
			if data, err = AppendFragment(data, seq, f.TrackID, t, ss); err != nil {
				return nil, fmt.Errorf("rechunk: %w", err)
			}
			var d uint64
			for _, s := range ss {
				d += uint64(s.Duration)
			}
			chunks = append(chunks, media.Chunk{Data: data, Start: t, Duration: d, Keyframe: ss[0].IsSync()})
			t += d
			seq++
		}
	}
	if len(chunks) == 0 {
		return nil, fmt.Errorf("rechunk: segment has no samples: %w", media.ErrInvalidMedia)
	}
	return chunks, nil
}
