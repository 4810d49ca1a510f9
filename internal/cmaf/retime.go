package cmaf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/streambed/streambed/internal/media"
)

// tfhd and trun flags used here (ISO/IEC 14496-12 8.8.7, 8.8.8).
const (
	tfhdBaseDataOffset        = 0x000001
	tfhdSampleDescription     = 0x000002
	tfhdDefaultSampleDuration = 0x000008
	tfhdDefaultSampleSize     = 0x000010
	tfhdDefaultSampleFlags    = 0x000020
	tfhdDurationIsEmpty       = 0x010000
	tfhdDefaultBaseIsMoof     = 0x020000

	trunDataOffset       = 0x000001
	trunFirstSampleFlags = 0x000004
	trunSampleDuration   = 0x000100
	trunSampleSize       = 0x000200
	trunSampleFlags      = 0x000400
	trunSampleCTO        = 0x000800

	// sampleIsNonSync is the sample_is_non_sync_sample bit of the sample flags.
	sampleIsNonSync = 0x00010000
)

// Retime returns a copy of the media segment seg (an optional styp, then one or more
// moof+mdat pairs) moved on the media timeline: the first fragment's tfdt becomes
// baseMediaDecodeTime, later fragments keep their distance to the first, and the mfhd
// sequence numbers become sequenceNumber, sequenceNumber+1, …
//
// Every tfdt in the output is version 1 (64 bits), since decode times counted from the
// Unix epoch overflow 32 bits; moof and traf sizes and trun data offsets are fixed for
// the larger box. Sample data is copied unchanged. sidx and prft boxes are dropped: the
// times they carry would no longer match. seg itself is never modified.
func Retime(seg []byte, baseMediaDecodeTime uint64, sequenceNumber uint32) ([]byte, error) {
	r := retimer{base: baseMediaDecodeTime, seq: sequenceNumber}
	out := make([]byte, 0, len(seg)+64)
	afterMoof := false
	for off := 0; off < len(seg); {
		x, err := readBox(seg, off, len(seg))
		if err != nil {
			return nil, fmt.Errorf("retime: %w", err)
		}
		off = x.end
		switch x.typ {
		case "moof":
			if afterMoof {
				return nil, fmt.Errorf("retime: moof at byte %d follows a moof without mdat: %w", x.start, media.ErrInvalidMedia)
			}
			if out, err = r.moof(out, seg, x); err != nil {
				return nil, fmt.Errorf("retime: fragment %d: %w", r.frags+1, err)
			}
			afterMoof = true
			continue
		case "mdat":
			if !afterMoof {
				return nil, fmt.Errorf("retime: mdat at byte %d without moof: %w", x.start, media.ErrInvalidMedia)
			}
			afterMoof = false
		case "sidx", "prft":
			continue
		case "ftyp", "moov":
			return nil, fmt.Errorf("retime: %q box: an init segment, not a media segment: %w", x.typ, media.ErrInvalidMedia)
		}
		out = append(out, seg[x.start:x.end]...)
	}
	if r.frags == 0 {
		return nil, fmt.Errorf("retime: no moof in %d bytes: %w", len(seg), media.ErrInvalidMedia)
	}
	if afterMoof {
		return nil, fmt.Errorf("retime: last moof has no mdat: %w", media.ErrInvalidMedia)
	}
	return out, nil
}

type retimer struct {
	base   uint64
	seq    uint32
	frags  int
	first  uint64 // input tfdt of the first fragment
	shiftN bool   // first is set
}

// newTime maps an input tfdt to the output timeline.
func (r *retimer) newTime(t uint64) (uint64, error) {
	if !r.shiftN {
		r.first, r.shiftN = t, true
	}
	if t < r.first {
		return 0, fmt.Errorf("tfdt %d before the first fragment's %d: %w", t, r.first, media.ErrInvalidMedia)
	}
	d := t - r.first
	if d > math.MaxUint64-r.base {
		return 0, fmt.Errorf("tfdt %d+%d overflows 64 bits: %w", r.base, d, media.ErrInvalidMedia)
	}
	return r.base + d, nil
}

