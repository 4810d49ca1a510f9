// Command wspushlab runs the WebSocket push adaptation experiments of
// docs/results/wspush-adaptation.md: a live channel pushed over one WebSocket through
// an emulated link whose rate steps (internal/lab/steplab), once per
// policy, writing one timeline per policy (OUT/POLICY.json: every video segment and
// every server message) and a plot of both (OUT/adaptation.svg). Needs root.
//
//	sudo go run ./internal/lab/wspushlab -out docs/results/tmp/step \
//	    -phases 2mbit:6s,300kbit:12s,2mbit:20s
//	sudo go run ./internal/lab/wspushlab -out docs/results/tmp/step \
//	    -ladder 360p:400k,540p:1000k,720p:2500k -audio 128k \
//	    -phases 6mbit:20s,1.5mbit:20s,6mbit:20s
//
// The content is packaged once by internal/testmedia (8 s synthetic, 2 s segments,
// cached under .cache/testmedia in the repository). The CI check of the same set-up
// is the test TestNetemStepDown; this program asserts nothing.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/streambed/streambed/internal/lab/steplab"
	"github.com/streambed/streambed/internal/source/pkg"
	"github.com/streambed/streambed/internal/testmedia"
	"github.com/streambed/streambed/internal/transport/wspush"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "wspushlab:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("wspushlab", flag.ContinueOnError)
	out := fs.String("out", "", "folder for POLICY.json and adaptation.svg (required)")
	ladder := fs.String("ladder", "", `video ladder of the looped asset, e.g. "360p:400k,540p:1000k,720p:2500k" (default: the test asset's 180p:100k,360p:400k)`)
	audio := fs.String("audio", "", `audio bitrate, e.g. "128k" (default: the test asset's 64k)`)
	phases := fs.String("phases", "2mbit:6s,300kbit:12s,2mbit:20s", "the link's steps, RATE:DURATION,...")
	policies := fs.String("policies", wspush.PolicyTCP+","+wspush.PolicyBuffer, "the policies to run, one session each")
	trace := fs.Bool("trace", false, "print every complete segment")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("-out is required, and no arguments")
	}
	ph, err := steplab.ParsePhases(*phases)
	if err != nil {
		return err
	}
	opts := testmedia.Options{Ladder: *ladder}
	if *audio != "" {
		bps, err := pkg.ParseBitrate(*audio)
		if err != nil {
			return fmt.Errorf("-audio: %w", err)
		}
		opts.AudioBitrate = bps
	}
	fmt.Fprintln(os.Stderr, "packaging (or reusing) the asset ...")
	asset, err := testmedia.Build(opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var all []steplab.Timeline
	for _, pol := range strings.Split(*policies, ",") {
		fmt.Fprintf(os.Stderr, "policy %s: %s\n", pol, *phases)
		o := steplab.Options{Asset: asset, Policy: pol, Phases: ph}
		if *trace {
			o.Trace = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
		}
		tl, err := steplab.Run(ctx, o)
		if err != nil {
			return fmt.Errorf("policy %s: %w", pol, err)
		}
		all = append(all, tl)
		b, _ := json.MarshalIndent(tl, "", " ")
		if err := os.WriteFile(filepath.Join(*out, pol+".json"), b, 0o644); err != nil {
			return err
		}
		for _, e := range tl.Events {
			if e.Type == "switch" || e.Type == "skip" {
				fmt.Fprintf(os.Stderr, "  %6.2fs %s %s %s\n", e.T, e.Type, e.To, e.Reason)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(*out, "adaptation.svg"), steplab.SVG(all, ph), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
	return nil
}
