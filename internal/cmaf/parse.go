package cmaf

import (
	"encoding/binary"
	"fmt"

	"github.com/streambed/streambed/internal/media"
)

// Sample is one sample of a fragment as its trun describes it.
type Sample struct {
	Duration              uint32 // track timescale
	Size                  uint32 // bytes
	Flags                 uint32 // ISO BMFF sample flags
	CompositionTimeOffset int32  // presentation time minus decode time
	Data                  []byte // the sample's bytes (a slice of the parsed input)
}

// IsSync reports whether the sample is a sync sample (a keyframe for video).
func (s Sample) IsSync() bool { return s.Flags&sampleIsNonSync == 0 }

// Fragment is one parsed moof+mdat pair of a single-track media segment.
type Fragment struct {
	SequenceNumber      uint32 // mfhd
	TrackID             uint32 // tfhd
	BaseMediaDecodeTime uint64 // tfdt
	Samples             []Sample
	Offset              int // byte offset of the moof in the parsed input
	Size                int // bytes from the moof's start to the mdat's end
}

// Duration is the sum of the fragment's sample durations.
func (f *Fragment) Duration() uint64 {
	var d uint64
	for _, s := range f.Samples {
		d += uint64(s.Duration)
	}
	return d
}

// Keyframe reports whether the fragment starts with a sync sample.
func (f *Fragment) Keyframe() bool { return len(f.Samples) > 0 && f.Samples[0].IsSync() }

// TrackDefaults are the per-track sample defaults of the init segment's trex box,
// used when neither trun nor tfhd gives a value.
type TrackDefaults struct {
	SampleDuration uint32
	SampleSize     uint32
	SampleFlags    uint32
}

// ParsedSegment is a media segment split into its parts.
type ParsedSegment struct {
	Styp      []byte // the styp box, if the segment has one
	Fragments []Fragment
}

// Duration is the sum of the durations of all fragments.
func (p *ParsedSegment) Duration() uint64 {
	var d uint64
	for i := range p.Fragments {
		d += p.Fragments[i].Duration()
	}
	return d
}

// ParseFragments parses and checks the media segment b (outside bytes) with no
// trex defaults. See ParseSegment.
func ParseFragments(b []byte) ([]Fragment, error) {
	p, err := ParseSegment(b, TrackDefaults{})
	if err != nil {
		return nil, err
	}
	return p.Fragments, nil
}

// ParseSegment parses and checks a CMAF media segment or chunk: an optional styp, then
// moof+mdat pairs, each moof with one traf holding a tfhd and a tfdt; sidx, prft,
// emsg, free and skip boxes are allowed between them. Every sample's bytes must lie
// inside the mdat that follows its moof. Errors wrap media.ErrInvalidMedia; no input
// makes it panic. Sample data is not copied: samples point into b.
func ParseSegment(b []byte, def TrackDefaults) (*ParsedSegment, error) {
	p := &ParsedSegment{}
	var moof *box
	for off := 0; off < len(b); {
		x, err := readBox(b, off, len(b))
		if err != nil {
			return nil, err
		}
		off = x.end
		switch x.typ {
		case "styp":
			if x.start == 0 {
				p.Styp = b[x.start:x.end]
			}
		case "moof":
			if moof != nil {
				return nil, fmt.Errorf("moof at byte %d follows a moof without mdat: %w", x.start, media.ErrInvalidMedia)
			}
			moof = &x
		case "mdat":
			if moof == nil {
				return nil, fmt.Errorf("mdat at byte %d without moof: %w", x.start, media.ErrInvalidMedia)
			}
			f, err := parseFragment(b, *moof, x, def)
			if err != nil {
				return nil, fmt.Errorf("fragment %d (byte %d): %w", len(p.Fragments)+1, moof.start, err)
			}
			p.Fragments = append(p.Fragments, f)
			moof = nil
		case "sidx", "prft", "emsg", "free", "skip", "uuid":
			if moof != nil {
				return nil, fmt.Errorf("%q between moof and mdat: %w", x.typ, media.ErrInvalidMedia)
			}
		case "ftyp", "moov":
			return nil, fmt.Errorf("%q box: an init segment, not a media segment: %w", x.typ, media.ErrInvalidMedia)
		default:
			return nil, fmt.Errorf("unexpected %q box at byte %d: %w", printable(x.typ), x.start, media.ErrInvalidMedia)
		}
	}
	if moof != nil {
		return nil, fmt.Errorf("last moof has no mdat: %w", media.ErrInvalidMedia)
	}
	if len(p.Fragments) == 0 {
		return nil, fmt.Errorf("no moof+mdat in %d bytes: %w", len(b), media.ErrInvalidMedia)
	}
	return p, nil
}