// moof appends the rewritten moof x of seg to out.
func (r *retimer) moof(out, seg []byte, x box) ([]byte, error) {
	kids, err := children(seg, x)
	if err != nil {
		return nil, err
	}
	var mfhd, traf *box
	for i := range kids {
		switch kids[i].typ {
		case "mfhd":
			if mfhd != nil {
				return nil, fmt.Errorf("two mfhd boxes: %w", media.ErrInvalidMedia)
			}
			mfhd = &kids[i]
		case "traf":
			if traf != nil {
				return nil, fmt.Errorf("more than one traf (multiplexed tracks are not CMAF): %w", media.ErrInvalidMedia)
			}
			traf = &kids[i]
		}
	}
	if mfhd == nil || traf == nil {
		return nil, fmt.Errorf("moof without mfhd or traf: %w", media.ErrInvalidMedia)
	}
	if _, _, err := fullBoxHeader(seg, *mfhd, 4); err != nil {
		return nil, err
	}
	tkids, err := children(seg, *traf)
	if err != nil {
		return nil, err
	}
	var tfdt *box
	var tfhdFlags uint32
	haveTfhd := false
	for i := range tkids {
		switch tkids[i].typ {
		case "tfhd":
			_, f, err := fullBoxHeader(seg, tkids[i], 4)
			if err != nil {
				return nil, err
			}
			tfhdFlags, haveTfhd = f, true
		case "tfdt":
			if tfdt != nil {
				return nil, fmt.Errorf("two tfdt boxes: %w", media.ErrInvalidMedia)
			}
			tfdt = &tkids[i]
		case "trun":
			_, f, err := fullBoxHeader(seg, tkids[i], 4)
			if err != nil {
				return nil, err
			}
			if f&trunDataOffset != 0 && tkids[i].end-tkids[i].body < 12 {
				return nil, fmt.Errorf("trun too short for its data offset: %w", media.ErrInvalidMedia)
			}
		}
	}
	if !haveTfhd || tfdt == nil {
		return nil, fmt.Errorf("traf without tfhd or tfdt: %w", media.ErrInvalidMedia)
	}
	if tfhdFlags&tfhdBaseDataOffset != 0 {
		return nil, fmt.Errorf("tfhd has an explicit base data offset (CMAF uses default-base-is-moof): %w", media.ErrInvalidMedia)
	}
	v, _, err := fullBoxHeader(seg, *tfdt, 4)
	if err != nil {
		return nil, err
	}
	var t uint64
	switch v {
	case 0:
		t = uint64(binary.BigEndian.Uint32(seg[tfdt.body+4:]))
	case 1:
		if tfdt.end-tfdt.body < 12 {
			return nil, fmt.Errorf("tfdt version 1 too short: %w", media.ErrInvalidMedia)
		}
		t = binary.BigEndian.Uint64(seg[tfdt.body+4:])
	default:
		return nil, fmt.Errorf("tfdt version %d: %w", v, media.ErrInvalidMedia)
	}
	nt, err := r.newTime(t)
	if err != nil {
		return nil, err
	}

	// Sizes of the rewritten traf and moof (compact 8-byte headers, 20-byte tfdt).
	const tfdtSize = 20
	trafSize := 8
	for _, k := range tkids {
		if k.typ == "tfdt" {
			trafSize += tfdtSize
		} else {
			trafSize += k.end - k.start
		}
	}
	moofSize := 8
	for _, k := range kids {
		if k.typ == "traf" {
			moofSize += trafSize
		} else {
			moofSize += k.end - k.start
		}
	}
	if moofSize > math.MaxUint32 {
		return nil, fmt.Errorf("moof too large: %w", media.ErrInvalidMedia)
	}
	// Sample data follows the moof, so every data offset counted from the moof start
	// moves by the change of the moof's size.
	delta := int64(moofSize) - int64(x.end-x.start)

	out = appendBoxHeader(out, "moof", moofSize)
	for _, k := range kids {
		switch k.typ {
		case "mfhd":
			out = append(out, seg[k.start:k.body+4]...)
			out = binary.BigEndian.AppendUint32(out, r.seq)
			out = append(out, seg[k.body+8:k.end]...)
		case "traf":
			out = appendBoxHeader(out, "traf", trafSize)
			for _, tk := range tkids {
				switch tk.typ {
				case "tfdt":
					out = appendFullBoxHeader(out, "tfdt", tfdtSize, 1, 0)
					out = binary.BigEndian.AppendUint64(out, nt)
				case "trun":
					at := len(out)
					out = append(out, seg[tk.start:tk.end]...)
					_, f, _ := fullBoxHeader(seg, tk, 4)
					if f&trunDataOffset != 0 {
						p := at + (tk.body - tk.start) + 8
						do := int64(int32(binary.BigEndian.Uint32(out[p:]))) + delta
						if do < math.MinInt32 || do > math.MaxInt32 {
							return nil, fmt.Errorf("trun data offset overflows: %w", media.ErrInvalidMedia)
						}
						binary.BigEndian.PutUint32(out[p:], uint32(int32(do)))
					}
				default:
					out = append(out, seg[tk.start:tk.end]...)
				}
			}
		default:
			out = append(out, seg[k.start:k.end]...)
		}
	}
	r.frags++
	r.seq++
	return out, nil
}
