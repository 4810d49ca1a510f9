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
	playoutDelay *time.Duration
}

func addFDSPFlags(fs *flag.FlagSet) fdspFlags {
	return fdspFlags{
		bp:           fs.String("bp", "100", "fdsp: bitstream prioritisation, % of I-frame slice data sent on TCP (0..100), or auto (moved on the fly from measured loss and TCP lateness)"),
		output:       fs.String("output", "", "fdsp: write the received video as an Annex-B H.264 stream to `FILE`, or - for stdout (the report then goes to stderr): ffplay -f h264 -"),
		playoutDelay: durationFlag(fs, "playout-delay", 500*time.Millisecond, "fdsp: time from the first substream's TCP part to the first frame's deadline (the jitter buffer)"),
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
	opts := fdsp.ClientOptions{Addr: ep.Addr, Stream: ep.Stream, Mode: mode, BP: bp, PlayoutDelay: *f.playoutDelay, Duration: run.Duration, Output: out, SampleInterval: run.Sample}
	if !run.Quiet {
		opts.Progress = func(s fdsp.Stats) {
			fmt.Fprintf(stderr, "fdsp %s: substream %d  played %.1fs  bp %v  lost %d/%d  rebuffer %d (%.0f ms)\n",
				s.Mode, s.Substreams, s.PlayedS, s.BPs[len(s.BPs)-1], s.Lost, s.Packets, s.RebufferCount, s.RebufferMS)
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
	}
	return runErr
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
