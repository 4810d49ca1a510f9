package cmaf

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"time"

	"github.com/Eyevinn/mp4ff/mp4"

	"github.com/streambed/streambed/internal/media"
)

// OutputTrackID is the track ID of every init and media segment the segmenter writes.
const OutputTrackID = 1

// Input is a one-track MP4 file (progressive or fragmented) opened for segmenting.
type Input struct {
	path     string
	file     *os.File // progressive: sample data is read lazily from here
	trak     *mp4.TrakBox
	info     TrackInfo
	samples  []inSample
	duration uint64
}

// inSample is one sample on the output timeline.
type inSample struct {
	dts   uint64 // decode time, output timeline (the first kept sample starts at 0)
	dur   uint32
	size  uint32
	flags uint32
	cto   int32
	off   int64  // progressive: file offset
	data  []byte // fragmented: the bytes
}

func (s *inSample) pts() int64 { return int64(s.dts) + int64(s.cto) }
func (s *inSample) sync() bool { return s.flags&sampleIsNonSync == 0 }

// Open reads the sample tables of the one-track MP4 file at path. It applies the
// track's edit list the way a player would: for audio it drops the encoder's priming
// samples before the edit's media time and the samples after the edit's end (so an
// AAC track encoded with -t 8 lasts exactly 8 s); for video it shifts composition
// offsets so the first frame is presented at time 0. Decode times start at 0.
func Open(path string) (in *Input, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil { // mp4ff v0.x panics on some malformed tables
			err = fmt.Errorf("%s: undecodable MP4 (%v): %w", path, r, media.ErrInvalidMedia)
		}
		if err != nil {
			f.Close()
			in = nil
		}
	}()
	mf, err := mp4.DecodeFile(f, mp4.WithDecodeMode(mp4.DecModeLazyMdat))
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", path, err, media.ErrInvalidMedia)
	}
	in = &Input{path: path, file: f}
	if mf.IsFragmented() {
		err = in.readFragmented(path)
	} else {
		err = in.readProgressive(mf)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(in.samples) == 0 {
		return nil, fmt.Errorf("%s: track has no samples: %w", path, media.ErrInvalidMedia)
	}
	durs := map[uint32]uint64{}
	for _, s := range in.samples {
		in.duration += uint64(s.dur)
		durs[s.dur]++
	}
	if in.info.Kind == media.Video && in.info.FrameRate == "" {
		in.info.FrameRate = frameRate(in.info.Timescale, durs)
	}
	return in, nil
}

// Close releases the file.
func (in *Input) Close() error { return in.file.Close() }

// Info describes the track.
func (in *Input) Info() TrackInfo { return in.info }

// Duration is the track's duration in its timescale, after the edit list.
func (in *Input) Duration() uint64 { return in.duration }

// NumSamples is the number of samples kept after the edit list.
func (in *Input) NumSamples() int { return len(in.samples) }

// Init returns the CMAF init segment of the track (track ID 1).
func (in *Input) Init() ([]byte, error) { return buildInit(in.trak, in.info) }

