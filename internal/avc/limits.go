package avc

import (
	"bytes"
	"fmt"

	"github.com/Eyevinn/mp4ff/bits"
)

// mp4ff's SPS and PPS parsers size their loops and slices from the bitstream
// (num_ref_frames_in_pic_order_cnt_cycle, num_slice_groups_minus1) without the
// standard's limits, so a crafted parameter set of a few bytes can ask for
// gigabytes. checkSPS and checkPPS read the fields up to those counts and hold
// them to ISO/IEC 14496-10's ranges before mp4ff sees the bytes.

func checkSPS(nal []byte) error {
	r := bits.NewEBSPReader(bytes.NewReader(nal))
	r.Read(8) // NAL header
	profile := r.Read(8)
	r.Read(16) // constraint flags, level
	if id := r.ReadExpGolomb(); id > 31 {
		return fmt.Errorf("%w: SPS id %d", ErrBadNAL, id)
	}
	switch profile {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		chroma := r.ReadExpGolomb()
		if chroma > 3 {
			return fmt.Errorf("%w: SPS chroma_format_idc %d", ErrBadNAL, chroma)
		}
		if chroma == 3 {
			r.ReadFlag()
		}
		if l, c := r.ReadExpGolomb(), r.ReadExpGolomb(); l > 6 || c > 6 {
			return fmt.Errorf("%w: SPS bit depth", ErrBadNAL)
		}
		r.ReadFlag()
		if r.ReadFlag() { // seq_scaling_matrix_present_flag
			lists := 8
			if chroma == 3 {
				lists = 12
			}
			for i := 0; i < lists && r.AccError() == nil; i++ {
				if r.ReadFlag() {
					skipScalingList(r, map[bool]int{true: 16, false: 64}[i < 6])
				}
			}
		}
	}
	if v := r.ReadExpGolomb(); v > 12 {
		return fmt.Errorf("%w: SPS log2_max_frame_num_minus4 %d", ErrBadNAL, v)
	}
	switch poc := r.ReadExpGolomb(); poc {
	case 0:
		if v := r.ReadExpGolomb(); v > 12 {
			return fmt.Errorf("%w: SPS log2_max_pic_order_cnt_lsb_minus4 %d", ErrBadNAL, v)
		}
	case 1:
		r.ReadFlag()
		r.ReadSignedGolomb()
		r.ReadSignedGolomb()
		if v := r.ReadExpGolomb(); v > 255 {
			return fmt.Errorf("%w: SPS num_ref_frames_in_pic_order_cnt_cycle %d", ErrBadNAL, v)
		}
	case 2:
	default:
		return fmt.Errorf("%w: SPS pic_order_cnt_type %d", ErrBadNAL, poc)
	}
	if err := r.AccError(); err != nil {
		return fmt.Errorf("%w: SPS: %v", ErrBadNAL, err)
	}
	return nil
}

func skipScalingList(r *bits.EBSPReader, size int) {
	last, next := 8, 8
	for j := 0; j < size && r.AccError() == nil; j++ {
		if next != 0 {
			next = (last + r.ReadSignedGolomb() + 256) % 256
		}
		if next != 0 {
			last = next
		}
	}
}

func checkPPS(nal []byte) error {
	r := bits.NewEBSPReader(bytes.NewReader(nal))
	r.Read(8)
	if id := r.ReadExpGolomb(); id > 255 {
		return fmt.Errorf("%w: PPS id %d", ErrBadNAL, id)
	}
	if id := r.ReadExpGolomb(); id > 31 {
		return fmt.Errorf("%w: PPS SPS id %d", ErrBadNAL, id)
	}
	r.ReadFlag()
	r.ReadFlag()
	if n := r.ReadExpGolomb(); n > 7 {
		return fmt.Errorf("%w: PPS num_slice_groups_minus1 %d", ErrBadNAL, n)
	}
	if err := r.AccError(); err != nil {
		return fmt.Errorf("%w: PPS: %v", ErrBadNAL, err)
	}
	return nil
}