func parseFragment(b []byte, moof, mdat box, def TrackDefaults) (Fragment, error) {
	f := Fragment{Offset: moof.start, Size: mdat.end - moof.start}
	kids, err := children(b, moof)
	if err != nil {
		return f, err
	}
	var traf *box
	haveMfhd := false
	for i, k := range kids {
		switch k.typ {
		case "mfhd":
			if _, _, err := fullBoxHeader(b, k, 4); err != nil {
				return f, err
			}
			f.SequenceNumber = binary.BigEndian.Uint32(b[k.body+4:])
			haveMfhd = true
		case "traf":
			if traf != nil {
				return f, fmt.Errorf("more than one traf (multiplexed tracks are not CMAF): %w", media.ErrInvalidMedia)
			}
			traf = &kids[i]
		}
	}
	if !haveMfhd || traf == nil {
		return f, fmt.Errorf("moof without mfhd or traf: %w", media.ErrInvalidMedia)
	}
	tkids, err := children(b, *traf)
	if err != nil {
		return f, err
	}
	haveTfhd, haveTfdt := false, false
	var truns []box
	for _, k := range tkids {
		switch k.typ {
		case "tfhd":
			if err := parseTfhd(b, k, &f, &def); err != nil {
				return f, err
			}
			haveTfhd = true
		case "tfdt":
			v, _, err := fullBoxHeader(b, k, 4)
			if err != nil {
				return f, err
			}
			switch {
			case v == 0:
				f.BaseMediaDecodeTime = uint64(binary.BigEndian.Uint32(b[k.body+4:]))
			case v == 1 && k.end-k.body >= 12:
				f.BaseMediaDecodeTime = binary.BigEndian.Uint64(b[k.body+4:])
			default:
				return f, fmt.Errorf("bad tfdt (version %d, %d bytes): %w", v, k.end-k.start, media.ErrInvalidMedia)
			}
			haveTfdt = true
		case "trun":
			truns = append(truns, k)
		}
	}
	if !haveTfhd || !haveTfdt {
		return f, fmt.Errorf("traf without tfhd or tfdt: %w", media.ErrInvalidMedia)
	}
	// Sample data offsets count from the moof (default-base-is-moof, or the first traf
	// with no base flags); a trun without an offset continues after the previous one.
	next := moof.start
	for _, k := range truns {
		if next, err = parseTrun(b, k, moof.start, next, mdat, def, &f); err != nil {
			return f, err
		}
	}
	return f, nil
}

func parseTfhd(b []byte, k box, f *Fragment, def *TrackDefaults) error {
	_, flags, err := fullBoxHeader(b, k, 4)
	if err != nil {
		return err
	}
	if flags&tfhdBaseDataOffset != 0 {
		return fmt.Errorf("tfhd has an explicit base data offset (CMAF uses default-base-is-moof): %w", media.ErrInvalidMedia)
	}
	p := k.body + 4
	f.TrackID = binary.BigEndian.Uint32(b[p:])
	p += 4
	field := func() (uint32, error) {
		if k.end-p < 4 {
			return 0, fmt.Errorf("tfhd too short for its flags %06x: %w", flags, media.ErrInvalidMedia)
		}
		v := binary.BigEndian.Uint32(b[p:])
		p += 4
		return v, nil
	}
	if flags&tfhdSampleDescription != 0 {
		if _, err := field(); err != nil {
			return err
		}
	}
	if flags&tfhdDefaultSampleDuration != 0 {
		if def.SampleDuration, err = field(); err != nil {
			return err
		}
	}
	if flags&tfhdDefaultSampleSize != 0 {
		if def.SampleSize, err = field(); err != nil {
			return err
		}
	}
	if flags&tfhdDefaultSampleFlags != 0 {
		if def.SampleFlags, err = field(); err != nil {
			return err
		}
	}
	return nil
}

