package fdsp

import (
	"io"
	"log/slog"

	"github.com/streambed/streambed/internal/mpegts"
)

// TSSink writes the played media as an MPEG transport stream to w: the video and,
// when the server sent a usable AudioSpecificConfig, the audio as ADTS. For
// ClientOptions.NewSink.
func TSSink(w io.Writer, log *slog.Logger) func(audioConfig []byte) (Sink, error) {
	return func(asc []byte) (Sink, error) {
		var ac *mpegts.AudioConfig
		if asc != nil {
			c, err := mpegts.ParseAudioSpecificConfig(asc)
			if err != nil && log != nil {
				log.Warn("fdsp: the audio is left out of the MPEG-TS output", "err", err)
			}
			if err == nil {
				ac = &c
			}
		}
		return tsSink{mpegts.NewWriter(w, ac), ac != nil}, nil
	}
}

type tsSink struct {
	w     *mpegts.Writer
	audio bool
}

func (s tsSink) WriteVideo(v VideoFrame) error {
	return s.w.WriteVideo(int64(v.PTS), int64(v.DTS), v.AnnexB, v.Key)
}

func (s tsSink) WriteAudio(pts uint64, frame []byte) error {
	if !s.audio {
		return nil
	}
	return s.w.WriteAudio(int64(pts), frame)
}