func (in *Input) readProgressive(mf *mp4.File) error {
	if mf.Moov == nil || len(mf.Moov.Traks) != 1 {
		n := 0
		if mf.Moov != nil {
			n = len(mf.Moov.Traks)
		}
		return fmt.Errorf("%d tracks, the segmenter wants exactly 1: %w", n, media.ErrInvalidMedia)
	}
	trak := mf.Moov.Traks[0]
	info, err := trackInfo(trak)
	if err != nil {
		return err
	}
	in.trak, in.info = trak, info
	stbl := trak.Mdia.Minf.Stbl
	if stbl.Stts == nil || stbl.Stsz == nil || stbl.Stsc == nil || (stbl.Stco == nil && stbl.Co64 == nil) {
		return fmt.Errorf("sample table incomplete (stts, stsz, stsc, stco): %w", media.ErrInvalidMedia)
	}
	n := int(stbl.Stsz.SampleNumber)
	if n > 1<<26 {
		return fmt.Errorf("%d samples: %w", n, media.ErrInvalidMedia)
	}
	ss := make([]inSample, n)
	// Durations and decode times.
	var t uint64
	i := 0
	for e, count := range stbl.Stts.SampleCount {
		for c := uint32(0); c < count && i < n; c++ {
			ss[i].dts, ss[i].dur = t, stbl.Stts.SampleTimeDelta[e]
			t += uint64(ss[i].dur)
			i++
		}
	}
	if i != n {
		return fmt.Errorf("stts covers %d of %d samples: %w", i, n, media.ErrInvalidMedia)
	}
	// Sizes, flags, composition offsets.
	for i := range ss {
		nr := uint32(i + 1)
		ss[i].size = stbl.Stsz.GetSampleSize(i + 1)
		ss[i].flags = SyncSampleFlags
		if stbl.Stss != nil && !stbl.Stss.IsSyncSample(nr) {
			ss[i].flags = NonSyncSampleFlags
		}
		if stbl.Ctts != nil && len(stbl.Ctts.EndSampleNr) > 1 {
			ss[i].cto = stbl.Ctts.GetCompositionTimeOffset(nr)
		}
	}
	// File offsets: walk the chunks.
	var offsets []uint64
	if stbl.Stco != nil {
		for _, o := range stbl.Stco.ChunkOffset {
			offsets = append(offsets, uint64(o))
		}
	} else {
		offsets = stbl.Co64.ChunkOffset
	}
	entries := stbl.Stsc.Entries
	if len(entries) == 0 && n > 0 {
		return fmt.Errorf("empty stsc: %w", media.ErrInvalidMedia)
	}
	i = 0
	e := 0
	for c := range offsets {
		chunkNr := uint32(c + 1)
		for e+1 < len(entries) && entries[e+1].FirstChunk <= chunkNr {
			e++
		}
		off := offsets[c]
		for k := uint32(0); k < entries[e].SamplesPerChunk && i < n; k++ {
			ss[i].off = int64(off)
			off += uint64(ss[i].size)
			i++
		}
	}
	if i != n {
		return fmt.Errorf("chunks hold %d of %d samples: %w", i, n, media.ErrInvalidMedia)
	}
	in.samples = applyEdits(ss, trak, mf.Moov.Mvhd, info)
	return nil
}

func (in *Input) readFragmented(path string) error {
	// Fragmented input is read into memory: it is small (a test fixture or an encoder's
	// recording) and mp4ff reads fragment data eagerly.
	if _, err := in.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	mf, err := mp4.DecodeFile(in.file)
	if err != nil {
		return fmt.Errorf("%v: %w", err, media.ErrInvalidMedia)
	}
	if mf.Init == nil || mf.Moov == nil || len(mf.Moov.Traks) != 1 {
		return fmt.Errorf("fragmented file needs an init segment with exactly 1 track: %w", media.ErrInvalidMedia)
	}
	trak := mf.Moov.Traks[0]
	info, err := trackInfo(trak)
	if err != nil {
		return err
	}
	in.trak, in.info = trak, info
	var trex *mp4.TrexBox
	if mf.Moov.Mvex != nil {
		trex = mf.Moov.Mvex.Trex
	}
	var ss []inSample
	for _, seg := range mf.Segments {
		for _, frag := range seg.Fragments {
			if frag.Moof == nil || frag.Moof.Traf == nil || frag.Mdat == nil {
				return fmt.Errorf("fragment without moof/traf/mdat: %w", media.ErrInvalidMedia)
			}
			fs, err := frag.GetFullSamples(trex)
			if err != nil {
				return fmt.Errorf("fragment %d: %v: %w", frag.Moof.Mfhd.SequenceNumber, err, media.ErrInvalidMedia)
			}
			for _, s := range fs {
				ss = append(ss, inSample{dts: s.DecodeTime, dur: s.Dur, size: s.Size, flags: s.Flags,
					cto: s.CompositionTimeOffset, data: s.Data})
			}
		}
	}
	if len(ss) > 0 {
		t0 := ss[0].dts
		for i := range ss {
			ss[i].dts -= t0
		}
	}
	in.samples = applyEdits(ss, trak, mf.Moov.Mvhd, info)
	return nil
}

// applyEdits applies the first non-empty edit of the track's edit list (see Open).
func applyEdits(ss []inSample, trak *mp4.TrakBox, mvhd *mp4.MvhdBox, info TrackInfo) []inSample {
	if trak.Edts == nil || len(trak.Edts.Elst) == 0 || trak.Edts.Elst[0] == nil || len(ss) == 0 {
		return ss
	}
	var edit *mp4.ElstEntry
	for i, e := range trak.Edts.Elst[0].Entries {
		if e.MediaTime >= 0 {
			edit = &trak.Edts.Elst[0].Entries[i]
			break
		}
	}
	if edit == nil || edit.MediaTime == 0 && info.Kind == media.Video {
		return ss
	}
	mediaTime := uint64(edit.MediaTime)
	var end uint64 // in media timescale, 0: no end
	if mvhd != nil && mvhd.Timescale > 0 && edit.SegmentDuration > 0 {
		end = mediaTime + mulDiv(edit.SegmentDuration, uint64(info.Timescale), uint64(mvhd.Timescale))
	}
	if info.Kind == media.Video {
		for i := range ss {
			ss[i].cto -= int32(mediaTime)
		}
		return ss
	}
	first := 0
	for first < len(ss) && ss[first].dts+uint64(ss[first].dur) <= mediaTime {
		first++
	}
	last := len(ss)
	if end > 0 {
		for last > first && ss[last-1].dts >= end {
			last--
		}
	}
	if first >= last {
		return ss // a nonsensical edit: keep everything rather than nothing
	}
	kept := ss[first:last]
	t0 := kept[0].dts
	for i := range kept {
		kept[i].dts -= t0
	}
	return kept
}

