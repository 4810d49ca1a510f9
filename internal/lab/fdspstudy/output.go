package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/streambed/streambed/internal/fsutil"
)

func tmpFile(b []byte) string {
	f, _ := os.CreateTemp("", "fdspstudy-*.h264")
	f.Write(b)
	f.Close()
	return f.Name()
}

// frames is how many frames FFmpeg decodes from an Annex-B stream (0 if none).
func frames(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	p := tmpFile(b)
	defer os.Remove(p)
	out, _ := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", p, "-f", "null", "-").CombinedOutput()
	m := regexp.MustCompile(`frame=\s*(\d+)`).FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(string(m[len(m)-1][1]))
	return n
}

// psnr is FFmpeg's average PSNR of rx against ref, frame by frame.
func psnr(rx, ref []byte) *float64 {
	a, b := tmpFile(rx), tmpFile(ref)
	defer os.Remove(a)
	defer os.Remove(b)
	out, _ := exec.Command("ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", a, "-f", "h264", "-i", b, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-").CombinedOutput()
	m := regexp.MustCompile(`average:(\S+)`).FindSubmatch(out)
	if m == nil {
		return nil
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		v = 100 // identical to the reference (FFmpeg says inf)
	}
	return &v
}

func write(out string, rows []Row) error {
	if err := fsutil.WriteJSONAtomic(filepath.Join(out, "results.json"), rows, 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"table", "clip", "asset", "link", "rtt_ms", "rep", "variant", "bp", "bps", "rebuffer_ms", "rebuffer_count", "startup_delay_ms", "plr", "udp_loss", "decodable", "frames", "access_units", "psnr_db", "tcp_bytes", "udp_bytes", "mean_mbit_s", "client_rcvbuf_errors", "client_csum_errors", "error"})
	for _, r := range rows {
		ps := ""
		if r.PSNR != nil {
			ps = fmt.Sprintf("%.2f", *r.PSNR)
		}
		_ = w.Write([]string{strconv.Itoa(r.Table), r.Clip, r.Asset, r.Link, strconv.Itoa(r.RTTms), strconv.Itoa(r.Rep), r.Variant, fmt.Sprintf("%.1f", r.BP), fmt.Sprint(r.Stats.BPs),
			fmt.Sprintf("%.0f", r.RebufferMS), strconv.Itoa(r.RebufferCount), fmt.Sprintf("%.0f", r.StartupMS), fmt.Sprintf("%.5f", r.PLR), fmt.Sprintf("%.5f", r.UDPLoss),
			fmt.Sprintf("%.3f", r.Decodable), strconv.Itoa(r.Frames), strconv.Itoa(r.AUs), ps, strconv.FormatInt(r.TCPBytes, 10), strconv.FormatInt(r.UDPBytes, 10),
			fmt.Sprintf("%.3f", r.MeanMbps), count(r.RcvbufErrors), count(r.CsumErrors), r.Error})
	}
	w.Flush()
	return fsutil.WriteFileAtomic(filepath.Join(out, "results.csv"), b.Bytes(), 0o644)
}

// count is a recorded counter, or "" when it was not recorded.
func count(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}
