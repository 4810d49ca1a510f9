package cmaf

import (
	"bytes"
	"fmt"

	"github.com/Eyevinn/mp4ff/aac"
	"github.com/Eyevinn/mp4ff/mp4"

	"github.com/streambed/streambed/internal/media"
)

// TrackInfo describes one track as the manifests need it.
type TrackInfo struct {
	Kind       media.Kind
	Codec      string // RFC 6381: "avc1.64001f", "mp4a.40.2"
	Timescale  uint32
	Width      int    // video
	Height     int    // video
	FrameRate  string // video, from the most common sample duration: "25", "30000/1001"
	SampleRate int    // audio
	Channels   int    // audio
	Language   string // ISO 639-2 from mdhd, or BCP 47 from elng; "und" when unknown
}

// Init is a parsed CMAF init segment of one track.
type Init struct {
	TrackID  uint32
	Info     TrackInfo
	Defaults TrackDefaults // from trex
}

// ParseInit parses and checks the CMAF init segment b (ftyp+moov with mvex, one
// track). Errors wrap media.ErrInvalidMedia; no input makes it panic.
func ParseInit(b []byte) (in *Init, err error) {
	defer func() {
		if r := recover(); r != nil {
			in, err = nil, fmt.Errorf("init segment: undecodable boxes (%v): %w", r, media.ErrInvalidMedia)
		}
	}()
	// Walk the top level first: mp4ff is lenient about trailing garbage.
	for off := 0; off < len(b); {
		x, err := readBox(b, off, len(b))
		if err != nil {
			return nil, fmt.Errorf("init segment: %w", err)
		}
		off = x.end
	}
	f, err := mp4.DecodeFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("init segment: %v: %w", err, media.ErrInvalidMedia)
	}
	if f.Moov == nil || f.Moov.Mvex == nil || len(f.Segments) > 0 {
		return nil, fmt.Errorf("init segment: want ftyp+moov with mvex and no fragments: %w", media.ErrInvalidMedia)
	}
	if len(f.Moov.Traks) != 1 {
		return nil, fmt.Errorf("init segment: %d tracks, want 1: %w", len(f.Moov.Traks), media.ErrInvalidMedia)
	}
	trak := f.Moov.Traks[0]
	info, err := trackInfo(trak)
	if err != nil {
		return nil, fmt.Errorf("init segment: %w", err)
	}
	in = &Init{Info: info}
	if trak.Tkhd != nil {
		in.TrackID = trak.Tkhd.TrackID
	}
	for _, trex := range f.Moov.Mvex.Trexs {
		if trex != nil && trex.TrackID == in.TrackID {
			in.Defaults = TrackDefaults{
				SampleDuration: trex.DefaultSampleDuration,
				SampleSize:     trex.DefaultSampleSize,
				SampleFlags:    trex.DefaultSampleFlags,
			}
		}
	}
	return in, nil
}

