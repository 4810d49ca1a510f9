package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/source/pkg"
)

// Package encodes a media file, or a synthetic clip, into a packaged asset folder.
func Package(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("package", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		out       = fs.String("o", "", "output asset `folder` (created or replaced atomically)")
		synthetic = durationFlag(fs, "synthetic", 0, "encode a synthetic test clip of this `duration` (testsrc2 with a burnt-in clock, 440 Hz tone) instead of a file")
		segDur    = durationFlag(fs, "segment-duration", pkg.DefaultSegmentDuration, "segment `duration`; every video segment starts with a keyframe")
		ladder    = fs.String("ladder", pkg.DefaultLadder, "video `rungs` HEIGHTp:BITRATE, comma-separated")
		audioBR   = fs.String("audio-bitrate", "128k", "AAC-LC `bitrate` (48 kHz stereo), or several for one track each (64k,128k); 0 for no audio track")
		name      = fs.String("name", "", "asset `name` (default: the output folder's name)")
		fps       = fs.Int("fps", pkg.DefaultFPS, "output frame `rate`")
		preset    = fs.String("preset", pkg.DefaultPreset, "x264 `preset` (ultrafast … veryslow)")
		force     = fs.Bool("force", false, "re-package even when the folder is up to date")
		keepDur   = fs.Bool("no-loop-trim", false, "keep the full duration instead of trimming to a loopable length (on-demand only: the asset then cannot be looped live)")
	)
	fs.StringVar(out, "output", "", "same as -o")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: streambed package IN -o DIR [flags]
       streambed package --synthetic DURATION -o DIR [flags]

Encodes IN (any file FFmpeg reads) into an H.264 ladder and an AAC-LC track in one
FFmpeg run, cuts them into CMAF segments and writes the asset folder DIR:

  DIR/stream.json          descriptor (written last: its presence means complete)
  DIR/{track}/init.mp4     init segments; tracks v{height} and a{kbps}
  DIR/{track}/{n}.m4s      media segments, numbered from 1
  DIR/manifest.mpd, DIR/master.m3u8, ...  DASH and HLS manifests

Every video segment starts with a keyframe at an exact multiple of the segment
duration. The length is trimmed to a multiple of the loop period, LCM(segment
duration, 1/fps, 1024/48000 s), so every track ends together and the asset loops
seamlessly as a live channel (25 fps: 8 s for 1 s or 2 s segments, 40 s for 10 s).

Re-running with the same input and flags prints "up to date" and reuses DIR. The
folder is built beside DIR and renamed into place: an interrupted or failed run
leaves no partial DIR (an older DIR stays as it was). Needs ffmpeg and ffprobe.

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprint(stderr, `
Examples:
  streambed package talk.mp4 -o assets/talk
  streambed package --synthetic 40s -o assets/demo
  streambed package movie.mkv -o assets/movie --segment-duration 10s --ladder 360p:500k,1080p:4500k
  streambed package --synthetic 8s -o /tmp/tiny --ladder 180p:100k --audio-bitrate 64k --preset ultrafast
`)
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	usageErr := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "streambed package: "+format+"\n\n", a...)
		fs.Usage()
		return fmt.Errorf(format, a...)
	}
	o := pkg.Options{
		Synthetic:       *synthetic,
		OutDir:          *out,
		Name:            *name,
		SegmentDuration: *segDur,
		FPS:             *fps,
		Preset:          *preset,
		KeepDuration:    *keepDur,
		Log:             stderr,
	}
	switch {
	case len(pos) > 1:
		return usageErr("one input file, got %d: %s", len(pos), strings.Join(pos, " "))
	case len(pos) == 1 && *synthetic > 0:
		return usageErr("give an input file or --synthetic, not both")
	case len(pos) == 0 && *synthetic <= 0:
		return usageErr("no input: give a media file or --synthetic DURATION")
	case *out == "":
		return usageErr("no output folder: add -o DIR")
	}
	if len(pos) == 1 {
		o.Input = pos[0]
	}
	var err error
	if o.Ladder, err = pkg.ParseLadder(*ladder); err != nil {
		return err
	}
	if s := strings.TrimSpace(*audioBR); s == "0" || s == "none" {
		o.AudioBitrate = -1
	} else {
		for i, f := range strings.Split(s, ",") {
			b, err := pkg.ParseBitrate(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("--audio-bitrate: %w", err)
			}
			if i == 0 {
				o.AudioBitrate = b
			} else {
				o.ExtraAudioBitrates = append(o.ExtraAudioBitrates, b)
			}
		}
	}
	if *force {
		if err := pkg.Invalidate(o.OutDir); err != nil {
			return err
		}
	}
	start := time.Now()
	res, err := pkg.Package(ctx, o)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("interrupted; nothing was written")
		}
		return err
	}
	a := res.Asset
	if res.UpToDate {
		fmt.Fprintf(stdout, "%s: up to date (%s, fingerprint %s)\n", res.Dir, a.Source, a.Fingerprint)
		return nil
	}
	var tracks []string
	for _, t := range a.Tracks {
		tracks = append(tracks, fmt.Sprintf("%s %s %d kbit/s", t.ID, t.Codec, (t.Bandwidth+999)/1000))
	}
	nseg := len(a.Tracks[0].Segments)
	fmt.Fprintf(stdout, "packaged %q into %s in %s: %s in %d segments of %s\n  tracks: %s\n",
		a.Name, res.Dir, time.Since(start).Round(100*time.Millisecond),
		time.Duration(a.DurationMS)*time.Millisecond, nseg, time.Duration(a.SegmentDurationMS)*time.Millisecond,
		strings.Join(tracks, ", "))
	if res.Trimmed > 0 {
		fmt.Fprintf(stdout, "  trimmed from %s to a multiple of the %s loop period\n",
			res.InputDuration.Round(time.Millisecond), res.Period)
	}
	return nil
}
