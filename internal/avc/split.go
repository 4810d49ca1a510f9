package avc

import (
	"fmt"

	mp4avc "github.com/Eyevinn/mp4ff/avc"
)

// Slice is what the split needs of a slice NAL unit.
type Slice struct {
	Intra      bool // slice type I or SI: the BP share of its data is critical
	IDR        bool
	HeaderSize int // bytes of the NAL unit up to and including the header's last (maybe shared) byte
}

// Slice parses a slice NAL unit's header against the parameter sets.
func (p *ParameterSets) Slice(nal []byte) (s Slice, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: slice header: %v", ErrBadNAL, r)
		}
	}()
	if !Type(nal).IsSlice() {
		return s, fmt.Errorf("%w: NAL unit type %v is not a slice", ErrBadNAL, Type(nal))
	}
	h, err := mp4avc.ParseSliceHeader(nal, p.sps, p.pps)
	if err != nil {
		return s, fmt.Errorf("%w: slice header: %v", ErrBadNAL, err)
	}
	// mp4ff does not report a read past the end: it stops counting there. A header
	// that reaches the NAL unit's last byte has no data after it, so it was cut.
	if int(h.Size) >= len(nal) || h.Size < 2 {
		return s, fmt.Errorf("%w: slice header of %d bytes in a %d-byte NAL unit", ErrBadNAL, h.Size, len(nal))
	}
	st := h.SliceType % 5
	return Slice{
		Intra:      st == mp4avc.SLICE_I || st == mp4avc.SLICE_SI,
		IDR:        Type(nal) == NALSliceIDR,
		HeaderSize: int(h.Size),
	}, nil
}

// Split says how many leading bytes of nal are critical (the TCP part) at bitstream
// prioritisation bp (0..100 % of intra slice data); the remaining bytes are the
// loss-tolerant part. See the package comment for the rule.
func (p *ParameterSets) Split(nal []byte, bp int) (int, error) {
	if bp < 0 || bp > 100 {
		return 0, fmt.Errorf("avc: BP %d%% outside 0..100", bp)
	}
	if len(nal) == 0 {
		return 0, fmt.Errorf("%w: empty NAL unit", ErrBadNAL)
	}
	if !Type(nal).IsSlice() {
		return len(nal), nil
	}
	s, err := p.Slice(nal)
	if err != nil {
		return 0, err
	}
	if !s.Intra {
		return s.HeaderSize, nil
	}
	data := len(nal) - s.HeaderSize
	return s.HeaderSize + (data*bp+99)/100, nil
}

// HeaderComplete reports whether a slice NAL unit that may have been cut short
// (its UDP part lost) still holds its whole slice header, so a decoder can place
// the slice and conceal what is missing. A sentinel byte tells a header that ends
// exactly at the cut from one the cut went through: mp4ff counts bytes read and
// stops at the end without saying so.
func (p *ParameterSets) HeaderComplete(nal []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if !Type(nal).IsSlice() || len(nal) < 2 {
		return false
	}
	h, err := mp4avc.ParseSliceHeader(append(nal[:len(nal):len(nal)], 0), p.sps, p.pps)
	return err == nil && int(h.Size) <= len(nal)
}
