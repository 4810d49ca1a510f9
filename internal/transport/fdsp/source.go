package fdsp

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/streambed/streambed/internal/avc"
	"github.com/streambed/streambed/internal/cmaf"
	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/media"
)

// accessUnit is one video sample as NAL units, with times at 90 kHz.
type accessUnit struct {
	dts, pts uint64
	dur      uint32
	nals     [][]byte
}

// substream is the unit FDSP schedules: whole segments adding up to at least the
// configured length, so each starts at a keyframe and a resumed client can decode.
type substream struct {
	index    uint32
	firstDTS uint64
	dur      uint32
	aus      []accessUnit
	audio    []Audio
	params   [][]byte
}

// mediaReader turns a hub stream's video track (and its first audio track) into
// substreams, for an asset from its first segment to its last, for a channel from
// the newest complete segment on, waiting for each next one.
type mediaReader struct {
	st     hub.Stream
	video  *media.Track
	audio  *media.Track
	asc    []byte // the audio's AudioSpecificConfig; nil: none or unreadable
	vdef   cmaf.TrackDefaults
	adef   cmaf.TrackDefaults
	ps     *avc.ParameterSets
	lsize  int
	length time.Duration
	next   uint64 // segment number
	last   uint64 // an asset's last segment number
	index  uint32 // next substream index
	ended  bool
}

func newMediaReader(st hub.Stream, trackID string, length time.Duration) (*mediaReader, error) {
	info := st.Info()
	videos := info.TracksOf(media.Video)
	if len(videos) == 0 {
		return nil, fmt.Errorf("stream %q has no video track: %w", info.Name, media.ErrNotFound)
	}
	r := &mediaReader{st: st, video: videos[len(videos)-1], length: length}
	if trackID != "" {
		t, err := info.Track(trackID)
		if err != nil || t.Kind != media.Video {
			return nil, fmt.Errorf("stream %q has no video track %q: %w", info.Name, trackID, media.ErrNotFound)
		}
		r.video = t
	}
	if a := info.TracksOf(media.Audio); len(a) > 0 {
		r.audio = a[0]
	}
	init, err := st.Init(r.video.ID)
	if err != nil {
		return nil, err
	}
	if r.ps, r.lsize, err = avc.FromInit(init); err != nil {
		return nil, err
	}
	in, err := cmaf.ParseInit(init)
	if err != nil {
		return nil, err
	}
	r.vdef = in.Defaults
	if r.audio != nil {
		if b, err := st.Init(r.audio.ID); err == nil {
			if in, err := cmaf.ParseInit(b); err == nil {
				r.adef = in.Defaults
				r.asc = audioSpecificConfig(b)
			}
		}
	}
	w, err := st.Window(time.Now())
	if err != nil {
		return nil, err
	}
	refs := w[r.video.ID]
	if len(refs) == 0 && !st.Live() {
		return nil, fmt.Errorf("stream %q has no segments: %w", info.Name, media.ErrNotFound)
	}
	switch {
	case !st.Live():
		r.next, r.last = refs[0].Number, refs[len(refs)-1].Number
	case len(refs) > 0:
		r.next = refs[len(refs)-1].Number // the live edge's newest complete segment
	}
	return r, nil
}

// to90k converts ticks of timescale ts to 90 kHz without overflow.
func to90k(t uint64, ts uint32) uint64 {
	hi, lo := bits.Mul64(t, 90000)
	q, _ := bits.Div64(hi, lo, uint64(ts))
	return q
}

// segment reads segment n of a track: an asset's at once, a channel's when it is
// complete. io.EOF: an asset has no more.
func (r *mediaReader) segment(ctx context.Context, track string, n uint64) (*media.Segment, error) {
	if c, ok := r.st.(*hub.Channel); ok {
		return c.Await(ctx, track, n)
	}
	return r.st.Segment(track, n, time.Now())
}

// errEnd says the stream has no more substreams.
var errEnd = errors.New("fdsp: end of stream")

// Next builds the next substream.
func (r *mediaReader) Next(ctx context.Context) (*substream, error) {
	if r.ended {
		return nil, errEnd
	}
	ss := &substream{index: r.index, params: append(append([][]byte(nil), r.ps.SPS...), r.ps.PPS...)}
	var dur time.Duration
	for dur < r.length {
		if !r.st.Live() && r.next > r.last {
			r.ended = true
			break
		}
		seg, err := r.segment(ctx, r.video.ID, r.next)
		if err != nil {
			return nil, err
		}
		if err := r.addVideo(ss, seg); err != nil {
			return nil, fmt.Errorf("segment %d: %w", r.next, err)
		}
		if r.audio != nil {
			if a, err := r.segment(ctx, r.audio.ID, r.next); err == nil {
				r.addAudio(ss, a)
			}
		}
		dur += r.video.Duration(seg.Duration)
		r.next++
	}
	if len(ss.aus) == 0 {
		return nil, errEnd
	}
	first, last := ss.aus[0], ss.aus[len(ss.aus)-1]
	ss.firstDTS = first.dts
	ss.dur = uint32(last.dts + uint64(last.dur) - first.dts)
	r.index++
	return ss, nil
}

func (r *mediaReader) addVideo(ss *substream, seg *media.Segment) error {
	p, err := cmaf.ParseSegment(seg.Bytes(), r.vdef)
	if err != nil {
		return err
	}
	ts := r.video.Timescale
	for _, f := range p.Fragments {
		t := f.BaseMediaDecodeTime
		for _, s := range f.Samples {
			nals, err := avc.SampleNALs(s.Data, r.lsize)
			if err != nil {
				return err
			}
			pts := int64(t) + int64(s.CompositionTimeOffset)
			if pts < 0 {
				pts = 0
			}
			ss.aus = append(ss.aus, accessUnit{
				dts: to90k(t, ts), pts: to90k(uint64(pts), ts),
				dur: uint32(to90k(uint64(s.Duration), ts)), nals: nals,
			})
			t += uint64(s.Duration)
		}
	}
	return nil
}

func (r *mediaReader) addAudio(ss *substream, seg *media.Segment) {
	p, err := cmaf.ParseSegment(seg.Bytes(), r.adef)
	if err != nil {
		return
	}
	for _, f := range p.Fragments {
		t := f.BaseMediaDecodeTime
		for _, s := range f.Samples {
			ss.audio = append(ss.audio, Audio{PTS: to90k(t, r.audio.Timescale), Data: s.Data})
			t += uint64(s.Duration)
		}
	}
}
