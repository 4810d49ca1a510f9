package avc

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// NALType is nal_unit_type, the low five bits of a NAL unit's first byte.
type NALType uint8

// The NAL unit types FDSP tells apart (ISO/IEC 14496-10 Table 7-1).
const (
	NALSlice    NALType = 1 // coded slice of a non-IDR picture
	NALSliceIDR NALType = 5 // coded slice of an IDR picture
	NALSEI      NALType = 6
	NALSPS      NALType = 7
	NALPPS      NALType = 8
	NALAUD      NALType = 9
)

// ErrBadNAL wraps every error about malformed NAL units or samples.
var ErrBadNAL = errors.New("avc: malformed H.264")

// Type is the NAL unit's type (0 for an empty one).
func Type(nal []byte) NALType {
	if len(nal) == 0 {
		return 0
	}
	return NALType(nal[0] & 0x1f)
}

// IsSlice reports whether t carries a slice without data partitioning, the only
// slice kinds the split handles (types 2-4, data partitions, are treated as
// critical; x264 and FFmpeg never write them).
func (t NALType) IsSlice() bool { return t == NALSlice || t == NALSliceIDR }

func (t NALType) String() string {
	switch t {
	case NALSlice:
		return "slice"
	case NALSliceIDR:
		return "idr"
	case NALSEI:
		return "sei"
	case NALSPS:
		return "sps"
	case NALPPS:
		return "pps"
	case NALAUD:
		return "aud"
	}
	return fmt.Sprintf("nal%d", uint8(t))
}

// SampleNALs splits an AVCC sample (a CMAF video sample: NAL units each preceded
// by a big-endian length of lengthSize bytes, 1, 2 or 4 per the avcC box) into its
// NAL units, which alias sample. Outside bytes: a length that runs past the sample,
// an empty NAL unit or a forbidden_zero_bit of 1 is an error, never a panic.
func SampleNALs(sample []byte, lengthSize int) ([][]byte, error) {
	if lengthSize != 1 && lengthSize != 2 && lengthSize != 4 {
		return nil, fmt.Errorf("%w: NAL length size %d", ErrBadNAL, lengthSize)
	}
	var nals [][]byte
	for off := 0; off < len(sample); {
		if len(sample)-off < lengthSize {
			return nil, fmt.Errorf("%w: %d stray bytes at the end of a sample", ErrBadNAL, len(sample)-off)
		}
		var n uint64
		switch lengthSize {
		case 1:
			n = uint64(sample[off])
		case 2:
			n = uint64(binary.BigEndian.Uint16(sample[off:]))
		case 4:
			n = uint64(binary.BigEndian.Uint32(sample[off:]))
		}
		off += lengthSize
		if n == 0 || n > uint64(len(sample)-off) {
			return nil, fmt.Errorf("%w: NAL unit of %d bytes at offset %d of a %d-byte sample", ErrBadNAL, n, off, len(sample))
		}
		nal := sample[off : off+int(n)]
		if nal[0]&0x80 != 0 {
			return nil, fmt.Errorf("%w: forbidden_zero_bit set", ErrBadNAL)
		}
		nals = append(nals, nal)
		off += int(n)
	}
	return nals, nil
}

// AppendAnnexB appends nal to b with a four-byte start code, as an Annex-B byte
// stream (what FFmpeg reads as raw .h264) carries it.
func AppendAnnexB(b, nal []byte) []byte {
	return append(append(b, 0, 0, 0, 1), nal...)
}
