package qoe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestLowLatencyKeys(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRecorder(t0, Options{URL: "ws://o/ws/c", Transport: "ws"})
	r.SetLive(true)
	r.Started(t0)
	r.LowLatency(500*time.Millisecond, "push-rule")
	r.LowLatency(640*time.Millisecond, "push-rule") // the rule raised it
	for range 3 {
		r.ChunkAppended()
	}
	for _, rate := range []float64{1.02, 0.96, 1.1} {
		r.PlaybackRate(rate)
	}
	r.Latency(600 * time.Millisecond)
	rep := r.Finish(t0.Add(10*time.Second), "duration", nil, 0, 0, false)
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"target_latency_ms":640`, `"target_source":"push-rule"`, `"chunk_appends":3`, `"playback_rate_min":0.96`, `"playback_rate_max":1.1`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report lacks %s: %s", want, b)
		}
	}
	var sum strings.Builder
	rep.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "target 640 ms (push-rule), 3 chunks appended, playback rate 0.960–1.100") {
		t.Errorf("summary:\n%s", sum.String())
	}

	// Not low latency: none of the keys.
	plain := NewRecorder(t0, Options{}).Finish(t0, "ended", nil, 0, 0, false)
	b, _ = json.Marshal(plain)
	for _, key := range []string{"target_latency_ms", "target_source", "chunk_appends", "playback_rate_min"} {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("a session without low latency reports %s", key)
		}
	}
}
