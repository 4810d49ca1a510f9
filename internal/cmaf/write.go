package cmaf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/streambed/streambed/internal/media"
)

// Sample flags for the common cases (ISO/IEC 14496-12 8.8.3.1).
const (
	// SyncSampleFlags marks a sample that depends on no other (a keyframe, or any AAC frame).
	SyncSampleFlags uint32 = 0x02000000
	// NonSyncSampleFlags marks a sample that depends on others and is not a sync sample.
	NonSyncSampleFlags uint32 = 0x01010000
)

// segmentStyp is the styp box of every media segment written here: a CMAF segment
// that is also a DASH media segment.
var segmentStyp = func() []byte {
	brands := []string{"cmfs", "msdh", "msix"}
	b := appendBoxHeader(nil, "styp", 16+4*len(brands))
	b = append(b, "cmfs"...)
	b = binary.BigEndian.AppendUint32(b, 0)
	for _, br := range brands {
		b = append(b, br...)
	}
	return b
}()

// StypBox returns a copy of the styp box Streambed puts in front of media segments.
func StypBox() []byte { return append([]byte(nil), segmentStyp...) }

// AppendFragment appends one moof+mdat holding samples to dst: mfhd with seq, a tfhd
// with default-base-is-moof, a version 1 tfdt with baseMediaDecodeTime and a trun with
// every sample's duration, size, flags and (when any is non-zero) composition offset.
// The trun is version 1 when an offset is negative.
func AppendFragment(dst []byte, seq, trackID uint32, baseMediaDecodeTime uint64, samples []Sample) ([]byte, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("fragment without samples: %w", media.ErrInvalidMedia)
	}
	trunFlags := uint32(trunDataOffset | trunSampleDuration | trunSampleSize | trunSampleFlags)
	var trunVersion uint8
	var payload uint64
	for _, s := range samples {
		if s.CompositionTimeOffset != 0 {
			trunFlags |= trunSampleCTO
		}
		if s.CompositionTimeOffset < 0 {
			trunVersion = 1
		}
		if int(s.Size) != len(s.Data) {
			return nil, fmt.Errorf("sample size %d but %d bytes of data: %w", s.Size, len(s.Data), media.ErrInvalidMedia)
		}
		payload += uint64(s.Size)
	}
	entry := 12
	if trunFlags&trunSampleCTO != 0 {
		entry = 16
	}
	const mfhdSize, tfhdSize, tfdtSize = 16, 16, 20
	trunSize := 20 + entry*len(samples)
	trafSize := 8 + tfhdSize + tfdtSize + trunSize
	moofSize := 8 + mfhdSize + trafSize
	if payload+8 > math.MaxUint32 || moofSize > math.MaxInt32 {
		return nil, fmt.Errorf("fragment too large (%d bytes of samples): %w", payload, media.ErrInvalidMedia)
	}

	dst = appendBoxHeader(dst, "moof", moofSize)
	dst = appendFullBoxHeader(dst, "mfhd", mfhdSize, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, seq)
	dst = appendBoxHeader(dst, "traf", trafSize)
	dst = appendFullBoxHeader(dst, "tfhd", tfhdSize, 0, tfhdDefaultBaseIsMoof)
	dst = binary.BigEndian.AppendUint32(dst, trackID)
	dst = appendFullBoxHeader(dst, "tfdt", tfdtSize, 1, 0)
	dst = binary.BigEndian.AppendUint64(dst, baseMediaDecodeTime)
	dst = appendFullBoxHeader(dst, "trun", trunSize, trunVersion, trunFlags)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(samples)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(moofSize+8)) // data starts after the mdat header
	for _, s := range samples {
		dst = binary.BigEndian.AppendUint32(dst, s.Duration)
		dst = binary.BigEndian.AppendUint32(dst, s.Size)
		dst = binary.BigEndian.AppendUint32(dst, s.Flags)
		if trunFlags&trunSampleCTO != 0 {
			dst = binary.BigEndian.AppendUint32(dst, uint32(s.CompositionTimeOffset))
		}
	}
	dst = appendBoxHeader(dst, "mdat", int(payload)+8)
	for _, s := range samples {
		dst = append(dst, s.Data...)
	}
	return dst, nil
}
