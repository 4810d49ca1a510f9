package fdsp

import (
	"bytes"

	"github.com/Eyevinn/mp4ff/mp4"
)

// The audio travels on TCP as raw AAC frames (FrameAudio). A client that writes a
// container with audio (MPEG-TS: ADTS headers) needs the AudioSpecificConfig,
// which the server sends once per connection as FrameAudioConfig before the first
// substream. Older clients ignore the frame type; a stream without audio, or
// whose config cannot be read, sends none.

// audioSpecificConfig reads the AAC AudioSpecificConfig from an audio track's
// CMAF init segment (nil if it has none).
func audioSpecificConfig(init []byte) (asc []byte) {
	defer func() {
		if recover() != nil { // mp4ff on odd boxes: no config rather than a crash
			asc = nil
		}
	}()
	f, err := mp4.DecodeFile(bytes.NewReader(init))
	if err != nil || f.Moov == nil || len(f.Moov.Traks) != 1 {
		return nil
	}
	t := f.Moov.Traks[0]
	if t.Mdia == nil || t.Mdia.Minf == nil || t.Mdia.Minf.Stbl == nil || t.Mdia.Minf.Stbl.Stsd == nil {
		return nil
	}
	e := t.Mdia.Minf.Stbl.Stsd.Mp4a
	if e == nil || e.Esds == nil || e.Esds.DecConfigDescriptor == nil || e.Esds.DecConfigDescriptor.DecSpecificInfo == nil {
		return nil
	}
	return append([]byte(nil), e.Esds.DecConfigDescriptor.DecSpecificInfo.DecConfig...)
}
