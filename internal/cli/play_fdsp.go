package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streambed/streambed/internal/player/qoe"
	"github.com/streambed/streambed/internal/transport/fdsp"
)

// fdspFlags are play's flags for --transport fdsp, fdsp-tcp and fdsp-udp.
type fdspFlags struct {
	bp           *string
	output       *string
	outputFormat *string
	reference    *string
	playoutDelay *time.Duration
	repair       *bool
}

func addFDSPFlags(fs *flag.FlagSet) fdspFlags {
	return fdspFlags{
		bp:           fs.String("bp", "100", "fdsp: bitstream prioritisation, % of I-frame slice data sent on TCP (0..100), or auto (moved on the fly from measured loss and TCP lateness)"),
		output:       fs.String("output", "", "fdsp: write the received stream to `FILE`, or - for stdout (the report then goes to stderr): streambed play --transport fdsp URL --output - | ffplay -"),
		outputFormat: fs.String("output-format", "", "fdsp: ts (MPEG-TS, video and audio) or h264 (Annex-B, video only); default h264 for a .h264/.264 file, else ts"),
		reference:    fs.String("reference", "", "fdsp: compare the received video with the sent one and report psnr and ssim: `SRC` is a file or URL FFmpeg opens (its largest video stream), or origin for the URL being played; an asset played from its start"),
		playoutDelay: durationFlag(fs, "playout-delay", 500*time.Millisecond, "fdsp: time from the first substream's TCP part to the first frame's deadline (the jitter buffer)"),
		repair:       fs.Bool("repair", true, "fdsp, fdsp-udp: NACK lost UDP packets while their deadline leaves time for a resend (our fix; --repair=false: the FDSP study's design, lost UDP packets stay lost)"),
	}
}

func isFDSP(transport string) bool {
	return transport == "fdsp" || transport == "fdsp-tcp" || transport == "fdsp-udp"
}

// fdspRun carries play's general flags that FDSP honours.
type fdspRun struct {
	Duration time.Duration
	JSON     bool
	Insecure bool
	Quiet    bool
	// Sample is --sample-interval; NoSamples --no-samples.
	Sample    time.Duration
	NoSamples bool
}

// fdspReport is the QoE report every transport gives, with FDSP's keys on top.
type fdspReport struct {
	qoe.Report
	BP            float64    `json:"bp"`
	PLR           float64    `json:"plr"`
	RebufferMS    float64    `json:"rebuffer_ms"`
	RebufferCount int        `json:"rebuffer_count"`
	Decodable     float64    `json:"decodable"`
	FDSP          fdsp.Stats `json:"fdsp"`
	qualityReport            // --reference: psnr, ssim
}