// trackInfo reads what the manifests need from a trak box.
func trackInfo(trak *mp4.TrakBox) (TrackInfo, error) {
	if trak == nil || trak.Mdia == nil || trak.Mdia.Mdhd == nil || trak.Mdia.Hdlr == nil ||
		trak.Mdia.Minf == nil || trak.Mdia.Minf.Stbl == nil || trak.Mdia.Minf.Stbl.Stsd == nil {
		return TrackInfo{}, fmt.Errorf("incomplete trak box: %w", media.ErrInvalidMedia)
	}
	ti := TrackInfo{Timescale: trak.Mdia.Mdhd.Timescale, Language: trak.Mdia.Mdhd.GetLanguage()}
	if trak.Mdia.Elng != nil && trak.Mdia.Elng.Language != "" {
		ti.Language = trak.Mdia.Elng.Language
	}
	if ti.Timescale == 0 {
		return ti, fmt.Errorf("mdhd timescale 0: %w", media.ErrInvalidMedia)
	}
	stbl := trak.Mdia.Minf.Stbl
	stsd := stbl.Stsd
	switch h := trak.Mdia.Hdlr.HandlerType; h {
	case "vide":
		ti.Kind = media.Video
		e := stsd.AvcX
		if e == nil || e.AvcC == nil {
			return ti, fmt.Errorf("video codec %s is not supported (want H.264 avc1/avc3): %w", sampleEntryName(stsd), media.ErrInvalidMedia)
		}
		c := e.AvcC
		ti.Codec = fmt.Sprintf("%s.%02x%02x%02x", e.Type(), c.AVCProfileIndication, c.ProfileCompatibility, c.AVCLevelIndication)
		ti.Width, ti.Height = int(e.Width), int(e.Height)
		if stbl.Stts != nil {
			durs := map[uint32]uint64{}
			for i, d := range stbl.Stts.SampleTimeDelta {
				if i < len(stbl.Stts.SampleCount) {
					durs[d] += uint64(stbl.Stts.SampleCount[i])
				}
			}
			ti.FrameRate = frameRate(ti.Timescale, durs)
		}
	case "soun":
		ti.Kind = media.Audio
		e := stsd.Mp4a
		if e == nil || e.Esds == nil || e.Esds.DecConfigDescriptor == nil {
			return ti, fmt.Errorf("audio codec %s is not supported (want AAC mp4a): %w", sampleEntryName(stsd), media.ErrInvalidMedia)
		}
		dc := e.Esds.DecConfigDescriptor
		ti.SampleRate, ti.Channels = int(e.SampleRate), int(e.ChannelCount)
		ti.Codec = fmt.Sprintf("mp4a.%02x", dc.ObjectType)
		if dc.ObjectType == 0x40 { // MPEG-4 audio: the object type is in the AudioSpecificConfig
			if dc.DecSpecificInfo == nil {
				return ti, fmt.Errorf("AAC without AudioSpecificConfig: %w", media.ErrInvalidMedia)
			}
			asc, err := aac.DecodeAudioSpecificConfig(bytes.NewReader(dc.DecSpecificInfo.DecConfig))
			if err != nil {
				return ti, fmt.Errorf("AAC AudioSpecificConfig: %v: %w", err, media.ErrInvalidMedia)
			}
			ti.Codec = fmt.Sprintf("mp4a.40.%d", asc.ObjectType)
			ti.SampleRate = asc.SamplingFrequency
			if asc.ChannelConfiguration > 0 {
				ti.Channels = int(asc.ChannelConfiguration)
			}
		}
	default:
		return ti, fmt.Errorf("track handler %q is neither video nor audio: %w", printable(h), media.ErrInvalidMedia)
	}
	return ti, nil
}

func sampleEntryName(stsd *mp4.StsdBox) string {
	for _, c := range stsd.Children {
		if c != nil {
			return printable(c.Type())
		}
	}
	return "(none)"
}

// frameRate returns the frame rate from the most common sample duration, given how
// many samples have each duration.
func frameRate(ts uint32, counts map[uint32]uint64) string {
	var best uint32
	for d, n := range counts {
		if d > 0 && (best == 0 || n > counts[best] || n == counts[best] && d < best) {
			best = d
		}
	}
	if best == 0 {
		return ""
	}
	n, d := uint64(ts), uint64(best)
	g := gcd(n, d)
	n, d = n/g, d/g
	if d == 1 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, d)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// buildInit makes a CMAF init segment (ftyp + moov with mvex, track 1) for a track
// that uses the sample entry of trak.
func buildInit(trak *mp4.TrakBox, info TrackInfo) ([]byte, error) {
	init := mp4.CreateEmptyInit()
	init.Moov.Mvhd.Timescale = info.Timescale
	lang := trak.Mdia.Mdhd.GetLanguage()
	stsd := trak.Mdia.Minf.Stbl.Stsd
	switch info.Kind {
	case media.Video:
		init.AddEmptyTrack(info.Timescale, "video", lang)
		out := init.Moov.Trak
		out.Tkhd.Width = mp4.Fixed32(uint32(info.Width) << 16)
		out.Tkhd.Height = mp4.Fixed32(uint32(info.Height) << 16)
		out.Mdia.Minf.Stbl.Stsd.AddChild(stsd.AvcX)
	case media.Audio:
		init.AddEmptyTrack(info.Timescale, "audio", lang)
		init.Moov.Trak.Mdia.Minf.Stbl.Stsd.AddChild(stsd.Mp4a)
	}
	var buf bytes.Buffer
	if err := init.Encode(&buf); err != nil {
		return nil, fmt.Errorf("encode init segment: %w", err)
	}
	return buf.Bytes(), nil
}
