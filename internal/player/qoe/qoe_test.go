package qoe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRecorder(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := NewRecorder(t0, Options{URL: "u", Transport: "h2", ABR: "bola", LinkRate: 4e6})
	r.Request(1000, 300, false, false, 0, "HTTP/2.0") // manifest
	r.Request(500_000, 100, true, false, time.Second, "")
	r.MediaRequest()
	r.Request(500_000, 100, true, true, time.Second, "") // pushed
	r.Started(at(1500))
	r.Started(at(9000)) // only the first start counts
	r.Played(at(3500), "v1", 1_000_000, 2*time.Second, true)
	r.Played(at(3500), "a1", 128_000, 2*time.Second, false)
	r.StallStarted(at(3500))
	r.StallStarted(at(3600)) // already stalled
	r.StallEnded(at(4000))
	r.Played(at(6000), "v2", 3_000_000, 2*time.Second, true)
	r.Latency(3 * time.Second)
	r.Latency(5 * time.Second)
	r.Sample(at(1000), 1500*time.Millisecond, 1_000_000, "playing", nil)
	r.StallStarted(at(7000)) // still stalled at the end
	rep := r.Finish(at(8000), "duration", nil, 1_010_000, 2000, true)

	if *rep.StartupDelayMS != 1500 || rep.StallCount != 2 || rep.StallMS != 1500 {
		t.Errorf("start-up %v, stalls %d, %v ms", *rep.StartupDelayMS, rep.StallCount, rep.StallMS)
	}
	if rep.Switches != 1 || rep.SwitchEvents[0] != (SwitchEvent{AtS: 4, From: "v1", To: "v2"}) {
		t.Errorf("switches %d %+v", rep.Switches, rep.SwitchEvents)
	}
	if rep.AvgBitrateKbps != 2000 || rep.PlayedS != 4 || rep.PerTrackS["a1"] != 2 {
		t.Errorf("bitrate %v, played %v, per track %v", rep.AvgBitrateKbps, rep.PlayedS, rep.PerTrackS)
	}
	if rep.Requests != 2 || rep.Pushed != 1 || rep.MediaRequests != 1 || rep.PayloadBytes != 1_001_000 || rep.MediaBytes != 1_000_000 {
		t.Errorf("requests %d pushed %d media %d payload %d media bytes %d", rep.Requests, rep.Pushed, rep.MediaRequests, rep.PayloadBytes, rep.MediaBytes)
	}
	if rep.WireBytes != 1_012_000 || rep.OverheadBytes != 11_000 || rep.OverheadSource != "socket" || rep.HeaderEstimateB != 500 {
		t.Errorf("wire %d overhead %d (%s) per-request %d", rep.WireBytes, rep.OverheadBytes, rep.OverheadSource, rep.HeaderEstimateB)
	}
	// 1 MB of media in 2 s of downloads; over 8 s of session on a 4 Mbit/s link.
	if rep.ThroughputKbps != 4000 || *rep.LinkUtilisation != 0.25 || *rep.LinkRateKbps != 4000 {
		t.Errorf("throughput %v, utilisation %v", rep.ThroughputKbps, *rep.LinkUtilisation)
	}
	if *rep.LatencyMS != 4000 || *rep.LatencyMinMS != 3000 || *rep.LatencyMaxMS != 5000 || *rep.LatencyEndMS != 5000 {
		t.Errorf("latency %v", *rep.LatencyMS)
	}
	if rep.SessionS != 8 || rep.EndReason != "duration" || rep.Protocol != "HTTP/2.0" || len(rep.Samples) != 1 {
		t.Errorf("session %v end %s protocol %s samples %d", rep.SessionS, rep.EndReason, rep.Protocol, len(rep.Samples))
	}
	b, _ := json.Marshal(rep)
	for _, k := range []string{`"startup_delay_ms":1500`, `"latency_ms":4000`, `"transport":"h2"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "latency:") || !strings.Contains(sum.String(), "utilisation 0.25") {
		t.Errorf("summary:\n%s", sum.String())
	}
}

func TestNeverStartedAndEstimatedOverhead(t *testing.T) {
	t0 := time.Now()
	r := NewRecorder(t0, Options{})
	r.Request(100, 40, false, false, 0, "")
	rep := r.Finish(t0.Add(time.Second), "error", nil, 0, 0, false)
	if rep.StartupDelayMS != nil || rep.LatencyMS != nil || rep.LinkUtilisation != nil {
		t.Errorf("never started: %+v", rep)
	}
	if rep.OverheadSource != "estimate" || rep.OverheadBytes != 40 {
		t.Errorf("overhead %d from %s", rep.OverheadBytes, rep.OverheadSource)
	}
	b, _ := json.Marshal(rep)
	if !bytes.Contains(b, []byte(`"startup_delay_ms":null`)) || !bytes.Contains(b, []byte(`"latency_ms":null`)) {
		t.Errorf("null keys missing: %s", b)
	}
}
