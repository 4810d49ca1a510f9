package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/streambed/streambed/internal/hub"
	"github.com/streambed/streambed/internal/server"
	"github.com/streambed/streambed/internal/source/encoder"
	"github.com/streambed/streambed/internal/source/pkg"
)

// Encode runs a live encoder that posts CMAF tracks to an origin's ingest URL.
func Encode(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "live" {
		fmt.Fprintln(stderr, "Usage: streambed encode live --to INGEST_URL [flags]   (streambed encode live --help)")
		return errors.New("the only mode is `live`")
	}
	fs := flag.NewFlagSet("encode live", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		to       = fs.String("to", "", "the channel's ingest `URL` (as `streambed serve` prints it); tracks post to URL/Streams(ID.cmfv|.cmfa)")
		token    = fs.String("token", "", "ingest `token`, sent as Authorization: Bearer")
		ladder   = fs.String("ladder", "small", "`ladder`: small (encodes in real time here) or published (the load tests' 8 rungs + 2 AAC)")
		duration time.Duration
		input    = fs.String("input", "", "media `file` to loop as the source (default: a synthetic clip with a clock and a tone)")
		replay   = fs.Bool("replay", false, "encode the ladder once, then post it in real time with rewritten timestamps (cheap: many channels from one machine)")
		chunk    = durationFlag(fs, "chunk", 0, "replay: post chunks of this `duration` as they are due (e.g. 40ms, one frame) instead of whole segments")
		preset   = fs.String("preset", "veryfast", "x264 `preset`")
		cache    = fs.String("cache", filepath.Join(server.DefaultDataDir(), "encoder"), "replay: `folder` for the ladder encoded once")
	)
	durationVar(fs, &duration, "duration", 0, "stop after this `duration`: seconds (20) or with a unit (5m); 0 until interrupted")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: streambed encode live --to INGEST_URL [flags]

A live encoder for Streambed's ingest (DASH-IF Live Media Ingest, Interface 1): one
long-running HTTP POST per track, CMAF header first, then fragments as they are made.
Media time is time since the Unix epoch, so redundant encoders agree on segment
boundaries and a restarted encoder continues the timeline.

  FFmpeg mode (default): FFmpeg encodes the ladder in real time, one output per track.
  --replay: the ladder is packaged once (cached), then posted in real time, retimed.
            The published ladder (10.2 Mbit/s, 1080p top) does not encode in real time
            on two cores: replay it.

Examples:
  streambed encode live --to http://localhost:8080/ingest/news --token T
  streambed encode live --to http://localhost:8080/ingest/news --token T --ladder published --replay

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("encode live: --to INGEST_URL is required (the channel's ingest URL)")
	}
	l, err := encoder.LadderNamed(*ladder)
	if err != nil {
		return err
	}
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	fmt.Fprintf(stderr, "encoding the %s ladder (%d tracks, %.2f Mbit/s, %v segments) to %s\n",
		l.Name, len(l.Tracks()), float64(l.Bitrate())/1e6, l.SegmentDuration(), *to)
	if !*replay {
		args := encoder.FFmpegArgs(encoder.FFmpegOptions{Base: *to, Token: *token, Ladder: l, Input: *input, Preset: *preset, Now: time.Now()})
		return encoder.RunFFmpeg(ctx, "", args, func(p encoder.Progress) {
			fmt.Fprintf(stderr, "\rframes %d  %.1f fps  speed %s  %v posted   ", p.Frame, p.FPS, p.Speed, p.OutTime.Truncate(time.Second))
		})
	}
	// The ladder, packaged once: a synthetic clip a whole number of segments long.
	o := pkg.Options{
		Input: *input, OutDir: filepath.Join(*cache, l.Name), Name: l.Name, SegmentDuration: l.SegmentDuration(),
		Ladder: l.Video, FPS: l.FPS, Preset: *preset, Log: stderr,
	}
	if *input == "" {
		o.Synthetic = 20 * l.SegmentDuration()
	}
	if len(l.Audio) > 0 {
		// Every AAC track of the ladder (the published one has 64k and 128k).
		o.AudioBitrate, o.ExtraAudioBitrates = l.Audio[0], l.Audio[1:]
	} else {
		o.AudioBitrate = -1
	}
	if _, err := pkg.Package(ctx, o); err != nil {
		return fmt.Errorf("encode live: packaging the ladder for replay: %w", err)
	}
	a, err := hub.OpenAsset(o.OutDir)
	if err != nil {
		return err
	}
	start := time.Now()
	err = encoder.Replay(ctx, a, encoder.ReplayOptions{Base: *to, Token: *token, ChunkDuration: *chunk,
		Progress: func(p encoder.ReplayProgress) {
			el := time.Since(start).Seconds()
			fmt.Fprintf(stderr, "\rsegment %d  %d posted  %.2f Mbit/s   ", p.Number, p.Segments, float64(p.Bytes)*8/1e6/max(el, 1))
		}})
	fmt.Fprintln(stderr)
	return err
}