// mulDiv returns a*b/c without overflowing in the product.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// Boundary returns the start of the kth nominal segment of duration d in timescale ts.
func Boundary(k uint64, d time.Duration, ts uint32) uint64 {
	return mulDiv(k*uint64(d), uint64(ts), uint64(time.Second))
}

// Segment cuts the track into media segments of nominal duration d and calls emit for
// each, in order, with its SegmentRef (Number from 1, Start, Duration, Size) and bytes:
// styp + one moof+mdat with sequence number = Number. Video is cut at the first sync
// sample presented at or after each multiple of d; audio at the first sample that
// starts at or after it. A boundary that falls where no cut is possible is skipped.
// emit owns data after the call.
func (in *Input) Segment(d time.Duration, emit func(ref media.SegmentRef, data []byte) error) error {
	if d <= 0 {
		return fmt.Errorf("segment duration %s: %w", d, media.ErrBadRequest)
	}
	ts := in.info.Timescale
	video := in.info.Kind == media.Video
	start := 0
	k := uint64(1)
	number := uint64(1)
	for i := 1; i <= len(in.samples); i++ {
		if i < len(in.samples) {
			s := &in.samples[i]
			// Video cuts on presentation time with half a frame of slack for rounding in
			// the timescale; audio on decode time, exactly.
			t := int64(s.dts)
			if video {
				if !s.sync() {
					continue
				}
				t = s.pts() + int64(s.dur/2)
			}
			if t < int64(Boundary(k, d, ts)) {
				continue
			}
			for int64(Boundary(k, d, ts)) <= t {
				k++
			}
		}
		data, ref, err := in.segment(number, in.samples[start:i])
		if err != nil {
			return err
		}
		if err := emit(ref, data); err != nil {
			return err
		}
		number++
		start = i
	}
	return nil
}

// segment builds media segment number from samples.
func (in *Input) segment(number uint64, ss []inSample) ([]byte, media.SegmentRef, error) {
	out := make([]Sample, len(ss))
	var payload int64
	for i, s := range ss {
		out[i] = Sample{Duration: s.dur, Size: s.size, Flags: s.flags, CompositionTimeOffset: s.cto, Data: s.data}
		payload += int64(s.size)
	}
	if err := in.readData(ss, out); err != nil {
		return nil, media.SegmentRef{}, err
	}
	data := make([]byte, 0, len(segmentStyp)+int(payload)+256+16*len(ss))
	data = append(data, segmentStyp...)
	data, err := AppendFragment(data, uint32(number), OutputTrackID, ss[0].dts, out)
	if err != nil {
		return nil, media.SegmentRef{}, fmt.Errorf("%s: segment %d: %w", in.path, number, err)
	}
	ref := media.SegmentRef{Number: number, Start: ss[0].dts, Size: int64(len(data))}
	for _, s := range ss {
		ref.Duration += uint64(s.dur)
	}
	return data, ref, nil
}

// readData fills out[i].Data from the file for progressive input, reading runs of
// adjacent samples at once.
func (in *Input) readData(ss []inSample, out []Sample) error {
	for i := 0; i < len(ss); {
		if ss[i].data != nil || ss[i].size == 0 {
			i++
			continue
		}
		j, n := i+1, int64(ss[i].size)
		for j < len(ss) && ss[j].data == nil && ss[j].off == ss[j-1].off+int64(ss[j-1].size) {
			n += int64(ss[j].size)
			j++
		}
		buf := make([]byte, n)
		if _, err := in.file.ReadAt(buf, ss[i].off); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%s: sample data beyond the end of the file (truncated?): %w", in.path, media.ErrInvalidMedia)
			}
			return fmt.Errorf("%s: %w", in.path, err)
		}
		for p := int64(0); i < j; i++ {
			out[i].Data = buf[p : p+int64(ss[i].size) : p+int64(ss[i].size)]
			p += int64(ss[i].size)
		}
	}
	for i := range out {
		if out[i].Data == nil {
			out[i].Data = []byte{}
		}
	}
	return nil
}