// playFDSP plays a stream over FDSP: the endpoint from /api/streams, the
// received video to --output, the report as play's.
func playFDSP(ctx context.Context, u *url.URL, transport string, f fdspFlags, run fdspRun, stdout, stderr io.Writer) error {
	mode := map[string]fdsp.Mode{"fdsp": fdsp.ModeFDSP, "fdsp-tcp": fdsp.ModeTCP, "fdsp-udp": fdsp.ModeUDP}[transport]
	bp := uint8(fdsp.BPAuto)
	if *f.bp != "auto" {
		n, err := strconv.Atoi(*f.bp)
		if err != nil || n < 0 || n > 100 {
			return fmt.Errorf("--bp %q: want 0..100 or auto", *f.bp)
		}
		bp = uint8(n)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if run.Insecure {
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // --insecure: self-signed origins
	}
	ep, err := fdsp.Discover(ctx, u, hc)
	if err != nil {
		return err
	}
	format, err := fdspOutputFormat(*f.output, *f.outputFormat)
	if err != nil {
		return err
	}
	report := stdout
	var out io.Writer
	var file *os.File
	switch *f.output {
	case "":
	case "-":
		out, report = stdout, stderr
	default:
		// Written beside the target and renamed into place at the end, so a
		// half-received file never carries the final name.
		file, err = os.CreateTemp(filepath.Dir(*f.output), "."+filepath.Base(*f.output)+".tmp-*")
		if err != nil {
			return err
		}
		defer os.Remove(file.Name())
		out = file
	}
	opts := fdsp.ClientOptions{Addr: ep.Addr, Stream: ep.Stream, Mode: mode, BP: bp, PlayoutDelay: *f.playoutDelay, Repair: *f.repair, Duration: run.Duration, Output: out, SampleInterval: run.Sample}
	if out != nil && format == "ts" {
		opts.Output, opts.NewSink = nil, fdsp.TSSink(out, nil)
	}
	var rx *os.File // the played video as Annex-B, for --reference
	if *f.reference != "" {
		if rx, err = os.CreateTemp("", "streambed-rx-*.h264"); err != nil {
			return err
		}
		defer os.Remove(rx.Name())
		defer rx.Close()
		newSink, output := opts.NewSink, opts.Output
		opts.Output, opts.NewSink = nil, func(asc []byte) (fdsp.Sink, error) {
			t := annexBTee{rx: rx}
			switch {
			case newSink != nil:
				s, err := newSink(asc)
				t.sink = s
				return t, err
			case output != nil:
				t.rx = io.MultiWriter(rx, output)
			}
			return t, nil
		}
	}
	if !run.Quiet {
		opts.Progress = func(s fdsp.Stats) {
			fmt.Fprintf(stderr, "fdsp %s: substream %d  played %.1fs  bp %v  lost %d/%d  rebuffer %d (%.0f ms)\n",
				s.Mode, s.Substreams, s.PlayedS, s.BPs[len(s.BPs)-1], s.Lost, s.Packets, s.RebufferCount, s.RebufferMS)
		}
	}
	var timeline *liveTimeline // latency_ms for a live stream
	if ep.Live() {
		if timeline, err = loadLiveTimeline(ctx, u, hc); err != nil {
			fmt.Fprintf(stderr, "fdsp: no latency_ms: %v\n", err)
		}
	}
	st, runErr := fdsp.Play(ctx, opts)
	if file != nil {
		err := file.Close()
		if err == nil && runErr == nil {
			err = os.Rename(file.Name(), *f.output)
		}
		if runErr == nil {
			runErr = err
		}
	}
	rep := fdspReport{Report: fdspQoE(u, transport, st, runErr), BP: st.BP, PLR: st.PLR, RebufferMS: st.RebufferMS, RebufferCount: st.RebufferCount, Decodable: st.Decodable, FDSP: st}
	rep.FDSP.Samples = nil // once, in the report's own samples
	if timeline != nil {
		timeline.addLatency(&rep.Report, st)
	}
	if rx != nil && st.AUs > 0 {
		ref := *f.reference
		if ref == "origin" {
			ref = u.String()
		}
		rep.qualityReport = measureQuality(ctx, rx.Name(), ref, st.AUs)
	}
	if run.NoSamples {
		rep.Samples = nil
	}
	if run.JSON {
		enc := json.NewEncoder(report)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(report, "%s %s: played %.1f s in %.1f s, start-up %.0f ms, rebuffering %d (%.0f ms, start-up included), BP %.0f%%, PLR %.4f, decodable %.3f, %s\n",
			transport, ep.Stream, st.PlayedS, st.SessionS, st.StartupMS, st.RebufferCount, st.RebufferMS, st.BP, st.PLR, st.Decodable, st.EndReason)
		if q := rep.qualityReport; q.PSNR != nil && q.SSIM != nil {
			fmt.Fprintf(report, "against %s: PSNR %.2f dB, SSIM %.4f over %d frames\n", *f.reference, *q.PSNR, *q.SSIM, q.Frames)
		} else if q.Note != "" {
			fmt.Fprintf(report, "no PSNR/SSIM: %s\n", q.Note)
		}
	}
	return runErr
}

// fdspOutputFormat is --output-format, defaulted from the output's name: ts
// (what a player reading a pipe wants, with the audio) unless the file is named
// as raw H.264.
func fdspOutputFormat(output, format string) (string, error) {
	switch format {
	case "ts", "h264":
		return format, nil
	case "":
		if ext := strings.ToLower(filepath.Ext(output)); ext == ".h264" || ext == ".264" {
			return "h264", nil
		}
		return "ts", nil
	}
	return "", fmt.Errorf("--output-format %q: want ts or h264", format)
}

// fdspQoE fills the keys every transport reports from an FDSP session.
func fdspQoE(u *url.URL, transport string, st fdsp.Stats, err error) qoe.Report {
	r := qoe.Report{
		URL: u.String(), Transport: transport, Protocol: "FDSP/1", ABR: "none",
		Live: strings.Contains(u.Path, "/live/"), EndReason: st.EndReason,
		SessionS: st.SessionS, PlayedS: st.PlayedS,
		MediaBytes: st.TCPBytes + st.UDPBytes, PayloadBytes: st.TCPBytes + st.UDPBytes,
		OverheadSource: "estimate", StallEvents: []qoe.StallEvent{}, SwitchEvents: []qoe.SwitchEvent{}, Samples: []qoe.Sample{},
	}
	if err != nil {
		r.Error = err.Error()
	}
	for _, x := range st.Samples {
		r.Samples = append(r.Samples, qoe.Sample{T: x.T, BufferS: x.BufferS, State: x.State})
	}
	if st.Substreams > 0 {
		startup := st.StartupMS
		r.StartupDelayMS = &startup
		r.StallCount = max(0, st.RebufferCount-1)
		r.StallMS = st.RebufferMS - st.StartupMS
	}
	if st.SessionS > 0 {
		r.ThroughputKbps = float64(r.MediaBytes) * 8 / 1000 / st.SessionS
	}
	return r
}