// maxSamplesPerTrun bounds the work a hostile trun without a sample table can ask for.
const maxSamplesPerTrun = 1 << 20

// parseTrun appends the samples of trun k to f and returns where its data ends.
func parseTrun(b []byte, k box, base, next int, mdat box, def TrackDefaults, f *Fragment) (int, error) {
	version, flags, err := fullBoxHeader(b, k, 4)
	if err != nil {
		return 0, err
	}
	p := k.body + 4
	count := binary.BigEndian.Uint32(b[p:])
	p += 4
	if flags&trunDataOffset != 0 {
		if k.end-p < 4 {
			return 0, fmt.Errorf("trun too short for its data offset: %w", media.ErrInvalidMedia)
		}
		next = base + int(int32(binary.BigEndian.Uint32(b[p:])))
		p += 4
	}
	firstFlags, haveFirst := uint32(0), false
	if flags&trunFirstSampleFlags != 0 {
		if k.end-p < 4 {
			return 0, fmt.Errorf("trun too short for its first sample flags: %w", media.ErrInvalidMedia)
		}
		firstFlags, haveFirst = binary.BigEndian.Uint32(b[p:]), true
		p += 4
	}
	entry := 0
	for _, bit := range []uint32{trunSampleDuration, trunSampleSize, trunSampleFlags, trunSampleCTO} {
		if flags&bit != 0 {
			entry += 4
		}
	}
	// Check the table fits before allocating anything for it.
	if uint64(count)*uint64(entry) > uint64(k.end-p) {
		return 0, fmt.Errorf("trun declares %d samples but holds %d bytes of entries: %w", count, k.end-p, media.ErrInvalidMedia)
	}
	if count > maxSamplesPerTrun {
		return 0, fmt.Errorf("trun declares %d samples, more than %d: %w", count, maxSamplesPerTrun, media.ErrInvalidMedia)
	}
	samples := make([]Sample, 0, min(count, 1024))
	for i := uint32(0); i < count; i++ {
		s := Sample{Duration: def.SampleDuration, Size: def.SampleSize, Flags: def.SampleFlags}
		if i == 0 && haveFirst {
			s.Flags = firstFlags
		}
		if flags&trunSampleDuration != 0 {
			s.Duration = binary.BigEndian.Uint32(b[p:])
			p += 4
		}
		if flags&trunSampleSize != 0 {
			s.Size = binary.BigEndian.Uint32(b[p:])
			p += 4
		}
		if flags&trunSampleFlags != 0 {
			s.Flags = binary.BigEndian.Uint32(b[p:])
			p += 4
		}
		if flags&trunSampleCTO != 0 {
			v := binary.BigEndian.Uint32(b[p:])
			if version == 0 {
				if v > 1<<31-1 {
					return 0, fmt.Errorf("trun version 0 composition offset %d too large: %w", v, media.ErrInvalidMedia)
				}
			}
			s.CompositionTimeOffset = int32(v)
			p += 4
		}
		if next < mdat.body || uint64(next)+uint64(s.Size) > uint64(mdat.end) {
			return 0, fmt.Errorf("sample %d (%d bytes at byte %d) lies outside the mdat [%d, %d): %w",
				len(f.Samples)+1, s.Size, next, mdat.body, mdat.end, media.ErrInvalidMedia)
		}
		s.Data = b[next : next+int(s.Size) : next+int(s.Size)]
		next += int(s.Size)
		samples = append(samples, s)
	}
	f.Samples = append(f.Samples, samples...)
	return next, nil
}
