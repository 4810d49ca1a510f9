package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"log"
	"path/filepath"
	"strconv"

	"github.com/streambed/streambed/internal/fsutil"
)

// row is one run of the side-by-side.
type row struct {
	RTTms          float64 `json:"rtt_ms"`
	Multiplier     int     `json:"multiplier"`
	BudgetMS       float64 `json:"latency_budget_ms"` // SRT's latency window = FDSP's playout delay
	JitterBufferMS float64 `json:"jitter_buffer_ms"`  // added by both players on top
	// FDSPDelayFraction: FDSP's playout delay is this share of the budget.
	FDSPDelayFraction float64 `json:"fdsp_delay_fraction"`
	Peer              string  `json:"peer"`
	Repair            bool    `json:"repair"` // FDSP: the client NACKed lost UDP packets (our fix)
	BP                float64 `json:"bp"`     // FDSP: mean BP in effect
	playoutResult
	StallMS float64 `json:"stall_ms"` // rebuffering after the start-up
	// PLR: FDSP's (UDP packets lost or late over the stream as pure-UDP packets);
	// SRT's (SRT packets, 1316-byte datagrams, not delivered over those sent).
	PLR       float64     `json:"plr"`
	Decodable *float64    `json:"decodable,omitempty"` // FDSP: share of access units with every slice header
	AUs       int         `json:"access_units"`
	Error     string      `json:"error,omitempty"`
	SRT       *srtResult  `json:"srt,omitempty"`
	FDSP      *fdspResult `json:"fdsp,omitempty"`
}

func srtRow(base row, r srtResult, err error) row {
	x := base
	x.Peer, x.playoutResult, x.PLR, x.AUs, x.SRT = "srt", r.playoutResult, r.PLR, r.AUs, &r
	x.StallMS = x.RebufferMS - x.StartupMS
	if err != nil {
		x.Error = err.Error()
	}
	return x
}

func fdspRow(base row, v fdspVariant, r fdspResult, err error) row {
	x := base
	x.Peer, x.playoutResult, x.PLR, x.AUs, x.FDSP = v.Name, r.playoutResult, r.Stats.PLR, r.Stats.AUs, &r
	x.BP = r.Stats.BP
	d := r.Stats.Decodable
	x.Decodable = &d
	x.StallMS = x.RebufferMS - x.StartupMS
	if err != nil {
		x.Error = err.Error()
	}
	return x
}

func logRow(r row) {
	log.Printf("  %s: start-up %.0f ms, first frame %.0f ms, rebuffering %.0f ms in %d (stalls %.0f ms), PLR %.4f, latency median %.0f max %.0f ms, %d AUs, repair %s %s",
		r.Peer, r.StartupMS, r.FirstFrameMS, r.RebufferMS, r.RebufferCount, r.StallMS, r.PLR, r.LatencyMedianMS, r.LatencyMaxMS, r.AUs, repairCell(r), r.Error)
}

var csvHeader = []string{"rtt_ms", "multiplier", "latency_budget_ms", "jitter_buffer_ms", "peer", "bp", "startup_ms", "first_frame_ms", "rebuffer_ms", "rebuffer_count", "stall_ms",
	"plr", "latency_median_ms", "latency_max_ms", "access_units", "decodable", "srt_recv_lost", "srt_recv_dropped", "srt_send_retransmits", "error",
	"fdsp_delay_fraction", "repair", "repair_nacked", "repair_repaired", "repair_late", "repair_no_time", "repair_bytes"}

func write(out string, rows []row) error {
	if err := fsutil.WriteJSONAtomic(filepath.Join(out, "results.json"), rows, 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(csvHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for _, r := range rows {
		dec, lost, dropped, retr := "", "", "", ""
		if r.Decodable != nil {
			dec = fmt.Sprintf("%.4f", *r.Decodable)
		}
		if r.SRT != nil {
			lost, dropped, retr = strconv.Itoa(r.SRT.SRT.RecvLost), strconv.Itoa(r.SRT.SRT.RecvDropped), strconv.Itoa(r.SRT.SRT.SendRetrans)
		}
		_ = w.Write(append([]string{f(r.RTTms), strconv.Itoa(r.Multiplier), f(r.BudgetMS), f(r.JitterBufferMS), r.Peer, f(r.BP), f(r.StartupMS), f(r.FirstFrameMS),
			f(r.RebufferMS), strconv.Itoa(r.RebufferCount), f(r.StallMS), fmt.Sprintf("%.5f", r.PLR), f(r.LatencyMedianMS), f(r.LatencyMaxMS),
			strconv.Itoa(r.AUs), dec, lost, dropped, retr, r.Error,
			fmt.Sprintf("%.2f", r.FDSPDelayFraction), strconv.FormatBool(r.Repair)}, repairCSV(r)...))
	}
	w.Flush()
	return fsutil.WriteFileAtomic(filepath.Join(out, "results.csv"), b.Bytes(), 0o644)
}

func table(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| RTT ms | window | peer | BP | start-up ms | first frame ms | rebuffering ms (instances) | stalls ms | PLR % | added latency median / max ms | AUs | repair: repaired / NACKed (late, no time) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		bp := "—"
		if r.Peer != "srt" {
			bp = fmt.Sprintf("%.0f", r.BP)
		}
		fmt.Fprintf(w, "| %.0f | %d× (%.0f ms) | %s | %s | %.0f | %.0f | %.0f (%d) | %.0f | %.3f | %.0f / %.0f | %d | %s |\n",
			r.RTTms, r.Multiplier, r.BudgetMS, r.Peer, bp, r.StartupMS, r.FirstFrameMS, r.RebufferMS, r.RebufferCount, r.StallMS, 100*r.PLR, r.LatencyMedianMS, r.LatencyMaxMS, r.AUs, repairCell(r))
	}
}

// repairCell is an FDSP row's repair counts, "—" without repair.
func repairCell(r row) string {
	if r.FDSP == nil || r.FDSP.Stats.Repair == nil {
		return "—"
	}
	p := r.FDSP.Stats.Repair
	return fmt.Sprintf("%d / %d (%d, %d)", p.Repaired, p.Nacked, p.RepairLate, p.NoTime)
}

// repairCSV is an FDSP row's repair counts for the CSV (empty without repair).
func repairCSV(r row) []string {
	if r.FDSP == nil || r.FDSP.Stats.Repair == nil {
		return []string{"", "", "", "", ""}
	}
	p := r.FDSP.Stats.Repair
	return []string{strconv.Itoa(p.Nacked), strconv.Itoa(p.Repaired), strconv.Itoa(p.RepairLate), strconv.Itoa(p.NoTime), strconv.FormatInt(p.RepairBytes, 10)}
}
